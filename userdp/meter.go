package userdp

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/ovsdp/ovsdp/odp"
)

// Meters behave as the kernel's (net/openvswitch/meter.c): one drop band
// per meter, a bucket per band that starts full at burst×1000 units
// (bits for kbps, thousandths of a packet for pktps), refills by
// rate units per whole millisecond of CLOCK_MONOTONIC, and is charged a
// packet's cost (its length × 8, or 1000) when it holds that much; a
// packet that finds a band's bucket short exceeds the band, is counted
// in the band's statistics, and is dropped. A meter that does not exist
// passes every packet. The table is the kernel's too: a slot array
// indexed by ID modulo its size (1024, doubling as meters are added), so
// that two IDs in one slot collide (EBUSY), and at most
// maxMeters-1 meters.
//
// One difference is the kernel's quirk: it caps a refill at max_delta_t
// = burst×1000/rate whole milliseconds, rounded down, so that a bucket
// that was nearly empty before an idle time longer than that refills to
// less than full, short by less than one millisecond of refill; here it
// refills to full, as a token bucket does (TestMeterKernelRefillCap).
//
// The packet path takes no lock. A band's state is one word: its bucket
// written as the "full-again time" of the generic cell rate algorithm,
// scaled by the rate (tat×rate, in bucket units since the meter was
// made), so that bucket = burst − max(0, tat×rate − now×rate) with
// integers only, and a charge is one compare-and-swap of
// max(tat×rate, now×rate) + cost. This is the kernel's bucket exactly
// (the same refills on the same milliseconds), without its per-meter
// spinlock; the statistics are atomic counters. The arithmetic is
// modulo 2^64 and read as a signed difference, which is right while a
// meter is idle for less than 2^63 / rate milliseconds (2.9 years at
// 100 Gbit/s).

const (
	// maxMeters is DP_METER_NUM_MAX, the kernel's bound on
	// max_meters_allowed (which it lowers on a machine with little
	// memory).
	maxMeters = 200000
	// maxMeterBands is DP_MAX_BANDS.
	maxMeterBands = 1
	// meterSlotsMin is DP_METER_ARRAY_SIZE_MIN.
	meterSlotsMin = 1024
)

// meter is one meter. Its configuration is fixed once it is in the
// table: SetMeter replaces the meter.
type meter struct {
	id        uint32
	kbps      bool
	keepStats bool
	bands     []meterBand

	packets, bytes atomic.Uint64
	used           atomic.Uint64 // CLOCK_MONOTONIC ms
}

// meterBand is one band of a meter.
type meterBand struct {
	typ      uint32
	rate     uint64 // bucket units per ms
	capacity int64  // burst × 1000 bucket units
	burst    uint32
	tat      atomic.Uint64 // full-again time × rate, modulo 2^64
	packets  atomic.Uint64
	bytes    atomic.Uint64
}

// meterSlots is one generation of the meter table, read without a lock.
type meterSlots struct {
	slots []atomic.Pointer[meter]
}

// meterTable is a datapath's meters.
type meterTable struct {
	mu    sync.Mutex // SetMeter and DelMeter
	cur   atomic.Pointer[meterSlots]
	count int
}

func newMeterSlots(n int) *meterSlots {
	return &meterSlots{slots: make([]atomic.Pointer[meter], n)}
}

// lookup returns meter id, or nil.
func (t *meterTable) lookup(id uint32) *meter {
	s := t.cur.Load()
	if s == nil {
		return nil
	}
	m := s.slots[id%uint32(len(s.slots))].Load()
	if m != nil && m.id == id {
		return m
	}
	return nil
}

// resize moves the meters to a table of n slots (at the same indexes, as
// the kernel does: a meter's slot is its ID modulo the size, and a
// shrink happens only when the upper half is empty).
func (t *meterTable) resize(n int) {
	old := t.cur.Load()
	s := newMeterSlots(n)
	for i := 0; i < len(old.slots) && i < n; i++ {
		s.slots[i].Store(old.slots[i].Load())
	}
	t.cur.Store(s)
}

// attach inserts m (ovs_meter's attach_meter).
func (t *meterTable) attach(m *meter) error {
	s := t.cur.Load()
	slot := &s.slots[m.id%uint32(len(s.slots))]
	if o := slot.Load(); o != nil {
		return fmt.Errorf("meter %d: its slot is taken by meter %d: %w", m.id, o.id, syscall.EBUSY)
	}
	if t.count+1 >= maxMeters {
		return fmt.Errorf("meter %d: %d meters is the datapath's limit: %w", m.id, maxMeters-1, syscall.EFBIG)
	}
	slot.Store(m)
	t.count++
	if t.count >= len(s.slots) {
		t.resize(2 * len(s.slots))
	}
	return nil
}

// detach removes m (detach_meter).
func (t *meterTable) detach(m *meter) {
	s := t.cur.Load()
	s.slots[m.id%uint32(len(s.slots))].Store(nil)
	t.count--
	if n := len(s.slots); n > meterSlotsMin && t.count <= n/4 {
		for i := n / 2; i < n; i++ {
			if s.slots[i].Load() != nil {
				return
			}
		}
		t.resize(n / 2)
	}
}

// newMeter validates a meter as dp_meter_create does.
func newMeter(m odp.MeterInfo, clearStats bool, nowMs uint64) (*meter, error) {
	if len(m.Bands) == 0 {
		return nil, fmt.Errorf("meter %d: no band: %w", m.ID, syscall.EINVAL)
	}
	if len(m.Bands) > maxMeterBands {
		return nil, fmt.Errorf("meter %d: %d bands, at most %d: %w", m.ID, len(m.Bands), maxMeterBands, syscall.EINVAL)
	}
	nm := &meter{id: m.ID, kbps: m.KBPS, keepStats: !clearStats, bands: make([]meterBand, len(m.Bands))}
	nm.used.Store(nowMs)
	for i, b := range m.Bands {
		if b.Rate == 0 {
			return nil, fmt.Errorf("meter %d: band %d: rate 0: %w", m.ID, i, syscall.EINVAL)
		}
		nb := &nm.bands[i]
		nb.typ, nb.rate, nb.burst = b.Type, uint64(b.Rate), b.Burst
		if nb.typ == 0 {
			nb.typ = odp.MeterBandDrop
		}
		nb.capacity = int64(b.Burst) * 1000
		// Full: the full-again time is now.
		nb.tat.Store(nowMs * nb.rate)
	}
	return nm, nil
}

// charge runs a packet of n bytes through the meter at nowMs and reports
// whether a drop band dropped it (ovs_meter_execute).
func (m *meter) charge(n int, nowMs uint64) bool {
	m.used.Store(nowMs)
	m.packets.Add(1)
	m.bytes.Add(uint64(n))
	cost := int64(1000)
	if m.kbps {
		cost = int64(n) * 8
	}
	exceeded := -1
	var exceededRate uint64
	for i := range m.bands {
		b := &m.bands[i]
		now := nowMs * b.rate
		for {
			tat := b.tat.Load()
			ahead := int64(tat - now) // bucket units below full
			start := tat
			if ahead < 0 {
				ahead, start = 0, now
			}
			if b.capacity-ahead < cost {
				if b.rate > exceededRate {
					exceeded, exceededRate = i, b.rate
				}
				break
			}
			if b.tat.CompareAndSwap(tat, start+uint64(cost)) {
				break
			}
		}
	}
	if exceeded < 0 {
		return false
	}
	b := &m.bands[exceeded]
	b.packets.Add(1)
	b.bytes.Add(uint64(n))
	return b.typ == odp.MeterBandDrop
}

// info returns the meter's configuration and statistics.
func (m *meter) info() *odp.MeterInfo {
	mi := &odp.MeterInfo{ID: m.id, KBPS: m.kbps, Packets: m.packets.Load(), Bytes: m.bytes.Load(), Used: m.used.Load()}
	for i := range m.bands {
		b := &m.bands[i]
		mi.Bands = append(mi.Bands, odp.MeterBand{Type: b.typ, Rate: uint32(b.rate), Burst: b.burst,
			Packets: b.packets.Load(), Bytes: b.bytes.Load()})
	}
	return mi
}

var _ odp.Meters = (*Datapath)(nil)

// MeterFeatures implements odp.Meters: up to 199,999 meters of one drop
// band, as the kernel on a machine with enough memory.
func (dp *Datapath) MeterFeatures(context.Context) (odp.MeterFeatures, error) {
	return odp.MeterFeatures{MaxMeters: maxMeters, MaxBands: maxMeterBands, BandTypes: []uint32{odp.MeterBandDrop}}, nil
}

// SetMeter implements odp.Meters: it adds meter m.ID, or replaces it
// (its bucket starts full again and its statistics from zero).
func (dp *Datapath) SetMeter(_ context.Context, m odp.MeterInfo, clearStats bool) error {
	nm, err := newMeter(m, clearStats, dp.nowMs())
	if err != nil {
		return fmt.Errorf("userdp: set meter: %w", err)
	}
	t := &dp.meters
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.cur.Load() == nil {
		t.cur.Store(newMeterSlots(meterSlotsMin))
	}
	// As the kernel: the old meter goes first, and stays gone if the
	// new one cannot be attached.
	if old := t.lookup(m.ID); old != nil {
		t.detach(old)
	}
	if err := t.attach(nm); err != nil {
		return fmt.Errorf("userdp: set meter: %w", err)
	}
	return nil
}

// GetMeter implements odp.Meters.
func (dp *Datapath) GetMeter(_ context.Context, id uint32) (*odp.MeterInfo, error) {
	m := dp.meters.lookup(id)
	if m == nil {
		return nil, fmt.Errorf("userdp: get meter %d: %w", id, syscall.ENOENT)
	}
	return m.info(), nil
}

// DelMeter implements odp.Meters: it deletes a meter and returns its
// final statistics; for a meter that does not exist it returns one with
// only the ID, as the kernel replies.
func (dp *Datapath) DelMeter(_ context.Context, id uint32) (*odp.MeterInfo, error) {
	t := &dp.meters
	t.mu.Lock()
	defer t.mu.Unlock()
	m := t.lookup(id)
	if m == nil {
		return &odp.MeterInfo{ID: id}, nil
	}
	t.detach(m)
	return m.info(), nil
}
