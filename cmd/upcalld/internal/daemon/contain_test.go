package daemon

import (
	"context"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ovsdp/ovsdp/odp"
)

// A panic while deciding an upcall is contained to that upcall: logged
// with its stack, counted, the upcall failed; the handler goes on, the
// next upcall gets its flow, and in a batch the other upcalls are
// handled. Before, the panic ended the daemon (and, for a userspace
// datapath, the datapath with it).
func TestDecidePanicContained(t *testing.T) {
	poison := macN(0x66)
	testHookDecide = func(up *odp.Upcall) {
		if len(up.Packet) >= 12 && mac(up.Packet[6:12]) == poison {
			panic("forced by the test")
		}
	}
	t.Cleanup(func() { testHookDecide = nil })
	logs := &logCapture{}
	h := newHarness(t, 3, Config{Logger: slog.New(logs)})
	h.start()
	bad := udpFrame(poison, macN(2), ip4(10, 0, 0, 6), ip4(10, 0, 0, 2), 1, 2, 0)
	good := udpFrame(macN(1), macN(2), ip4(10, 0, 0, 1), ip4(10, 0, 0, 2), 1, 2, 0)
	h.send(1, bad)
	if st := h.waitAccounted(1); st.Failed != 1 || h.d.PanicsContained() != 1 {
		t.Fatalf("after the poisoned frame: %+v, %d panics; want 1 failed, 1 panic", st, h.d.PanicsContained())
	}
	if got := h.counter("upcalld_panics_contained_total", "where=handler"); got != 1 {
		t.Errorf("upcalld_panics_contained_total{where=handler} = %v, want 1", got)
	}
	out := strings.Join(logs.wait(2, 5*time.Second), "\n") // the panic, then the upcall's failure
	if !strings.Contains(out, "handler panicked") || !strings.Contains(out, "forced by the test") ||
		!strings.Contains(out, "goroutine") || !strings.Contains(out, "decideContained") {
		t.Errorf("log %q: want the panic with its stack", out)
	}
	h.expectNone(2, 20*time.Millisecond) // the poisoned packet went nowhere
	// The same handler serves the next upcall.
	h.send(1, good)
	h.expect(2, good)
	h.waitFlows(1)
	if st := h.waitAccounted(2); st.Handled != 1 {
		t.Errorf("after the good frame: %+v, want 1 handled", st)
	}

	// In one batch, the poisoned upcall fails alone.
	var k1, k2 odp.Upcall
	k1 = missFrom(t, poison, macN(3))
	k2 = missFrom(t, macN(4), macN(3))
	hs := newHandlerState(7, 2)
	copy(hs.ups, []odp.Upcall{k1, k2})
	h.d.handleBatchContained(context.Background(), hs, hs.ups[:2], shedNone, time.Now())
	if st := h.d.Status(); st.Failed != 2 || st.Handled != 2 || h.d.PanicsContained() != 2 {
		t.Errorf("after a batch with one poisoned upcall: %+v, %d panics; want 2 failed, 2 handled, 2 panics", st, h.d.PanicsContained())
	}
	h.waitFlows(2)
}

// panicPut is a datapath whose PutFlow panics while armed: the test's
// way to force a panic outside the decisions (no datapath answer does
// that in production).
type panicPut struct {
	odp.Datapath
	armed atomic.Bool
}

func (p *panicPut) PutFlow(ctx context.Context, f *odp.Flow, flags odp.PutFlags) (odp.FlowStats, error) {
	if p.armed.CompareAndSwap(true, false) {
		panic("put forced to panic by the test")
	}
	return p.Datapath.PutFlow(ctx, f, flags)
}

// A panic while installing a batch's flows is contained to the batch:
// counted and logged, its upcalls failed; the handler and the datapath
// go on and the next miss gets its flow.
func TestBatchPanicContained(t *testing.T) {
	h := newHarness(t, 3, Config{})
	logs := &logCapture{}
	pp := &panicPut{Datapath: h.dp}
	d, err := New(Config{Datapath: pp, Handlers: 1, RevalidateInterval: time.Hour, Logger: slog.New(logs)})
	if err != nil {
		t.Fatal(err)
	}
	h.d = d
	h.start()
	pp.armed.Store(true)
	f1 := udpFrame(macN(1), macN(2), ip4(10, 0, 0, 1), ip4(10, 0, 0, 2), 1, 2, 0)
	h.send(1, f1)
	if st := h.waitAccounted(1); st.Failed != 1 || d.PanicsContained() != 1 {
		t.Fatalf("after the panicking put: %+v, %d panics; want 1 failed, 1 panic", st, d.PanicsContained())
	}
	out := strings.Join(logs.wait(1, 5*time.Second), "\n")
	if !strings.Contains(out, "put forced to panic") || !strings.Contains(out, "installBatch") {
		t.Errorf("log %q: want the panic with its stack", out)
	}
	f2 := udpFrame(macN(3), macN(2), ip4(10, 0, 0, 3), ip4(10, 0, 0, 2), 1, 2, 0)
	h.send(1, f2)
	h.expect(2, f2)
	h.waitFlows(1)
	if st := h.waitAccounted(2); st.Handled != 1 {
		t.Errorf("after the next frame: %+v, want 1 handled", st)
	}
}

// TestStatusPanicContained: a panic while answering a status request is
// answered as an error to that client, counted and logged with its stack;
// the status socket answers the next request.
func TestStatusPanicContained(t *testing.T) {
	logs := &logCapture{}
	h := newHarness(t, 2, Config{Logger: slog.New(logs)})
	h.start()
	ctx, path := serveStatus(t, h.d)
	forced := func() { panic("forced by the test") }
	testHookStatus.Store(&forced)
	t.Cleanup(func() { testHookStatus.Store(nil) })
	dp := "netdev@" + h.dp.Name()
	if _, err := QueryStatus(ctx, dp, path); err == nil || !strings.Contains(err.Error(), "internal error") {
		t.Fatalf("status with a panic: %v, want an internal error", err)
	}
	if got := h.counter("upcalld_panics_contained_total", "where=status"); got != 1 {
		t.Errorf("upcalld_panics_contained_total{where=status} = %v, want 1", got)
	}
	out := strings.Join(logs.wait(1, 5*time.Second), "\n")
	if !strings.Contains(out, "status connection panicked") || !strings.Contains(out, "goroutine") {
		t.Errorf("log %q: want the panic with its stack", out)
	}
	testHookStatus.Store(nil)
	if _, err := QueryStatus(ctx, dp, path); err != nil {
		t.Fatalf("the status socket after a contained panic: %v", err)
	}
}
