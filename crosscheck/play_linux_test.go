package crosscheck

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ovsdp/ovsdp/testenv"
)

// tally counts what the cross-check tests compared.
var tally struct {
	scenarios, frames, upcalls, keys atomic.Int64
}

func dpName(kind string) string { return fmt.Sprintf("xc%s%06d", kind[:1], rand.IntN(1000000)) }

// playOn plays s on one datapath and checks what must hold there alone:
// the scenario's Check, and for every miss the datapath's key against
// flowkeys.Extract's. A scenario that cannot run fails with the reason.
func playOn(t *testing.T, s *Scenario, kind string, open Opener) *Observation {
	t.Helper()
	ob, err := Play(t, s, dpName(kind), open)
	if err != nil {
		t.Fatalf("scenario %s cannot run on %s@: %v", s.Name, kind, err)
	}
	for _, m := range ob.KeyMismatches() {
		t.Errorf("%s", m)
	}
	if s.Check != nil {
		if err := s.Check(ob); err != nil {
			t.Errorf("scenario %s on %s@: %v\nobservation:\n%s", s.Name, kind, err, ob.Render(s.Compare))
		}
	}
	if ob.Lost != 0 {
		t.Errorf("scenario %s on %s@: %d upcalls lost", s.Name, kind, ob.Lost)
	}
	nf := 0
	for _, r := range ob.Received {
		nf += len(r.Frames)
	}
	t.Logf("%s@: %d frames received, %d flows, %d upcalls, hit %d missed %d, %d noise frames/upcalls left out",
		kind, nf, len(ob.Flows), len(ob.Upcalls), ob.Hit, ob.Missed, ob.Noise)
	if testing.Verbose() && len(ob.Upcalls) < 100 {
		t.Logf("%s@ observation:\n%s", kind, ob.Render(s.Compare))
	}
	return ob
}

// TestScenariosNetdev plays every scenario on the userspace datapath
// alone (it needs root, not the openvswitch module), checking each
// scenario's expectations and userdp's upcall keys against
// flowkeys.Extract. The comparison with the kernel is
// TestIntegrationCrosscheck.
func TestScenariosNetdev(t *testing.T) {
	testenv.RequireRoot(t)
	for _, s := range Scenarios() {
		t.Run(s.Name, func(t *testing.T) { playOn(t, s, "netdev", NetdevOpener) })
	}
}

// headLines returns the first n lines of s, and how many were left out.
func headLines(s string, n int) string {
	lines := strings.SplitAfter(s, "\n")
	if len(lines) <= n {
		return s
	}
	return strings.Join(lines[:n], "") + fmt.Sprintf("... (%d more lines)\n", len(lines)-n)
}

// TestFuzzNetdev sends 2,000 generated packets through the userspace
// datapath alone with the fuzz flows: its upcall keys must equal
// flowkeys.Extract's and the scenario's check must hold.
func TestFuzzNetdev(t *testing.T) {
	testenv.RequireRoot(t)
	start := time.Now()
	ob := playOn(t, FuzzScenario(1, 2000, 200), "netdev", NetdevOpener)
	t.Logf("2000 packets through netdev@ in %v: %d upcalls", time.Since(start).Round(time.Millisecond), len(ob.Upcalls))
}
