package crosscheck

import (
	"fmt"
	"sync"
	"time"

	"github.com/ovsdp/ovsdp/internal/header"
	"github.com/ovsdp/ovsdp/internal/header/headertest"
	"github.com/ovsdp/ovsdp/odp"
)

// A sustained load through meters: for about a second h1 offers each of
// two meters about ten times its rate, in batches every 10 ms, and h2
// receives what passes. Unlike the burst of "meters-drop-band", what
// passes depends on time: a meter passes its burst plus its rate times
// the time the load lasted, so the two datapaths' counts are compared
// within a tolerance (MeterLoad.Tolerance) rather than exactly.

// MeterLoad is the sustained-load meter scenario and what its runs
// measured.
type MeterLoad struct {
	// Meters are the meters under load: one in packets per second, one
	// in kilobits per second.
	Meters []odp.MeterInfo
	// Offered is how many frames each meter is offered, Batches how many
	// batches they come in, Interval the time between batches.
	Offered  [2]int
	Batches  int
	Interval time.Duration
	// FrameBits is the size of every frame in bits (what a kbps meter
	// charges).
	FrameBits int

	mu sync.Mutex
	// durations is, per datapath type, the time from the first batch
	// injected to the last.
	durations map[string]time.Duration
}

// Meter-load parameters: 200 packets/s (burst 20) and 160 kbit/s (burst
// 16 kbit, i.e. 16 frames of 1,000 bits), each offered ten times its rate
// for a second.
const (
	meterLoadBatches  = 100
	meterLoadInterval = 10 * time.Millisecond
)

// NewMeterLoad returns the meter-load scenario's parameters.
func NewMeterLoad() *MeterLoad {
	return &MeterLoad{
		Meters: []odp.MeterInfo{
			{ID: 11, Bands: []odp.MeterBand{{Type: odp.MeterBandDrop, Rate: 200, Burst: 20}}},
			{ID: 12, KBPS: true, Bands: []odp.MeterBand{{Type: odp.MeterBandDrop, Rate: 160, Burst: 16}}},
		},
		Offered:   [2]int{2000, 1600},
		Batches:   meterLoadBatches,
		Interval:  meterLoadInterval,
		FrameBits: 1000,
		durations: map[string]time.Duration{},
	}
}

// Duration is how long the load lasted on datapath typ (0 if it did not
// run there).
func (m *MeterLoad) Duration(typ string) time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.durations[typ]
}

// rateFrames is meter i's rate in frames per second.
func (m *MeterLoad) rateFrames(i int) float64 {
	r := float64(m.Meters[i].Bands[0].Rate)
	if m.Meters[i].KBPS {
		r = r * 1000 / float64(m.FrameBits)
	}
	return r
}

// burstFrames is meter i's burst in frames.
func (m *MeterLoad) burstFrames(i int) float64 {
	b := float64(m.Meters[i].Bands[0].Burst)
	if m.Meters[i].KBPS {
		b = b * 1000 / float64(m.FrameBits)
	}
	return b
}

// Expected is how many frames meter i passes under a load that lasted d:
// its bucket starts full (the burst) and refills at the rate for the
// whole time, while the offered load always exceeds it.
func (m *MeterLoad) Expected(i int, d time.Duration) float64 {
	return m.burstFrames(i) + m.rateFrames(i)*d.Seconds()
}

// Tolerance is how far meter i's passed count may be from Expected: the
// rate times 100 ms, plus 2 frames. The 100 ms is slack for scheduling at
// the two ends of the run, where the time the frames are metered is not
// the time they were injected (the guest's timers under TCG, a userspace
// datapath that reads a batch late, the first batch metered before the
// clock the injector reads); the 2 frames are the millisecond rounding
// of the bucket's refill at each end. With 200 frames/s that is ±22 of
// about 220, and ±18 of about 176 at 160 frames/s.
func (m *MeterLoad) Tolerance(i int) float64 {
	return m.rateFrames(i)*0.1 + 2
}

// frame is the frame that meter i's flow carries (all alike, so that the
// hosts' frames compare as two distinct ones): 125 bytes, 1,000 bits.
func (m *MeterLoad) frame(i int) []byte {
	payload := make([]byte, m.FrameBits/8-14-20-8)
	for j := range payload {
		payload[j] = 'L'
	}
	return udp4(headertest.IPv4Hdr{}, 1, uint16(7101+i), string(payload))
}

// Scenario returns the scenario. Its Check verifies, on each datapath,
// that each meter saw every frame offered, that what h2 received plus
// what the band dropped is that, and that what passed is within
// Tolerance of Expected for the time the load lasted there.
func (m *MeterLoad) Scenario() *Scenario {
	return &Scenario{
		Name: "meters-sustained-load", Hosts: silentHosts(2), Meters: m.Meters,
		Flows: []FlowSpec{
			{"in_port(1),eth(),eth_type(0x0800),ipv4(proto=17,frag=no),udp(dst=7101)", "meter(11),2"},
			{"in_port(1),eth(),eth_type(0x0800),ipv4(proto=17,frag=no),udp(dst=7102)", "meter(12),2"},
		},
		// The counts depend on time; they are compared within the
		// tolerance by the test, the rest exactly.
		Compare: CompareOptions{UnorderedFrames: true, DedupFrames: true, IgnoreFlowStats: true, IgnoreCounters: true, IgnoreMeterStats: true},
		Traffic: func(e *Env) error {
			batch := m.batch()
			start := time.Now()
			for i := 0; i < m.Batches; i++ {
				if i > 0 {
					time.Sleep(time.Until(start.Add(time.Duration(i) * m.Interval)))
				}
				if err := e.Inject("h1", batch...); err != nil {
					return err
				}
			}
			m.mu.Lock()
			m.durations[e.Datapath] = time.Since(start)
			m.mu.Unlock()
			return nil
		},
		Check: all(checkNoErrors, m.check),
	}
}

// batch is one batch: each meter's share of the frames, interleaved.
func (m *MeterLoad) batch() [][]byte {
	var b [][]byte
	n0, n1 := m.Offered[0]/m.Batches, m.Offered[1]/m.Batches
	for j := 0; j < max(n0, n1); j++ {
		if j < n0 {
			b = append(b, m.frame(0))
		}
		if j < n1 {
			b = append(b, m.frame(1))
		}
	}
	return b
}

// check verifies one datapath's run (see Scenario).
func (m *MeterLoad) check(o *Observation) error {
	if len(o.Meters) != 2 {
		return fmt.Errorf("%d meters observed, want 2", len(o.Meters))
	}
	d := m.Duration(o.Datapath)
	received := map[int]int{}
	for _, r := range o.Received {
		if r.Host != "h2" {
			continue
		}
		for _, f := range r.Frames {
			if p := Parse(f.Data); p.L4 >= 0 {
				received[int(header.Ports(f.Data[p.L4:]).Destination())-7101]++
			}
		}
	}
	for i, om := range o.Meters {
		if om.Packets != uint64(m.Offered[i]) {
			return fmt.Errorf("meter %d saw %d packets, want all %d offered", om.ID, om.Packets, m.Offered[i])
		}
		passed := m.Offered[i] - int(om.Bands[0][0])
		if received[i] != passed {
			return fmt.Errorf("meter %d: h2 received %d frames, but the band dropped %d of %d", om.ID, received[i], om.Bands[0][0], m.Offered[i])
		}
		want, tol := m.Expected(i, d), m.Tolerance(i)
		if float64(passed) < want-tol || float64(passed) > want+tol {
			return fmt.Errorf("meter %d passed %d frames in %v, want %.0f ± %.0f", om.ID, passed, d.Round(time.Millisecond), want, tol)
		}
	}
	return nil
}
