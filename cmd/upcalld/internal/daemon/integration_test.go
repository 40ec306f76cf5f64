//go:build integration

package daemon

import (
	"context"
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ovsdp/ovsdp/genl"
	"github.com/ovsdp/ovsdp/odp"
	"github.com/ovsdp/ovsdp/testenv"
)

// The scenarios on the kernel datapath (system@), in the VM runner:
// go test -tags integration -exec $(pwd)/bin/vmrun -run '^TestIntegration' ./cmd/upcalld/...

var kSeq int

func openKernel(t testing.TB) odp.Datapath {
	testenv.RequireRoot(t)
	testenv.RequireKernelModule(t, "openvswitch")
	kSeq++
	d, err := genl.Create(genl.DatapathSpec{Name: fmt.Sprintf("upk%d", kSeq)})
	if err != nil {
		t.Fatalf("creating a kernel datapath: %v", err)
	}
	t.Cleanup(func() {
		if err := d.Delete(); err != nil {
			t.Errorf("deleting the datapath: %v", err)
		}
		d.Close()
	})
	return d
}

func TestIntegrationLearningSwitch(t *testing.T) { scenarioLearning(t, openKernel) }

func TestIntegrationRewrite(t *testing.T) { scenarioRewrite(t, openKernel) }

// TestIntegrationMirror: scenarioMirror (mirror_linux_test.go).
func TestIntegrationMirror(t *testing.T) { scenarioMirror(t, openKernel) }

// TestIntegrationPacketIns: scenarioPacketIns (packetin_linux_test.go);
// the controller action is a userspace action to the daemon's first
// upcall socket.
func TestIntegrationPacketIns(t *testing.T) { scenarioPacketIns(t, openKernel) }

// The flood is 20,000 new flows per second for 10 s
// (TestNamespaceOverload runs it on the host). Under TCG the generator
// itself cannot send that many (it managed 3,000-6,000 frames/s while
// competing with the daemon for the VM's two CPUs), so the VM sends
// 3,000 per second for 10 s: what a TCG guest can keep up for the whole
// 10 s, still far more than the handlers there can handle (about 1,000
// upcalls/s), so the overload path is what is tested.
func TestIntegrationOverload(t *testing.T) {
	scenarioOverload(t, openKernel, 3000, 10*time.Second)
}

// A second daemon on the same kernel datapath adopts the flows: the
// first one's flows stay and keep forwarding across the restart.
func TestIntegrationRestartAdopts(t *testing.T) {
	tp := newTopo(t, 2, openKernel, Config{})
	if err := tp.hosts[0].Ping(hostIP(1), 10*time.Second); err != nil {
		t.Fatal(err)
	}
	tp.d.RevalidateNow(context.Background())
	before := dumpFlows(t, tp.dp)
	tp.stop()
	d2, err := New(Config{Datapath: tp.dp, Handlers: 1, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	if err := d2.Setup(context.Background()); err != nil {
		t.Fatal(err)
	}
	r, err := d2.RevalidateNow(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	after := dumpFlows(t, tp.dp)
	if len(after) != len(before) || r.Deleted != 0 {
		t.Errorf("after adoption: %+v\nbefore:\n%v\nafter:\n%v", r, before, after)
	}
}

// BenchmarkIntegrationUpcalls measures the daemon's upcall handling on
// both datapaths in one run (in the VM on machines without the
// openvswitch module): "system" is the kernel datapath, "netdev" the
// userspace one on the same kind of veth ports. A host in a namespace
// sends b.N frames of distinct new flows (one source, b.N unknown
// destinations, each a miss that the learning switch floods and installs
// as a megaflow) through an AF_PACKET socket, in bursts of 32, each burst
// sent once the daemon has accounted for all but 64 of the frames before
// it (handled, shed or lost), so the queues never overflow and the rate is
// what the handlers sustain. It reports handled upcalls per second, the
// handler latency quantiles (from the read of an upcall's batch to the
// end of the batch's work: its flows installed and packets executed) and what was lost or shed.
//
//	go test -c -tags integration -o /tmp/daemon.test ./cmd/upcalld/internal/daemon
//	bin/vmrun /tmp/daemon.test -test.run '^$' -test.bench '^BenchmarkIntegrationUpcalls$' -test.benchtime 2000x
func BenchmarkIntegrationUpcalls(b *testing.B) {
	for _, c := range []struct {
		name string
		open func(testing.TB) odp.Datapath
	}{{"system", openKernel}, {"netdev", openUserdp}} {
		b.Run(c.name, func(b *testing.B) { benchUpcalls(b, c.open) })
	}
}

func benchUpcalls(b *testing.B, open func(testing.TB) odp.Datapath) {
	tp := newTopo(b, 2, open, Config{Logger: discardLogger(), Handlers: 2})
	fd, sa := tp.rawSender(0)
	frames := make([][]byte, b.N)
	for i := range frames {
		dst := mac{0x02, 0xee}
		binary.BigEndian.PutUint32(dst[2:], uint32(i+1))
		frames[i] = udpFrame(macN(0x31), dst, ip4(10, 9, 1, 1), ip4(10, 9, 1, 2), uint16(i), 9, 0)
	}
	ctx := context.Background()
	accounted := func(s, base Status) int {
		return int(s.Handled + s.Shed + s.Lost + s.Failed - base.Handled - base.Shed - base.Lost - base.Failed)
	}
	tp.d.Latency().Reset()
	base := tp.d.Status()
	sendErrs := 0
	b.ResetTimer()
	for sent := 0; sent < b.N; {
		for end := min(sent+32, b.N); sent < end; sent++ {
			if err := unix.Sendto(fd, frames[sent], 0, sa); err != nil {
				sendErrs++
			}
		}
		deadline := time.Now().Add(10 * time.Second)
		for accounted(tp.d.Status(), base)+64 < sent-sendErrs {
			if time.Now().After(deadline) {
				b.Fatalf("after %d frames sent, %d accounted for in 10s: %+v", sent, accounted(tp.d.Status(), base), tp.d.Status())
			}
			tp.d.pollDatapath(ctx)
			time.Sleep(50 * time.Microsecond)
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for accounted(tp.d.Status(), base) < b.N-sendErrs && time.Now().Before(deadline) {
		tp.d.pollDatapath(ctx)
		time.Sleep(100 * time.Microsecond)
	}
	b.StopTimer()
	st := tp.d.Status()
	handled := st.Handled - base.Handled
	if handled == 0 {
		b.Fatalf("no upcall handled: %+v", st)
	}
	b.ReportMetric(float64(handled)/b.Elapsed().Seconds(), "handled/s")
	b.ReportMetric(float64(tp.d.Latency().Quantile(0.5).Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(tp.d.Latency().Quantile(0.99).Nanoseconds()), "p99-ns")
	b.ReportMetric(float64(st.Lost-base.Lost), "lost")
	b.ReportMetric(float64(st.Shed-base.Shed), "shed")
	b.ReportMetric(float64(sendErrs), "send-errors")
}
