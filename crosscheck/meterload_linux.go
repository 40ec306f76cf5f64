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
// passes depends on time: each datapath's count is compared with what an
// ideal meter (the kernel's bucket: Burst full at the start, refilled at
// Rate, capped at Burst) passes for the same frames at the times each
// batch was injected in that run (MeterLoad.Expected), within
// MeterLoad.Tolerance, and so are the two datapaths' counts (each less
// its own expected count). The model, not "burst + rate × duration",
// because under TCG the injector stalls now and then, and a stall longer
// than Burst/Rate fills the bucket, losing refill, on either datapath.

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
	// batches are, per datapath type, when each batch was injected,
	// from the first.
	batches map[string][]time.Duration
}

// Meter-load parameters: 100 packets/s (burst 50) and 80 kbit/s (burst
// 40 kbit, i.e. 40 frames of 1,000 bits), each offered ten times its rate
// for a second (longer when the injector is slow: the offered rate is
// then lower, still several times the meters').
const (
	meterLoadBatches  = 100
	meterLoadInterval = 10 * time.Millisecond
)

// NewMeterLoad returns the meter-load scenario's parameters.
func NewMeterLoad() *MeterLoad {
	return &MeterLoad{
		Meters: []odp.MeterInfo{
			{ID: 11, Bands: []odp.MeterBand{{Type: odp.MeterBandDrop, Rate: 100, Burst: 50}}},
			{ID: 12, KBPS: true, Bands: []odp.MeterBand{{Type: odp.MeterBandDrop, Rate: 80, Burst: 40}}},
		},
		Offered:   [2]int{1000, 800},
		Batches:   meterLoadBatches,
		Interval:  meterLoadInterval,
		FrameBits: 1000,
		batches:   map[string][]time.Duration{},
	}
}

// Duration is how long the load lasted on datapath typ, from the first
// batch to the last (0 if it did not run there).
func (m *MeterLoad) Duration(typ string) time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	if b := m.batches[typ]; len(b) > 0 {
		return b[len(b)-1]
	}
	return 0
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

// Expected is how many frames meter i passes in the run on datapath typ
// if every batch is metered at the moment it was injected: the bucket
// (in frames) starts full at Burst, refills at Rate between batches up
// to Burst, and each of the batch's frames passes while a whole frame's
// worth is left.
func (m *MeterLoad) Expected(i int, typ string) float64 {
	m.mu.Lock()
	times := append([]time.Duration(nil), m.batches[typ]...)
	m.mu.Unlock()
	burst, rate := m.burstFrames(i), m.rateFrames(i)
	tokens, last, passed := burst, time.Duration(0), 0
	for _, at := range times {
		tokens = min(burst, tokens+rate*(at-last).Seconds())
		last = at
		for j := 0; j < m.Offered[i]/m.Batches; j++ {
			if tokens >= 1 {
				tokens--
				passed++
			}
		}
	}
	return float64(passed)
}

// Tolerance is how far meter i's passed count may be from Expected: the
// rate times 100 ms, plus 2 frames. The 100 ms is slack for when a frame
// is metered against when it was injected (a batch takes a few ms to
// send, the guest's timers under TCG, a userspace datapath that reads a
// batch late): a frame metered late finds up to that much more refill;
// the 2 frames are the bucket's millisecond rounding at each end. With
// 100 frames/s that is ±12 of about 150, and ±10 of about 120 at 80.
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
			times := make([]time.Duration, 0, m.Batches)
			for i := 0; i < m.Batches; i++ {
				if i > 0 {
					time.Sleep(time.Until(start.Add(time.Duration(i) * m.Interval)))
				}
				times = append(times, time.Since(start))
				if err := e.Inject("h1", batch...); err != nil {
					return err
				}
			}
			m.mu.Lock()
			m.batches[e.Datapath] = times
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
		want, tol := m.Expected(i, o.Datapath), m.Tolerance(i)
		if float64(passed) < want-tol || float64(passed) > want+tol {
			return fmt.Errorf("meter %d passed %d frames in %v, want %.0f ± %.0f", om.ID, passed, d.Round(time.Millisecond), want, tol)
		}
	}
	return nil
}
