package userdp

import (
	"encoding/binary"

	"github.com/ovsdp/ovsdp/conntrack"
	"github.com/ovsdp/ovsdp/flowkeys"
	"github.com/ovsdp/ovsdp/internal/header"
	"github.com/ovsdp/ovsdp/odp"
)

// Executing compiled actions on a packet, as the kernel's
// do_execute_actions (net/openvswitch/actions.c).
//
// The flow key. As in the kernel, a set action updates the packet's key
// along with the packet (later actions, a recirculation and an upcall
// see the new values; dec_ttl updates the TTL too). push_vlan on a frame
// without a tag and pop_vlan of its only tag update the key's VLAN too;
// the other pushes and pops (a VLAN tag over another, MPLS, Ethernet,
// NSH) invalidate the key: it is extracted again from the packet when a
// recirculation or hash needs it, while a userspace action's upcall
// carries it as it was, but for the MAC protocol those actions set, as
// the kernel's output_userspace does (it does not extract the key).
//
// Packet copies. An output that is not the last action sends a copy (the
// kernel's skb_clone); nested lists (clone, sample, check_pkt_len) run
// on a copy unless they are the last action, as the kernel's
// clone_execute; dec_ttl's le_1 list consumes the packet.
//
// Errors. When an action fails on a packet (too short for the header it
// sets, no headroom for a push), the packet is dropped and counted, as
// the kernel drops it (OVS_DROP_ACTION_ERROR).

// maxRecirc bounds recirculation of one packet (the kernel's
// OVS_RECURSION_LIMIT and deferred-action limits drop beyond a few).
const maxRecirc = 6

// pktCtx is a packet being executed.
type pktCtx struct {
	f        frameBuf
	key      flowkeys.Key
	keyValid bool
	h        pktHeaders
	hValid   bool
	// l3off is the network header's offset as key extraction found it
	// (pktHeaders.L3), 0 when not known (an Ethernet frame's is at least
	// 14): actions that move headers clear it with the key.
	l3off int
	// cutlen is the kernel's OVS_CB(skb)->cutlen: the bytes a trunc
	// action asked the next output or userspace action to cut (cut()),
	// and in its top bit (cutReassembled) that frag is set: both are
	// rare and make output take its slow path, on one test of the word
	// that the receive path already clears for every packet.
	cutlen uint32
	// steal: the frame is the receive buffer and may be queued for
	// transmission without a copy by its last output.
	steal  bool
	acts   *flowActions // the flow's actions (userspace actions=true)
	recirc int
	// hash is the exact-match cache hash of the packet's last lookup
	// (for a packet given to Execute, of its key as given): a
	// recirculated lookup derives its own from it.
	hash uint32
	// proto is the kernel's skb->protocol for the packet: set from the
	// key whenever the key is extracted (keyProtocol) and changed by
	// the actions that change it in the kernel (push/pop of VLAN tags
	// and MPLS labels). The parsed pktHeaders carry it.
	proto uint16
	// ct is the packet's connection tracking state (the kernel's
	// skb->_nfct and the key's ct fields), kept across recirculation.
	ct conntrack.State
	// egress is the tunnel metadata of the last set(tunnel) (the
	// kernel's skb tunnel dst), nil before one (exec_tnl.go). The
	// Geneve options the packet was received with are in its key.
	egress *tunnelInfo
	// noEth says the packet has no Ethernet header (the kernel's
	// key->mac_proto MAC_PROTO_NONE, kept valid when the key is not):
	// it starts at its network header, and proto is its EtherType
	// (exec_l2.go).
	noEth bool
	// probability is the kernel's OVS_CB(skb)->probability: the
	// enclosing sample action's, 0 outside one (psample's rate).
	probability uint32
	// frag describes a datagram that a ct action reassembled (or that
	// Execute was given an MRU for), when cutlen has cutReassembled:
	// output fragments it again (the kernel's OVS_CB(skb)->mru and the
	// skb's frag_list). It means nothing otherwise.
	frag conntrack.FragInfo
	// clean says that every field start resets still has the value
	// start gave it: since start, the packet met only the fast output
	// forms (runFastReceived, runFastStraight), which change nothing
	// that start resets (nor any key field but IPTTL), so the next start
	// need not reset them again. start sets it; run, the fast ct form
	// (runCTRecirc) and whatever else may change those fields clear it
	// (a zero pktCtx, as Execute makes, is not clean).
	clean bool
	// straight says that flowkeys' straight-line path extracted the key
	// (flowkeys.ExtractPortHashedOver) and that since then only the fast
	// forms ran on the packet, so that the key is still as that path
	// leaves it but for the fields a ct action and a recirculation set
	// (clearKeyCT; with NAT also addresses and ports, which that path
	// writes anyway): the next packet's extraction need not zero it
	// first. run clears it.
	straight bool
}

// clearKeyCT zeroes the key fields a ct action and a recirculation set:
// the ct fields (as ct_clear does) and RecircID.
func clearKeyCT(k *flowkeys.Key) {
	k.RecircID, k.CTState, k.CTOrigProto, k.CTZone, k.CTMark = 0, 0, 0, 0, 0
	k.CTLabels = [16]byte{}
	k.CTOrigIPv4Src, k.CTOrigIPv4Dst = [4]byte{}, [4]byte{}
	k.CTOrigIPv6Src, k.CTOrigIPv6Dst = [16]byte{}, [16]byte{}
	k.CTOrigTpSrc, k.CTOrigTpDst = 0, 0
}

// skbLen is the kernel's skb->len for the packet: for an Ethernet frame
// without its out-of-band outer VLAN tag (skbLen), for an L3 packet
// its length.
func (c *pktCtx) skbLen() int {
	if c.noEth {
		return c.f.Len
	}
	return skbLen(c.f.Bytes())
}

// cutReassembled is the bit of pktCtx.cutlen that says pktCtx.frag is
// set (a trunc's cutlen never reaches it: frames are at most 64 KiB).
const cutReassembled = 1 << 31

// cut returns the bytes a trunc asked the next output to cut.
func (c *pktCtx) cut() uint32 { return c.cutlen &^ cutReassembled }

// reassembled reports whether frag is set.
func (c *pktCtx) reassembled() bool { return c.cutlen&cutReassembled != 0 }

// mru is the packet's MRU for upcalls: frag's, or 0.
func (c *pktCtx) mru() uint16 {
	if c.reassembled() {
		return c.frag.MRU
	}
	return 0
}

// keyProtocol is skb->protocol as the kernel's key_extract sets it: the
// key's EtherType, or with two VLAN tags the inner tag's TPID.
func keyProtocol(k *flowkeys.Key) uint16 {
	if k.CVLANTCI&flowkeys.VLANTagPresent != 0 {
		return k.CVLANTPID
	}
	return k.EthType
}

// cutFrame returns the length the frame is output with after a trunc,
// as the kernel's do_output: skb->len (skbLen, without the out-of-band
// tag, which is sent too) less cutlen, but no less than the Ethernet
// header (nothing for a packet without one); a packet that shrank below
// cutlen bytes since the trunc is not cut at all (the kernel's unsigned
// subtraction wraps).
func (c *pktCtx) cutFrame() int {
	b := c.f.Bytes()
	sl := uint32(c.skbLen())
	cut := c.cut()
	if cut > sl {
		return len(b)
	}
	hl := uint32(14)
	if c.noEth {
		hl = 0
	}
	keep := max(sl-cut, hl)
	if keep >= sl {
		return len(b)
	}
	return int(keep) + len(b) - int(sl)
}

// outerTag reports whether the frame starts with a VLAN tag that the
// kernel would hold out of band (the skb's accelerated tag): every tag
// it parses on receive or execute, and every tag push_vlan adds, is.
func outerTag(frame []byte) bool {
	return len(frame) >= header.EthernetMinimumSize+header.VLANTagSize && header.IsVLAN(header.Ethernet(frame).Type())
}

// encapProto is what the kernel's vlan_set_encap_proto makes
// skb->protocol when it moves the frame's outer in-line tag out of band
// (pop_vlan of the outer of two tags): the EtherType after the tag, or
// for an 802.3 frame ETH_P_802_3 (0x0001) when the two bytes after the
// length are 0xffff (Novell raw 802.3) and EthType8022 otherwise. It
// does not look for SNAP, unlike key extraction.
func encapProto(frame []byte) uint16 {
	et := header.VLAN(frame[header.EthernetTypeOffset:]).Type()
	if et >= header.EtherTypeMin {
		return et
	}
	if len(frame) >= 20 && frame[18] == 0xff && frame[19] == 0xff {
		return 0x0001
	}
	return header.EtherType8022
}

// headers returns the packet's parsed headers.
//
// An IPv4 packet whose network header key extraction located (l3off),
// with no action since that moved headers, starts from that offset
// instead of parsing the link layer again: the headers are what
// parseHeaders would find (the key's EthType is the one parseHeaders
// takes; a frame with two VLAN tags has another skb->protocol and is
// parsed).
func (c *pktCtx) headers() (*pktHeaders, error) {
	if !c.hValid {
		if c.noEth {
			parseHeadersL3(c.f.Bytes(), c.proto, &c.h)
		} else if c.l3off > 0 && c.proto == header.EtherTypeIPv4 && c.key.EthType == header.EtherTypeIPv4 {
			c.h = pktHeaders{MACLen: c.l3off, EthType: header.EtherTypeIPv4, L3: c.l3off, L4: -1}
			parseIPv4(c.f.Bytes(), &c.h)
		} else if err := parseHeaders(c.f.Bytes(), &c.h); err != nil {
			return nil, err
		}
		c.h.Protocol = c.proto
		c.hValid = true
	}
	return &c.h, nil
}

// l3 returns the offset of the packet's network header (pktHeaders.L3)
// without parsing what follows it, or -1 for a frame shorter than an
// Ethernet header.
func (c *pktCtx) l3() int {
	if c.l3off > 0 {
		return c.l3off
	}
	return c.l3Parse()
}

// l3Parse is l3 when extraction's offset is not known.
func (c *pktCtx) l3Parse() int {
	if c.hValid {
		return c.h.L3
	}
	if c.noEth {
		return 0
	}
	b := c.f.Bytes()
	if len(b) < 14 {
		return -1
	}
	off, _, _ := header.L2(b)
	return off
}

// validKey re-extracts the key if an action invalidated it, keeping the
// metadata.
func (c *pktCtx) validKey() error {
	if c.keyValid {
		return nil
	}
	k := &c.key
	md := flowkeys.MetadataOf(k)
	md.L3, md.EthType = c.noEth, c.proto
	if err := flowkeys.Extract(c.f.Bytes(), &md, k); err != nil {
		return err
	}
	c.keyValid = true
	c.proto = keyProtocol(k)
	return nil
}

// invalidate marks key and headers stale after a length-changing action.
func (c *pktCtx) invalidate() { c.keyValid, c.hValid, c.l3off = false, false, 0 }

// run executes ops on the packet. The common actions (output, dec_ttl)
// are handled here; the others in runOp, so that this loop, which every
// packet runs, keeps its values in registers.
func (w *worker) run(c *pktCtx, ops []op) {
	// Most actions here change what start resets, or the key.
	c.clean, c.straight = false, false
	for i := range ops {
		o := &ops[i]
		switch o.kind {
		case opOutput:
			if c.noEth {
				// Every port here is an Ethernet port: the kernel's
				// ovs_vport_send drops an L3 packet sent to one.
				w.counters.noEthernet++
				if o.last {
					return
				}
				continue
			}
			frame := c.f.Buf[c.f.Off : c.f.Off+c.f.Len]
			if c.cutlen > 0 { // rare: a trunc or a reassembled datagram
				if frame = w.outputSpecial(c, o, frame); frame == nil {
					if o.last {
						return
					}
					continue
				}
			}
			if tp := w.tunnelPortOf(o.a); tp != nil {
				w.outputTunnel(c, o.a, tp, frame)
				if o.last {
					return
				}
				continue
			}
			if o.last {
				if !c.steal || !w.tryQueue(o.a, frame) {
					w.output(o.a, frame, c.steal)
				}
				return
			}
			w.output(o.a, frame, false)
		case opDecTTL:
			l3 := c.l3()
			if l3 < 0 { // as parseHeaders: no Ethernet header
				w.actionError()
				return
			}
			var expired bool
			var err error
			if c.proto == header.EtherTypeIPv4 && c.f.Len-l3 >= header.IPv4MinimumSize {
				// The common case, inlined: the header is inside the
				// frame, so the buffer need not be cut to it first.
				expired = decIPv4TTL(c.f.Buf[c.f.Off+l3:])
			} else {
				expired, err = decTTL(c.f.Bytes(), c.proto, l3)
			}
			if err != nil {
				w.actionError()
				return
			}
			if expired {
				// The packet is consumed by the le_1 actions.
				w.nested(c, o.sub, true)
				return
			}
			if c.keyValid && c.key.IPTTL > 0 {
				c.key.IPTTL--
			}
		default:
			if w.runOp(c, o) {
				return
			}
		}
	}
}

// runOp executes one action other than output and dec_ttl, and reports
// whether the packet goes no further (it was consumed or dropped).
func (w *worker) runOp(c *pktCtx, o *op) (stop bool) {
	switch o.kind {
	case opUserspace:
		w.userspace(c, o)
		c.cutlen &= cutReassembled
	case opDrop:
		w.counters.explicitDrops++
		return true
	case opTrunc:
		// The kernel records how many bytes to cut (cutlen), not
		// the length to keep, and only when the packet is longer
		// than max_len; a shorter one keeps the cutlen it had.
		if sl := uint32(c.skbLen()); sl > o.a {
			c.cutlen = c.cutlen&cutReassembled | (sl - o.a)
		}
	case opPushVLAN:
		// The kernel's skb_vlan_push moves an out-of-band tag into
		// the packet and makes skb->protocol its TPID.
		outer := outerTag(c.f.Bytes())
		tpid := header.Ethernet(c.f.Bytes()).Type()
		if err := pushVLAN(&c.f, o.c, o.d); err != nil {
			w.actionError()
			return true
		}
		if outer {
			c.proto = tpid
			c.invalidate()
		} else {
			// The kernel puts the tag in the key (it stays
			// valid): the key extraction would give.
			c.key.VLANTCI, c.key.VLANTPID = o.d, o.c
			c.hValid, c.l3off = false, 0
		}
	case opPopVLAN:
		// skb_vlan_pop drops the out-of-band tag, then, if
		// skb->protocol says another tag follows, takes the 4 bytes
		// after the addresses as that tag (needing 18 bytes) and
		// holds it out of band with skb->protocol as its TPID,
		// setting skb->protocol from what follows it.
		outer := outerTag(c.f.Bytes())
		if err := popVLAN(&c.f); err != nil {
			w.actionError()
			return true
		}
		if outer && header.IsVLAN(c.proto) {
			b := c.f.Bytes()
			if len(b) < 18 {
				w.actionError()
				return true
			}
			header.Ethernet(b).SetType(c.proto)
			c.proto = encapProto(b)
			c.invalidate()
		} else {
			// No tag is left out of band: the kernel clears the
			// key's (it stays valid), as extraction would.
			c.key.VLANTCI, c.key.VLANTPID = 0, 0
			c.hValid, c.l3off = false, 0
		}
	case opPushMPLS, opPopMPLS:
		h, err := c.headers()
		if err == nil {
			if o.kind == opPushMPLS {
				err = insertMPLS(&c.f, "push_mpls", h.MACLen, o.a, o.c, !c.noEth)
			} else {
				err = popMPLS(&c.f, h, o.c, !c.noEth)
			}
		}
		if err != nil {
			w.actionError()
			return true
		}
		if o.kind == opPushMPLS || header.IsMPLS(c.proto) {
			// pop_mpls(0x6558) of an L3 packet leaves an Ethernet
			// frame (the kernel's pop_mpls sets mac_proto).
			if o.kind == opPopMPLS && o.c == header.EtherTypeTEB {
				c.noEth = false
				c.macProtoChanged()
			}
			c.proto = o.c
		}
		c.invalidate()
	case opPushEth, opPopEth, opAddMPLS, opPushNSH, opPopNSH:
		if !w.runL2(c, o) {
			return true
		}
	case opSetTunnel:
		c.egress = o.tnl
	case opTnlPush:
		if o.last { // as Open vSwitch: nothing would use the result
			return true
		}
		if !w.tnlPush(c, o.push) {
			w.actionError()
			return true
		}
	case opTnlPop:
		if o.last {
			w.tnlPop(c, o.a)
			return true
		}
		if cc := w.copyCtx(c); cc != nil {
			w.tnlPop(cc, o.a)
			w.releaseCopy()
		}
	case opSetPriority:
		c.key.Priority = c.key.Priority&^o.b | o.a&o.b
	case opSetMark:
		c.key.SkbMark = c.key.SkbMark&^o.b | o.a&o.b
	case opSetEth, opSetIPv4, opSetIPv6, opSetTCP, opSetUDP, opSetSCTP,
		opSetICMP, opSetICMPv6, opSetARP, opSetND, opSetMPLS:
		if err := c.set(o); err != nil {
			w.actionError()
			return true
		}
	case opCT:
		if err := w.conntrack(c, o.ct); err != nil {
			if err != errCTStolen {
				w.ctDrop(err)
			}
			return true
		}
	case opCTClear:
		c.ct.Clear()
		id := c.key.RecircID
		clearKeyCT(&c.key)
		c.key.RecircID = id
	case opMeter:
		// A packet a drop band drops goes no further (the kernel
		// consumes it, counting it only in the band's statistics);
		// a meter that does not exist passes it. The cost is the
		// kernel's skb->len (skbLen: without an outer VLAN tag,
		// which the kernel holds out of band).
		if m := w.dp.meters.lookup(o.a); m != nil && m.charge(c.skbLen(), w.now) {
			return true
		}
	case opSample:
		if o.a != 0xffffffff && (o.a == 0 || w.random() > o.a) {
			return false
		}
		prob := c.probability
		c.probability = o.a
		w.nested(c, o.sub, o.last)
		if o.last {
			return true
		}
		c.probability = prob
	case opPsample:
		w.psample(c, o)
	case opFail:
		w.actionError()
		return true
	case opClone:
		w.nested(c, o.sub, o.last)
		if o.last {
			return true
		}
	case opCheckPktLen:
		sub := o.sub2
		if c.skbLen() > int(o.c) {
			sub = o.sub
		}
		w.nested(c, sub, o.last)
		if o.last {
			return true
		}
	case opHash:
		if err := c.validKey(); err != nil {
			w.actionError()
			return true
		}
		c.key.DPHash = l4Hash(&c.key, o.a == odp.HashSymL4, o.b)
	case opRecirc:
		if c.recirc >= maxRecirc {
			w.counters.recircDrops++
			return true
		}
		if o.last {
			w.recirculate(c, o.a)
			return true
		}
		cc := w.copyCtx(c)
		if cc == nil {
			return true
		}
		w.recirculate(cc, o.a)
		w.releaseCopy()
	}
	return false
}

// outputSpecial is an output after a trunc (it returns the frame cut) or
// of a reassembled datagram (it outputs it and returns nil).
func (w *worker) outputSpecial(c *pktCtx, o *op, frame []byte) []byte {
	if c.cut() > 0 {
		frame = frame[:c.cutFrame()]
		c.cutlen &= cutReassembled
	}
	if c.reassembled() {
		w.outputReassembled(c, o.a, frame, o.last)
		return nil
	}
	return frame
}

// nested runs a nested action list: on the packet itself when the
// nesting action is the last one (the packet is not needed afterwards),
// else on a copy.
func (w *worker) nested(c *pktCtx, ops []op, last bool) {
	if last {
		w.run(c, ops)
		return
	}
	cc := w.copyCtx(c)
	if cc == nil {
		return
	}
	w.run(cc, ops)
	w.releaseCopy()
}

// recirculate looks the packet up again with recirculation ID id.
func (w *worker) recirculate(c *pktCtx, id uint32) {
	// The key is valid after a ct action: no call then.
	if !c.keyValid && c.validKey() != nil {
		w.actionError()
		return
	}
	c.key.RecircID = id
	c.recirc++
	// cutlen is kept, as the kernel keeps OVS_CB(skb)->cutlen.
	var h uint32
	if w.cache.sets != nil {
		h = recircHash(c.hash, id)
	}
	w.lookupAndRun(c, h)
}

// copyCtx returns a copy of c with its own copy of the packet, from the
// worker's stack of scratch buffers (released by releaseCopy, in LIFO
// order). It returns nil if the copies nest too deep.
func (w *worker) copyCtx(c *pktCtx) *pktCtx {
	if w.copies >= len(w.copyStack) {
		w.actionError()
		return nil
	}
	s := &w.copyStack[w.copies]
	need := DefaultHeadroom + c.f.Len
	if cap(s.buf) < need {
		s.buf = make([]byte, max(need, 2048))
	}
	s.ctx = *c
	s.ctx.f = frameBuf{Buf: s.buf[:cap(s.buf)], Off: DefaultHeadroom, Len: c.f.Len}
	copy(s.ctx.f.Buf[DefaultHeadroom:], c.f.Bytes())
	s.ctx.steal = false
	w.copies++
	return &s.ctx
}

// releaseCopy releases the last copy made by copyCtx.
func (w *worker) releaseCopy() { w.copies-- }

// set executes a set or set_masked action on the packet and its key.
func (c *pktCtx) set(o *op) error {
	s := o.set
	if o.kind == opSetEth {
		if err := setEthernetMasked(c.f.Bytes(), &s.eth[0], &s.eth[1]); err != nil {
			return err
		}
		if c.keyValid {
			for i := 0; i < 6; i++ {
				c.key.EthSrc[i] = c.key.EthSrc[i]&^s.eth[1].Src[i] | s.eth[0].Src[i]&s.eth[1].Src[i]
				c.key.EthDst[i] = c.key.EthDst[i]&^s.eth[1].Dst[i] | s.eth[0].Dst[i]&s.eth[1].Dst[i]
			}
		}
		return nil
	}
	h, err := c.headers()
	if err != nil {
		return err
	}
	b := c.f.Bytes()
	k := &c.key
	switch o.kind {
	case opSetIPv4:
		if err := setIPv4Masked(b, h, &s.ip4[0], &s.ip4[1]); err != nil {
			return err
		}
		if c.keyValid {
			ip := header.IPv4(b[h.L3:])
			k.IPv4Src, k.IPv4Dst = ip.SourceAddress(), ip.DestinationAddress()
			k.IPTOS, k.IPTTL = ip.TOS(), ip.TTL()
		}
	case opSetIPv6:
		if err := setIPv6Masked(b, h, &s.ip6[0], &s.ip6[1]); err != nil {
			return err
		}
		if c.keyValid {
			ip := header.IPv6(b[h.L3:])
			k.IPv6Src, k.IPv6Dst = ip.SourceAddress(), ip.DestinationAddress()
			k.IPTOS, k.IPv6Label, k.IPTTL = ip.TrafficClass(), ip.FlowLabel(), ip.HopLimit()
		}
	case opSetTCP, opSetUDP, opSetSCTP:
		switch o.kind {
		case opSetTCP:
			err = setTCPMasked(b, h, &s.ports[0], &s.ports[1])
		case opSetUDP:
			err = setUDPMasked(b, h, (*odp.UDP)(&s.ports[0]), (*odp.UDP)(&s.ports[1]))
		default:
			err = setSCTPMasked(b, h, (*odp.SCTP)(&s.ports[0]), (*odp.SCTP)(&s.ports[1]))
		}
		if err != nil {
			return err
		}
		if c.keyValid {
			p := header.Ports(b[h.L4:])
			k.TpSrc, k.TpDst = p.Source(), p.Destination()
		}
	case opSetICMP, opSetICMPv6:
		proto, et := uint8(header.IPProtoICMP), uint16(header.EtherTypeIPv4)
		if o.kind == opSetICMPv6 {
			proto, et = header.IPProtoICMPv6, header.EtherTypeIPv6
		}
		if err := setICMPMasked(b, h, et, proto, &s.icmp[0], &s.icmp[1]); err != nil {
			return err
		}
		if c.keyValid {
			ic := header.ICMP(b[h.L4:])
			k.TpSrc, k.TpDst = uint16(ic.Type()), uint16(ic.Code())
		}
	case opSetARP:
		if err := setARPMasked(b, h, &s.arp[0], &s.arp[1]); err != nil {
			return err
		}
		if c.keyValid {
			a := header.ARP(b[h.L3:])
			k.IPProto = uint8(a.Op())
			k.ARPSHA, k.IPv4Src = a.SenderHardwareAddress(), a.SenderProtocolAddress()
			k.ARPTHA, k.IPv4Dst = a.TargetHardwareAddress(), a.TargetProtocolAddress()
		}
	case opSetND:
		if err := setNDMasked(b, h, &s.nd[0], &s.nd[1]); err != nil {
			return err
		}
		c.keyValid = false // the options may have moved bits the key shows
	case opSetMPLS:
		if err := setMPLSMasked(b, h, s.mpls[0], s.mpls[1]); err != nil {
			return err
		}
		if c.keyValid {
			k.MPLSLSE[0] = binary.BigEndian.Uint32(b[h.L3:])
		}
	}
	return nil
}

// l4Hash computes a dp_hash for the hash action from the packet's
// addresses, protocol and ports (symmetric: the same for both
// directions), mixed with basis; never zero, as the kernel's.
func l4Hash(k *flowkeys.Key, sym bool, basis uint32) uint32 {
	var w [11]uint32
	s4, d4 := binary.BigEndian.Uint32(k.IPv4Src[:]), binary.BigEndian.Uint32(k.IPv4Dst[:])
	sp, dp := uint32(k.TpSrc), uint32(k.TpDst)
	w[0], w[1], w[2] = s4, d4, sp<<16|dp
	for i := 0; i < 4; i++ {
		w[3+i] = binary.BigEndian.Uint32(k.IPv6Src[4*i:])
		w[7+i] = binary.BigEndian.Uint32(k.IPv6Dst[4*i:])
	}
	if sym {
		// Order-independent: sum and xor of the two endpoints.
		w[0], w[1] = s4+d4, s4^d4
		w[2] = (sp + dp) | (sp^dp)<<16
		for i := 0; i < 4; i++ {
			a, b := w[3+i], w[7+i]
			w[3+i], w[7+i] = a+b, a^b
		}
	}
	h := flowkeys.JHash2(w[:], uint32(k.IPProto)|uint32(k.EthType)<<8)
	h = flowkeys.JHash2([]uint32{h}, basis)
	if h == 0 {
		h = 1
	}
	return h
}

// random returns a pseudo-random 32-bit number (xorshift64*), for sample.
func (w *worker) random() uint32 {
	x := w.rng
	x ^= x >> 12
	x ^= x << 25
	x ^= x >> 27
	w.rng = x
	return uint32((x * 0x2545f4914f6cdd1d) >> 32)
}

// actionError counts a packet dropped because an action failed on it.
func (w *worker) actionError() { w.counters.actionErrors++ }
