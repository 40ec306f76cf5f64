package daemon

import (
	"bytes"
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ovsdp/ovsdp/cmd/upcalld/statusaddr"
	"github.com/ovsdp/ovsdp/odp"
)

// TestTokenBucket: a full bucket gives burst tokens at once, then one
// per interval; a long quiet spell refills it to burst, not beyond; and
// handlers taking at once get exactly the tokens there are.
func TestTokenBucket(t *testing.T) {
	const s = int64(time.Second)
	b := newTokenBucket(10, 3) // a token every 100ms, 3 at most
	now := 100 * s
	var got []bool
	for range 5 {
		got = append(got, b.take(now))
	}
	if want := []bool{true, true, true, false, false}; !equalBools(got, want) {
		t.Fatalf("a full bucket of 3: %v, want %v", got, want)
	}
	if b.take(now + s/10 - 1) {
		t.Error("a token before its interval passed")
	}
	if !b.take(now+s/10) || b.take(now+s/10) {
		t.Error("not exactly one token after one interval")
	}
	now += 60 * s // a quiet minute: 3 tokens, not 600
	n := 0
	for b.take(now) {
		n++
		if n > 100 {
			break
		}
	}
	if n != 3 {
		t.Errorf("after a quiet minute the bucket gave %d tokens, want 3", n)
	}

	// Concurrent takers at one instant share exactly the burst.
	b = newTokenBucket(1, 50)
	var ok atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				if b.take(now) {
					ok.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if ok.Load() != 50 {
		t.Errorf("8 concurrent takers got %d tokens of a burst of 50", ok.Load())
	}
	if testing.AllocsPerRun(100, func() { b.take(now) }) != 0 {
		t.Error("take allocates")
	}
}

func equalBools(a, b []bool) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestPacketIns: the upcalls of a controller action reach the packet-in
// subscribers with the packet, its key and the userdata; past the burst
// the rate limit drops them, counted in the metric and in Status, and
// the next packet-in a subscriber gets says how many it missed. Before
// anybody subscribes they are dropped as "no_subscriber".
func TestPacketIns(t *testing.T) {
	h := newHarness(t, 2, Config{
		Rules:        mustRules(t, "priority=10,udp,actions=controller(userdata=0a.0b),output:2\n"),
		PacketInRate: 10, PacketInBurst: 3,
	})
	var clock atomic.Int64 // the bucket's clock, moved by the test
	clock.Store(int64(time.Hour))
	h.d.pins.now = clock.Load
	h.start()
	_, path := serveStatus(t, h.d)
	frame := func(i int) []byte {
		return udpFrame(macN(1), macN(2), ip4(10, 0, 0, 1), ip4(10, 0, 0, 2), 1000, uint16(i), 0)
	}
	waitController := func(n uint64) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); h.d.Status().Controller < n; {
			if time.Now().After(deadline) {
				t.Fatalf("controller upcalls: %d, want %d", h.d.Status().Controller, n)
			}
			time.Sleep(time.Millisecond)
		}
	}
	// Nobody listens yet.
	h.send(1, frame(0))
	h.expect(2, frame(0))
	waitController(1)
	if got := h.counter("upcalld_packet_ins_dropped_total", "reason="+pinNoSubscriber); got != 1 {
		t.Errorf("packet-ins dropped with no subscriber: %v, want 1", got)
	}

	_, dec, _ := subscribeStatus(t, path, statusaddr.SubscribePacketIns, &h.d.pins.subs)
	// The upcall stream has no subscriber: what comes is packet-ins only.
	for i := 1; i <= 10; i++ {
		h.send(1, frame(i))
		h.expect(2, frame(i))
	}
	waitController(11)
	read := func() statusaddr.Upcall {
		t.Helper()
		var ev statusaddr.Upcall
		if err := dec.Decode(&ev); err != nil {
			t.Fatalf("reading a packet-in: %v", err)
		}
		return ev
	}
	for i := 1; i <= 3; i++ {
		ev := read()
		if ev.Seq != uint64(i) || ev.Kind != uint8(odp.UpcallAction) || ev.Port != 1 || !bytes.Equal(ev.Packet, frame(i)) ||
			!bytes.Equal(ev.Userdata, []byte{0x0a, 0x0b}) || ev.RateLimited != 0 {
			t.Errorf("packet-in %d: %+v", i, ev)
		}
		key, err := odp.UnmarshalKey(ev.Key)
		if err != nil || key.Find(odp.KeyInPort) != odp.InPort(1) {
			t.Errorf("packet-in %d: key %v: %v", i, key, err)
		}
	}
	if got := h.counter("upcalld_packet_ins_dropped_total", "reason="+pinRateLimit); got != 7 {
		t.Errorf("packet-ins over the rate: %v, want 7", got)
	}
	if got := h.counter("upcalld_packet_ins_total"); got != 3 {
		t.Errorf("packet-ins sent: %v, want 3", got)
	}
	if st := h.d.Status(); st.PacketIns != 3 || st.PacketInDrops != 8 {
		t.Errorf("status: packet-ins sent %d, dropped %d; want 3 and 8", st.PacketIns, st.PacketInDrops)
	}
	// One interval later there is one token again, and the packet-in
	// that takes it tells of the 7 the rate limit dropped.
	clock.Add(int64(time.Second / 10))
	h.send(1, frame(11))
	h.expect(2, frame(11))
	ev := read()
	if ev.Seq != 4 || !bytes.Equal(ev.Packet, frame(11)) || ev.RateLimited != 7 {
		t.Errorf("packet-in after the refill: seq %d, rate limited %d, packet ok %v; want 4, 7, true", ev.Seq, ev.RateLimited, bytes.Equal(ev.Packet, frame(11)))
	}
	if raw, _ := json.Marshal(ev); !bytes.Contains(raw, []byte(`"rate_limited":7`)) {
		t.Errorf("the stream's JSON: %s", raw)
	}
}

// TestPacketInsNeedNoAllocationWithoutSubscriber: with nobody
// subscribed, a controller upcall costs a counter, not a copy.
func TestPacketInsNeedNoAllocationWithoutSubscriber(t *testing.T) {
	h := newHarness(t, 2, Config{})
	up := &odp.Upcall{Kind: odp.UpcallAction, Port: 1, Packet: make([]byte, 60)}
	if n := testing.AllocsPerRun(100, func() { h.d.packetIn(up) }); n != 0 {
		t.Errorf("packetIn with no subscriber: %v allocations", n)
	}
}
