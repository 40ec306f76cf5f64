package crosscheck

import (
	"testing"

	"github.com/ovsdp/ovsdp/testenv"
)

// TestMeterLoadNetdev runs the sustained meter load on the userspace
// datapath alone (root, no kernel module): each meter must pass its
// burst plus its rate for the time the load lasted, within the
// tolerance; TestIntegrationCrosscheckMeterLoad compares it with the
// kernel's.
func TestMeterLoadNetdev(t *testing.T) {
	testenv.RequireRoot(t)
	m := NewMeterLoad()
	ob := playOn(t, m.Scenario(), "netdev", NetdevOpener)
	for i, om := range ob.Meters {
		t.Logf("meter %d: passed %d of %d in %v (expected %.0f ± %.0f)", om.ID, om.Packets-om.Bands[0][0], om.Packets,
			m.Duration("netdev"), m.Expected(i, m.Duration("netdev")), m.Tolerance(i))
	}
}
