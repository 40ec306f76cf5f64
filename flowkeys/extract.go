package flowkeys

import (
	"encoding/binary"

	"github.com/ovsdp/ovsdp/internal/header"
)

// ExtractError is the error Extract returns for a packet that the kernel
// would not turn into a key at all. Every ExtractError is a
// package-level value, so returning one allocates nothing.
type ExtractError struct {
	Header string // the header that was wrong, e.g. "Ethernet" or "NSH"
	Reason string // what was wrong with it
	// Kernel says what the kernel does with such a packet.
	Kernel string
}

func (e *ExtractError) Error() string {
	return "flowkeys: " + e.Header + " header: " + e.Reason + " (" + e.Kernel + ")"
}

// The errors Extract returns. These are the only cases in which the
// kernel's key_extract fails for a packet it is given (its -ENOMEM paths
// aside, which depend on memory, not on the packet).
var (
	// ErrShortFrame: an Ethernet frame shorter than 14 bytes. The kernel
	// never extracts such a frame (its callers require ETH_HLEN bytes).
	ErrShortFrame = &ExtractError{"Ethernet", "frame shorter than 14 bytes", "never reaches key_extract"}
	// ErrL3VLAN: an L3 packet (Metadata.L3) whose protocol is a VLAN TPID.
	ErrL3VLAN = &ExtractError{"L3", "packet without Ethernet header has a VLAN protocol", "key_extract returns -EINVAL, packet dropped"}
	// ErrNSHShort: fewer than 8 bytes for the NSH base header.
	ErrNSHShort = &ExtractError{"NSH", "base header truncated (needs 8 bytes)", "parse_nsh returns -EINVAL, packet dropped"}
	// ErrNSHVersion: NSH version other than 0.
	ErrNSHVersion = &ExtractError{"NSH", "version is not 0", "parse_nsh returns -EINVAL, packet dropped"}
	// ErrNSHLength: the NSH length field points beyond the packet.
	ErrNSHLength = &ExtractError{"NSH", "length field exceeds the packet", "parse_nsh returns -EINVAL, packet dropped"}
	// ErrNSHMD1Length: MD type 1 with a length other than 24 bytes.
	ErrNSHMD1Length = &ExtractError{"NSH", "MD type 1 header length is not 24 bytes", "parse_nsh returns -EINVAL, packet dropped"}
	// ErrNSHMDType: an MD type other than 1 or 2.
	ErrNSHMDType = &ExtractError{"NSH", "MD type is neither 1 nor 2", "parse_nsh returns -EINVAL, packet dropped"}
)

func be16(b []byte) uint16 { return binary.BigEndian.Uint16(b) }
func be32(b []byte) uint32 { return binary.BigEndian.Uint32(b) }

// zeroHead zeroes the KeyHeadWords words before the Geneve options in
// five 64-byte blocks, which the compiler writes as 20 straight 16-byte
// stores (a plain loop is a loop of 5). TunOptsLen is zero after it; the
// option bytes are left as they were (Extract clears them, ExtractPort
// expects a key without any).
func zeroHead(k *Key) {
	const _ = uint(KeyHeadWords-40) + uint(40-KeyHeadWords) // a compile error unless KeyHeadWords is 40
	w := k.Words()
	*(*[8]uint64)(w[0:8]) = [8]uint64{}
	*(*[8]uint64)(w[8:16]) = [8]uint64{}
	*(*[8]uint64)(w[16:24]) = [8]uint64{}
	*(*[8]uint64)(w[24:32]) = [8]uint64{}
	*(*[8]uint64)(w[32:40]) = [8]uint64{}
}

// Extract fills key with the flow key of packet as the Linux 6.1
// openvswitch module's key_extract computes it, with the metadata md
// (nil means all zero: port 0, no tunnel, no conntrack state).
//
// The packet starts at the Ethernet header, unless md.L3 says it has
// none. Truncated and inconsistent headers give the same key as the
// kernel: fields of a header that is too short are zero, a bad IPv4
// header length zeroes the IP fields, a later fragment has no L4 fields,
// IPv4 total length and IPv6 payload length are not looked at (the
// kernel does not either), and so on.
//
// Extract returns an error (one of the Err* values) only where the
// kernel refuses the packet: a frame shorter than an Ethernet header, an
// L3 packet with a VLAN protocol, and a malformed NSH header. The key is
// then incomplete and must not be used.
//
// Fields the kernel leaves unwritten are zero (see the package comment):
// Extract zeroes every field of key, the Geneve options it had included
// (their TunOptsLen bytes; the bytes after them are zero in every key,
// see TunOpts), before it fills them from md.
// Extract does not allocate and reads nothing beyond packet.
//
// Two differences from a packet seen by the kernel through a netdev
// port are not the datapath's doing: the kernel's receive path drops a
// frame with a VLAN TPID shorter than 20 bytes before openvswitch sees
// it, and a frame whose outer VLAN tag was stripped by hardware (or by
// skb_vlan_untag) gives the same key as one with the tag in place.
func Extract(packet []byte, md *Metadata, key *Key) error {
	old := key.TunOptsLen
	zeroHead(key)
	var opts []byte
	if md != nil && md.Tunnel.Proto != 0 {
		opts = md.Tunnel.Opts
	}
	if old|uint8(len(opts)) != 0 {
		// After zeroHead, as md's options may be the key's own
		// (MetadataOf): SetTunOpts copies them in place and clears
		// the old ones' tail.
		key.TunOptsLen = old
		key.SetTunOpts(opts)
	}
	if md != nil {
		md.fill(key)
		if md.L3 {
			key.MacProto = MacProtoNone
			if header.IsVLAN(md.EthType) {
				return ErrL3VLAN
			}
			key.EthType = md.EthType
			return extractL3L4(packet, 0, key)
		}
	}
	_, err := extractEthernet(packet, key, false, 0)
	return err
}

// ExtractPort is Extract for a frame received on port inPort with no
// other metadata (no tunnel, recirculation or conntrack state): the same
// key as Extract with Metadata{InPort: inPort}, without copying a
// Metadata. It is the datapath's receive path.
//
// Unlike Extract it does not look for Geneve options to clear: key must
// have none (a new key, or one that ExtractPort, or Extract without
// options, filled last; SetTunOpts(nil) clears them), so that a frame
// costs nothing for options it cannot have. Given a key with options, it
// zeroes TunOptsLen and leaves the old option bytes after it: harmless
// to masked compares and hashes (a mask has no option bit past its
// flow's option length, which it matches exactly), but the key then
// differs from a new one under ==.
func ExtractPort(packet []byte, inPort uint32, key *Key) error {
	_, err := ExtractPortL3(packet, inPort, key)
	return err
}

// ExtractPortL3 is ExtractPort that also returns the offset of the
// network header it found (after VLAN tags and an LLC/SNAP header: where
// the kernel's skb network header is set), which the datapath's actions
// need. The offset is valid when err is nil.
func ExtractPortL3(packet []byte, inPort uint32, key *Key) (l3 int, err error) {
	return extractEthernet(packet, key, true, inPort)
}

// extractEthernet extracts the key of an Ethernet frame into key. With
// port set it first zeroes the key and sets its in_port to inPort (the
// receive path, without a call of its own); otherwise the key's
// metadata is already set.
func extractEthernet(packet []byte, key *Key, port bool, inPort uint32) (l3 int, err error) {
	if port {
		zeroHead(key) // ExtractPort: no options to clear
		key.InPort = inPort
	}
	key.MacProto = MacProtoEthernet
	p := packet
	if len(p) < 14 {
		return 0, ErrShortFrame
	}
	key.EthDst = [6]byte(p[0:6])
	key.EthSrc = [6]byte(p[6:12])

	// parse_vlan: at most two tags, each needing its 4 bytes plus the 2
	// bytes of the type that follows; otherwise the TPID is taken as
	// the Ethernet type.
	off := 12
	proto := be16(p[12:14])
	if header.IsVLAN(proto) && len(p) >= 18 {
		key.VLANTPID = proto
		key.VLANTCI = be16(p[14:16]) | VLANTagPresent
		off = 16
		proto = be16(p[16:18])
		if header.IsVLAN(proto) && len(p) >= 22 {
			key.CVLANTPID = proto
			key.CVLANTCI = be16(p[18:20]) | VLANTagPresent
			off = 20
			proto = be16(p[20:22])
		}
	}

	// parse_ethertype: Ethernet II, or 802.3 with LLC/SNAP.
	off += 2
	if proto >= 0x600 {
		key.EthType = proto
	} else if len(p)-off < 8 {
		key.EthType = EthType8022
	} else if l := p[off : off+8]; l[0] != 0xaa || l[1] != 0xaa || l[3]|l[4]|l[5] != 0 {
		key.EthType = EthType8022
	} else {
		et := be16(l[6:8])
		off += 8
		if et >= 0x600 {
			key.EthType = et
		} else {
			key.EthType = EthType8022
		}
	}
	if key.EthType == EthTypeIPv4 { // the common case, without a call
		extractIPv4(p, off, key)
		return off, nil
	}
	return off, extractL3L4(p, off, key)
}

// extractL3L4 is key_extract_l3l4: nh is the offset of the network header.
func extractL3L4(p []byte, nh int, key *Key) error {
	switch key.EthType {
	case EthTypeIPv4:
		extractIPv4(p, nh, key)
	case EthTypeARP, EthTypeRARP:
		if a := header.ARP(p[nh:]); len(a) >= header.ARPSize && a.IsIPv4OverEthernet() {
			if op := a.Op(); op <= 0xff {
				key.IPProto = uint8(op)
			}
			key.ARPSHA = a.SenderHardwareAddress()
			key.IPv4Src = a.SenderProtocolAddress()
			key.ARPTHA = a.TargetHardwareAddress()
			key.IPv4Dst = a.TargetProtocolAddress()
		}
	case EthTypeMPLS, EthTypeMPLSMC:
		n := 1
		for {
			if len(p)-nh < n*4 {
				// Truncated stack: the kernel keeps the entries it
				// copied but leaves num_labels_mask at zero.
				return nil
			}
			lse := be32(p[nh+(n-1)*4:])
			if n <= len(key.MPLSLSE) {
				key.MPLSLSE[n-1] = lse
			}
			if lse&0x100 != 0 { // bottom of stack
				break
			}
			n++
		}
		if n > len(key.MPLSLSE) {
			n = len(key.MPLSLSE)
		}
		key.MPLSLabelsMask = 1<<n - 1
	case EthTypeIPv6:
		extractIPv6(p, nh, key)
	case EthTypeNSH:
		return extractNSH(p, nh, key)
	}
	return nil
}

func extractIPv4(p []byte, nh int, key *Key) {
	if len(p)-nh < header.IPv4MinimumSize {
		return // check_iphdr -EINVAL: IP fields stay zero
	}
	ip := header.IPv4(p[nh:])
	ihl := ip.HeaderLength()
	if ihl < header.IPv4MinimumSize || len(ip) < ihl {
		return
	}
	// ip is cut to the header's first 20 bytes: the accessors' fixed
	// indexes into a slice of known length need no bounds checks.
	ip = ip[:header.IPv4MinimumSize]
	key.IPv4Src = ip.SourceAddress()
	key.IPv4Dst = ip.DestinationAddress()
	key.IPProto = ip.Protocol()
	key.IPTOS = ip.TOS()
	key.IPTTL = ip.TTL()
	frag := ip.FlagsFragmentOffset()
	if frag&header.IPv4FragmentOffsetMask != 0 {
		key.IPFrag = FragLater
		return
	}
	if frag&header.IPv4FlagMoreFragments != 0 {
		key.IPFrag = FragFirst
	}
	th := nh + ihl
	switch key.IPProto {
	case header.IPProtoTCP:
		extractTCP(p, th, key)
	case header.IPProtoUDP:
		extractPorts(p, th, header.UDPMinimumSize, key)
	case header.IPProtoSCTP:
		extractPorts(p, th, header.SCTPMinimumSize, key)
	case header.IPProtoICMP:
		if len(p)-th >= header.ICMPMinimumSize {
			t := header.ICMP(p[th:])
			key.TpSrc = uint16(t.Type())
			key.TpDst = uint16(t.Code())
		}
	}
}

// extractTCP is tcphdr_ok plus the copy: the data offset must be at least
// 5 words and the whole TCP header (options included) must be present.
func extractTCP(p []byte, th int, key *Key) {
	if len(p)-th < header.TCPMinimumSize {
		return
	}
	t := header.TCP(p[th:])
	doff := t.DataOffset()
	if doff < header.TCPMinimumSize || len(t) < doff {
		return
	}
	t = t[:header.TCPMinimumSize]
	key.TpSrc = header.Ports(t).Source()
	key.TpDst = header.Ports(t).Destination()
	key.TCPFlags = t.Flags()
}

// extractPorts copies the two ports of a UDP or SCTP header of hlen bytes
// when the whole header is present.
func extractPorts(p []byte, th, hlen int, key *Key) {
	if len(p)-th < hlen {
		return
	}
	t := header.Ports(p[th:])
	t = t[:4]
	key.TpSrc = t.Source()
	key.TpDst = t.Destination()
}

func extractIPv6(p []byte, nh int, key *Key) {
	if len(p)-nh < header.IPv6MinimumSize {
		// -EINVAL: the kernel clears ip and ipv6.addr but not the
		// label or the extension-header flags; those are zero too
		// because ovs_vport_receive's key starts zeroed (Debian's 6.1
		// build zero-initialises it on the stack: rep stos of 464
		// bytes before ovs_flow_key_extract).
		return
	}
	key.IPv6ExtHdrs = ipv6ExtHdrs(p, nh)
	key.IPProto = header.IPProtoNoNext
	ip := header.IPv6(p[nh : nh+header.IPv6MinimumSize])
	key.IPTOS = ip.TrafficClass()
	key.IPTTL = ip.HopLimit()
	key.IPv6Label = ip.FlowLabel()
	key.IPv6Src = ip.SourceAddress()
	key.IPv6Dst = ip.DestinationAddress()

	w := header.IPv6ExtWalk(p, nh)
	if w.Fragment {
		// A later fragment followed by another extension header is a
		// failed walk (-ENOENT) that the kernel records as a first
		// fragment with no protocol.
		if w.OK && w.FragmentOffset != 0 {
			key.IPFrag = FragLater
			key.IPProto = header.IPProtoFragment
			return
		}
		key.IPFrag = FragFirst
	}
	if !w.OK {
		return // -EPROTO: protocol stays "no next header"
	}
	next, th := w.Next, w.Offset
	key.IPProto = next
	switch next {
	case header.IPProtoTCP:
		extractTCP(p, th, key)
	case header.IPProtoUDP:
		extractPorts(p, th, header.UDPMinimumSize, key)
	case header.IPProtoSCTP:
		extractPorts(p, th, header.SCTPMinimumSize, key)
	case header.IPProtoICMPv6:
		if len(p)-th >= header.ICMPMinimumSize {
			extractICMPv6(p, th, key)
		}
	}
}

// ipv6ExtHdrs computes the extension-header flags as the kernel's
// get_ipv6_ext_hdrs does, including its quirks: the loop only visits
// headers that ipv6_ext_hdr() recognises (so ESP is never flagged), every
// header's length is taken as (hdrlen+1)*8, AH included, and nothing is
// checked against the end of the packet except the two bytes it reads.
//
// The AH ordering check allows HOP, DEST, ROUTER, FRAG and UNREP before
// AH. (The upstream source spells FRAG as IPPROTO_FRAGMENT, 44, which
// would allow AUTH|DEST|ROUTER instead of FRAG; Debian's 6.1 module,
// which the differential test runs, tests the flags against 0xff07 —
// disassembled key_extract_l3l4 — so an AH after a fragment header is in
// sequence and a repeated AH is also out of sequence.)
func ipv6ExtHdrs(p []byte, nh int) uint16 {
	next := header.IPv6(p[nh:]).NextHeader()
	start := nh + header.IPv6MinimumSize
	dest := 0
	var e uint16
	for header.IsIPv6ExtHdr(next) {
		switch next {
		case header.IPProtoNoNext:
			return e | ExtHdrNoNext
		case header.IPProtoAuth:
			if e&ExtHdrAuth != 0 {
				e |= ExtHdrUnrep
			}
			if e&^(ExtHdrHop|ExtHdrDest|ExtHdrRouter|ExtHdrFrag|ExtHdrUnrep) != 0 || dest >= 2 {
				e |= ExtHdrUnseq
			}
			e |= ExtHdrAuth
		case header.IPProtoDestOpts:
			switch dest {
			case 0:
				if e&^(ExtHdrHop|ExtHdrUnrep) != 0 {
					e |= ExtHdrUnseq
				}
				e |= ExtHdrDest
			case 1:
				if e&^(ExtHdrHop|ExtHdrDest|ExtHdrRouter|ExtHdrFrag|ExtHdrAuth|ExtHdrESP|ExtHdrUnrep) != 0 {
					e |= ExtHdrUnseq
				}
			default:
				e |= ExtHdrUnrep
			}
			dest++
		case header.IPProtoFragment:
			if e&ExtHdrFrag != 0 {
				e |= ExtHdrUnrep
			}
			if e&^(ExtHdrHop|ExtHdrDest|ExtHdrRouter|ExtHdrUnrep) != 0 || dest >= 2 {
				e |= ExtHdrUnseq
			}
			e |= ExtHdrFrag
		case header.IPProtoRouting:
			if e&ExtHdrRouter != 0 {
				e |= ExtHdrUnrep
			}
			if e&^(ExtHdrHop|ExtHdrDest|ExtHdrUnrep) != 0 || dest >= 2 {
				e |= ExtHdrUnseq
			}
			e |= ExtHdrRouter
		case header.IPProtoHopByHop:
			if e&ExtHdrHop != 0 {
				e |= ExtHdrUnrep
			}
			if e == 0 {
				e |= ExtHdrHop
			} else {
				e |= ExtHdrUnseq
			}
		}
		if len(p)-start < 2 {
			break
		}
		next = p[start]
		start += (int(p[start+1]) + 1) << 3
	}
	return e
}

// extractICMPv6 is parse_icmpv6; th+8 <= len(p) holds.
func extractICMPv6(p []byte, th int, key *Key) {
	ic := header.ICMP(p[th:])
	key.TpSrc = uint16(ic.Type())
	key.TpDst = uint16(ic.Code())
	if !ic.IsND() || len(ic) < header.NDMinimumSize {
		return
	}
	nd := header.ND(ic)
	key.NDTarget = nd.TargetAddress()
	for opts := nd.Options(); len(opts) >= 8; {
		o := header.NDOption(opts)
		optLen := o.Length()
		if optLen == 0 || optLen > len(opts) {
			return // the kernel stops here and keeps what it found
		}
		if optLen == 8 {
			switch o.Type() {
			case header.NDOptionSourceLinkAddress:
				if key.NDSLL != [6]byte{} {
					goto invalid
				}
				key.NDSLL = o.LinkAddress()
			case header.NDOptionTargetLinkAddress:
				if key.NDTLL != [6]byte{} {
					goto invalid
				}
				key.NDTLL = o.LinkAddress()
			}
		}
		opts = opts[optLen:]
	}
	return
invalid:
	key.NDTarget = [16]byte{}
	key.NDSLL = [6]byte{}
	key.NDTLL = [6]byte{}
}

func extractNSH(p []byte, nh int, key *Key) error {
	if len(p)-nh < 8 {
		return ErrNSHShort
	}
	vftl := be16(p[nh:])
	length := int(vftl&0x3f) * 4
	if vftl>>14 != 0 {
		return ErrNSHVersion
	}
	if len(p)-nh < length {
		return ErrNSHLength
	}
	key.NSHFlags = uint8(vftl & 0x3000 >> 12)
	key.NSHTTL = uint8(vftl & 0x0fc0 >> 6)
	key.NSHMDType = p[nh+2]
	key.NSHNP = p[nh+3]
	key.NSHPathHdr = be32(p[nh+4:])
	switch key.NSHMDType {
	case 1:
		if length != 24 {
			return ErrNSHMD1Length
		}
		for i := range key.NSHContext {
			key.NSHContext[i] = be32(p[nh+8+4*i:])
		}
	case 2:
	default:
		return ErrNSHMDType
	}
	return nil
}
