package userdp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/ovsdp/ovsdp/conntrack"
	"github.com/ovsdp/ovsdp/flowkeys"
	"github.com/ovsdp/ovsdp/internal/header"
	"github.com/ovsdp/ovsdp/odp"
)

// The ct action: the packet goes through the datapath's connection
// tracker (package conntrack), which the datapath makes on first use and
// sweeps in the background until it is closed. The packet's conntrack
// state (pktCtx.ct) travels with it through recirculation, and the key's
// ct fields are set from it after every ct action, as the kernel's
// ovs_ct_update_key does, so that the recirculated lookup matches on
// them. NAT rewrites the packet with incremental checksums through the
// same code as set(ipv4/ipv6/tcp/udp), which also updates the key.
//
// IP fragments: a ct action gives a fragment to the tracker's
// reassembler first (the kernel's handle_fragments). A fragment that does
// not complete its datagram goes no further (held, or dropped and
// counted in the reassembler's counters; a dropped one is also an action
// error). The one that completes it continues as the whole datagram (the
// offset-0 fragment's frame with all the data, its key extracted again),
// tracked, with the fragments' sizes and MRU in pktCtx.frag: output sends
// it whole when it fits in the MRU and fragments it again otherwise,
// upcalls carry its MRU, and a packet executed with an MRU is fragmented
// on output too (see conntrack.Fragmenter for the kernel's rules).
//
// Not done: an ICMPv6 error embedding an IPv6 packet with extension
// headers is dropped when NAT would rewrite it.

// ctSweepInterval is how often the whole conntrack table is swept, until
// ct-set-sweep-interval changes it.
const ctSweepInterval = time.Second

// ctState is the datapath's tracker, made on first use.
type ctState struct {
	once sync.Once
	t    *conntrack.Tracker

	mu     sync.Mutex // the sweeper's fields
	stop   func()
	sweep  time.Duration
	closed bool
}

// Conntrack returns the datapath's connection tracker (made on first
// use), for dpctl's conntrack commands.
func (dp *Datapath) Conntrack() *conntrack.Tracker {
	dp.ct.once.Do(func() {
		dp.ct.t = conntrack.New(conntrack.Config{MaxConns: dp.opts.ctMax})
		dp.ct.mu.Lock()
		dp.ct.sweep = ctSweepInterval
		dp.ct.stop = dp.ct.t.StartSweeper(ctSweepInterval)
		dp.ct.mu.Unlock()
	})
	return dp.ct.t
}

// closeConntrack stops the sweeper, if the tracker was made.
func (dp *Datapath) closeConntrack() {
	dp.ct.once.Do(func() {}) // no tracker after Close
	dp.ct.mu.Lock()
	defer dp.ct.mu.Unlock()
	dp.ct.closed = true
	if dp.ct.stop != nil {
		dp.ct.stop()
		dp.ct.stop = nil
	}
}

// ctCacheEntries is the size of each worker's conntrack.ConnCache, the
// exact-match cache's default (at most as many deleted connections kept
// from the collector, 256 bytes each).
const ctCacheEntries = DefaultCacheEntries

// errCTStolen: the ct action kept the packet (a fragment held for
// reassembly); it goes no further, and that is no error.
var errCTStolen = errors.New("ct: fragment held for reassembly")

// conntrack executes a ct action on the packet.
func (w *worker) conntrack(c *pktCtx, a *conntrack.Action) error {
	if !c.keyValid {
		if err := c.validKey(); err != nil {
			return err
		}
	}
	tr := w.tracker
	if tr == nil {
		// Once made, the tracker stays the datapath's (Close stops its
		// sweeper only), so the worker keeps it.
		if tr = w.dp.Conntrack(); tr == nil {
			return fmt.Errorf("ct: datapath closed: %w", odp.ErrUnsupported)
		}
		w.tracker = tr
		w.ctCache = tr.NewConnCache(ctCacheEntries)
		w.ctPrefetch = tr.NewPrefetcher()
	}
	untracked := false
	if c.key.IPFrag != flowkeys.FragNone {
		var err error
		if untracked, err = w.defrag(c, tr, a.Zone); err != nil {
			return err
		}
	}
	l4, l3len, ok := c.ipv4Payload()
	if !ok {
		h, err := c.headers()
		if err != nil {
			return err
		}
		l4, l3len = ipPayload(c.f.Bytes(), h)
	}
	p := &w.ctPkt // scratch for ExecuteKey
	// The packet's cache hash picks the slot: a packet of the same
	// microflow at the same recirculation depth meets the same
	// connection (ConnCache checks that it does).
	if err := w.ctCache.ExecuteKey(c.hash, &c.key, l4, l3len, untracked, a, &c.ct, p); err != nil {
		return err
	}
	if p.Rewritten != 0 {
		h, err := c.headers()
		if err != nil {
			return err
		}
		// The key's conntrack fields are set already; the rewrite
		// changes only its addresses and ports.
		if err := w.natRewrite(c, p, h); err != nil {
			return err
		}
	}
	return nil
}

// defrag gives a fragment to the tracker's reassembler, as the kernel's
// handle_fragments: errCTStolen when it is held, an error when it is
// dropped. A fragment passed on unreassembled gets a key without the
// fragment type, as the kernel's (untracked reports that it has no L4
// header to track, or that reassembly is off: it is then invalid). The
// fragment that completes a datagram is replaced by it.
func (w *worker) defrag(c *pktCtx, tr *conntrack.Tracker, zone uint16) (untracked bool, err error) {
	h, err := c.headers()
	if err != nil {
		return false, err
	}
	r := &w.reasm
	r.Headroom = DefaultHeadroom
	v, err := tr.Defrag().Gather(c.f.Bytes(), h.L3, c.key.EthType == header.EtherTypeIPv6, zone, r)
	switch v {
	case conntrack.FragHeld:
		return false, errCTStolen
	case conntrack.FragDropped:
		return false, fmt.Errorf("ct: %w", err)
	case conntrack.FragPass:
		later := c.key.IPFrag == flowkeys.FragLater
		c.key.IPFrag = flowkeys.FragNone
		return later || errors.Is(err, conntrack.ErrFragOff), nil
	}
	c.f = frameBuf{Buf: r.Buf, Off: r.Headroom, Len: len(r.Frame)}
	c.steal = false
	c.invalidate()
	c.frag = r.Frag
	c.cutlen |= cutReassembled
	*r = conntrack.Reassembled{}
	if err := c.validKey(); err != nil {
		return false, fmt.Errorf("ct: reassembled datagram: %w", err)
	}
	return false, nil
}

// outputReassembled outputs a reassembled datagram (or one executed with
// an MRU) as the kernel's do_output: whole when its skb->len is within
// the MRU plus the Ethernet header, dropped when the MRU exceeds the
// port's MTU, else fragmented again (conntrack.Fragmenter: the original
// fragments' sizes unless the kernel would output a clone, which is what
// every output but the action list's last one outputs).
//
// A tunnel port gets each piece encapsulated (the kernel fragments in
// do_output, before the tunnel device's transmit).
func (w *worker) outputReassembled(c *pktCtx, port uint32, frame []byte, last bool) {
	hh := 14
	if c.noEth {
		hh = 0
	}
	send := func(b []byte) { w.output(port, b, false) }
	if tp := w.tunnelPortOf(port); tp != nil {
		send = func(b []byte) { w.outputTunnel(c, port, tp, b) }
	}
	if !c.frag.NeedsRefragment(skbLen(frame), hh) {
		send(frame)
		return
	}
	p := w.dp.portByNumber(port)
	if p == nil {
		w.counters.txNoPort++
		return
	}
	l3 := c.l3()
	err := w.fragmenter.Fragment(frame, l3, &c.frag, p.port.MTU(), !last, send)
	if err != nil {
		w.actionError()
	}
}

// ctDrop counts a packet the ct action dropped.
func (w *worker) ctDrop(error) { w.actionError() }

// ipPayload returns the bytes from the L4 header to the end of the IP
// payload as the IP header gives it (no link-layer padding), and the
// length from the IP header on.
func ipPayload(b []byte, h *pktHeaders) ([]byte, uint32) {
	if h.L3 < 0 || h.L3 >= len(b) {
		return nil, 0
	}
	end := len(b)
	switch h.EthType {
	case header.EtherTypeIPv4:
		if len(b) >= h.L3+4 {
			end = h.L3 + int(binary.BigEndian.Uint16(b[h.L3+2:]))
		}
	case header.EtherTypeIPv6:
		if len(b) >= h.L3+6 {
			end = h.L3 + 40 + int(binary.BigEndian.Uint16(b[h.L3+4:]))
		}
	}
	end = min(end, len(b))
	if h.L4 < 0 || h.L4 > end {
		return nil, uint32(max(0, end-h.L3))
	}
	return b[h.L4:end], uint32(end - h.L3)
}

// ipv4Payload is ipPayload for the common case, without parsing the
// headers again: an IPv4 packet whose network header key extraction
// located (as pktCtx.headers' shortcut), with a header length and total
// length that are consistent and within the frame. ok is false for
// every other packet, which ipPayload handles.
func (c *pktCtx) ipv4Payload() (l4 []byte, l3Len uint32, ok bool) {
	if c.straight {
		// The straight-line extraction's frame, which only fast forms
		// changed (in place): an IPv4 header without options at 14,
		// in 42 bytes or more; only the total length is to check.
		b := c.f.Bytes()
		if len(b) >= header.EthernetMinimumSize+header.IPv4MinimumSize {
			tot := int(b[16])<<8 | int(b[17])
			if tot >= header.IPv4MinimumSize && tot <= len(b)-header.EthernetMinimumSize {
				return b[header.EthernetMinimumSize+header.IPv4MinimumSize : header.EthernetMinimumSize+tot], uint32(tot), true
			}
		}
	}
	l3 := c.l3off
	if l3 <= 0 || c.noEth || c.proto != header.EtherTypeIPv4 || c.key.EthType != header.EtherTypeIPv4 {
		return nil, 0, false
	}
	// The frame is c.f.Buf[Off:Off+Len] (frameBuf.check): the IP
	// header's bytes without slicing the frame first.
	start, end := c.f.Off+l3, c.f.Off+c.f.Len
	buf := c.f.Buf
	if end > len(buf) || start+header.IPv4MinimumSize > end {
		return nil, 0, false
	}
	ip := buf[start:end]
	ihl := int(ip[0]&0x0f) * 4
	tot := int(ip[2])<<8 | int(ip[3])
	if ihl < header.IPv4MinimumSize || ihl > tot || tot > len(ip) {
		return nil, 0, false
	}
	return ip[ihl:tot], uint32(tot), true
}

// natRewrite makes the packet carry p.Tuple (and p.Inner), as the
// tracker's NAT decided.
func (w *worker) natRewrite(c *pktCtx, p *conntrack.Packet, h *pktHeaders) error {
	k := &c.key
	t := &p.Tuple
	s := &w.natArgs
	*s = setArgs{}
	o := op{set: s}
	if t.V6 {
		s.ip6[0] = odp.IPv6{Src: t.Src, Dst: t.Dst}
		if t.Src != k.IPv6Src {
			s.ip6[1].Src = ones16
		}
		if t.Dst != k.IPv6Dst {
			s.ip6[1].Dst = ones16
		}
		o.kind = opSetIPv6
	} else {
		s.ip4[0] = odp.IPv4{Src: [4]byte(t.Src[:4]), Dst: [4]byte(t.Dst[:4])}
		if s.ip4[0].Src != k.IPv4Src {
			s.ip4[1].Src = ones4
		}
		if s.ip4[0].Dst != k.IPv4Dst {
			s.ip4[1].Dst = ones4
		}
		o.kind = opSetIPv4
	}
	if s.ip4[1] != (odp.IPv4{}) || s.ip6[1] != (odp.IPv6{}) {
		if err := c.set(&o); err != nil {
			return fmt.Errorf("ct: nat: %w", err)
		}
	}
	b := c.f.Bytes()
	switch t.Proto {
	case header.IPProtoTCP, header.IPProtoUDP:
		if t.SrcPort == k.TpSrc && t.DstPort == k.TpDst {
			break
		}
		s.ports[0] = odp.TCP{Src: t.SrcPort, Dst: t.DstPort}
		s.ports[1] = odp.TCP{Src: 0xffff, Dst: 0xffff}
		o.kind = opSetUDP
		if t.Proto == header.IPProtoTCP {
			o.kind = opSetTCP
		}
		if err := c.set(&o); err != nil {
			return fmt.Errorf("ct: nat: %w", err)
		}
	case header.IPProtoICMP, header.IPProtoICMPv6:
		if p.HasInner {
			if p.Rewritten&conntrack.RewroteInner != 0 {
				return natICMPInner(b, h, &p.Inner)
			}
			break
		}
		if len(b) < h.L4+8 {
			return fmt.Errorf("ct: nat: icmp: %w", errTooShort)
		}
		ic := b[h.L4:]
		if old := binary.BigEndian.Uint16(ic[4:]); old != t.SrcPort {
			binary.BigEndian.PutUint16(ic[4:], t.SrcPort)
			binary.BigEndian.PutUint16(ic[2:], header.ChecksumUpdate2(binary.BigEndian.Uint16(ic[2:]), old, t.SrcPort))
		}
	default:
		if t.SrcPort != 0 || t.DstPort != 0 {
			return fmt.Errorf("ct: nat of IP protocol %d ports: %w", t.Proto, odp.ErrUnsupported)
		}
	}
	return nil
}

// natICMPInner rewrites the packet embedded in an ICMP or ICMPv6 error
// to in (addresses, with the inner IPv4 header checksum; ports, with the
// inner UDP or whole TCP header's checksum, which covers the addresses
// too) and recomputes the ICMP checksum (ICMPv6's over its
// pseudo-header), as the kernel's nf_nat_icmp_reply_translation and
// nf_nat_icmpv6_reply_translation. An embedded IPv6 packet with
// extension headers is refused (dropped).
func natICMPInner(b []byte, h *pktHeaders, in *conntrack.Tuple) error {
	ic := b[h.L4:]
	hl, alen, aoff := 20, 4, 12
	if in.V6 {
		hl, alen, aoff = 40, 16, 8
	}
	if len(ic) < 8+hl {
		return fmt.Errorf("ct: nat: icmp error: %w", errTooShort)
	}
	ip := ic[8:]
	if !in.V6 {
		hl = int(ip[0]&0x0f) * 4
		if hl < 20 || len(ip) < hl {
			return fmt.Errorf("ct: nat: icmp error: inner header: %w", errTooShort)
		}
	} else if ip[6] != in.Proto {
		return fmt.Errorf("ct: nat: the IPv6 packet inside an ICMPv6 error has extension headers: %w", odp.ErrUnsupported)
	}
	l4 := ip[hl:]
	var l4sum []byte // the inner L4 checksum, where the header has it
	switch in.Proto {
	case header.IPProtoUDP:
		if len(l4) >= 8 && binary.BigEndian.Uint16(l4[6:]) != 0 {
			l4sum = l4[6:8]
		}
	case header.IPProtoTCP:
		if len(l4) >= 20 {
			l4sum = l4[16:18]
		}
	}
	ipsum := binary.BigEndian.Uint16(ip[10:])
	for i, a := range [2]*[16]byte{&in.Src, &in.Dst} {
		f := ip[aoff+alen*i : aoff+alen*(i+1)]
		if !in.V6 {
			ipsum = header.ChecksumUpdateBytes(ipsum, f, a[:4])
		}
		if l4sum != nil {
			binary.BigEndian.PutUint16(l4sum, header.ChecksumUpdateBytes(binary.BigEndian.Uint16(l4sum), f, a[:alen]))
		}
		copy(f, a[:alen])
	}
	if !in.V6 {
		binary.BigEndian.PutUint16(ip[10:], ipsum)
	}
	switch in.Proto {
	case header.IPProtoTCP, header.IPProtoUDP:
		if len(l4) >= 4 {
			for i, v := range [2]uint16{in.SrcPort, in.DstPort} {
				old := binary.BigEndian.Uint16(l4[2*i:])
				if l4sum != nil {
					binary.BigEndian.PutUint16(l4sum, header.ChecksumUpdate2(binary.BigEndian.Uint16(l4sum), old, v))
				}
				binary.BigEndian.PutUint16(l4[2*i:], v)
			}
		}
	case header.IPProtoICMP, header.IPProtoICMPv6:
		if len(l4) >= 8 {
			old := binary.BigEndian.Uint16(l4[4:])
			binary.BigEndian.PutUint16(l4[4:], in.SrcPort)
			binary.BigEndian.PutUint16(l4[2:], header.ChecksumUpdate2(binary.BigEndian.Uint16(l4[2:]), old, in.SrcPort))
		}
	}
	// The outer ICMP checksum, from scratch over the ICMP message (the
	// IP payload, without link-layer padding).
	pl, _ := ipPayload(b, h)
	if len(pl) < 8 {
		return fmt.Errorf("ct: nat: icmp error: %w", errTooShort)
	}
	binary.BigEndian.PutUint16(pl[2:], 0)
	var sum uint64
	if in.V6 {
		outer := b[h.L3:]
		sum = header.Sum(outer[8:40], uint64(len(pl))+header.IPProtoICMPv6)
	}
	binary.BigEndian.PutUint16(pl[2:], header.Checksum(pl, sum))
	return nil
}
