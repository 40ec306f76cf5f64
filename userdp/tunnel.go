package userdp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"strconv"
	"strings"
	"syscall"

	"github.com/ovsdp/ovsdp/flowkeys"
	"github.com/ovsdp/ovsdp/internal/header"
	"github.com/ovsdp/ovsdp/odp"
)

// Tunnel ports: geneve, vxlan and gre vports with the semantics of the
// kernel's flow-based ("collect metadata") tunnel devices that the
// openvswitch module creates for them (drivers/net/geneve.c,
// drivers/net/vxlan/vxlan_core.c, net/ipv4/ip_gre.c in Linux 6.1).
//
// This file holds what does not depend on Linux: the port options, the
// decapsulation of a received outer IPv4 packet into the key's tunnel
// metadata, and the encapsulation of a frame with the metadata that
// set(tunnel(...)) gave it. tunnel_linux.go has the sockets.
//
// Receive (decapTunnel) fills the key as the kernel's tunnel drivers
// fill the skb's tunnel metadata (ip_tun_rx_dst / udp_tun_rx_dst): the
// outer addresses, TOS and TTL, the UDP ports, the tunnel ID with
// TUNNEL_KEY (geneve and vxlan always; gre when the key bit is set),
// TUNNEL_CSUM when the UDP checksum is not zero (or the GRE checksum bit
// is set), TUNNEL_OAM and TUNNEL_CRIT_OPT from the Geneve header,
// TUNNEL_GENEVE_OPT with the option bytes, and for a vxlan port with the
// gbp extension TUNNEL_VXLAN_OPT and the group policy. DF is never set
// on receive, as in the kernel. Packets the kernel drops are dropped:
// a bad UDP or GRE checksum, a Geneve version other than 0 or a payload
// other than Ethernet, VXLAN without the VNI flag or with reserved bits
// set (the gbp bits count as reserved on a port without the extension),
// GRE with the version or routing bits, and an outer CE mark on an inner
// packet that is not ECN-capable (IP_ECN_decapsulate; an inner
// ECN-capable packet is marked CE instead).
//
// Transmit (encapTunnel) builds the outer headers as the kernel's
// geneve_xmit_skb, vxlan_xmit_one and gre_fb_xmit with
// ip_md_tunnel_xmit do: the destination and (when given) source of the
// metadata, else the source of the route; TOS from the metadata with the
// inner packet's ECN bits (ip_tunnel_ecn_encap); the metadata's TTL (GRE:
// 0 inherits the inner TTL, or the route's hop limit for a non-IP
// packet; geneve and vxlan: 0 means the route's hop limit); DF when the
// metadata has TUNNEL_DONT_FRAGMENT; the UDP source port from the flow
// hash over the kernel's ranges (geneve 1-65535, vxlan the local port
// range); the UDP destination port of the port (vxlan: the metadata's
// tp_dst when set); a UDP checksum, or a GRE checksum, only with
// TUNNEL_CSUM; the GRE key only with TUNNEL_KEY; the Geneve options and
// OAM and critical bits; the VXLAN group policy when the port has the gbp
// extension and the policy is not zero.
//
// Path MTU (tunnel_pmtu.go): a geneve or vxlan frame too long for the
// route's MTU is answered with an ICMP "fragmentation needed" or ICMPv6
// "packet too big" received on the tunnel port, where Linux's
// skb_tunnel_check_pmtu answers it; what is not answered is
// encapsulated, and an IPv4 outer packet longer than the route's MTU is
// then fragmented unless the metadata has DF (tunnel_linux.go), as the
// kernel's ip_fragment, while one with DF, or an IPv6 one, is dropped,
// as ip_fragment and ip6_fragment drop them.
//
// ERSPAN: set(tunnel(...,erspan(...))) is accepted and its metadata kept
// as the kernel keeps it (the tunnel info's 12 option bytes with
// TUNNEL_ERSPAN_OPT), but no port here encapsulates ERSPAN: the kernel's
// openvswitch module has no ERSPAN vport type (an erspan netdevice added
// as a netdev vport would get the metadata only inside the kernel, which
// an AF_PACKET socket cannot carry). Geneve ports build their header's
// option length from it as Linux's geneve does (buildHeaders); vxlan
// and gre ignore it; userspace(tunnel_out_port)'s egress key has it.
// GTP-U metadata is Open vSwitch's userspace datapath's own, not a
// kernel attribute, and is refused.
//
// The route (source address, MTU) is looked up with the packet's skb
// mark, as all three of the kernel's tunnels do for IPv4 and IPv6
// (flowi4_mark/flowi6_mark = skb->mark in geneve_get_v4_rt and
// geneve_get_v6_dst, vxlan_get_route and vxlan6_get_route, and the GRE
// route lookup of gre_fb_xmit; their fill_metadata_dst, which computes
// userspace(tunnel_out_port)'s egress key, uses the same lookups), and
// the outer packet is sent with that mark.

// ipProtoGRE is IPPROTO_GRE.
const ipProtoGRE = 47

// Kernel TUNNEL_* bits that odp does not name.
const (
	kernelTunnelCritOpt = 0x0400 // TUNNEL_CRIT_OPT
	kernelTunnelSeq     = 0x0008 // TUNNEL_SEQ
)

// tunnelKind is a tunnel port's encapsulation.
type tunnelKind uint8

const (
	tunnelGeneve tunnelKind = iota + 1
	tunnelVXLAN
	tunnelGRE
)

func (k tunnelKind) String() string {
	switch k {
	case tunnelGeneve:
		return "geneve"
	case tunnelVXLAN:
		return "vxlan"
	case tunnelGRE:
		return "gre"
	}
	return "tunnel-" + strconv.Itoa(int(k))
}

// Default UDP ports (the IANA ports, which dpctl also uses for system@).
const (
	geneveDefaultPort = 6081
	vxlanDefaultPort  = 4789
)

// Header sizes.
const (
	ipv4HeaderLen   = 20
	ipv6HeaderLen   = 40
	udpHeaderLen    = 8
	geneveHeaderLen = 8
	vxlanHeaderLen  = 8
	greBaseLen      = 4
)

// tunnelConfig is a tunnel port's configuration.
type tunnelConfig struct {
	kind    tunnelKind
	dstPort uint16 // UDP destination port (geneve, vxlan)
	gbp     bool   // vxlan: the group-based policy extension
}

// tunnelKindOf returns the tunnel kind of a port type, or 0.
func tunnelKindOf(t odp.PortType) tunnelKind {
	switch t {
	case odp.PortGeneve:
		return tunnelGeneve
	case odp.PortVXLAN:
		return tunnelVXLAN
	case odp.PortGRE:
		return tunnelGRE
	}
	return 0
}

// parseTunnelOptions checks a tunnel port's options as the kernel's
// vport creation (through dpctl's genl) takes them: "dst_port" for
// geneve and vxlan, "exts=gbp" for vxlan. It returns the configuration
// and the options as Ports shows them (dst_port always, as the kernel
// reports the port it was given, and exts=gbp when set).
func parseTunnelOptions(name string, kind tunnelKind, opts map[string]string) (tunnelConfig, map[string]string, error) {
	c := tunnelConfig{kind: kind}
	switch kind {
	case tunnelGeneve:
		c.dstPort = geneveDefaultPort
	case tunnelVXLAN:
		c.dstPort = vxlanDefaultPort
	}
	for k, v := range opts {
		switch k {
		case "dst_port":
			if kind == tunnelGRE {
				return c, nil, fmt.Errorf("userdp: add port %s: option dst_port is for vxlan and geneve ports, not gre: %w", name, syscall.EINVAL)
			}
			n, err := strconv.ParseUint(v, 10, 16)
			if err != nil || n == 0 {
				return c, nil, fmt.Errorf("userdp: add port %s: option dst_port=%q: want a UDP port number 1-65535: %w", name, v, syscall.EINVAL)
			}
			c.dstPort = uint16(n)
		case "exts":
			if kind != tunnelVXLAN {
				return c, nil, fmt.Errorf("userdp: add port %s: option exts is for vxlan ports, not %s: %w", name, kind, syscall.EINVAL)
			}
			for _, e := range strings.Split(v, ",") {
				if e != "gbp" {
					return c, nil, fmt.Errorf("userdp: add port %s: option exts=%q: the only extension is gbp: %w", name, v, syscall.EINVAL)
				}
				c.gbp = true
			}
		default:
			return c, nil, fmt.Errorf("userdp: add port %s: unknown %s port option %q: %w", name, kind, k, syscall.EINVAL)
		}
	}
	shown := map[string]string{}
	if kind != tunnelGRE {
		shown["dst_port"] = strconv.Itoa(int(c.dstPort))
	}
	if c.gbp {
		shown["exts"] = "gbp"
	}
	return c, shown, nil
}

// errTunnelDrop is the error of a received tunnel packet that the
// kernel would drop; it says why.
var errTunnelDrop = errors.New("tunnel packet dropped")

func tunnelDrop(format string, args ...any) error {
	return fmt.Errorf(format+": %w", append(args, errTunnelDrop)...)
}

// decapTunnel decapsulates pkt, a whole outer IPv4 packet received by
// a tunnel port of configuration c, as the kernel's tunnel receive path
// does. It fills t with the tunnel metadata, copies the Geneve options
// into opts (returning their length; t.Opts is that part of opts), and returns the offset and length
// of the inner Ethernet frame in pkt. It may change the inner packet (an
// outer CE mark is copied to the inner IP header). The error, which
// wraps errTunnelDrop, says why a packet is dropped.
func decapTunnel(pkt []byte, c *tunnelConfig, t *flowkeys.Tunnel, opts *[256]byte) (off, n, nopts int, err error) {
	if len(pkt) > 0 && pkt[0]>>4 == 6 {
		return decapTunnel6(pkt, c, t, opts)
	}
	if len(pkt) < ipv4HeaderLen {
		return 0, 0, 0, tunnelDrop("outer IPv4 header: %d bytes", len(pkt))
	}
	ip := header.IPv4(pkt)
	hl := ip.HeaderLength()
	if ip.Version() != 4 || hl < ipv4HeaderLen || hl > len(pkt) {
		return 0, 0, 0, tunnelDrop("outer IPv4 header: version %d, length %d of %d bytes", ip.Version(), hl, len(pkt))
	}
	if tl := int(ip.TotalLength()); tl >= hl && tl < len(pkt) {
		pkt = pkt[:tl] // the link layer's padding
	}
	*t = flowkeys.Tunnel{Proto: flowkeys.TunProtoIPv4, IPv4Src: ip.SourceAddress(), IPv4Dst: ip.DestinationAddress(),
		TOS: ip.TOS(), TTL: ip.TTL()}
	return decapPayload(pkt, hl, ip.Protocol(), func(ul int) uint64 { return ip.PseudoHeaderSum(header.IPProtoUDP, ul) }, c, t, opts)
}

// decapTunnel6 is decapTunnel for an outer IPv6 packet (as the tunnel
// port's IPv6 socket gives it: a fixed header, no extension headers).
// Geneve, as the openvswitch module creates its devices, wants UDP
// checksums over IPv6 (use_udp6_rx_checksums); vxlan accepts a zero one
// (VXLAN_F_UDP_ZERO_CSUM6_RX). GRE ports are IPv4 only.
func decapTunnel6(pkt []byte, c *tunnelConfig, t *flowkeys.Tunnel, opts *[256]byte) (off, n, nopts int, err error) {
	if len(pkt) < ipv6HeaderLen {
		return 0, 0, 0, tunnelDrop("outer IPv6 header: %d bytes", len(pkt))
	}
	ip := header.IPv6(pkt)
	if pl := int(binary.BigEndian.Uint16(pkt[4:])); ipv6HeaderLen+pl < len(pkt) {
		pkt = pkt[:ipv6HeaderLen+pl]
	}
	if c.kind == tunnelGRE {
		return 0, 0, 0, tunnelDrop("GRE over IPv6 on a gre port")
	}
	*t = flowkeys.Tunnel{Proto: flowkeys.TunProtoIPv6, IPv6Src: [16]byte(pkt[8:24]), IPv6Dst: [16]byte(pkt[24:40]),
		TOS: uint8(binary.BigEndian.Uint16(pkt) >> 4), TTL: pkt[7]}
	if c.kind == tunnelGeneve && len(pkt) >= ipv6HeaderLen+udpHeaderLen && header.UDP(pkt[ipv6HeaderLen:]).Checksum() == 0 {
		return 0, 0, 0, tunnelDrop("zero UDP checksum over IPv6 on a geneve port")
	}
	return decapPayload(pkt, ipv6HeaderLen, pkt[6], func(ul int) uint64 { return ip.PseudoHeaderSum(header.IPProtoUDP, ul) }, c, t, opts)
}

// decapPayload decapsulates what follows the outer IP header (hl bytes,
// protocol proto; pseudo returns the UDP pseudo-header sum).
func decapPayload(pkt []byte, hl int, proto uint8, pseudo func(int) uint64, c *tunnelConfig, t *flowkeys.Tunnel, opts *[256]byte) (off, n, nopts int, err error) {
	p := pkt[hl:]
	var inner int
	switch c.kind {
	case tunnelGeneve, tunnelVXLAN:
		if proto != header.IPProtoUDP {
			return 0, 0, 0, tunnelDrop("outer IP protocol %d is not UDP", proto)
		}
		if len(p) < udpHeaderLen {
			return 0, 0, 0, tunnelDrop("UDP header: %d bytes", len(p))
		}
		u := header.UDP(p)
		ul := int(u.Length())
		if ul < udpHeaderLen || ul > len(p) {
			return 0, 0, 0, tunnelDrop("UDP length %d of %d bytes", ul, len(p))
		}
		p = p[:ul]
		pkt = pkt[:hl+ul]
		if header.Ports(u).Destination() != c.dstPort {
			return 0, 0, 0, tunnelDrop("UDP port %d is not the port's %d", header.Ports(u).Destination(), c.dstPort)
		}
		if cs := u.Checksum(); cs != 0 {
			// A packet from another namespace of this host may still
			// carry the partial checksum of a checksum offload (the
			// pseudo-header sum, CHECKSUM_PARTIAL), which the host
			// trusts and a raw socket cannot tell apart: that value is
			// taken as good too.
			ps := pseudo(ul)
			if header.Checksum(p, ps) != 0 && cs != header.Fold(ps) {
				return 0, 0, 0, tunnelDrop("bad UDP checksum %#04x", cs)
			}
			t.Flags |= odp.KernelTunnelCSUM
		}
		t.TpSrc, t.TpDst = header.Ports(u).Source(), header.Ports(u).Destination()
		var hlen int
		if c.kind == tunnelGeneve {
			hlen, nopts, err = decapGeneve(p[udpHeaderLen:], t, opts)
		} else {
			hlen, err = decapVXLAN(p[udpHeaderLen:], c.gbp, t)
		}
		if err != nil {
			return 0, 0, 0, err
		}
		inner = hl + udpHeaderLen + hlen
	case tunnelGRE:
		if proto != ipProtoGRE {
			return 0, 0, 0, tunnelDrop("outer IP protocol %d is not GRE", proto)
		}
		hlen, err := decapGRE(p, t)
		if err != nil {
			return 0, 0, 0, err
		}
		inner = hl + hlen
	default:
		return 0, 0, 0, tunnelDrop("port type %s", c.kind)
	}
	if len(pkt)-inner < header.EthernetMinimumSize {
		return 0, 0, 0, tunnelDrop("inner Ethernet frame: %d bytes", len(pkt)-inner)
	}
	if err := ecnDecap(t.TOS, pkt[inner:]); err != nil {
		return 0, 0, 0, err
	}
	return inner, len(pkt) - inner, nopts, nil
}

// decapGeneve parses a Geneve header (geneve_udp_encap_recv, geneve_rx).
func decapGeneve(b []byte, t *flowkeys.Tunnel, opts *[256]byte) (hlen, nopts int, err error) {
	if len(b) < geneveHeaderLen {
		return 0, 0, tunnelDrop("Geneve header: %d bytes", len(b))
	}
	if v := b[0] >> 6; v != 0 {
		return 0, 0, tunnelDrop("Geneve version %d", v)
	}
	if pt := binary.BigEndian.Uint16(b[2:]); pt != header.EtherTypeTEB {
		return 0, 0, tunnelDrop("Geneve protocol %#04x is not Ethernet (0x6558)", pt)
	}
	nopts = int(b[0]&0x3f) * 4
	if len(b) < geneveHeaderLen+nopts {
		return 0, 0, tunnelDrop("Geneve options of %d bytes in %d", nopts, len(b)-geneveHeaderLen)
	}
	t.ID = uint64(b[4])<<16 | uint64(b[5])<<8 | uint64(b[6])
	t.Flags |= odp.KernelTunnelKey
	if b[1]&0x80 != 0 {
		t.Flags |= odp.KernelTunnelOAM
	}
	if b[1]&0x40 != 0 {
		t.Flags |= kernelTunnelCritOpt
	}
	if nopts > 0 {
		copy(opts[:], b[geneveHeaderLen:geneveHeaderLen+nopts])
		t.Flags |= odp.KernelTunnelGeneveOpt
		t.Opts = opts[:nopts:nopts] // Extract copies them into the key's TunOpts
	}
	return geneveHeaderLen + nopts, nopts, nil
}

// VXLAN header bits (the first 32-bit word).
const (
	vxlanFlagVNI     = 0x08000000 // VXLAN_HF_VNI
	vxlanFlagGBP     = 0x80000000 // VXLAN_HF_GBP
	vxlanGBPDontLrn  = 0x00400000 // VXLAN_GBP_DONT_LEARN
	vxlanGBPApplied  = 0x00080000 // VXLAN_GBP_POLICY_APPLIED
	vxlanGBPIDMask   = 0x0000ffff // VXLAN_GBP_ID_MASK
	vxlanGBPUsedBits = vxlanFlagGBP | vxlanGBPDontLrn | vxlanGBPApplied | vxlanGBPIDMask
)

// decapVXLAN parses a VXLAN header (vxlan_rcv, vxlan_parse_gbp_hdr).
func decapVXLAN(b []byte, gbp bool, t *flowkeys.Tunnel) (int, error) {
	if len(b) < vxlanHeaderLen {
		return 0, tunnelDrop("VXLAN header: %d bytes", len(b))
	}
	flags, vni := binary.BigEndian.Uint32(b), binary.BigEndian.Uint32(b[4:])
	if flags&vxlanFlagVNI == 0 {
		return 0, tunnelDrop("VXLAN flags %#08x lack the VNI flag", flags)
	}
	rest := flags &^ vxlanFlagVNI
	t.ID = uint64(vni >> 8)
	t.Flags |= odp.KernelTunnelKey
	if gbp {
		if flags&vxlanFlagGBP != 0 {
			t.GBP = flags & (vxlanGBPDontLrn | vxlanGBPApplied | vxlanGBPIDMask)
			t.Flags |= odp.KernelTunnelVXLANOpt
		}
		rest &^= vxlanGBPUsedBits
	}
	if rest != 0 || vni&0xff != 0 {
		return 0, tunnelDrop("VXLAN reserved bits set (flags %#08x, vni word %#08x)", flags, vni)
	}
	return vxlanHeaderLen, nil
}

// GRE header flag bits (the first 16-bit word).
const (
	greFlagCSUM    = 0x8000
	greFlagRouting = 0x4000
	greFlagKey     = 0x2000
	greFlagSeq     = 0x1000
	greVersionMask = 0x0007
)

// greHeaderLen is gre_calc_hlen: 4 bytes and 4 for each of the
// checksum, key and sequence number.
func greHeaderLen(flags uint16) int {
	n := greBaseLen
	for _, f := range [...]uint16{greFlagCSUM, greFlagKey, greFlagSeq} {
		if flags&f != 0 {
			n += 4
		}
	}
	return n
}

// decapGRE parses a GRE header (gre_parse_header and the gretap
// collect-metadata receive of ipgre_rcv and ip_tunnel_rcv).
func decapGRE(b []byte, t *flowkeys.Tunnel) (int, error) {
	if len(b) < greBaseLen {
		return 0, tunnelDrop("GRE header: %d bytes", len(b))
	}
	flags := binary.BigEndian.Uint16(b)
	if flags&(greVersionMask|greFlagRouting) != 0 {
		return 0, tunnelDrop("GRE flags %#04x: version or routing bits", flags)
	}
	hlen := greHeaderLen(flags)
	if len(b) < hlen {
		return 0, tunnelDrop("GRE header of %d bytes in %d", hlen, len(b))
	}
	if pt := binary.BigEndian.Uint16(b[2:]); pt != header.EtherTypeTEB {
		return 0, tunnelDrop("GRE protocol %#04x is not Ethernet (0x6558)", pt)
	}
	o := greBaseLen
	if flags&greFlagCSUM != 0 {
		if header.Checksum(b, 0) != 0 {
			return 0, tunnelDrop("bad GRE checksum")
		}
		// A gretap device without checksums (as the openvswitch
		// module's) drops packets that have one (ip_tunnel_rcv).
		return 0, tunnelDrop("GRE checksum present on a port that expects none")
	}
	if flags&greFlagKey != 0 {
		t.ID = uint64(binary.BigEndian.Uint32(b[o:]))
		t.Flags |= odp.KernelTunnelKey
	}
	return hlen, nil
}

// ECN codepoints.
const (
	ecnMask   = 3
	ecnNotECT = 0
	ecnECT0   = 2
	ecnCE     = 3
)

// ecnDecap applies the outer TOS's congestion mark to the inner frame as
// IP_ECN_decapsulate: an outer CE on an inner ECN-capable IPv4 or IPv6
// packet marks it CE; on an inner packet that is not ECN-capable the
// packet is dropped. Other frames are left alone.
func ecnDecap(outer uint8, frame []byte) error {
	if outer&ecnMask != ecnCE {
		return nil
	}
	switch header.Ethernet(frame).Type() {
	case header.EtherTypeIPv4:
		if len(frame) < 14+ipv4HeaderLen {
			return nil
		}
		ip := header.IPv4(frame[14:])
		tos := ip.TOS()
		if tos&ecnMask == ecnNotECT {
			return tunnelDrop("outer CE on an inner packet that is not ECN-capable")
		}
		if tos&ecnMask != ecnCE {
			ip.SetChecksum(header.ChecksumUpdate2(ip.Checksum(), uint16(tos), uint16(tos|ecnCE)))
			ip.SetTOS(tos | ecnCE)
		}
	case header.EtherTypeIPv6:
		if len(frame) < 14+40 {
			return nil
		}
		b := frame[14:]
		tc := uint8(binary.BigEndian.Uint16(b) >> 4)
		if tc&ecnMask == ecnNotECT {
			return tunnelDrop("outer CE on an inner packet that is not ECN-capable")
		}
		b[1] |= ecnCE << 4
	}
	return nil
}

// tunnelInfo is the egress tunnel metadata of a set(tunnel(...))
// action, the kernel's ip_tunnel_info in TX mode, compiled once.
type tunnelInfo struct {
	id         uint64
	src, dst   [4]byte
	v6         bool // an IPv6 underlay: src6 and dst6
	src6, dst6 [16]byte
	tos, ttl   uint8
	flags      uint16 // kernel TUNNEL_* bits
	tpSrc      uint16 // reported in an egress key only (GRE keeps it)
	tpDst      uint16
	gbp        uint32
	opts       []byte // the options: Geneve's, or ERSPAN's 12 bytes (flags say which)

	// The tunnel headers after the outer UDP header (Geneve, VXLAN)
	// or IP header (GRE), built once; the GRE checksum is filled per
	// packet.
	geneve, vxlan, vxlanGBP, gre []byte
}

// tunnelFlagBits pairs the flag attributes of odp.Tunnel with the
// kernel's TUNNEL_* bits.
var tunnelFlagBits = [...]struct {
	attr   odp.TunnelFlags
	kernel uint16
}{{odp.TunnelDF, odp.KernelTunnelDF}, {odp.TunnelCSUM, odp.KernelTunnelCSUM}, {odp.TunnelOAM, odp.KernelTunnelOAM}}

// compileSetTunnel converts set(tunnel(...)) into its tunnel info with
// the kernel's rules (validate_and_copy_set_tun: ip_tun_from_nlattr,
// then validate_geneve_opts).
func compileSetTunnel(t odp.Tunnel, path string) (*tunnelInfo, error) {
	v6 := t.Present&(odp.TunnelHasIPv6Src|odp.TunnelHasIPv6Dst) != 0
	if v6 && t.Present&(odp.TunnelHasIPv4Src|odp.TunnelHasIPv4Dst) != 0 {
		return nil, einval("%s: mixed IPv4 and IPv6 tunnel attributes", path)
	}
	if t.Present&odp.TunnelHasGTPU != 0 {
		// OVS_TUNNEL_KEY_ATTR_GTPU_OPTS is Open vSwitch's own (its
		// openvswitch.h has it under #ifndef __KERNEL__); its number,
		// 16, is the kernel's IPV4_INFO_BRIDGE, a flag attribute.
		return nil, fmt.Errorf("%s: set(tunnel) with gtpu(): GTP-U metadata is not a kernel tunnel attribute (Open vSwitch's userspace datapath only) and no port of this datapath is a GTP-U tunnel: %w", path, odp.ErrUnsupported)
	}
	if len(t.Unknown) > 0 {
		return nil, fmt.Errorf("%s: set(tunnel) with unknown attributes: %w", path, odp.ErrUnsupported)
	}
	if n := bits.OnesCount32(uint32(t.Present & (odp.TunnelHasGeneve | odp.TunnelHasVXLAN | odp.TunnelHasERSPAN))); n > 1 {
		return nil, einval("%s: multiple metadata blocks provided", path)
	}
	ti := &tunnelInfo{ttl: t.TTL, v6: v6}
	switch {
	case v6 && t.Present&odp.TunnelHasIPv6Dst == 0, !v6 && t.Present&odp.TunnelHasIPv4Dst == 0:
		return nil, einval("%s: IP tunnel dst address not specified", path)
	case v6 && t.IPv6Dst == [16]byte{}:
		return nil, einval("%s: IPv6 tunnel dst address is zero", path)
	case !v6 && t.IPv4Dst == [4]byte{}:
		return nil, einval("%s: IPv4 tunnel dst address is zero", path)
	}
	if t.Present&odp.TunnelHasTTL == 0 {
		return nil, einval("%s: IP tunnel TTL not specified", path)
	}
	if v6 {
		ti.dst6 = t.IPv6Dst
		if t.Present&odp.TunnelHasIPv6Src != 0 {
			ti.src6 = t.IPv6Src
		}
	} else {
		ti.dst = t.IPv4Dst
		if t.Present&odp.TunnelHasIPv4Src != 0 {
			ti.src = t.IPv4Src
		}
	}
	if t.Present&odp.TunnelHasID != 0 {
		ti.id = t.ID
		ti.flags |= odp.KernelTunnelKey
	}
	if t.Present&odp.TunnelHasTOS != 0 {
		ti.tos = t.TOS
	}
	if t.Present&odp.TunnelHasTPSrc != 0 {
		ti.tpSrc = t.TPSrc
	}
	if t.Present&odp.TunnelHasTPDst != 0 {
		ti.tpDst = t.TPDst
	}
	for _, f := range tunnelFlagBits {
		if t.Flags&f.attr != 0 {
			ti.flags |= f.kernel
		}
	}
	if t.Present&odp.TunnelHasGeneve != 0 {
		o := t.Geneve
		if len(o) > 252 || len(o)%4 != 0 {
			return nil, einval("%s: Geneve options of %d bytes (at most 252, a multiple of 4)", path, len(o))
		}
		crit, err := checkGeneveOpts(o)
		if err != nil {
			return nil, einval("%s: %v", path, err)
		}
		if crit {
			ti.flags |= kernelTunnelCritOpt
		}
		if len(o) > 0 {
			ti.opts = append([]byte(nil), o...)
			ti.flags |= odp.KernelTunnelGeneveOpt
		}
	}
	if t.Present&odp.TunnelHasVXLAN != 0 {
		ti.gbp = t.VXLANGBP
		ti.flags |= odp.KernelTunnelVXLANOpt
	}
	if t.Present&odp.TunnelHasERSPAN != 0 {
		// The kernel keeps struct erspan_metadata as the tunnel
		// info's options (options_len 12, TUNNEL_ERSPAN_OPT). Only an
		// erspan device reads them, and that is no vport type: our
		// ports use them as Linux's do (buildHeaders).
		o := make([]byte, odp.ERSPANMetadataLen)
		binary.NativeEndian.PutUint32(o, t.ERSPAN.Version)
		copy(o[4:], t.ERSPAN.MD[:])
		ti.opts = o
		ti.flags |= odp.KernelTunnelERSPANOpt
	}
	ti.buildHeaders()
	return ti, nil
}

// checkGeneveOpts is validate_geneve_opts: every option's length must
// fit; it reports whether one is critical (type bit 0x80).
func checkGeneveOpts(o []byte) (crit bool, err error) {
	for i := 0; i < len(o); {
		if len(o)-i < 4 {
			return false, fmt.Errorf("Geneve option at byte %d: %d bytes left, a header needs 4", i, len(o)-i)
		}
		l := 4 + int(o[i+3]&0x1f)*4
		if l > len(o)-i {
			return false, fmt.Errorf("Geneve option at byte %d: length %d exceeds the %d bytes left", i, l, len(o)-i)
		}
		crit = crit || o[i+2]&0x80 != 0
		i += l
	}
	return crit, nil
}

// buildHeaders prebuilds the tunnel headers (geneve_build_header,
// vxlan_build_skb, gre_build_header).
func (ti *tunnelInfo) buildHeaders() {
	vni := uint32(ti.id) & 0xffffff
	// geneve_build_header: the option length is the tunnel info's
	// options_len whatever its options are, and they are copied only
	// with TUNNEL_GENEVE_OPT. With ERSPAN metadata, Linux leaves those
	// 12 bytes of the header as the skb's headroom had them (zero in
	// TestIntegrationGeneveOutputERSPAN, Linux 6.1); here they are zero. (vxlan uses its options only with TUNNEL_VXLAN_OPT, GRE
	// never: both ignore ERSPAN metadata.)
	g := make([]byte, geneveHeaderLen+len(ti.opts))
	g[0] = uint8(len(ti.opts) / 4)
	if ti.flags&odp.KernelTunnelOAM != 0 {
		g[1] |= 0x80
	}
	if ti.flags&kernelTunnelCritOpt != 0 {
		g[1] |= 0x40
	}
	binary.BigEndian.PutUint16(g[2:], header.EtherTypeTEB)
	binary.BigEndian.PutUint32(g[4:], vni<<8)
	if ti.flags&odp.KernelTunnelGeneveOpt != 0 {
		copy(g[geneveHeaderLen:], ti.opts)
	}
	ti.geneve = g

	v := make([]byte, vxlanHeaderLen)
	binary.BigEndian.PutUint32(v, vxlanFlagVNI)
	binary.BigEndian.PutUint32(v[4:], vni<<8)
	ti.vxlan = v
	ti.vxlanGBP = v
	if ti.flags&odp.KernelTunnelVXLANOpt != 0 && ti.gbp != 0 {
		vg := append([]byte(nil), v...)
		binary.BigEndian.PutUint32(vg, vxlanFlagVNI|vxlanFlagGBP|ti.gbp&(vxlanGBPDontLrn|vxlanGBPApplied|vxlanGBPIDMask))
		ti.vxlanGBP = vg
	}

	var flags uint16
	n := greBaseLen
	if ti.flags&odp.KernelTunnelCSUM != 0 {
		flags |= greFlagCSUM
		n += 4
	}
	if ti.flags&odp.KernelTunnelKey != 0 {
		flags |= greFlagKey
		n += 4
	}
	r := make([]byte, n)
	binary.BigEndian.PutUint16(r, flags)
	binary.BigEndian.PutUint16(r[2:], header.EtherTypeTEB)
	if ti.flags&odp.KernelTunnelKey != 0 {
		binary.BigEndian.PutUint32(r[n-4:], uint32(ti.id))
	}
	ti.gre = r
}

// tunnelHeader returns the prebuilt tunnel header for a port.
func (ti *tunnelInfo) tunnelHeader(c *tunnelConfig) []byte {
	switch c.kind {
	case tunnelGeneve:
		return ti.geneve
	case tunnelVXLAN:
		if c.gbp {
			return ti.vxlanGBP
		}
		return ti.vxlan
	}
	return ti.gre
}

// encapOverhead returns the outer header's length for a port.
func (ti *tunnelInfo) encapOverhead(c *tunnelConfig) int {
	n := ti.ipHeaderLen() + len(ti.tunnelHeader(c))
	if c.kind != tunnelGRE {
		n += udpHeaderLen
	}
	return n
}

// ipHeaderLen is the outer IP header's length.
func (ti *tunnelInfo) ipHeaderLen() int {
	if ti.v6 {
		return ipv6HeaderLen
	}
	return ipv4HeaderLen
}

// encapParams are what encapTunnel needs besides the metadata: the
// source address and hop limit of the route to the destination, and the
// packet's flow hash and protocol (skb->protocol).
type encapParams struct {
	src      [4]byte  // the route's preferred source, when the metadata has none
	src6     [16]byte // the same for an IPv6 underlay
	hopLimit uint8    // the route's hop limit (ip4_dst_hoplimit)
	mtu      int      // the route's MTU, 0 if not known
	hash     uint32   // the flow hash, for the UDP source port
	proto    uint16   // the kernel's skb->protocol of the inner frame
	l3       int      // offset of the inner network header in the frame, or -1
	portMin  uint16   // vxlan's UDP source port range [portMin, portMax)
	portMax  uint32
}

// encapTunnel writes into dst the outer IPv4 packet that carries frame
// through a tunnel port of configuration c with metadata ti, and returns
// its length. dst must have room for encapOverhead(c)+len(frame) bytes.
// It leaves the IPv4 ID zero (the raw socket that sends it picks one).
// It does not allocate.
func encapTunnel(dst []byte, frame []byte, c *tunnelConfig, ti *tunnelInfo, p *encapParams) int {
	th := ti.tunnelHeader(c)
	ipl := ti.ipHeaderLen()
	hl := ipl
	if c.kind != tunnelGRE {
		hl += udpHeaderLen
	}
	total := hl + len(th) + len(frame)
	copy(dst[hl+len(th):], frame)
	copy(dst[hl:], th)

	// The inner IP header's TOS and TTL, for ECN and inheritance.
	var innerTOS, innerTTL uint8
	innerIP := false
	if p.l3 >= 0 && p.l3 < len(frame) {
		in := frame[p.l3:]
		switch p.proto {
		case header.EtherTypeIPv4:
			if len(in) >= ipv4HeaderLen {
				innerTOS, innerTTL, innerIP = in[1], in[8], true
			}
		case header.EtherTypeIPv6:
			if len(in) >= 40 {
				innerTOS, innerTTL, innerIP = uint8(binary.BigEndian.Uint16(in)>>4), in[7], true
			}
		}
	}
	tos := ti.tos
	ttl := ti.ttl
	if c.kind == tunnelGRE {
		if tos == 1 { // inherit (ip_md_tunnel_xmit)
			tos = innerTOS
		}
		if ttl == 0 {
			ttl = p.hopLimit
			if innerIP {
				ttl = innerTTL
			}
		}
	} else if ttl == 0 && c.kind == tunnelVXLAN {
		ttl = p.hopLimit
	}
	// ip_tunnel_ecn_encap: the inner packet's ECN bits, CE as ECT(0).
	tos &^= ecnMask
	if innerIP {
		if e := innerTOS & ecnMask; e == ecnCE {
			tos |= ecnECT0
		} else {
			tos |= e
		}
	}

	var pseudo uint64
	var ip4 header.IPv4
	if ti.v6 {
		ip := header.IPv6(dst[:ipv6HeaderLen])
		binary.BigEndian.PutUint32(ip, 6<<28|uint32(tos)<<20)
		binary.BigEndian.PutUint16(ip[4:], uint16(total-ipv6HeaderLen))
		ip[6] = header.IPProtoUDP
		ip[7] = ttl
		src := ti.src6
		if src == ([16]byte{}) {
			src = p.src6
		}
		copy(ip[8:24], src[:])
		copy(ip[24:40], ti.dst6[:])
		pseudo = ip.PseudoHeaderSum(header.IPProtoUDP, total-ipv6HeaderLen)
	} else {
		ip := header.IPv4(dst[:ipv4HeaderLen])
		ip[0] = 0x45
		ip[1] = tos
		ip.SetTotalLength(uint16(total))
		ip.SetID(0)
		var frag uint16
		if ti.flags&odp.KernelTunnelDF != 0 {
			frag = 0x4000
		}
		ip.SetFlagsFragmentOffset(frag)
		ip.SetTTL(ttl)
		src := ti.src
		if src == ([4]byte{}) {
			src = p.src
		}
		ip.SetSourceAddress(src)
		ip.SetDestinationAddress(ti.dst)
		ip.SetProtocol(header.IPProtoUDP)
		if c.kind == tunnelGRE {
			ip.SetProtocol(ipProtoGRE)
		}
		pseudo = ip.PseudoHeaderSum(header.IPProtoUDP, total-ipv4HeaderLen)
		ip4 = ip
	}
	switch c.kind {
	case tunnelGRE:
		if ti.flags&odp.KernelTunnelCSUM != 0 {
			g := dst[hl : hl+len(th)]
			binary.BigEndian.PutUint16(g[4:], 0)
			binary.BigEndian.PutUint16(g[4:], header.Checksum(dst[hl:total], 0))
		}
	default:
		u := header.UDP(dst[ipl:total])
		header.Ports(u).SetSource(udpSourcePort(p.hash, c, p))
		dport := c.dstPort
		if c.kind == tunnelVXLAN && ti.tpDst != 0 {
			dport = ti.tpDst
		}
		header.Ports(u).SetDestination(dport)
		u.SetLength(uint16(total - ipl))
		u.SetChecksum(0)
		if ti.flags&odp.KernelTunnelCSUM != 0 {
			cs := header.Checksum(u, pseudo)
			if cs == 0 {
				cs = 0xffff
			}
			u.SetChecksum(cs)
		}
	}
	if ip4 != nil {
		ip4.SetChecksum(0)
		ip4.SetChecksum(ip4.CalculateChecksum())
	}
	return total
}

// udpSourcePort is udp_flow_src_port: the hash folded and scaled into
// the port's range (geneve 1-65535; vxlan the local port range).
func udpSourcePort(hash uint32, c *tunnelConfig, p *encapParams) uint16 {
	lo, hi := uint32(1), uint32(65535)
	if c.kind == tunnelVXLAN {
		lo, hi = uint32(p.portMin), p.portMax
	}
	hash ^= hash << 16
	return uint16(uint64(hash)*uint64(hi-lo)>>32 + uint64(lo))
}

// innerL3Len returns the length of the inner packet from its network
// header on, in an outer packet that encapTunnel built for a port of
// configuration c (what the kernel's tunnel devices count as bytes).
func innerL3Len(b []byte, c *tunnelConfig) int {
	n := ipv4HeaderLen
	if len(b) > 0 && b[0]>>4 == 6 {
		n = ipv6HeaderLen
	}
	switch c.kind {
	case tunnelGeneve:
		if len(b) >= n+udpHeaderLen+geneveHeaderLen {
			n += udpHeaderLen + geneveHeaderLen + int(b[n+udpHeaderLen]&0x3f)*4
		}
	case tunnelVXLAN:
		n += udpHeaderLen + vxlanHeaderLen
	case tunnelGRE:
		if len(b) >= n+greBaseLen {
			n += greHeaderLen(binary.BigEndian.Uint16(b[n:]))
		}
	}
	return max(len(b)-n-header.EthernetMinimumSize, 0)
}
