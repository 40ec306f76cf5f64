package conntrack

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
)

// Errors of Execute: the packet must be dropped, as the kernel drops it.
var (
	ErrTableFull    = errors.New("conntrack table full")                                   // a new connection would exceed the maximum ("nf_conntrack: table full, dropping packet")
	ErrZoneLimit    = errors.New("conntrack zone limit reached")                           // committing would exceed the zone's limit (openvswitch's -ENOMEM)
	ErrNATExhausted = errors.New("conntrack NAT range exhausted")                          // no tuple in the NAT range is free
	ErrClash        = errors.New("conntrack tuple clash on commit")                        // another connection holds one of the new one's tuples (insert_failed)
	ErrNATFamily    = errors.New("conntrack NAT range and packet address families differ") // the NAT range is of the other address family
)

// Status bits of a connection, numbered as the kernel's IPS_* bits.
const (
	StatusSeenReply  = 1 << 1
	StatusAssured    = 1 << 2
	StatusConfirmed  = 1 << 3
	StatusSrcNAT     = 1 << 4
	StatusDstNAT     = 1 << 5
	StatusSrcNATDone = 1 << 7
	StatusDstNATDone = 1 << 8
	StatusDying      = 1 << 9
	statusNATMask    = StatusSrcNAT | StatusDstNAT
	statusLiberal    = 1 << 16 // internal: TCP windows made liberal (see liberalIfEstablished)
	statusLimited    = 1 << 17 // internal: committed while its zone had a limit, so counted in zoneConn
	statusSingle     = 1 << 18 // internal: orig and reply tuples are equal, one entry (see table.insert)
	statusMarked     = 1 << 19 // internal: mark or labels were set (else both are zero; see fill)
	statusDead       = 1 << 20 // internal: deleted, or being deleted (see conn.dead)
	statusInternal   = statusLiberal | statusLimited | statusSingle | statusMarked | statusDead
)

// The ct_state bits (OVS_CS_F_*), as flowkeys.Key.CTState holds them.
const (
	StateNew         = 0x01
	StateEstablished = 0x02
	StateRelated     = 0x04
	StateReply       = 0x08
	StateInvalid     = 0x10
	StateTracked     = 0x20
	StateSrcNAT      = 0x40
	StateDstNAT      = 0x80
	stateNATMask     = StateSrcNAT | StateDstNAT
)

// ctinfo: how the packet relates to its connection (enum
// ip_conntrack_info without the reply offset; the direction is separate).
const (
	infoEstablished = iota
	infoRelated
	infoNew
)

// Timeouts are the kernel's default timeouts (net/netfilter
// nf_conntrack_proto_*.c, Linux 6.1).
type Timeouts struct {
	// TCP is per TCP state (indexed by TCPState; TCPNone unused).
	TCP [tcpStates]time.Duration
	// TCPRetrans applies after too many retransmissions or a zero
	// window; TCPUnack while data is unacknowledged.
	TCPRetrans, TCPUnack time.Duration
	// UDPUnreplied before a reply, UDPReplied after one (stream).
	UDPUnreplied, UDPReplied time.Duration
	// ICMP for ICMP and ICMPv6.
	ICMP time.Duration
	// GREUnreplied and GREReplied for GRE.
	GREUnreplied, GREReplied time.Duration
	// Generic for every other protocol.
	Generic time.Duration
}

// DefaultTimeouts returns the kernel's defaults.
func DefaultTimeouts() Timeouts {
	var t Timeouts
	t.TCP[TCPSynSent] = 2 * time.Minute
	t.TCP[TCPSynRecv] = 60 * time.Second
	t.TCP[TCPEstablished] = 5 * 24 * time.Hour
	t.TCP[TCPFinWait] = 2 * time.Minute
	t.TCP[TCPCloseWait] = 60 * time.Second
	t.TCP[TCPLastAck] = 30 * time.Second
	t.TCP[TCPTimeWait] = 2 * time.Minute
	t.TCP[TCPClose] = 10 * time.Second
	t.TCP[TCPSynSent2] = 2 * time.Minute
	t.TCPRetrans, t.TCPUnack = 5*time.Minute, 5*time.Minute
	t.UDPUnreplied, t.UDPReplied = 30*time.Second, 120*time.Second
	t.ICMP = 30 * time.Second
	t.GREUnreplied, t.GREReplied = 30*time.Second, 180*time.Second
	t.Generic = 600 * time.Second
	return t
}

// Config configures a Tracker. Its zero value is usable.
type Config struct {
	// MaxConns is the global maximum of connections (nf_conntrack_max);
	// 0 means DefaultMaxConns. It also sizes the hash table.
	MaxConns uint32
	// Clock returns the current time in nanoseconds on any monotonic
	// scale; nil means the process's monotonic clock. Tests pass a fake.
	Clock func() int64
	// Timeouts; the zero value means DefaultTimeouts.
	Timeouts *Timeouts
	// Accounting counts each connection's packets and bytes per
	// direction (nf_conntrack_acct, off by default as in the kernel:
	// two locked adds per packet).
	Accounting bool
	// TCPLiberal marks only out-of-window RSTs invalid
	// (nf_conntrack_tcp_be_liberal); TCPNoPickup refuses to pick up
	// connections from the middle (nf_conntrack_tcp_loose=0).
	TCPLiberal, TCPNoPickup bool
	// Defrag configures the fragment reassembler (Tracker.Defrag).
	Defrag DefragConfig
}

// DefaultMaxConns is the default global maximum.
const DefaultMaxConns = 262144

// tcpMaxRetrans is nf_conntrack_tcp_max_retrans.
const tcpMaxRetrans = 3

// udpStreamDelay: a UDP connection that still sees replies this long
// after it was created is a stream (Linux 6.1's udp_packet).
const udpStreamDelay = 2 * time.Second

// Stats are the tracker's counters, named as the kernel's.
type Stats struct {
	Invalid, Insert, InsertFailed, Drop, Error uint64
}

// Tracker tracks connections as Linux's nf_conntrack does for the
// openvswitch ct action. It is safe for concurrent use; the lookup of an
// established connection takes no lock and allocates nothing.
type Tracker struct {
	tab      *table
	clock    func() int64
	to       [toCount]int64 // timeouts in ns, see to* indices
	liberal  bool
	noPickup bool
	acct     bool

	max      atomic.Uint32
	count    atomic.Int64
	zoneConn []atomic.Int32 // per zone: connections committed while it had a limit

	limMu      sync.RWMutex
	limits     map[uint16]uint32 // per-zone limits; 0 = unlimited
	defLimit   uint32            // for zones without their own
	limitsOn   atomic.Bool       // any limit set
	invalid    atomic.Uint64
	insert     atomic.Uint64
	insertFail atomic.Uint64
	drop       atomic.Uint64
	errs       atomic.Uint64

	sweepMu     sync.Mutex
	sweepCursor int

	frag   *Defrag     // the ct action's fragment reassembler
	seqOff atomic.Bool // TCP sequence checks off (SetTCPSeqCheck)

	coarseOK bool         // the clock is the default one: a sweeper may keep coarse
	coarse   atomic.Int64 // the sweeper's last clock reading, or 0
}

// Timeout indices into Tracker.to: the TCP states first.
const (
	toTCP          = 0
	toTCPRetrans   = tcpStates
	toTCPUnack     = tcpStates + 1
	toUDPUnreplied = tcpStates + 2
	toUDPReplied   = tcpStates + 3
	toICMP         = tcpStates + 4
	toGREUnreplied = tcpStates + 5
	toGREReplied   = tcpStates + 6
	toGeneric      = tcpStates + 7
	toUDPStream    = tcpStates + 8
	toCount        = tcpStates + 9
)

// New returns a tracker.
func New(cfg Config) *Tracker {
	max := cfg.MaxConns
	if max == 0 {
		max = DefaultMaxConns
	}
	var seed hashSeed
	for i := range seed {
		seed[i] = rand.Uint64()
	}
	t := &Tracker{
		tab:      newTable(int(max), seed),
		clock:    cfg.Clock,
		liberal:  cfg.TCPLiberal,
		noPickup: cfg.TCPNoPickup,
		acct:     cfg.Accounting,
		zoneConn: make([]atomic.Int32, 1<<16),
		limits:   map[uint16]uint32{},
	}
	if t.clock == nil {
		start := time.Now()
		t.clock = func() int64 { return int64(time.Since(start)) + 1 }
		t.coarseOK = true
	}
	t.max.Store(max)
	t.frag = NewDefrag(cfg.Defrag, t.clock)
	to := DefaultTimeouts()
	if cfg.Timeouts != nil {
		to = *cfg.Timeouts
	}
	for i, d := range to.TCP {
		t.to[toTCP+i] = int64(d)
	}
	t.to[toTCPRetrans], t.to[toTCPUnack] = int64(to.TCPRetrans), int64(to.TCPUnack)
	t.to[toUDPUnreplied], t.to[toUDPReplied] = int64(to.UDPUnreplied), int64(to.UDPReplied)
	t.to[toICMP], t.to[toGeneric] = int64(to.ICMP), int64(to.Generic)
	t.to[toGREUnreplied], t.to[toGREReplied] = int64(to.GREUnreplied), int64(to.GREReplied)
	t.to[toUDPStream] = int64(udpStreamDelay)
	return t
}

// conn is one tracked connection.
//
// Its layout is for the lookup: 256 bytes (a size class whose objects
// are 256-byte aligned), in lines of 64 bytes. The first line holds the
// original direction's entry and everything a lookup reads or writes
// after the entry's compare (status, with the dead bit, expires, and stream, which an
// established UDP packet reads), so that a hit in the original direction
// touches this one line of the connection; a hit in the reply direction
// compares the second line's entry, then reads the first (the state and
// the original tuple that fill reports), an aligned pair of lines that
// the L2's spatial prefetcher fetches together. The chain links (cold:
// only chained entries use them) are in the second line; mark and
// labels, in the third, are read only once set (statusMarked); the TCP
// state, the counters and the mutex after them. TestConnLayout checks
// the offsets.
type conn struct {
	e0      entry         // original direction (bytes 0-41); e0.zone is the connection's zone
	status  atomic.Uint32 // Status* and status* bits, statusDead among them
	expires atomic.Int64
	stream  int64 // UDP: replies after this make a stream

	e1   entry                    // reply direction (bytes 64-105)
	next [2]atomic.Pointer[entry] // e0's and e1's links in a bucket's chain

	labels [2]atomic.Uint64
	mark   atomic.Uint32
	tcp    tcpConn // guarded by mu, as the kernel's ct->lock

	pkts, bytes [2]atomic.Uint64

	mu sync.Mutex
	_  [connPad]byte
}

// connLine is the offset of conn.e1, one cache line (entry.conn);
// connPad pads conn to 256 bytes (TestConnLayout).
const (
	connLine = 64
	connPad  = 8
)

// dead reports whether c is deleted or being deleted (statusDead): a
// lookup that meets it ignores it. The bit is in status, not a field of
// its own, so that the first line has room for stream (see conn).
func (c *conn) dead() bool { return c.status.Load()&statusDead != 0 }

// markDead sets statusDead and reports whether this call set it.
func (c *conn) markDead() bool { return c.status.Or(statusDead)&statusDead == 0 }

// entry returns the entry of direction dir.
func (c *conn) entry(dir uint8) *entry {
	if dir == dirOrig {
		return &c.e0
	}
	return &c.e1
}

func (c *conn) confirmed() bool { return c.status.Load()&StatusConfirmed != 0 }

// liberalIfEstablished is openvswitch's __ovs_ct_lookup quirk: once a
// committed TCP connection is established and assured, both directions'
// window tracking becomes liberal (nf_ct_set_tcp_be_liberal, "so that
// out-of-window packets are not marked invalid"): only out-of-window
// RSTs are then refused by the window checks.
func (c *conn) liberalIfEstablished() {
	st := c.status.Load()
	if st&statusLiberal != 0 || st&(StatusConfirmed|StatusAssured) != StatusConfirmed|StatusAssured {
		return
	}
	c.mu.Lock()
	if c.tcp.state == TCPEstablished {
		c.tcp.seen[0].flags |= tcpFlagBeLiberal
		c.tcp.seen[1].flags |= tcpFlagBeLiberal
		c.status.Or(statusLiberal)
	}
	c.mu.Unlock()
}

// refresh sets the expiry time, skipping the (locked) store when it is
// already that: with the coarse clock most packets of a busy connection
// find it so.
func (c *conn) refresh(expires int64) {
	if c.expires.Load() != expires {
		c.expires.Store(expires)
	}
}

// account counts a packet in direction dir, when the tracker counts.
func (t *Tracker) account(c *conn, dir uint8, n uint32) {
	if t.acct {
		c.pkts[dir].Add(1)
		c.bytes[dir].Add(uint64(n))
	}
}

func (c *conn) labelBytes() (l [16]byte) {
	a, b := c.labels[0].Load(), c.labels[1].Load()
	if a|b == 0 {
		return l
	}
	for i := 0; i < 8; i++ {
		l[i] = byte(a >> (8 * i))
		l[8+i] = byte(b >> (8 * i))
	}
	return l
}

func (c *conn) setLabels(l [16]byte) {
	var a, b uint64
	for i := 7; i >= 0; i-- {
		a = a<<8 | uint64(l[i])
		b = b<<8 | uint64(l[8+i])
	}
	c.labels[0].Store(a)
	c.labels[1].Store(b)
}

// State is a packet's conntrack metadata: what a ct action sets in the
// flow key (ct_state, ct_zone, ct_mark, ct_label, the original tuple),
// and the connection the packet was associated with (the kernel's
// skb->_nfct), which the packet carries through recirculation so that a
// later ct action in the same zone does not track it twice. The zero
// value is an untracked packet; Clear returns to it (ct_clear).
type State struct {
	// Flags are the ct_state bits (StateNew...).
	Flags uint8
	// Zone, Mark and Labels are ct_zone, ct_mark and ct_label.
	Zone   uint16
	Mark   uint32
	Labels [16]byte
	// Orig is the connection's original-direction tuple (ct_tuple4,
	// ct_tuple6 and ct_orig_proto), when HasOrig.
	Orig    Tuple
	HasOrig bool

	c    *conn
	dir  uint8
	info uint8
}

// Clear forgets the packet's connection and zeroes its metadata, as the
// ct_clear action.
func (s *State) Clear() { *s = State{} }

// NATRange is a ct action's nat(): which manipulation and within what.
type NATRange struct {
	// Src or Dst selects source or destination NAT; neither means
	// "apply the connection's existing NAT" (plain nat).
	Src, Dst bool
	// IPMin, IPMax bound the address range when HasIP (both of the
	// packet's family; IPv4 in the first 4 bytes).
	IPMin, IPMax [16]byte
	HasIP        bool
	V6           bool
	// ProtoMin, ProtoMax bound the ports (or ICMP identifiers) when
	// HasProto.
	ProtoMin, ProtoMax uint16
	HasProto           bool
	// Persistent leaves the destination out of the address choice;
	// Hash and Random pick the first port tried by a hash or at random.
	Persistent, Hash, Random bool
}

// Action is a compiled ct action (see CompileAction).
type Action struct {
	Zone          uint16
	Commit, Force bool
	// MarkValue, MarkMask: bits of ct_mark to set on commit (mask 0:
	// none).
	MarkValue, MarkMask uint32
	// LabelsValue, LabelsMask: bits of ct_label to set on commit.
	LabelsValue, LabelsMask [16]byte
	HasLabels               bool
	// NAT, when HasNAT.
	NAT    NATRange
	HasNAT bool
}

// now is the packet path's clock: while a sweeper runs on the default
// clock, the time it last stored (at most coarseTick old, as the
// kernel's jiffies), which costs a load instead of a clock read.
func (t *Tracker) now() int64 {
	if n := t.coarse.Load(); n != 0 {
		return n
	}
	return t.clock()
}

// Execute runs the ct action a on packet p whose conntrack metadata is
// s: it finds or creates p's connection in a.Zone (unless s already
// carries it from an earlier ct action in that zone), advances the
// protocol's state machine, applies NAT (rewriting p.Tuple and p.Inner
// and setting p.Rewritten), commits when asked, and leaves in s what the
// kernel leaves in the flow key. An error means the kernel would drop the
// packet (s is then not meaningful).
func (t *Tracker) Execute(p *Packet, a *Action, s *State) error {
	now := t.now()
	p.Rewritten = 0
	cached := false
	if s.c != nil && s.c.e0.zone == a.Zone {
		cached = true
	} else if s.c == nil && s.Flags&StateTracked != 0 && s.Flags&StateInvalid == 0 && s.Zone == a.Zone {
		// Tracked before but the connection reference was lost (the
		// packet came back through an upcall): find it by tuple, as
		// the kernel's ovs_ct_executed.
		if e, _ := t.tab.find(&p.Tuple, a.Zone, now); e != nil {
			s.c, s.dir = e.conn(), e.dir()
			s.info = infoOf(e.conn(), e.dir())
			s.Orig, s.HasOrig = e.conn().e0.tuple, true
			cached = true
		}
	}
	if cached && a.Force && s.dir == dirReply {
		if s.c.confirmed() {
			t.delete(s.c)
		}
		s.c, cached = nil, false
	}
	if !cached {
		// track sets s's connection, direction and ctinfo, and fill
		// every other field: no need to zero s first.
		s.c = nil
		if err := t.track(p, a.Zone, now, s); err != nil {
			*s = State{}
			t.drop.Add(1)
			return err
		}
		t.fill(s, a.Zone)
	}
	return t.finish(p, a, s, now)
}

// finish is Execute's part after the packet met its connection (s.c,
// nil for an invalid packet): TCP's liberal windows once established,
// NAT and commit.
func (t *Tracker) finish(p *Packet, a *Action, s *State, now int64) error {
	c := s.c
	if c == nil {
		return nil
	}
	if c.e0.tuple.Proto == ProtoTCP {
		c.liberalIfEstablished()
	}
	if a.HasNAT && s.Flags&stateNATMask == 0 && (c.confirmed() || a.Commit) {
		if err := t.nat(p, a, c, s); err != nil {
			t.drop.Add(1)
			return err
		}
	}
	if a.Commit {
		if err := t.commit(c, a, now); err != nil {
			t.drop.Add(1)
			return err
		}
		s.Mark = c.mark.Load()
		s.Labels = c.labelBytes()
	}
	return nil
}

// infoOf is the ctinfo of a packet found in direction dir of c.
func infoOf(c *conn, dir uint8) uint8 {
	if dir == dirReply || c.status.Load()&StatusSeenReply != 0 {
		return infoEstablished
	}
	return infoNew
}

// fill sets s's key fields from its connection (or, for an invalid
// packet, the tracked and invalid bits and the action's zone), as
// ovs_ct_update_key.
func (t *Tracker) fill(s *State, zone uint16) {
	c := s.c
	if c == nil {
		*s = State{Flags: StateTracked | StateInvalid, Zone: zone}
		return
	}
	f := uint8(StateTracked)
	if s.dir == dirReply {
		f |= StateReply
	}
	switch s.info {
	case infoEstablished:
		f |= StateEstablished
	case infoRelated:
		f |= StateRelated
	case infoNew:
		f |= StateNew
	}
	st := c.status.Load()
	if st&StatusConfirmed == 0 {
		f |= StateNew
	}
	s.Flags = f
	s.Zone = c.e0.zone
	if st&statusMarked != 0 {
		s.Mark = c.mark.Load()
		s.Labels = c.labelBytes()
	} else {
		// Never set: zero, without reading their cache line.
		s.Mark, s.Labels = 0, [16]byte{}
	}
	s.Orig = c.e0.tuple
	s.HasOrig = true
}

// track looks p up in zone (or makes a new, unconfirmed connection for
// it) and runs the protocol's state machine: s gets the connection,
// direction and ctinfo, or no connection when p is invalid.
func (t *Tracker) track(p *Packet, zone uint16, now int64, s *State) error {
	if p.Malformed {
		t.invalid.Add(1)
		return nil
	}
	if p.HasInner {
		// An ICMP error: related to the connection whose reply the
		// embedded packet's inverse is (nf_conntrack_inet_error).
		inv, ok := p.Inner.invert()
		if !ok {
			t.invalid.Add(1)
			return nil
		}
		e, _ := t.tab.find(&inv, zone, now)
		if e == nil {
			t.invalid.Add(1)
			return nil
		}
		s.c, s.dir, s.info = e.conn(), e.dir(), infoRelated
		return nil
	}
	for retry := 0; retry < 2; retry++ {
		e, expired := t.tab.find(&p.Tuple, zone, now)
		if expired != nil {
			t.delete(expired.conn())
		}
		if e == nil {
			return t.trackNew(p, zone, now, s)
		}
		if t.trackFound(e, p, now, s) {
			continue
		}
		return nil
	}
	t.invalid.Add(1)
	return nil
}

// trackFound runs p through the connection of entry e, which the lookup
// found live: the protocol's state machine, the counters and the
// seen-reply bit. s gets the connection, direction and ctinfo, or keeps
// no connection when p is invalid. repeat reports that the connection
// was deleted and p must be tracked again (as a new one).
func (t *Tracker) trackFound(e *entry, p *Packet, now int64, s *State) (repeat bool) {
	c, dir := e.conn(), e.dir()
	info := infoOf(c, dir)
	switch t.l4(c, dir, p, now, false) {
	case vInvalid:
		t.invalid.Add(1)
		return false
	case vRepeat:
		t.delete(c)
		return true
	case vKill:
		t.delete(c)
	}
	t.account(c, dir, p.Len)
	if dir == dirReply && c.status.Load()&StatusSeenReply == 0 {
		c.status.Or(StatusSeenReply)
	}
	s.c, s.dir, s.info = c, dir, info
	return false
}

// trackNew makes an unconfirmed connection for p, or leaves s without
// one when p cannot start a connection.
func (t *Tracker) trackNew(p *Packet, zone uint16, now int64, s *State) error {
	if max := t.max.Load(); max != 0 && t.count.Load() >= int64(max) {
		return fmt.Errorf("%w: %d connections", ErrTableFull, max)
	}
	reply, ok := p.Tuple.invert()
	if !ok {
		t.invalid.Add(1)
		return nil
	}
	c := &conn{stream: now + t.to[toUDPStream]}
	c.e0 = entry{tuple: p.Tuple, zone: zone, d: dirOrig}
	c.e1 = entry{tuple: reply, zone: zone, d: dirReply}
	if t.l4(c, dirOrig, p, now, true) != vAccept {
		t.invalid.Add(1)
		return nil
	}
	t.account(c, dirOrig, p.Len)
	s.c, s.dir, s.info = c, dirOrig, infoNew
	return nil
}

// Verdicts of the protocol state machines.
const (
	vAccept  = iota
	vInvalid // the packet is invalid; the connection is unchanged
	vRepeat  // delete the connection and track the packet as new
	vKill    // accept the packet, then delete the connection
)

// l4 runs p through c's protocol in direction dir.
func (t *Tracker) l4(c *conn, dir uint8, p *Packet, now int64, isNew bool) int {
	switch p.Tuple.Proto {
	case ProtoTCP:
		return t.tcpPacket(c, dir, p, now, isNew)
	case ProtoUDP, ProtoUDPLite:
		return t.streamPacket(c, now, toUDPUnreplied, toUDPReplied, true)
	case ProtoGRE:
		return t.streamPacket(c, now, toGREUnreplied, toGREReplied, false)
	case ProtoICMP, ProtoICMPv6:
		if !c.confirmed() && !icmpValidNew(&c.e0.tuple) {
			return vInvalid
		}
		c.refresh(now + t.to[toICMP])
		return vAccept
	}
	c.refresh(now + t.to[toGeneric])
	return vAccept
}

// streamPacket is UDP's (and GRE's) timeout logic: the unreplied timeout
// until a reply is seen; after it, the stream timeout and assured (for
// UDP only once the connection is older than udpStreamDelay, as Linux
// 6.1's udp_packet).
func (t *Tracker) streamPacket(c *conn, now int64, unreplied, replied int, delayed bool) int {
	st := c.status.Load()
	if st&StatusSeenReply == 0 {
		c.refresh(now + t.to[unreplied])
		return vAccept
	}
	if delayed && now <= c.stream {
		c.refresh(now + t.to[unreplied])
		return vAccept
	}
	c.refresh(now + t.to[replied])
	if st&StatusAssured == 0 {
		c.status.Or(StatusAssured)
	}
	return vAccept
}

// icmpValidNew reports whether an ICMP tuple may start a connection (a
// query, not a reply: the kernel's valid_new).
func icmpValidNew(t *Tuple) bool {
	ty := t.ICMPType()
	if t.Proto == ProtoICMP {
		return ty == 8 || ty == 13 || ty == 15 || ty == 17
	}
	return ty == 128 || ty == 139
}

// commit confirms c (inserting it, within the limits) and applies the
// action's mark and labels.
func (t *Tracker) commit(c *conn, a *Action, now int64) error {
	if c.dead() {
		return nil
	}
	if !c.confirmed() {
		// As the kernel's nf_conncount list behind ovs_ct_limit, a zone
		// counts only the connections committed while it had a limit
		// (its own or the default): one committed unlimited is not
		// counted against a limit set later.
		c.status.And(^uint32(statusLimited))
		if t.limitsOn.Load() {
			if lim := t.zoneLimit(c.e0.zone); lim != 0 {
				if int64(t.zoneConn[c.e0.zone].Load())+1 > int64(lim) {
					return fmt.Errorf("%w: zone %d has %d", ErrZoneLimit, c.e0.zone, lim)
				}
				c.status.Or(statusLimited)
			}
		}
		t.setMarkLabels(c, a)
		c.status.Or(StatusConfirmed)
		for {
			o := t.tab.insert(c)
			if o == nil {
				break
			}
			if o.expires.Load() <= now {
				t.delete(o)
				continue
			}
			c.status.And(^uint32(StatusConfirmed))
			t.insertFail.Add(1)
			return fmt.Errorf("%w: %v", ErrClash, c.e0.tuple)
		}
		t.insert.Add(1)
		t.count.Add(1)
		if c.status.Load()&statusLimited != 0 {
			t.zoneConn[c.e0.zone].Add(1)
		}
		return nil
	}
	t.setMarkLabels(c, a)
	return nil
}

func (t *Tracker) setMarkLabels(c *conn, a *Action) {
	if a.MarkMask != 0 {
		for {
			old := c.mark.Load()
			if c.mark.CompareAndSwap(old, a.MarkValue&a.MarkMask|old&^a.MarkMask) {
				break
			}
		}
	}
	if a.HasLabels {
		c.mu.Lock()
		l := c.labelBytes()
		for i := range l {
			l[i] = a.LabelsValue[i]&a.LabelsMask[i] | l[i]&^a.LabelsMask[i]
		}
		c.setLabels(l)
		c.mu.Unlock()
	}
	// After the stores: a lookup that sees the bit reads them.
	if c.status.Load()&statusMarked == 0 && (c.mark.Load() != 0 || c.labels[0].Load()|c.labels[1].Load() != 0) {
		c.status.Or(statusMarked)
	}
}

// delete removes a connection (uncounting it if it was committed) and
// reports whether this call removed it.
func (t *Tracker) delete(c *conn) bool {
	if !c.confirmed() {
		return c.markDead()
	}
	if !t.tab.remove(c) {
		return false
	}
	c.status.Or(StatusDying)
	t.count.Add(-1)
	if c.status.Load()&statusLimited != 0 {
		t.zoneConn[c.e0.zone].Add(-1)
	}
	return true
}
