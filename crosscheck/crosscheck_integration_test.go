//go:build integration

package crosscheck

import (
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
