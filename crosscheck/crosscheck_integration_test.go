//go:build integration

package crosscheck

import (
	"math"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/ovsdp/ovsdp/testenv"
)

// crossCheck plays s on system@ and then on netdev@ and fails with a
// unified diff when they differ.
func crossCheck(t *testing.T, s *Scenario) (sys, net *Observation) {
	t.Run("system", func(t *testing.T) { sys = playOn(t, s, "system", SystemOpener) })
	t.Run("netdev", func(t *testing.T) { net = playOn(t, s, "netdev", NetdevOpener) })
	if sys == nil || net == nil {
		t.Fatalf("scenario %s: not compared: it did not run on both datapaths", s.Name)
	}
	if d := Compare(sys, net, s.Compare); d != "" {
		t.Errorf("scenario %s: system@ (kernel) and netdev@ (userdp) differ:\n%s", s.Name, headLines(d, 400))
	}
	tally.scenarios.Add(1)
	for _, r := range sys.Received {
		tally.frames.Add(int64(len(r.Frames)))
	}
	tally.upcalls.Add(int64(len(sys.Upcalls)))
	return sys, net
}

func TestIntegrationCrosscheck(t *testing.T) {
	testenv.RequireRoot(t)
	testenv.RequireKernelModule(t, "openvswitch")
	start := time.Now()
	for _, s := range Scenarios() {
		t.Run(s.Name, func(t *testing.T) { crossCheck(t, s) })
	}
	t.Logf("cross-checked %d scenarios: %d frames received per datapath, %d upcalls per datapath, in %v",
		tally.scenarios.Load(), tally.frames.Load(), tally.upcalls.Load(), time.Since(start).Round(time.Millisecond))
}

// envInt reads a positive integer from the environment, or def.
func envInt(t *testing.T, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		t.Fatalf("%s=%q: want a positive integer", name, v)
	}
	return n
}

// TestIntegrationCrosscheckFuzz sends at least 10,000 random and mutated
// packets (OVSDP_CROSSCHECK_PACKETS, seed OVSDP_CROSSCHECK_SEED) through
// both datapaths with the same flows: outputs, upcalls (decisions) and
// keys must agree.
func TestIntegrationCrosscheckFuzz(t *testing.T) {
	testenv.RequireRoot(t)
	testenv.RequireKernelModule(t, "openvswitch")
	start := time.Now()
	seed := envInt(t, "OVSDP_CROSSCHECK_SEED", 1)
	n := envInt(t, "OVSDP_CROSSCHECK_PACKETS", 10000)
	s := FuzzScenario(uint64(seed), n, 200)
	sys, net := crossCheck(t, s)
	count := func(o *Observation) (frames, misses, actions int) {
		for _, r := range o.Received {
			frames += len(r.Frames)
		}
		return frames, countUpcalls(o, "miss"), countUpcalls(o, "action")
	}
	sf, sm, sa := count(sys)
	nf, nm, na := count(net)
	t.Logf("differential fuzz, seed %d: %d packets through system@ and netdev@ in %v; system@: %d frames out, %d misses (keys compared with flowkeys.Extract), %d userspace upcalls, hit %d; netdev@: %d frames out, %d misses, %d userspace upcalls, hit %d",
		seed, n, time.Since(start).Round(time.Millisecond), sf, sm, sa, sys.Hit, nf, nm, na, net.Hit)
}

// TestIntegrationCrosscheckMeterLoad offers two meters (packets/s and
// kbit/s) about ten times their rates for a second on both datapaths.
// Each datapath's run is checked on its own (every frame metered, band
// drops plus frames received equal to the frames offered, the passed
// count within MeterLoad.Tolerance of what the kernel's bucket passes for
// the batches at the times they were injected in that run); the two
// datapaths' passed counts, each less its own expected count (the runs'
// timings differ), must then differ by at most the tolerance; everything
// else is compared exactly.
func TestIntegrationCrosscheckMeterLoad(t *testing.T) {
	testenv.RequireRoot(t)
	testenv.RequireKernelModule(t, "openvswitch")
	m := NewMeterLoad()
	sys, net := crossCheck(t, m.Scenario())
	if len(sys.Meters) != 2 || len(net.Meters) != 2 {
		t.Fatalf("meters observed: system@ %d, netdev@ %d, want 2 each", len(sys.Meters), len(net.Meters))
	}
	ds, dn := m.Duration("system"), m.Duration("netdev")
	for i := range sys.Meters {
		ps := float64(sys.Meters[i].Packets - sys.Meters[i].Bands[0][0])
		pn := float64(net.Meters[i].Packets - net.Meters[i].Bands[0][0])
		es, en := m.Expected(i, "system"), m.Expected(i, "netdev")
		diff := (ps - es) - (pn - en)
		t.Logf("meter %d: system@ passed %.0f of %d in %v (expected %.0f), netdev@ %.0f in %v (expected %.0f); corrected difference %.0f, tolerance %.0f",
			sys.Meters[i].ID, ps, m.Offered[i], ds, es, pn, dn, en, diff, m.Tolerance(i))
		if math.Abs(diff) > m.Tolerance(i) {
			t.Errorf("meter %d: the datapaths' passed counts differ by %.1f after correcting for the run times, more than the tolerance %.0f", sys.Meters[i].ID, diff, m.Tolerance(i))
		}
	}
}
