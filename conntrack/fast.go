package conntrack

import (
	"encoding/binary"
	"unsafe"

	"github.com/ovsdp/ovsdp/flowkeys"
)

// ExecuteKey is the datapath's ct action in one call: FromKey, Execute
// and State.ToKey, with p as the caller's scratch Packet (afterwards
// p.Rewritten says what NAT changed, for the caller to rewrite the
// packet to p.Tuple and p.Inner, as after Execute). untracked marks a
// packet that cannot be tracked (an IP fragment passed on without
// reassembly): it is invalid, as a Malformed one. The errors are
// FromKey's and Execute's; after one, k's conntrack fields are
// unchanged.
//
// A packet of an established TCP or UDP connection (the common case:
// not tracked before in this pass, not a fragment, its connection
// found live and confirmed, an action without NAT) takes a shorter path
// in line here: it parses only its tuple (and TCP header), then runs
// track's lookup and trackFound, fill, finish and ToKey for that case
// only (TestExecuteKeyMatchesExecute compares the two paths on every
// kind of packet, FuzzExecuteKey on arbitrary ones). Every other packet
// takes the general path, from the start.
func (t *Tracker) ExecuteKey(k *flowkeys.Key, l4 []byte, l3Len uint32, untracked bool, a *Action, s *State, p *Packet) error {
	return t.executeKeyFast(k, l4, l3Len, untracked, a, s, p, nil, 0)
}

// ConnCache remembers, for one goroutine, the connection entries that
// recent packets met on ExecuteKey's shorter path, in a direct-mapped
// array indexed by a hash of the packet that the caller chooses (the
// userspace datapath passes its exact-match cache hash, which it has
// already). An established connection's next packet then finds its
// entry there instead of hashing its tuple and probing the table, as
// OVS keeps the packet's conn in its metadata.
//
// A remembered entry is used only if it still meets the packet as the
// table's lookup would: the same tuple and zone, its connection neither
// deleted (flushed, swept, killed, replaced) nor expired. That check is
// the table's answer: an entry never changes its tuple or zone and is
// never reused (a new connection is a new object), deleting a
// connection marks it dead before it leaves the table, and the table
// holds at most one undeleted entry per tuple and zone (commit refuses
// a clash). Any other outcome drops the entry and looks the table up.
//
// A ConnCache keeps at most its size of deleted connections from being
// collected until their slots are reused or looked up again. It is not
// safe for concurrent use.
type ConnCache struct {
	t    *Tracker
	mask uint32
	e    []ccSlot
}

// ccSlot is one slot of a ConnCache: the entry remembered and the
// caller's hash of the packet that met it. A packet with another hash
// is another microflow, most likely of another connection, and does
// not read the entry (whose line, with traffic over more connections
// than the cache has slots, is a miss to memory): it looks the table
// up, which gives the same answer for a packet of the same connection.
type ccSlot struct {
	e *entry
	h uint32
}

// NewConnCache returns a cache of n entries (rounded up to a power of
// two, at least 1) for t's connections.
func (t *Tracker) NewConnCache(n int) *ConnCache {
	size := 1
	for size < n {
		size <<= 1
	}
	return &ConnCache{t: t, mask: uint32(size - 1), e: make([]ccSlot, size)}
}

// ExecuteKey is the tracker's ExecuteKey (same arguments, results and
// state), with h, the caller's hash of the packet, choosing the cache
// slot that the packet's connection entry is remembered in.
func (cc *ConnCache) ExecuteKey(h uint32, k *flowkeys.Key, l4 []byte, l3Len uint32, untracked bool, a *Action, s *State, p *Packet) error {
	return cc.t.executeKeyFast(k, l4, l3Len, untracked, a, s, p, &cc.e[h&cc.mask], h)
}

// executeKeyFast is ExecuteKey, remembering the connection entry in
// *slot with the caller's packet hash h unless slot is nil (see
// ConnCache).
func (t *Tracker) executeKeyFast(k *flowkeys.Key, l4 []byte, l3Len uint32, untracked bool, a *Action, s *State, p *Packet, slot *ccSlot, h uint32) error {
	if untracked || s.c != nil || s.Flags&StateTracked != 0 || a.HasNAT || k.IPFrag != flowkeys.FragNone {
		return t.executeKey(k, l4, l3Len, untracked, a, s, p)
	}
	tp := &p.Tuple
	switch k.EthType {
	case 0x0800:
		// Each 8-byte half of the addresses in one store: the entry's
		// tuple compare (meets) loads them 8 bytes at a time right
		// after, and a load that spans several smaller stores (a
		// zeroing and a 4-byte copy) cannot be forwarded from them
		// and waits for them to reach the cache (a store-forwarding
		// stall, the largest single cost of this path before).
		// (binary.PutUint64 of a zero-extended word would be split by
		// the compiler into the same small stores.)
		src, dst := (*[2]uint64)(unsafe.Pointer(&tp.Src)), (*[2]uint64)(unsafe.Pointer(&tp.Dst))
		src[0], src[1] = v4Word(k.IPv4Src), 0
		dst[0], dst[1] = v4Word(k.IPv4Dst), 0
		tp.V6 = false
	case 0x86dd:
		tp.Src, tp.Dst, tp.V6 = k.IPv6Src, k.IPv6Dst, true
	default:
		return t.executeKey(k, l4, l3Len, untracked, a, s, p)
	}
	tp.Proto = k.IPProto
	switch tp.Proto {
	case ProtoUDP, ProtoUDPLite:
		if len(l4) < 8 {
			return t.executeKey(k, l4, l3Len, untracked, a, s, p)
		}
		tp.SrcPort, tp.DstPort = binary.BigEndian.Uint16(l4), binary.BigEndian.Uint16(l4[2:])
	case ProtoTCP:
		p.TCP = TCPInfo{}
		if !parseTCP(l4, p) {
			return t.executeKey(k, l4, l3Len, untracked, a, s, p)
		}
	default:
		return t.executeKey(k, l4, l3Len, untracked, a, s, p)
	}
	now := t.now()
	zone := a.Zone
	var e *entry
	if slot != nil {
		if x := slot.e; x != nil && slot.h == h && x.meets(tp, zone, now) == meetsLive {
			e = x
		}
	}
	if e == nil {
		e = t.tab.findSlots(tp, zone, now)
		if slot != nil {
			slot.e, slot.h = e, h
		}
	}
	if e == nil {
		// A new connection, one in the bucket's chain, or an expired
		// one (which the general path deletes): find looks again.
		return t.executeKey(k, l4, l3Len, untracked, a, s, p)
	}
	c := e.conn()
	st := c.status.Load()
	if st&StatusConfirmed == 0 {
		return t.executeKey(k, l4, l3Len, untracked, a, s, p)
	}
	dir := e.dir()
	p.Len, p.Malformed, p.HasInner, p.Rewritten = l3Len, false, false, 0
	info := uint8(infoNew)
	if dir == dirReply || st&StatusSeenReply != 0 {
		info = infoEstablished
	}
	if tp.Proto == ProtoTCP {
		switch t.tcpPacket(c, dir, p, now, false) {
		case vInvalid:
			t.invalid.Add(1)
			t.fill(s, zone)
			s.ToKey(k)
			return nil
		case vRepeat:
			// Deleted, to be tracked again as new: what Execute's
			// retry does next, from its lookup on.
			t.delete(c)
			return t.executeKey(k, l4, l3Len, untracked, a, s, p)
		case vKill:
			t.delete(c)
		}
	} else if st&StatusSeenReply == 0 || now <= c.stream {
		// streamPacket for UDP, before a reply or the stream delay.
		c.refresh(now + t.to[toUDPUnreplied])
	} else if st&StatusAssured != 0 {
		// streamPacket for an assured UDP stream.
		c.refresh(now + t.to[toUDPReplied])
	} else {
		t.streamPacket(c, now, toUDPUnreplied, toUDPReplied, true)
	}
	t.account(c, dir, l3Len)
	if dir == dirReply && st&StatusSeenReply == 0 {
		c.status.Or(StatusSeenReply)
	}
	// fill, for a confirmed connection.
	f := uint8(StateTracked | StateEstablished)
	if info == infoNew {
		f = StateTracked | StateNew
	}
	if dir == dirReply {
		f |= StateReply
	}
	s.c, s.dir, s.info, s.Flags, s.Zone = c, dir, info, f, zone
	s.Orig, s.HasOrig = c.e0.tuple, true
	// The key's fields are written from the values, not read back
	// from s just after s was written (the unmarked connection's zero
	// mark and labels as constants), and each statement is one store
	// per field: multiple assignment stages values through the stack.
	marked := c.status.Load()&statusMarked != 0
	if marked {
		s.Mark = c.mark.Load()
		s.Labels = c.labelBytes()
	} else {
		s.Mark = 0
		s.Labels = [16]byte{}
	}
	if a.Commit || tp.Proto == ProtoTCP {
		if err := t.finish(p, a, s, now); err != nil {
			return err
		}
		marked = true // commit may have set them: s has them
	}
	k.CTState = f
	k.CTZone = zone
	if marked {
		k.CTMark = s.Mark
		k.CTLabels = s.Labels
	} else {
		k.CTMark = 0
		k.CTLabels = [16]byte{}
	}
	c.e0.tuple.toKey(k) // s.Orig: of the key's family, and neither ICMP nor ND
	return nil
}

// executeKey is ExecuteKey's general path.
func (t *Tracker) executeKey(k *flowkeys.Key, l4 []byte, l3Len uint32, untracked bool, a *Action, s *State, p *Packet) error {
	if err := FromKey(k, l4, l3Len, p); err != nil {
		return err
	}
	p.Malformed = p.Malformed || untracked
	if err := t.Execute(p, a, s); err != nil {
		return err
	}
	s.ToKey(k)
	return nil
}
