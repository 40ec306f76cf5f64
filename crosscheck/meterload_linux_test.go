package crosscheck

import (
	"math"
	"testing"
	"time"

	"github.com/ovsdp/ovsdp/testenv"
)

// TestMeterLoadNetdev runs the sustained meter load on the userspace
// datapath alone (root, no kernel module): each meter must pass what the
// kernel's bucket passes for the batches as they were injected, within
// the tolerance; TestIntegrationCrosscheckMeterLoad compares it with the
// kernel's.
func TestMeterLoadNetdev(t *testing.T) {
	testenv.RequireRoot(t)
	m := NewMeterLoad()
	ob := playOn(t, m.Scenario(), "netdev", NetdevOpener)
	for i, om := range ob.Meters {
		t.Logf("meter %d: passed %d of %d in %v (expected %.0f ± %.0f)", om.ID, om.Packets-om.Bands[0][0], om.Packets,
			m.Duration("netdev"), m.Expected(i, "netdev"), m.Tolerance(i))
	}
}

// TestMeterLoadModel checks the expected counts the meter-load tests
// compare with: batches every 10 ms for a second pass the burst plus the
// rate times 0.99 s; a 2 s stall in the middle fills the bucket, so it
// adds only one burst's worth, not 2 s of refill.
func TestMeterLoadModel(t *testing.T) {
	m := NewMeterLoad()
	var even, stalled []time.Duration
	for i := 0; i < m.Batches; i++ {
		at := time.Duration(i) * m.Interval
		even = append(even, at)
		if i >= m.Batches/2 {
			at += 2 * time.Second
		}
		stalled = append(stalled, at)
	}
	m.batches["even"], m.batches["stalled"] = even, stalled
	for i, want := range [][2]float64{{50 + 99, 50 + 99 + 50}, {40 + 79, 40 + 79 + 40}} {
		if got := m.Expected(i, "even"); math.Abs(got-want[0]) > 1 {
			t.Errorf("meter %d, even batches: expected %.0f, want %.0f", m.Meters[i].ID, got, want[0])
		}
		if got := m.Expected(i, "stalled"); math.Abs(got-want[1]) > 1 {
			t.Errorf("meter %d, a 2 s stall: expected %.0f, want %.0f", m.Meters[i].ID, got, want[1])
		}
	}
}
