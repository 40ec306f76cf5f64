//go:build integration

package crosscheck

import (
	"context"
	"math"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/ovsdp/ovsdp/internal/actsupport"
	"github.com/ovsdp/ovsdp/odp"
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

// TestIntegrationActionSupport puts every case of actsupport.Cases() on a
// kernel datapath and checks the kernel's answer against the table
// (userdp's column is checked by userdp's TestActionSupportTable).
func TestIntegrationActionSupport(t *testing.T) {
	testenv.RequireRoot(t)
	testenv.RequireKernelModule(t, "openvswitch")
	ctx := context.Background()
	dp, cleanup, err := SystemOpener(testenv.NewName())
	if err != nil {
		t.Fatalf("a kernel datapath for the table: %v", err)
	}
	defer cleanup()
	cases, err := actsupport.Cases()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		f, err := c.Flow()
		if err != nil {
			t.Fatal(err)
		}
		_, err = dp.PutFlow(ctx, f, odp.PutCreate)
		got, ok := actsupport.AnswerOf(err)
		if !ok || got == actsupport.Unsupported {
			t.Errorf("%s %s: %v", c.Key, c.Actions, err)
			continue
		}
		if got != c.Kernel {
			t.Errorf("%s %s: the kernel says %v (%v), the table %v", c.Key, c.Actions, got, err, c.Kernel)
		} else {
			t.Logf("%s %s: %v", c.Key, c.Actions, got)
		}
		if err := dp.FlushFlows(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// The plain set(nsh), which the text parser cannot give, with the
	// base header, the context or both: Linux 6.1 refuses each (and
	// userdp does, exec_nsh.go).
	key, mask, _ := odp.ParseMaskedKey("in_port(1),eth(),eth_type(0x894f),nsh(np=1)")
	for _, n := range []odp.NSH{
		{HasBase: true, MDType: 1, NP: 1, PathHdr: 0x503, HasMD1: true, Context: [4]uint32{1, 2, 3, 4}},
		{HasBase: true, MDType: 1, NP: 1, PathHdr: 0x503},
		{HasMD1: true, Context: [4]uint32{1, 2, 3, 4}},
	} {
		acts := odp.Actions{odp.Set{Key: n}, odp.Output{Port: 2}}
		if _, err := dp.PutFlow(ctx, &odp.Flow{Key: key, Mask: mask, Actions: acts}, odp.PutCreate); actsupport.Invalid != must(actsupport.AnswerOf(err)) {
			t.Errorf("plain %s: %v, want EINVAL as Linux 6.1 answered", acts, err)
		} else {
			t.Logf("plain %s: %v", acts, err)
		}
	}
}

// must is a's answer, or -1 for an error that is none.
func must(a actsupport.Answer, ok bool) actsupport.Answer {
	if !ok {
		return -1
	}
	return a
}
