package conntrack

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/bits"
	"math/rand/v2"
)

// NAT as openvswitch's ovs_ct_nat over nf_nat_core.c (Linux 6.1): a
// connection's NAT is set up once per manipulation (source, destination)
// by its first packet that commits, by changing its reply tuple; every
// later packet is rewritten to the inverse of the other direction's
// tuple. Port allocation never hands out a tuple whose reply another
// connection holds: when the whole range is in use the packet is dropped
// (ErrNATExhausted). Not done: the kernel's reuse of an existing source
// mapping for a source outside the range (find_appropriate_src), and its
// null binding's port remap on a clash.

const (
	manipSrc = 0
	manipDst = 1
)

// nat applies a.NAT to p for connection c (ovs_ct_nat).
func (t *Tracker) nat(p *Packet, a *Action, c *conn, s *State) error {
	st := c.status.Load()
	var manip int
	switch {
	case s.info != infoNew && st&statusNATMask != 0 && (s.info != infoRelated || s.dir == dirReply || a.Commit):
		// NAT an established or related packet as its connection
		// (IP_CT_RELATED in the original direction only when
		// committing; IP_CT_RELATED_REPLY always).
		srcNAT := st&StatusSrcNAT != 0
		if (s.dir == dirReply) == srcNAT {
			manip = manipDst
		} else {
			manip = manipSrc
		}
	case a.NAT.Src:
		manip = manipSrc
	case a.NAT.Dst:
		manip = manipDst
	default:
		return nil
	}
	if err := t.natExecute(p, c, s, &a.NAT, manip); err != nil {
		return err
	}
	st = c.status.Load()
	if st&StatusDstNAT != 0 {
		if st&StatusSrcNAT != 0 {
			return t.natExecute(p, c, s, &a.NAT, 1-manip)
		}
		if s.dir == dirOrig {
			// The kernel's second pass with a null source binding:
			// it changes nothing here but still sets +snat in the key.
			return t.natExecute(p, c, s, nil, manipSrc)
		}
	}
	return nil
}

var natDone = [2]uint32{StatusSrcNATDone, StatusDstNATDone}
var natStatus = [2]uint32{StatusSrcNAT, StatusDstNAT}
var natState = [2]uint8{StateSrcNAT, StateDstNAT}

// natExecute is ovs_ct_nat_execute: set up the manipulation on a new
// connection, then rewrite the packet, and mark the key.
func (t *Tracker) natExecute(p *Packet, c *conn, s *State, rng *NATRange, manip int) error {
	switch {
	case s.info == infoRelated && p.HasInner:
		natICMPError(p, c, s.dir, manip)
		s.Flags |= natState[manip]
		return nil
	case s.info != infoEstablished:
		// No NAT set-up for a confirmed connection (nf_nat_setup_info:
		// "can't setup nat info for confirmed ct"): its tuples are in
		// the table.
		if !c.confirmed() && c.status.Load()&natDone[manip] == 0 {
			if rng != nil && rng.HasIP {
				if err := t.natSetup(c, rng, manip); err != nil {
					return err
				}
			}
			c.status.Or(natDone[manip])
		}
	}
	natPacket(p, c, s.dir, manip)
	s.Flags |= natState[manip]
	return nil
}

// statusBit is the status bit that makes manip rewrite packets in
// direction dir (nf_nat_packet).
func statusBit(dir uint8, manip int) uint32 {
	b := natStatus[manip]
	if dir == dirReply {
		b ^= statusNATMask
	}
	return b
}

// natPacket rewrites p's manip side to the inverse of the other
// direction's tuple (nf_nat_manip_pkt).
func natPacket(p *Packet, c *conn, dir uint8, manip int) {
	if c.status.Load()&statusBit(dir, manip) == 0 {
		return
	}
	target, ok := c.entry(1 - dir).tuple.invert()
	if !ok {
		return
	}
	old := p.Tuple
	tp := &p.Tuple
	switch {
	case tp.isICMP():
		if manip == manipSrc {
			tp.Src = target.Src
		} else {
			tp.Dst = target.Dst
		}
		tp.SrcPort = target.SrcPort // the echo identifier, either way
	case manip == manipSrc:
		tp.Src, tp.SrcPort = target.Src, target.SrcPort
	default:
		tp.Dst, tp.DstPort = target.Dst, target.DstPort
	}
	if tp.Src != old.Src || tp.SrcPort != old.SrcPort {
		p.Rewritten |= RewroteSrc
	}
	if tp.Dst != old.Dst || tp.DstPort != old.DstPort {
		p.Rewritten |= RewroteDst
	}
}

// natICMPError rewrites an ICMP error related to c
// (nf_nat_icmp_reply_translation): the embedded packet is made to look
// as it was before NAT (the opposite manipulation, to the other
// direction's tuple), and the outer header gets manip.
func natICMPError(p *Packet, c *conn, dir uint8, manip int) {
	if c.status.Load()&statusBit(dir, manip) == 0 {
		return
	}
	tg := c.entry(1 - dir).tuple
	in := &p.Inner
	old := *in
	if manip == manipDst { // the inner packet gets the source manip
		in.Src = tg.Src
		in.SrcPort = tg.SrcPort
	} else {
		in.Dst = tg.Dst
		if !in.isICMP() {
			in.DstPort = tg.DstPort
		} else {
			in.SrcPort = tg.SrcPort
		}
	}
	if *in != old {
		p.Rewritten |= RewroteInner
	}
	target, ok := tg.invert()
	if !ok {
		return
	}
	if manip == manipSrc && p.Tuple.Src != target.Src {
		p.Tuple.Src = target.Src
		p.Rewritten |= RewroteSrc
	}
	if manip == manipDst && p.Tuple.Dst != target.Dst {
		p.Tuple.Dst = target.Dst
		p.Rewritten |= RewroteDst
	}
}

// natSetup is nf_nat_setup_info: choose a unique tuple for manip within
// rng and make it c's reply.
func (t *Tracker) natSetup(c *conn, rng *NATRange, manip int) error {
	curr, ok := c.e1.tuple.invert()
	if !ok {
		return nil
	}
	if rng.V6 != curr.V6 {
		return fmt.Errorf("%w: %v", ErrNATFamily, curr)
	}
	nt, err := t.uniqueTuple(c, curr, rng, manip)
	if err != nil {
		return err
	}
	if nt != curr {
		reply, _ := nt.invert()
		c.e1.tuple = reply
		c.status.Or(natStatus[manip])
	}
	return nil
}

// used reports whether another connection holds the reply of tp
// (nf_nat_used_tuple).
func (t *Tracker) used(c *conn, tp *Tuple) bool {
	r, ok := tp.invert()
	if !ok {
		return false
	}
	e, _ := t.tab.find(&r, c.e0.zone, t.now())
	return e != nil && e.conn() != c
}

func addrInRange(a *[16]byte, rng *NATRange) bool {
	return bytes.Compare(a[:], rng.IPMin[:]) >= 0 && bytes.Compare(a[:], rng.IPMax[:]) <= 0
}

// manipPort returns the field that manip changes: for ICMP the echo
// identifier, else the source or destination port.
func manipPort(tp *Tuple, manip int) *uint16 {
	if tp.isICMP() || manip == manipSrc {
		return &tp.SrcPort
	}
	return &tp.DstPort
}

func inRange(tp *Tuple, rng *NATRange, manip int) bool {
	a := &tp.Src
	if manip == manipDst {
		a = &tp.Dst
	}
	if rng.HasIP && !addrInRange(a, rng) {
		return false
	}
	if rng.HasProto && tp.hasPorts() {
		p := *manipPort(tp, manip)
		return p >= rng.ProtoMin && p <= rng.ProtoMax
	}
	return true
}

// uniqueTuple is get_unique_tuple: keep the tuple if it is in range and
// free, else pick an address by hash and search the ports.
func (t *Tracker) uniqueTuple(c *conn, orig Tuple, rng *NATRange, manip int) (Tuple, error) {
	randomAll := rng.Random || rng.Hash
	if manip == manipSrc && !randomAll && inRange(&orig, rng, manip) && !t.used(c, &orig) {
		return orig, nil
	}
	tp := orig
	if rng.HasIP {
		t.chooseAddr(&tp, rng, manip, c.e0.zone)
	}
	if !randomAll {
		if rng.HasProto {
			if inRange(&tp, rng, manip) && !t.used(c, &tp) {
				return tp, nil
			}
		} else if !t.used(c, &tp) {
			return tp, nil
		}
	}
	if !tp.hasPorts() {
		if t.used(c, &tp) {
			return tp, fmt.Errorf("%w: %v", ErrNATExhausted, tp)
		}
		return tp, nil
	}
	key := manipPort(&tp, manip)
	var lo, size uint32
	switch {
	case rng.HasProto:
		lo, size = uint32(rng.ProtoMin), uint32(rng.ProtoMax)-uint32(rng.ProtoMin)+1
	case tp.isICMP():
		lo, size = 0, 1<<16
	case manip == manipDst:
		// No port range: destination NAT keeps the port.
		if t.used(c, &tp) {
			return tp, fmt.Errorf("%w: %v", ErrNATExhausted, tp)
		}
		return tp, nil
	case *key < 512:
		lo, size = 1, 511
	case *key < 1024:
		lo, size = 600, 1024-600
	default:
		lo, size = 1024, 1<<16-1024
	}
	// The search starts at a random offset for either manip, as
	// nf_nat_l4proto_unique_tuple's get_random_u16 (Linux 6.1: a
	// destination NAT to a port range does not start at its first port).
	off := rand.Uint32()
	if rng.Hash {
		off = uint32(t.tab.seed.hash(&orig, c.e0.zone))
	}
	for i := uint32(0); i < size; i++ {
		*key = uint16(lo + (off+i)%size)
		if !t.used(c, &tp) {
			return tp, nil
		}
	}
	return tp, fmt.Errorf("%w: %v", ErrNATExhausted, orig)
}

// chooseAddr picks the address within rng for manip: by a hash of the
// source (and, unless persistent, the destination) address, so that one
// pair of hosts always maps to one address (find_best_ips_proto).
func (t *Tracker) chooseAddr(tp *Tuple, rng *NATRange, manip int, zone uint16) {
	dst := &tp.Src
	if manip == manipDst {
		dst = &tp.Dst
	}
	if rng.IPMin == rng.IPMax {
		*dst = rng.IPMin
		return
	}
	k := Tuple{Src: tp.Src, Proto: tp.Proto, V6: tp.V6}
	if !rng.Persistent {
		k.Dst = tp.Dst
	}
	j := t.tab.seed.hash(&k, zone)
	if !tp.V6 {
		lo := binary.BigEndian.Uint32(rng.IPMin[:4])
		hi := binary.BigEndian.Uint32(rng.IPMax[:4])
		dist := uint64(hi-lo) + 1
		binary.BigEndian.PutUint32(dst[:4], lo+uint32((uint64(uint32(j))*dist)>>32))
		return
	}
	if !bytes.Equal(rng.IPMin[:8], rng.IPMax[:8]) {
		// A range wider than a /64: the low address (documented).
		*dst = rng.IPMin
		return
	}
	lo := binary.BigEndian.Uint64(rng.IPMin[8:])
	hi := binary.BigEndian.Uint64(rng.IPMax[8:])
	var pick uint64
	if dist := hi - lo + 1; dist == 0 {
		pick = j
	} else {
		pick, _ = bits.Mul64(j, dist)
	}
	copy(dst[:8], rng.IPMin[:8])
	binary.BigEndian.PutUint64(dst[8:], lo+pick)
}
