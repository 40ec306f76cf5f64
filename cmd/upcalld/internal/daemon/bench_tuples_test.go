package daemon

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ovsdp/ovsdp/odp"
)

// tupleRules is BenchmarkIntegrationVsOVSSat's tuples workload's rule
// set: n rules, each an exact UDP 5-tuple to the port named out, and a
// drop rule below them.
func tupleRules(n int, out string) string {
	var s strings.Builder
	for i := range n {
		fmt.Fprintf(&s, "priority=10,udp,nw_src=10.9.0.1,nw_dst=10.9.0.2,tp_src=%d,tp_dst=9,actions=output:%s\n", 1024+i, out)
	}
	s.WriteString("priority=0,actions=drop\n")
	return s.String()
}

// tupleUpcalls are the misses of the tuples workload's frames i0 to
// i0+n-1 entering port 1.
func tupleUpcalls(tb testing.TB, i0, n int) []odp.Upcall {
	ups := make([]odp.Upcall, n)
	for i := range ups {
		ups[i] = missUpcall(tb, 1, udpFrame(macN(1), macN(2), ip4(10, 9, 0, 1), ip4(10, 9, 0, 2), uint16(1024+(i0+i)%60000), 9, 0))
	}
	return ups
}

// BenchmarkHandleBatchTuples measures a handler's work per miss on the
// userspace datapath for the saturation benchmark's tuples workload
// (10000 rules, each an exact 5-tuple: one megaflow per miss), in
// batches of DefaultBatch as a handler reads them at saturation.
func BenchmarkHandleBatchTuples(b *testing.B) {
	const rules = 10000
	h := newHarness(b, 2, Config{Logger: discardLogger(), Rules: mustRules(b, tupleRules(rules, "2"))})
	ctx := context.Background()
	if err := h.d.Setup(ctx); err != nil {
		b.Fatal(err)
	}
	h.d.flowLimit.Store(1 << 40)
	hs := newHandlerState(0, DefaultBatch)
	b.ResetTimer()
	for done := 0; done < b.N; {
		b.StopTimer()
		if done%rules == 0 && done > 0 {
			// Every rule has its megaflow: start over on an empty table.
			h.d.flows = newFlowTable(h.d.flows.recirc)
			if err := h.dp.FlushFlows(ctx); err != nil {
				b.Fatal(err)
			}
		}
		n := min(DefaultBatch, b.N-done, rules-done%rules)
		ups := tupleUpcalls(b, done%rules, n)
		b.StartTimer()
		h.d.handleBatch(ctx, hs, ups, shedNone, time.Now())
		done += n
	}
	b.StopTimer()
	st := h.d.Status()
	if st.Failed != 0 {
		b.Fatalf("%d upcalls failed", st.Failed)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "upcalls/s")
}
