package conntrack

import (
	"errors"
	"slices"
	"time"
)

// Entry is one tracked connection as a dump shows it (the shape of
// dpctl's dump-conntrack entries: see odp.CTEntry).
type Entry struct {
	// Orig and Reply are the two directions' tuples (they differ by
	// more than a swap when the connection is NATed).
	Orig, Reply Tuple
	Zone        uint16
	Mark        uint32
	Labels      [16]byte
	// Status is the IPS_* bits (Status* constants).
	Status uint32
	// Timeout is the whole seconds left before the entry expires.
	Timeout uint32
	// OrigPackets... count each direction's packets and bytes (zero
	// unless the tracker has Config.Accounting).
	OrigPackets, OrigBytes, ReplyPackets, ReplyBytes uint64
	// TCP is the state of a TCP connection; WScaleOrig, WScaleReply and
	// TCPFlagsOrig, TCPFlagsReply each direction's window scale and
	// IP_CT_TCP_FLAG_* bits.
	TCP                         TCPState
	WScaleOrig, WScaleReply     uint8
	TCPFlagsOrig, TCPFlagsReply uint8
	// Bucket is the hash bucket of the original direction's entry, from
	// 0 to Tracker.Buckets()-1 (ct-bkts).
	Bucket int
}

func (t *Tracker) entry(c *conn, now int64) Entry {
	e := Entry{
		Orig: c.e0.tuple, Reply: c.e1.tuple,
		Zone: c.e0.zone, Mark: c.mark.Load(), Labels: c.labelBytes(), Status: c.status.Load() &^ statusInternal,
		OrigPackets: c.pkts[dirOrig].Load(), OrigBytes: c.bytes[dirOrig].Load(),
		ReplyPackets: c.pkts[dirReply].Load(), ReplyBytes: c.bytes[dirReply].Load(),
		Bucket: t.tab.bucket(t.tab.seed.hash(&c.e0.tuple, c.e0.zone)),
	}
	if left := c.expires.Load() - now; left > 0 {
		e.Timeout = uint32(left / int64(time.Second))
	}
	if e.Orig.Proto == ProtoTCP {
		c.mu.Lock()
		e.TCP = c.tcp.state
		e.WScaleOrig, e.WScaleReply = c.tcp.seen[0].scale, c.tcp.seen[1].scale
		e.TCPFlagsOrig, e.TCPFlagsReply = c.tcp.seen[0].flags, c.tcp.seen[1].flags
		c.mu.Unlock()
	}
	return e
}

// Filter selects connections for Dump and Flush; the zero value selects
// all.
type Filter struct {
	// HasZone restricts to Zone.
	HasZone bool
	Zone    uint16
	// Orig and Reply, when not nil, restrict a flush to the connection
	// with that original or reply tuple (Dump ignores them).
	Orig, Reply *Tuple
	// Match, when not nil, restricts a flush to the connections whose
	// entry it accepts (a partial tuple, as dpctl flush-conntrack gives).
	Match func(*Entry) bool
}

func (f *Filter) zoneOK(c *conn) bool { return !f.HasZone || c.e0.zone == f.Zone }

// Dump calls fn for every live connection f selects; an error from fn
// stops the dump and is returned. Connections committed or deleted while
// it runs may or may not be seen.
func (t *Tracker) Dump(f Filter, fn func(*Entry) error) error {
	now := t.now()
	var err error
	t.tab.each(0, len(t.tab.buckets), func(c *conn) {
		if err != nil || !f.zoneOK(c) || c.expires.Load() <= now {
			return
		}
		e := t.entry(c, now)
		err = fn(&e)
	})
	return err
}

// Flush deletes the connections f selects and returns how many.
func (t *Tracker) Flush(f Filter) int {
	var victims []*conn
	now := t.now()
	t.tab.each(0, len(t.tab.buckets), func(c *conn) {
		if !f.zoneOK(c) {
			return
		}
		if f.Orig != nil && c.e0.tuple != *f.Orig {
			return
		}
		if f.Reply != nil && c.e1.tuple != *f.Reply {
			return
		}
		if f.Match != nil {
			if e := t.entry(c, now); !f.Match(&e) {
				return
			}
		}
		victims = append(victims, c)
	})
	n := 0
	for _, c := range victims {
		if t.delete(c) {
			n++
		}
	}
	return n
}

// Count returns the number of committed connections (expired ones the
// sweeper has not reached yet included, as the kernel's count).
func (t *Tracker) Count() int { return int(t.count.Load()) }

// MaxConns returns the global maximum.
func (t *Tracker) MaxConns() uint32 { return t.max.Load() }

// SetMaxConns sets the global maximum (0: no maximum). Connections above
// a lowered maximum stay until they end.
func (t *Tracker) SetMaxConns(n uint32) { t.max.Store(n) }

// Stats returns the tracker's counters.
func (t *Tracker) Stats() Stats {
	return Stats{Invalid: t.invalid.Load(), Insert: t.insert.Load(), InsertFailed: t.insertFail.Load(),
		Drop: t.drop.Load(), Error: t.errs.Load()}
}

// DefaultZone in SetZoneLimit and ZoneLimit selects the default limit,
// which applies to every zone without its own (OVS_ZONE_LIMIT_DEFAULT_ZONE).
const DefaultZone = -1

// ErrZone is returned for a zone outside 0-65535 and not DefaultZone.
var ErrZone = errors.New("conntrack zone out of range")

// SetZoneLimit sets the connection limit of zone (or the default limit,
// for DefaultZone); 0 means unlimited, as OVS_CT_LIMIT_UNLIMITED. A zone
// over a lowered limit keeps its connections; new commits are refused.
func (t *Tracker) SetZoneLimit(zone int, limit uint32) error {
	t.limMu.Lock()
	defer t.limMu.Unlock()
	switch {
	case zone == DefaultZone:
		t.defLimit = limit
	case zone >= 0 && zone <= 0xffff:
		t.limits[uint16(zone)] = limit
	default:
		return ErrZone
	}
	t.limitsOn.Store(t.defLimit != 0 || len(t.limits) > 0)
	return nil
}

// DeleteZoneLimit makes zone follow the default limit again (for
// DefaultZone: the default becomes unlimited).
func (t *Tracker) DeleteZoneLimit(zone int) error {
	t.limMu.Lock()
	defer t.limMu.Unlock()
	switch {
	case zone == DefaultZone:
		t.defLimit = 0
	case zone >= 0 && zone <= 0xffff:
		delete(t.limits, uint16(zone))
	default:
		return ErrZone
	}
	t.limitsOn.Store(t.defLimit != 0 || len(t.limits) > 0)
	return nil
}

// ZoneLimit returns zone's limit (its own or the default) and its count
// of connections, which are those committed while the zone had a limit,
// as the kernel counts them; for DefaultZone, the default limit and 0.
func (t *Tracker) ZoneLimit(zone int) (limit uint32, count int, err error) {
	switch {
	case zone == DefaultZone:
		t.limMu.RLock()
		defer t.limMu.RUnlock()
		return t.defLimit, 0, nil
	case zone >= 0 && zone <= 0xffff:
		return t.zoneLimit(uint16(zone)), int(t.zoneConn[zone].Load()), nil
	}
	return 0, 0, ErrZone
}

// LimitedZones returns the zones that have a limit of their own, in
// ascending order.
func (t *Tracker) LimitedZones() []uint16 {
	t.limMu.RLock()
	zs := make([]uint16, 0, len(t.limits))
	for z := range t.limits {
		zs = append(zs, z)
	}
	t.limMu.RUnlock()
	slices.Sort(zs)
	return zs
}

func (t *Tracker) zoneLimit(zone uint16) uint32 {
	t.limMu.RLock()
	defer t.limMu.RUnlock()
	if l, ok := t.limits[zone]; ok {
		return l
	}
	return t.defLimit
}

// Defrag returns the tracker's fragment reassembler, which the ct action
// gives the fragments it meets before tracking (its queues expire with
// the sweeper's steps).
func (t *Tracker) Defrag() *Defrag { return t.frag }

// Sweep deletes every expired connection and returns how many. Its cost
// is a walk of the table, none of it on the packet path: packets only
// store their connection's new expiry time.
func (t *Tracker) Sweep() int {
	return t.SweepBuckets(len(t.tab.buckets))
}

// SweepBuckets sweeps the next n buckets (from where the last call
// stopped, wrapping around) and returns how many connections it
// deleted: a background sweeper spreads one pass over an interval.
func (t *Tracker) SweepBuckets(n int) int {
	t.sweepMu.Lock()
	defer t.sweepMu.Unlock()
	now := t.now()
	nb := len(t.tab.buckets)
	n = min(n, nb)
	var victims []*conn
	for n > 0 {
		from := t.sweepCursor
		to := min(from+n, nb)
		t.tab.each(from, to, func(c *conn) {
			if c.expires.Load() <= now {
				victims = append(victims, c)
			}
		})
		n -= to - from
		t.sweepCursor = to % nb
	}
	deleted := 0
	for _, c := range victims {
		if c.expires.Load() > now { // refreshed meanwhile
			continue
		}
		if t.delete(c) {
			deleted++
		}
	}
	return deleted
}

// coarseTick is the longest a sweeper sleeps: the packet path's clock
// is at most this old while a sweeper runs.
const coarseTick = 10 * time.Millisecond

// StartSweeper sweeps the whole table once every interval, in steps at
// most coarseTick apart, until the returned stop is called. With the
// default clock it also keeps the packet path's time (see now).
func (t *Tracker) StartSweeper(interval time.Duration) (stop func()) {
	tick := max(time.Millisecond, min(coarseTick, interval))
	steps := max(1, int(interval/tick))
	per := (len(t.tab.buckets) + steps - 1) / steps
	done := make(chan struct{})
	if t.coarseOK {
		t.coarse.Store(t.clock())
	}
	tk := time.NewTicker(tick)
	go func() {
		defer tk.Stop()
		for {
			select {
			case <-done:
				t.coarse.Store(0)
				return
			case <-tk.C:
				if t.coarseOK {
					t.coarse.Store(t.clock())
				}
				t.SweepBuckets(per)
				t.frag.Expire()
			}
		}
	}()
	return func() { close(done) }
}
