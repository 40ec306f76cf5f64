package flowkeys

import (
	"encoding/binary"
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

// IP protocol numbers and IPv6 next-header values used by Extract.
const (
	protoHop      = 0
	protoICMP     = 1
	protoTCP      = 6
	protoUDP      = 17
	protoRouting  = 43
	protoFragment = 44
	protoESP      = 50
	protoAuth     = 51
	protoICMPv6   = 58
	protoNone     = 59
	protoDest     = 60
	protoSCTP     = 132
)

func be16(b []byte) uint16 { return binary.BigEndian.Uint16(b) }
func be32(b []byte) uint32 { return binary.BigEndian.Uint32(b) }

// zeroKey zeroes k in five 64-byte blocks, which the compiler writes as
// 20 straight 16-byte stores (a plain *k = Key{} is a loop of 5).
func zeroKey(k *Key) {
	const _ = uint(KeyWords-40) + uint(40-KeyWords) // a compile error unless KeyWords is 40
	w := k.Words()
	*(*[8]uint64)(w[0:8]) = [8]uint64{}
	*(*[8]uint64)(w[8:16]) = [8]uint64{}
	*(*[8]uint64)(w[16:24]) = [8]uint64{}
	*(*[8]uint64)(w[24:32]) = [8]uint64{}
	*(*[8]uint64)(w[32:40]) = [8]uint64{}
}

func isVLANType(t uint16) bool { return t == EthTypeVLAN || t == EthTypeQinQ }

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
// Fields the kernel leaves unwritten are zero (see the package comment).
// Extract does not allocate and reads nothing beyond packet.
//
// Two differences from a packet seen by the kernel through a netdev
// port are not the datapath's doing: the kernel's receive path drops a
// frame with a VLAN TPID shorter than 20 bytes before openvswitch sees
// it, and a frame whose outer VLAN tag was stripped by hardware (or by
// skb_vlan_untag) gives the same key as one with the tag in place.
func Extract(packet []byte, md *Metadata, key *Key) error {
	zeroKey(key)
	if md != nil {
		md.fill(key)
		if md.L3 {
			key.MacProto = MacProtoNone
			if isVLANType(md.EthType) {
				return ErrL3VLAN
			}
			key.EthType = md.EthType
			return extractL3L4(packet, 0, key)
		}
	}
	_, err := extractEthernet(packet, key)
	return err
}

// ExtractPort is Extract for a frame received on port inPort with no
// other metadata (no tunnel, recirculation or conntrack state): the same
// key as Extract with Metadata{InPort: inPort}, without copying a
// Metadata. It is the datapath's receive path.
func ExtractPort(packet []byte, inPort uint32, key *Key) error {
	_, err := ExtractPortL3(packet, inPort, key)
	return err
}

// ExtractPortL3 is ExtractPort that also returns the offset of the
// network header it found (after VLAN tags and an LLC/SNAP header: where
// the kernel's skb network header is set), which the datapath's actions
// need. The offset is valid when err is nil.
func ExtractPortL3(packet []byte, inPort uint32, key *Key) (l3 int, err error) {
	zeroKey(key)
	key.InPort = inPort
	return extractEthernet(packet, key)
}

// extractEthernet extracts the key of an Ethernet frame into key, whose
// metadata is already set.
func extractEthernet(packet []byte, key *Key) (l3 int, err error) {
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
	if isVLANType(proto) && len(p) >= 18 {
		key.VLANTPID = proto
		key.VLANTCI = be16(p[14:16]) | VLANTagPresent
		off = 16
		proto = be16(p[16:18])
		if isVLANType(proto) && len(p) >= 22 {
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
		if len(p)-nh >= 28 && be16(p[nh:]) == 1 && be16(p[nh+2:]) == EthTypeIPv4 &&
			p[nh+4] == 6 && p[nh+5] == 4 {
			if op := be16(p[nh+6:]); op <= 0xff {
				key.IPProto = uint8(op)
			}
			copy(key.ARPSHA[:], p[nh+8:nh+14])
			copy(key.IPv4Src[:], p[nh+14:nh+18])
			copy(key.ARPTHA[:], p[nh+18:nh+24])
			copy(key.IPv4Dst[:], p[nh+24:nh+28])
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
	if len(p)-nh < 20 {
		return // check_iphdr -EINVAL: IP fields stay zero
	}
	// ip is the header's first 20 bytes: fixed indexes into a slice of
	// known length need no bounds checks.
	ip := p[nh:]
	ihl := int(ip[0]&0x0f) * 4
	if ihl < 20 || len(ip) < ihl {
		return
	}
	ip = ip[:20]
	key.IPv4Src = [4]byte(ip[12:16])
	key.IPv4Dst = [4]byte(ip[16:20])
	key.IPProto = ip[9]
	key.IPTOS = ip[1]
	key.IPTTL = ip[8]
	frag := be16(ip[6:8])
	if frag&0x1fff != 0 {
		key.IPFrag = FragLater
		return
	}
	if frag&0x2000 != 0 {
		key.IPFrag = FragFirst
	}
	th := nh + ihl
	switch key.IPProto {
	case protoTCP:
		extractTCP(p, th, key)
	case protoUDP:
		extractPorts(p, th, 8, key)
	case protoSCTP:
		extractPorts(p, th, 12, key)
	case protoICMP:
		if len(p)-th >= 8 {
			t := p[th:]
			key.TpSrc = uint16(t[0])
			key.TpDst = uint16(t[1])
		}
	}
}

// extractTCP is tcphdr_ok plus the copy: the data offset must be at least
// 5 words and the whole TCP header (options included) must be present.
func extractTCP(p []byte, th int, key *Key) {
	if len(p)-th < 20 {
		return
	}
	t := p[th:]
	doff := int(t[12]>>4) * 4
	if doff < 20 || len(t) < doff {
		return
	}
	t = t[:20]
	key.TpSrc = be16(t[0:2])
	key.TpDst = be16(t[2:4])
	key.TCPFlags = be16(t[12:14]) & 0x0fff
}

// extractPorts copies the two ports of a UDP or SCTP header of hlen bytes
// when the whole header is present.
func extractPorts(p []byte, th, hlen int, key *Key) {
	if len(p)-th < hlen {
		return
	}
	t := p[th:]
	t = t[:4]
	key.TpSrc = be16(t[0:2])
	key.TpDst = be16(t[2:4])
}

func isIPv6ExtHdr(n uint8) bool {
	switch n {
	case protoHop, protoRouting, protoFragment, protoAuth, protoNone, protoDest:
		return true
	}
	return false
}

func extractIPv6(p []byte, nh int, key *Key) {
	if len(p)-nh < 40 {
		// -EINVAL: the kernel clears ip and ipv6.addr but not the
		// label or the extension-header flags; those are zero too
		// because ovs_vport_receive's key starts zeroed (Debian's 6.1
		// build zero-initialises it on the stack: rep stos of 464
		// bytes before ovs_flow_key_extract).
		return
	}
	key.IPv6ExtHdrs = ipv6ExtHdrs(p, nh)
	key.IPProto = protoNone
	key.IPTOS = uint8(be16(p[nh:]) >> 4)
	key.IPTTL = p[nh+7]
	key.IPv6Label = be32(p[nh:]) & 0x000fffff
	copy(key.IPv6Src[:], p[nh+8:nh+24])
	copy(key.IPv6Dst[:], p[nh+24:nh+40])

	next, th, fragOff, isFrag, ok := ipv6FindHdr(p, nh)
	if isFrag {
		if fragOff != 0 {
			key.IPFrag = FragLater
			key.IPProto = protoFragment
			return
		}
		key.IPFrag = FragFirst
	}
	if !ok {
		return // -EPROTO: protocol stays "no next header"
	}
	key.IPProto = next
	switch next {
	case protoTCP:
		extractTCP(p, th, key)
	case protoUDP:
		extractPorts(p, th, 8, key)
	case protoSCTP:
		extractPorts(p, th, 12, key)
	case protoICMPv6:
		if len(p)-th >= 8 {
			extractICMPv6(p, th, key)
		}
	}
}

// ipv6FindHdr walks the extension-header chain as the kernel's
// ipv6_find_hdr(skb, &offset, -1, &frag_off, &flags) does. It returns the
// upper-layer protocol and its offset, the fragment offset of a later
// fragment (non-zero only then), whether a fragment header was seen, and
// false where the kernel returns an error: a header whose first bytes
// are missing (2, or 4 for routing and fragment headers), a header whose
// declared length runs past the end of the packet (-EBADMSG; a later
// fragment's header is not length-checked, the kernel returns before),
// or a later fragment followed by another extension header (-ENOENT).
func ipv6FindHdr(p []byte, nh int) (next uint8, off int, fragOff uint16, isFrag, ok bool) {
	start := nh + 40
	next = p[nh+6]
	for {
		if !isIPv6ExtHdr(next) || next == protoNone {
			return next, start, 0, isFrag, true
		}
		if len(p)-start < 2 {
			return 0, 0, 0, isFrag, false
		}
		var hdrlen int
		switch next {
		case protoRouting:
			if len(p)-start < 4 {
				return 0, 0, 0, isFrag, false
			}
			hdrlen = (int(p[start+1]) + 1) << 3
		case protoFragment:
			isFrag = true
			if len(p)-start < 4 {
				return 0, 0, 0, isFrag, false
			}
			if fo := be16(p[start+2:]) &^ 7; fo != 0 {
				if n := p[start]; !isIPv6ExtHdr(n) || n == protoNone {
					return n, 0, fo, isFrag, true
				}
				return 0, 0, 0, isFrag, false
			}
			hdrlen = 8
		case protoAuth:
			hdrlen = (int(p[start+1]) + 2) << 2
		default:
			hdrlen = (int(p[start+1]) + 1) << 3
		}
		if len(p)-start < hdrlen {
			return 0, 0, 0, isFrag, false
		}
		next = p[start]
		start += hdrlen
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
	next := p[nh+6]
	start := nh + 40
	dest := 0
	var e uint16
	for isIPv6ExtHdr(next) {
		switch next {
		case protoNone:
			return e | ExtHdrNoNext
		case protoAuth:
			if e&ExtHdrAuth != 0 {
				e |= ExtHdrUnrep
			}
			if e&^(ExtHdrHop|ExtHdrDest|ExtHdrRouter|ExtHdrFrag|ExtHdrUnrep) != 0 || dest >= 2 {
				e |= ExtHdrUnseq
			}
			e |= ExtHdrAuth
		case protoDest:
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
		case protoFragment:
			if e&ExtHdrFrag != 0 {
				e |= ExtHdrUnrep
			}
			if e&^(ExtHdrHop|ExtHdrDest|ExtHdrRouter|ExtHdrUnrep) != 0 || dest >= 2 {
				e |= ExtHdrUnseq
			}
			e |= ExtHdrFrag
		case protoRouting:
			if e&ExtHdrRouter != 0 {
				e |= ExtHdrUnrep
			}
			if e&^(ExtHdrHop|ExtHdrDest|ExtHdrUnrep) != 0 || dest >= 2 {
				e |= ExtHdrUnseq
			}
			e |= ExtHdrRouter
		case protoHop:
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
	typ, code := p[th], p[th+1]
	key.TpSrc = uint16(typ)
	key.TpDst = uint16(code)
	if code != 0 || (typ != 135 && typ != 136) {
		return
	}
	n := len(p) - th
	if n < 24 {
		return
	}
	copy(key.NDTarget[:], p[th+8:th+24])
	n -= 24
	o := th + 24
	for n >= 8 {
		optLen := int(p[o+1]) * 8
		if optLen == 0 || optLen > n {
			return // the kernel stops here and keeps what it found
		}
		if optLen == 8 {
			switch p[o] {
			case 1: // source link-layer address
				if key.NDSLL != [6]byte{} {
					goto invalid
				}
				copy(key.NDSLL[:], p[o+2:o+8])
			case 2: // target link-layer address
				if key.NDTLL != [6]byte{} {
					goto invalid
				}
				copy(key.NDTLL[:], p[o+2:o+8])
			}
		}
		n -= optLen
		o += optLen
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
