//go:build integration

package crosscheck

import (
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
		t.Errorf("scenario %s: system@ (kernel) and netdev@ (userdp) differ:\n%s", s.Name, d)
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
