package userdp

import (
	"encoding/binary"

	"github.com/ovsdp/ovsdp/flowkeys"
	"github.com/ovsdp/ovsdp/internal/header"
	"github.com/ovsdp/ovsdp/odp"
)

// Path MTU on a tunnel port's output, as Linux 6.1 does it for the
// tunnel vports of Open vSwitch (collect_md geneve and vxlan devices
// that are datapath ports, so netif_is_any_bridge_port):
//
//   - geneve_xmit_skb, geneve6_xmit_skb and vxlan_xmit_one call
//     skb_tunnel_check_pmtu(skb, route, headroom, reply=true) with the
//     route of the outer packet (looked up with the skb mark) and the
//     headroom of the encapsulation: Ethernet, the outer IP header, UDP
//     and the Geneve header with its options, or the VXLAN header. mtu
//     is the route's MTU less that headroom; a frame whose length from
//     its network header on is at most mtu goes out.
//   - A longer one is answered, when it is IPv4 with exactly DF set (no
//     fragment), mtu >= 576, addresses that may be answered (not a
//     broadcast, multicast, zero-net or loopback source, nor a broadcast
//     or multicast destination) and not itself an ICMP error
//     (iptunnel_pmtud_check_icmp), or IPv6 with mtu >= 1280, a source
//     that is not unspecified, multicast or loopback, not a non-first
//     fragment and not an ICMPv6 error or redirect
//     (iptunnel_pmtud_check_icmpv6): the kernel builds an ICMP
//     "fragmentation needed" (mtu) or ICMPv6 "packet too big" (mtu) from
//     the frame (iptunnel_pmtud_build_icmp/_icmpv6: the Ethernet
//     addresses swapped, the IP addresses swapped, the original TTL or
//     hop limit, the original packet cut to 548 or 1232 bytes as the
//     payload) and receives it on the tunnel device with the packet's
//     egress tunnel metadata, source and destination swapped (the
//     route's source address as the destination): through Open
//     vSwitch it is a packet received on the tunnel port, looked up
//     with that tunnel key. The frame itself is not sent.
//   - Otherwise (GRE, which has no such check in gre_fb_xmit; a frame
//     the kernel does not answer; the skb's pkt_type is PACKET_HOST,
//     which is what a packet given to OVS_PACKET_CMD_EXECUTE or sent by
//     the host through the internal port has) the outer packet is
//     sent as it is, and the underlay's IP output fragments an IPv4 one
//     without DF and drops one with DF or an IPv6 one (ip_fragment and
//     ip6_fragment: the tunnel skb is not ignore_df).
//
// Not modelled: the kernel also takes a frame received addressed to the
// ingress device's own MAC address as PACKET_HOST; here only packets of
// Execute and of the internal port are.

// Minimum MTUs for a PMTU reply (iptunnel_pmtud_check_icmp, _icmpv6).
const (
	pmtuMinIPv4 = 576
	pmtuMinIPv6 = 1280
)

// pmtuHeadroom is the headroom skb_tunnel_check_pmtu takes off the
// route's MTU for a frame of kind through metadata ti (GENEVE_IPV4_HLEN
// or GENEVE_IPV6_HLEN plus the options, VXLAN_HEADROOM or
// VXLAN6_HEADROOM), or 0 for GRE, which makes no such check.
func pmtuHeadroom(kind tunnelKind, ti *tunnelInfo) int {
	ip := ipv4HeaderLen
	if ti.v6 {
		ip = ipv6HeaderLen
	}
	switch kind {
	case tunnelGeneve:
		return header.EthernetMinimumSize + ip + udpHeaderLen + 8 + len(ti.opts)
	case tunnelVXLAN:
		return header.EthernetMinimumSize + ip + udpHeaderLen + 8
	}
	return 0
}

// pmtuReply writes into dst the kernel's answer to frame (untagged
// Ethernet, its network header at l3, of EtherType proto) being too
// long for mtu, and returns its length, or 0 when the kernel sends the
// frame instead. dst must have room for pmtuReplyMax bytes.
func pmtuReply(dst, frame []byte, l3 int, proto uint16, mtu int) int {
	if l3 != header.EthernetMinimumSize || len(frame) <= l3 {
		return 0
	}
	pkt := frame[l3:]
	switch proto {
	case header.EtherTypeIPv4:
		if !pmtuAnswersIPv4(pkt, mtu) {
			return 0
		}
		return pmtuBuildIPv4(dst, frame, mtu)
	case header.EtherTypeIPv6:
		if !pmtuAnswersIPv6(pkt, mtu) {
			return 0
		}
		return pmtuBuildIPv6(dst, frame, mtu)
	}
	return 0
}

// pmtuReplyMax is the longest reply: Ethernet, IPv6, ICMPv6 and 1232
// bytes of the packet.
const pmtuReplyMax = header.EthernetMinimumSize + pmtuMinIPv6

// pmtuAnswersIPv4 is iptunnel_pmtud_check_icmp.
func pmtuAnswersIPv4(p []byte, mtu int) bool {
	if mtu < pmtuMinIPv4 || len(p) < ipv4HeaderLen || p[0]>>4 != 4 {
		return false
	}
	ih := header.IPv4(p)
	hl := int(p[0]&0xf) * 4
	if binary.BigEndian.Uint16(p[6:]) != 0x4000 || hl < ipv4HeaderLen || hl > len(p) {
		return false
	}
	src, dst := ih.SourceAddress(), ih.DestinationAddress()
	bcast := [4]byte{255, 255, 255, 255}
	if dst == bcast || dst[0]&0xf0 == 0xe0 || src[0] == 0 || src[0] == 127 || src == bcast || src[0]&0xf0 == 0xe0 {
		return false
	}
	if p[9] == header.IPProtoICMP && len(p) > hl {
		switch p[hl] { // icmp_is_err
		case 3, 4, 5, 11, 12:
			return false
		}
	}
	return true
}

// pmtuAnswersIPv6 is iptunnel_pmtud_check_icmpv6.
func pmtuAnswersIPv6(p []byte, mtu int) bool {
	if mtu < pmtuMinIPv6 || len(p) < ipv6HeaderLen || p[0]>>4 != 6 {
		return false
	}
	src := p[8:24]
	if src[0] == 0xff || [16]byte(src) == ([16]byte{}) || [16]byte(src) == ([16]byte{15: 1}) {
		return false
	}
	// ipv6_skip_exthdr: hop-by-hop, routing, destination options,
	// fragment (stopping at a non-first one) and AH.
	next, off := p[6], ipv6HeaderLen
	for {
		switch next {
		case 0, 43, 60, 51:
			if off+8 > len(p) {
				return false
			}
			l := (int(p[off+1]) + 1) * 8
			if next == 51 {
				l = (int(p[off+1]) + 2) * 4
			}
			next, off = p[off], off+l
			continue
		case 44:
			if off+8 > len(p) {
				return false
			}
			if binary.BigEndian.Uint16(p[off+2:])&^7 != 0 {
				return false // a non-first fragment
			}
			next, off = p[off], off+8
			continue
		}
		break
	}
	if next == header.IPProtoICMPv6 {
		if off >= len(p) {
			return false
		}
		if t := p[off]; t < 128 || t == 137 {
			return false // an error, or a redirect
		}
	}
	return true
}

// pmtuStart lays a reply to frame out in dst: the Ethernet header with
// the frame's addresses swapped, hl bytes of IP header and 8 of ICMP
// header (zeroed, for the caller to fill), then the frame's packet cut
// so that the IP packet is at most minMTU bytes. It returns the reply,
// the reply from its IP header on, and the frame's packet.
func pmtuStart(dst, frame []byte, hl, minMTU int) (b, ip, orig []byte) {
	orig = frame[header.EthernetMinimumSize:]
	payload := orig[:min(len(orig), minMTU-hl-8)]
	b = dst[:header.EthernetMinimumSize+hl+8+len(payload)]
	copy(b[0:6], frame[6:12])
	copy(b[6:12], frame[0:6])
	copy(b[12:14], frame[12:14])
	ip = b[header.EthernetMinimumSize:]
	clear(ip[:hl+8])
	copy(ip[hl+8:], payload)
	return b, ip, orig
}

// pmtuBuildIPv4 is iptunnel_pmtud_build_icmp.
func pmtuBuildIPv4(dst, frame []byte, mtu int) int {
	b, ip, orig := pmtuStart(dst, frame, ipv4HeaderLen, pmtuMinIPv4)
	ip[0] = 0x45
	binary.BigEndian.PutUint16(ip[2:], uint16(len(ip)))
	binary.BigEndian.PutUint16(ip[6:], 0x4000) // DF
	ip[8] = orig[8]                            // the original TTL
	ip[9] = header.IPProtoICMP
	copy(ip[12:16], orig[16:20])
	copy(ip[16:20], orig[12:16])
	ih := header.IPv4(ip[:ipv4HeaderLen])
	ih.SetChecksum(ih.CalculateChecksum())
	icmp := ip[ipv4HeaderLen:]
	icmp[0], icmp[1] = 3, 4 // destination unreachable, fragmentation needed
	binary.BigEndian.PutUint16(icmp[6:], uint16(mtu))
	binary.BigEndian.PutUint16(icmp[2:], header.Checksum(icmp, 0))
	return len(b)
}

// pmtuBuildIPv6 is iptunnel_pmtud_build_icmpv6.
func pmtuBuildIPv6(dst, frame []byte, mtu int) int {
	b, ip, orig := pmtuStart(dst, frame, ipv6HeaderLen, pmtuMinIPv6)
	ip[0] = 0x60
	binary.BigEndian.PutUint16(ip[4:], uint16(len(ip)-ipv6HeaderLen))
	ip[6] = header.IPProtoICMPv6
	ip[7] = orig[7] // the original hop limit
	copy(ip[8:24], orig[24:40])
	copy(ip[24:40], orig[8:24])
	icmp := ip[ipv6HeaderLen:]
	icmp[0] = 2 // packet too big
	binary.BigEndian.PutUint32(icmp[4:], uint32(mtu))
	binary.BigEndian.PutUint16(icmp[2:], header.Checksum(icmp, header.IPv6(ip).PseudoHeaderSum(header.IPProtoICMPv6, len(icmp))))
	return len(b)
}

// pmtuExceeded handles a frame too long for tunnel port n's route (mtu
// is what skb_tunnel_check_pmtu allows), before it is encapsulated with
// metadata ti and the encapsulation's parameters p: it returns the
// length of the PMTU reply it ran as received on the port (see above),
// the frame being consumed, or 0: the frame is to be sent as it is.
func (w *worker) pmtuExceeded(c *pktCtx, n uint32, ti *tunnelInfo, p *encapParams, frame []byte, mtu int) int {
	if w.dp == nil || w.noInject || c.noEth || w.packetForHost(c) {
		return 0
	}
	if w.pmtuBuf == nil {
		w.pmtuBuf = make([]byte, DefaultHeadroom+pmtuReplyMax)
	}
	buf := w.pmtuBuf
	ln := pmtuReply(buf[DefaultHeadroom:], frame, p.l3, c.proto, mtu)
	if ln == 0 {
		return 0
	}
	// The metadata it is received with: the egress metadata, source
	// and destination swapped (the route's source as the destination).
	md := flowkeys.Metadata{InPort: n, Priority: c.key.Priority, SkbMark: c.key.SkbMark}
	t := &md.Tunnel
	t.ID, t.Flags, t.TOS, t.TTL, t.TpSrc, t.TpDst, t.GBP = ti.id, ti.flags, ti.tos, ti.ttl, ti.tpSrc, ti.tpDst, ti.gbp
	if ti.v6 {
		t.Proto, t.IPv6Src, t.IPv6Dst = flowkeys.TunProtoIPv6, ti.dst6, ti.src6
		if t.IPv6Dst == ([16]byte{}) {
			t.IPv6Dst = p.src6
		}
	} else {
		t.Proto, t.IPv4Src, t.IPv4Dst = flowkeys.TunProtoIPv4, ti.dst, ti.src
		if t.IPv4Dst == ([4]byte{}) {
			t.IPv4Dst = p.src
		}
	}
	iw := w.injector
	if iw == nil {
		iw = newWorker(w.dp, 64)
		iw.noInject = true // a reply's reply is never built
		w.injector = iw
	}
	iw.now = w.now
	md.Tunnel.Opts = iw.tunOpts[:copy(iw.tunOpts[:], ti.opts)]
	iw.processTunnel(buf, DefaultHeadroom, ln, &md)
	iw.flush()
	return ln
}

// packetForHost reports whether the kernel's skb of packet c would have
// pkt_type PACKET_HOST, which skb_tunnel_check_pmtu never answers: a
// packet of Execute (a new skb), or one the host sent through the
// datapath's internal port.
func (w *worker) packetForHost(c *pktCtx) bool {
	if w == w.dp.execW {
		return true
	}
	p := w.dp.portByNumber(c.key.InPort)
	return p != nil && p.port.Type() == odp.PortInternal
}
