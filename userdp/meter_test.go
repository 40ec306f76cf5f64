package userdp

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"syscall"
	"testing"

	"github.com/ovsdp/ovsdp/odp"
)

// kernelBand is the kernel's bucket (ovs_meter_execute), written as
// directly as it is there, to check charge against. With capped false
// it leaves out the kernel's cap of a refill at max_delta_t whole
// milliseconds (see TestMeterKernelRefillCap).
type kernelBand struct {
	rate, burst uint64
	bucket      uint64
	used        uint64
	maxDeltaT   uint64
	kbps        bool
}

func newKernelBand(rate, burst uint32, kbps, capped bool, now uint64) *kernelBand {
	k := &kernelBand{rate: uint64(rate), burst: uint64(burst), kbps: kbps, used: now}
	k.bucket = k.burst * 1000
	k.maxDeltaT = ^uint64(0) / (k.rate + 1)
	if capped {
		k.maxDeltaT = k.bucket / k.rate
	}
	return k
}

func (k *kernelBand) charge(n int, now uint64) bool {
	delta := now - k.used
	if now < k.used {
		delta = 0
	}
	if delta > k.maxDeltaT {
		delta = k.maxDeltaT
	}
	k.used = now
	cost := uint64(1000)
	if k.kbps {
		cost = uint64(n) * 8
	}
	k.bucket += delta * k.rate
	if max := k.burst * 1000; k.bucket > max {
		k.bucket = max
	}
	if k.bucket >= cost {
		k.bucket -= cost
		return false
	}
	return true
}

// TestMeterMatchesKernelBucket runs random packet sequences through a
// meter and through the kernel's bucket: every pass and drop agrees.
func TestMeterMatchesKernelBucket(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 300; trial++ {
		kbps := rng.IntN(2) == 0
		rate := uint32(1 + rng.IntN(100000))
		burst := uint32(rng.IntN(20000))
		if rng.IntN(4) == 0 {
			rate = uint32(1 + rng.IntN(50))
			burst = uint32(rng.IntN(50))
		}
		now := uint64(1e9) + rng.Uint64N(1e12)
		m, err := newMeter(odp.MeterInfo{ID: 1, KBPS: kbps, Bands: []odp.MeterBand{{Rate: rate, Burst: burst}}}, false, now)
		if err != nil {
			t.Fatal(err)
		}
		k := newKernelBand(rate, burst, kbps, false, now)
		drops := 0
		for i := 0; i < 2000; i++ {
			switch rng.IntN(4) {
			case 0: // the same millisecond
			case 1:
				now++
			case 2:
				now += rng.Uint64N(20)
			default:
				now += rng.Uint64N(5000)
			}
			n := 60 + rng.IntN(1440)
			want := k.charge(n, now)
			if got := m.charge(n, now); got != want {
				t.Fatalf("trial %d (rate %d burst %d kbps %v) packet %d (%d bytes at %d ms): dropped %v, kernel %v",
					trial, rate, burst, kbps, i, n, now, got, want)
			}
			if want {
				drops++
			}
		}
		info := m.info()
		if info.Packets != 2000 || info.Bands[0].Packets != uint64(drops) {
			t.Fatalf("trial %d: stats %+v, want 2000 packets, %d in the band", trial, info, drops)
		}
	}
}

// TestMeterKernelRefillCap documents the one way the kernel's bucket
// differs from a token bucket, and so from charge: it caps a refill at
// max_delta_t = burst×1000/rate milliseconds, rounded down, so that after
// an idle time longer than that a nearly empty bucket refills to less
// than full (short by less than one millisecond of refill). Here (17
// packets/s, burst 3) the kernel passes 2 packets after the idle time and
// charge, like a token bucket, 3.
func TestMeterKernelRefillCap(t *testing.T) {
	m, _ := newMeter(odp.MeterInfo{ID: 1, Bands: []odp.MeterBand{{Rate: 17, Burst: 3}}}, false, 1000)
	k := newKernelBand(17, 3, false, true, 1000)
	for i := 0; i < 3; i++ { // empty both buckets
		if m.charge(64, 1000) || k.charge(64, 1000) {
			t.Fatalf("packet %d of the burst dropped", i)
		}
	}
	passM, passK := 0, 0
	for i := 0; i < 3; i++ {
		if !m.charge(64, 5000) {
			passM++
		}
		if !k.charge(64, 5000) {
			passK++
		}
	}
	if passM != 3 || passK != 2 {
		t.Errorf("after the idle time: %d passed (kernel %d), want 3 (kernel 2)", passM, passK)
	}
}

// TestMeterConcurrentCharges charges one meter from several goroutines at
// once, all in one millisecond: exactly the burst passes.
func TestMeterConcurrentCharges(t *testing.T) {
	const burst, perG, gs = 500, 400, 8
	m, err := newMeter(odp.MeterInfo{ID: 7, Bands: []odp.MeterBand{{Rate: 1, Burst: burst}}}, false, 1000)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	passed := 0
	for g := 0; g < gs; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := 0
			for i := 0; i < perG; i++ {
				if !m.charge(64, 1000) {
					p++
				}
			}
			mu.Lock()
			passed += p
			mu.Unlock()
		}()
	}
	wg.Wait()
	if passed != burst {
		t.Errorf("%d packets passed, want the burst of %d", passed, burst)
	}
	if info := m.info(); info.Packets != gs*perG || info.Bands[0].Packets != gs*perG-burst {
		t.Errorf("stats %+v", info)
	}
}

// newBareDatapath is a datapath without ports, closed by the test's end.
func newBareDatapath(t *testing.T) *Datapath {
	t.Helper()
	dp, err := New("meters", WithoutLocalPort())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dp.Close() })
	return dp
}

// TestMeterTable checks the meter commands' results and errors against
// the kernel's.
func TestMeterTable(t *testing.T) {
	ctx, dp := context.Background(), newBareDatapath(t)
	band := []odp.MeterBand{{Type: odp.MeterBandDrop, Rate: 10, Burst: 5}}
	for _, c := range []struct {
		name string
		m    odp.MeterInfo
		want error
	}{
		{"no band", odp.MeterInfo{ID: 1}, syscall.EINVAL},
		{"two bands", odp.MeterInfo{ID: 1, Bands: append(band, band...)}, syscall.EINVAL},
		{"rate 0", odp.MeterInfo{ID: 1, Bands: []odp.MeterBand{{Rate: 0, Burst: 5}}}, syscall.EINVAL},
	} {
		if err := dp.SetMeter(ctx, c.m, false); !errors.Is(err, c.want) {
			t.Errorf("%s: SetMeter: %v, want %v", c.name, err, c.want)
		}
	}
	if _, err := dp.GetMeter(ctx, 3); !errors.Is(err, syscall.ENOENT) {
		t.Errorf("GetMeter of a missing meter: %v, want ENOENT", err)
	}
	if m, err := dp.DelMeter(ctx, 3); err != nil || m.ID != 3 || len(m.Bands) != 0 {
		t.Errorf("DelMeter of a missing meter: %+v, %v; want the ID only", m, err)
	}
	if err := dp.SetMeter(ctx, odp.MeterInfo{ID: 0, Bands: band}, false); err != nil {
		t.Fatal(err)
	}
	// ID 1024 falls in ID 0's slot of the 1024-slot table.
	if err := dp.SetMeter(ctx, odp.MeterInfo{ID: meterSlotsMin, Bands: band}, false); !errors.Is(err, syscall.EBUSY) {
		t.Errorf("SetMeter in a taken slot: %v, want EBUSY", err)
	}
	// Replacing a meter is allowed.
	if err := dp.SetMeter(ctx, odp.MeterInfo{ID: 0, KBPS: true, Bands: band}, false); err != nil {
		t.Errorf("replacing meter 0: %v", err)
	}
	m, err := dp.GetMeter(ctx, 0)
	if err != nil || !m.KBPS || len(m.Bands) != 1 || m.Bands[0].Rate != 10 || m.Bands[0].Burst != 5 {
		t.Errorf("GetMeter(0) = %+v, %v", m, err)
	}
	// The table grows past its first 1024 slots, then 1024 and 0 fit.
	for id := uint32(1); id < 1100; id++ {
		if err := dp.SetMeter(ctx, odp.MeterInfo{ID: id, Bands: band}, false); err != nil {
			t.Fatalf("SetMeter(%d): %v", id, err)
		}
	}
	for id := uint32(0); id < 1100; id++ {
		if _, err := dp.GetMeter(ctx, id); err != nil {
			t.Fatalf("GetMeter(%d) after growing: %v", id, err)
		}
	}
	for id := uint32(0); id < 1100; id++ {
		if m, err := dp.DelMeter(ctx, id); err != nil || m.ID != id || len(m.Bands) != 1 {
			t.Fatalf("DelMeter(%d) = %+v, %v", id, m, err)
		}
	}
	if dp.meters.count != 0 || len(dp.meters.cur.Load().slots) != meterSlotsMin {
		t.Errorf("after deleting every meter: %d meters in %d slots", dp.meters.count, len(dp.meters.cur.Load().slots))
	}
	f, _ := dp.MeterFeatures(ctx)
	if f.MaxMeters != maxMeters || f.MaxBands != 1 || len(f.BandTypes) != 1 || f.BandTypes[0] != odp.MeterBandDrop {
		t.Errorf("features %+v", f)
	}
}

// TestMeterLimit fills the table: the kernel refuses the meter that
// would make max_meters_allowed (EFBIG).
func TestMeterLimit(t *testing.T) {
	ctx, dp := context.Background(), newBareDatapath(t)
	band := []odp.MeterBand{{Rate: 1, Burst: 1}}
	for id := uint32(0); id < maxMeters-1; id++ {
		if err := dp.SetMeter(ctx, odp.MeterInfo{ID: id, Bands: band}, false); err != nil {
			t.Fatalf("SetMeter(%d): %v", id, err)
		}
	}
	if err := dp.SetMeter(ctx, odp.MeterInfo{ID: maxMeters - 1, Bands: band}, false); !errors.Is(err, syscall.EFBIG) {
		t.Errorf("meter number %d: %v, want EFBIG", maxMeters, err)
	}
}

// TestMeterAction sends a burst through a flow with meter(): the
// burst's worth passes, the rest is dropped and counted in the band; a
// missing meter passes everything.
func TestMeterAction(t *testing.T) {
	h := newHarness(t, 2)
	ctx := context.Background()
	if err := h.dp.SetMeter(ctx, odp.MeterInfo{ID: 1, Bands: []odp.MeterBand{{Rate: 1, Burst: 5}}}, false); err != nil {
		t.Fatal(err)
	}
	h.put("in_port(1),eth(),eth_type(0x0800),ipv4(proto=17),udp()", "meter(1),2")
	h.put("in_port(2),eth(),eth_type(0x0800),ipv4(proto=17),udp()", "meter(9),1")
	f := udpFrame(1, 2, 100)
	frames := make([][]byte, 20)
	for i := range frames {
		frames[i] = f
	}
	h.send(1, frames...)
	for i := 0; i < 5; i++ {
		h.expect(2)
	}
	h.waitStats(20)
	h.expectNone(2)
	m, err := h.dp.GetMeter(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	// A packet a second refills the bucket: a slow test run may pass one
	// or two more.
	if m.Packets != 20 || m.Bytes != 20*uint64(len(f)) || m.Bands[0].Packets < 13 || m.Bands[0].Packets > 15 {
		t.Errorf("meter stats %+v, want 20 packets, 13 to 15 over the band", m)
	}
	h.send(2, frames[:3]...)
	for i := 0; i < 3; i++ {
		h.expect(1)
	}
}

// TestMeterChargeAllocs: the packet path allocates nothing.
func TestMeterChargeAllocs(t *testing.T) {
	m, _ := newMeter(odp.MeterInfo{ID: 1, KBPS: true, Bands: []odp.MeterBand{{Rate: 1000, Burst: 100}}}, false, 0)
	var tab meterTable
	tab.cur.Store(newMeterSlots(meterSlotsMin))
	tab.attach(m)
	now := uint64(0)
	if a := testing.AllocsPerRun(1000, func() {
		now++
		tab.lookup(1).charge(1000, now)
	}); a != 0 {
		t.Errorf("%v allocations per metered packet, want 0", a)
	}
}

func BenchmarkMeterCharge(b *testing.B) {
	m, _ := newMeter(odp.MeterInfo{ID: 1, KBPS: true, Bands: []odp.MeterBand{{Rate: 1e6, Burst: 1e5}}}, false, 0)
	b.RunParallel(func(pb *testing.PB) {
		now := uint64(0)
		for pb.Next() {
			now++
			m.charge(64, now/64)
		}
	})
}
