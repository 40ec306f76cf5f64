//go:build integration

package crosscheck

import (
	"math"
	"testing"

	"github.com/ovsdp/ovsdp/testenv"
)

// TestIntegrationCrosscheckMeterLoad offers two meters (packets/s and
// kbit/s) about ten times their rates for a second on both datapaths.
// Each datapath's run is checked on its own (every frame metered, band
// drops plus frames received equal to the frames offered, the passed
// count within MeterLoad.Tolerance of the burst plus the rate times the
// time the load lasted there); the two datapaths' passed counts, each
// corrected by its own expected count (the runs do not last exactly the
// same), must then differ by at most the tolerance; everything else is
// compared exactly.
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
		diff := (ps - m.Expected(i, ds)) - (pn - m.Expected(i, dn))
		t.Logf("meter %d: system@ passed %.0f in %v (expected %.1f), netdev@ %.0f in %v (expected %.1f); corrected difference %.1f, tolerance %.0f",
			sys.Meters[i].ID, ps, ds, m.Expected(i, ds), pn, dn, m.Expected(i, dn), diff, m.Tolerance(i))
		if math.Abs(diff) > m.Tolerance(i) {
			t.Errorf("meter %d: the datapaths' passed counts differ by %.1f after correcting for the run times, more than the tolerance %.0f", sys.Meters[i].ID, diff, m.Tolerance(i))
		}
	}
}
