package daemon

import (
	"sync/atomic"
	"time"

	"github.com/ovsdp/ovsdp/cmd/upcalld/statusaddr"
	"github.com/ovsdp/ovsdp/odp"
)

// Packet-ins: the upcalls of "controller" actions (userspace actions to
// the daemon's controller port) go, with their key, to the status
// socket's packet-in subscribers (statusaddr.SubscribePacketIns, what
// `dpctl monitor --packet-ins` reads), through a token bucket as Open
// vSwitch's controller_rate_limit and controller_burst_limit do: a
// flood of packet-ins costs the daemon at most the rate, and what the
// bucket refuses is counted (upcalld_packet_ins_dropped_total
// {reason="rate_limit"}) and told to the subscribers with the next
// packet-in they get. With no subscriber a packet-in is dropped, and
// counted (reason "no_subscriber"), before the bucket is consulted.

// Defaults of Config.PacketInRate and PacketInBurst.
const (
	// DefaultPacketInRate is the packet-ins per second the daemon sends
	// its subscribers at most.
	DefaultPacketInRate = 1000
	// A PacketInBurst of 0 means max(1, rate/4), as in Open vSwitch.
	defaultBurstDivisor = 4
)

// Reasons a packet-in is dropped (upcalld_packet_ins_dropped_total).
const (
	pinNoSubscriber = "no_subscriber"
	pinRateLimit    = "rate_limit"
	pinQueueFull    = "queue_full"
)

// tokenBucket is a token bucket of rate tokens a second holding at most
// burst, kept as the time at which it would be full again (the generic
// cell rate algorithm): one atomic word, no lock, no allocation, so that
// every handler may take from it at once.
type tokenBucket struct {
	interval int64 // nanoseconds per token
	depth    int64 // burst * interval
	// full is when the bucket is (or was) full again, in nanoseconds of
	// the caller's clock; at or before now, the bucket holds burst.
	full atomic.Int64
}

// newTokenBucket makes a bucket of rate tokens a second (> 0) and burst
// tokens at most (>= 1), full.
func newTokenBucket(rate float64, burst int) *tokenBucket {
	iv := int64(float64(time.Second) / rate)
	if iv < 1 {
		iv = 1
	}
	return &tokenBucket{interval: iv, depth: iv * int64(burst)}
}

// take takes one token at now (nanoseconds, non-decreasing in the
// large), and reports whether there was one.
func (b *tokenBucket) take(now int64) bool {
	for {
		old := b.full.Load()
		next := max(old, now) + b.interval
		if next-now > b.depth {
			return false
		}
		if b.full.CompareAndSwap(old, next) {
			return true
		}
	}
}

// packetIns is the daemon's packet-in state.
type packetIns struct {
	subs    tapSet
	bucket  *tokenBucket
	limited atomic.Uint64 // refused by the bucket since the last one sent
	sent    atomic.Uint64
	dropped atomic.Uint64
	// now is the clock (time.Now().UnixNano unless a test sets it).
	now func() int64
}

// packetIn hands the controller upcall up to the packet-in subscribers,
// if there are any and the bucket has a token.
func (d *Daemon) packetIn(up *odp.Upcall) {
	p := &d.pins
	if p.subs.n.Load() == 0 {
		d.m.packetInDrops[pinNoSubscriberIdx].Inc()
		p.dropped.Add(1)
		return
	}
	now := p.now()
	if !p.bucket.take(now) {
		p.limited.Add(1)
		d.m.packetInDrops[pinRateLimitIdx].Inc()
		p.dropped.Add(1)
		return
	}
	ev := upcallEvent(up, now)
	ev.RateLimited = p.limited.Swap(0)
	if full := p.subs.publishEvent(&ev); full > 0 {
		d.m.packetInDrops[pinQueueFullIdx].Add(float64(full))
		p.dropped.Add(uint64(full))
	}
	d.m.packetInsSent.Inc()
	p.sent.Add(1)
}

// Indexes of metrics.packetInDrops.
const (
	pinNoSubscriberIdx = iota
	pinRateLimitIdx
	pinQueueFullIdx
	numPinDrops
)

var pinDropNames = [numPinDrops]string{pinNoSubscriber, pinRateLimit, pinQueueFull}

// upcallEvent is up as a subscription streams it (its key, packet,
// userdata and egress tunnel key copied), received at now (Unix
// nanoseconds); the caller sets Seq.
func upcallEvent(up *odp.Upcall, now int64) statusaddr.Upcall {
	key, err := odp.MarshalKey(up.Key)
	if err != nil {
		key = nil
	}
	var egress []byte
	if up.EgressTunnel != nil {
		// A key the datapath decoded or built always encodes; should
		// one not, the stream goes without it rather than without the
		// upcall.
		egress, _ = odp.MarshalKey(odp.FlowKey{*up.EgressTunnel})
	}
	return statusaddr.Upcall{Kind: uint8(up.Kind), Port: up.Port, Key: key,
		Packet: append([]byte(nil), up.Packet...), Userdata: append([]byte(nil), up.Userdata...),
		EgressTunKey: egress, TimeNS: now}
}
