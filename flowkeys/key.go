// Package flowkeys turns packets into flow keys exactly as the Linux
// kernel's openvswitch module does (net/openvswitch/flow.c, as of Linux
// 6.1), and provides the fixed-size, word-aligned Key, its hash and its
// masked comparator.
//
// # Byte order
//
// Every multi-byte numeric field of Key holds a host-order value: EthType
// is 0x0800 for IPv4, TpSrc is 80 for HTTP, MPLSLSE[0] is the 32-bit label
// stack entry as read from the wire. Addresses (MAC, IPv4, IPv6, ND
// target) are byte arrays in wire order. Metadata that the kernel keeps in
// native order (in_port, priority, skb_mark, recirc_id, dp_hash, ct_mark,
// ct_zone, the IPv6 extension-header flags) is likewise a plain value.
// The kernel stores most of these fields big-endian; a converter to
// netlink attributes (package odp) writes them big-endian where the
// uapi says so.
//
// # Zero fields
//
// Extract starts from an all-zero Key. Where the kernel leaves a field of
// its on-stack key unwritten (for example the L4 ports of an IPv4 packet
// whose protocol is neither TCP, UDP, SCTP nor ICMP), the field is zero
// here. Such fields never appear in the kernel's upcall key attributes,
// so the two agree on everything observable.
//
// # Examples
//
// Example (example_test.go; shown by pkgsite and godoc, run by go test)
// builds a UDP frame, extracts its key, and compares and hashes two keys
// under a megaflow mask (EqualMasked, ApplyMask, Hash, HashKeyed);
// ExampleExtract shows what Extract refuses and what it accepts:
//
//	var k flowkeys.Key
//	err := flowkeys.ExtractPort(frame, 1, &k) // the key the kernel would extract on port 1
//	r := mask.Range()                         // the words a mask uses
//	same := flowkeys.EqualMasked(&k, &other, &mask, r)
//	h := flowkeys.HashKeyed(&masked, r, hasher, 0)
package flowkeys

import (
	"unsafe"

	"github.com/ovsdp/ovsdp/internal/header"
)

// KeyWords is the size of Key in 64-bit words: KeyHeadWords of fixed
// fields, then the Geneve option bytes (TunOpts).
const KeyWords = KeyHeadWords + tunOptsWords

// KeyHeadWords is the number of words before the Geneve option bytes:
// every field but TunOpts (TunOptsLen included). A mask that does not
// match options has a Range within them, so hashing and comparing
// under it never reads the option words.
const KeyHeadWords = 40

// TunOptsMax is the most Geneve option bytes a key holds: the kernel's
// sw_flow_key.tun_opts has 255 bytes (IP_TUNNEL_OPTS_MAX) and its
// netlink rules want a multiple of 4 (genev_tun_opt_from_nlattr), so no
// flow or packet has more than 252.
const TunOptsMax = 252

// tunOptsWords is TunOpts and its padding in words.
const tunOptsWords = (TunOptsMax + 7) / 8

// KeyBytes is the size of Key in bytes.
const KeyBytes = KeyWords * 8

// Fragment types of Key.IPFrag (the uapi's OVS_FRAG_TYPE_*): the values
// of package header, named here beside the field they fill.
const (
	FragNone  = header.FragNone  // not a fragment
	FragFirst = header.FragFirst // first fragment (offset zero, more fragments)
	FragLater = header.FragLater // a fragment with a non-zero offset: no L4 fields
)

// MAC protocol of Key.MacProto (the kernel's enum sw_flow_mac_proto).
const (
	MacProtoNone     = 0 // an L3 packet without an Ethernet header
	MacProtoEthernet = 1 // an Ethernet frame
)

// Tunnel address families of Key.TunProto (AF_INET and AF_INET6; 0 when
// the packet did not arrive through a tunnel).
const (
	TunProtoIPv4 = 2
	TunProtoIPv6 = 10
)

// VLANTagPresent is the bit the kernel sets in a VLAN TCI to say that the
// tag is present (VLAN_CFI_MASK, 0x1000).
const VLANTagPresent = header.VLANCFI

// Bits of Key.IPv6ExtHdrs (the kernel's OFPIEH12_* flags).
const (
	ExtHdrNoNext = 1 << 0 // "no next header" encountered
	ExtHdrESP    = 1 << 1 // ESP header present (never set by Linux 6.1)
	ExtHdrAuth   = 1 << 2 // authentication header present
	ExtHdrDest   = 1 << 3 // one or two destination-options headers present
	ExtHdrFrag   = 1 << 4 // fragment header present
	ExtHdrRouter = 1 << 5 // routing header present
	ExtHdrHop    = 1 << 6 // hop-by-hop header present
	ExtHdrUnrep  = 1 << 7 // unexpected repeats encountered
	ExtHdrUnseq  = 1 << 8 // unexpected sequencing encountered
)

// Ethernet types that Extract understands: package header's EtherTypes,
// named here beside Key.EthType for the packages that build keys.
const (
	EthTypeIPv4   = header.EtherTypeIPv4
	EthTypeARP    = header.EtherTypeARP
	EthTypeRARP   = header.EtherTypeRARP
	EthTypeVLAN   = header.EtherTypeVLAN // 802.1Q
	EthTypeQinQ   = header.EtherTypeQinQ // 802.1ad
	EthTypeIPv6   = header.EtherTypeIPv6
	EthTypeMPLS   = header.EtherTypeMPLS
	EthTypeMPLSMC = header.EtherTypeMPLSMC
	EthTypeNSH    = header.EtherTypeNSH
	// EthType8022 is what the kernel reports for an 802.3 frame without
	// a SNAP header carrying a real Ethernet type (ETH_P_802_2).
	EthType8022 = header.EtherType8022
)

// Key is a flow key: every field the kernel's struct sw_flow_key has that
// the datapath matches on, laid out in whole 64-bit words so that hashing,
// masking and comparing work a word at a time.
//
// The layout groups fields by how masks use them: tunnel metadata first
// (words 0-7), then packet metadata with the scalar conntrack fields
// (words 8-11), then Ethernet, VLAN, the IP scalars, L4 ports and IPv4
// addresses (words 12-16), IPv6 (words 17-21), ND and ARP link-layer
// addresses (words 22-26), MPLS and NSH (words 27-31), the rarely
// matched conntrack labels and original tuple (words 32-39), and the
// Geneve option bytes last (words 40-71). An IPv4 5-tuple mask with
// in_port therefore covers words 8-16 only, and only a mask that matches
// Geneve options reaches past word 39.
//
// The comments give each field's byte offset; see the package
// documentation for byte order.
type Key struct {
	// Tunnel metadata (words 0-7): the kernel's ip_tunnel_key.

	TunID      uint64   // 0: tunnel ID (VNI, GRE key), host order
	TunIPv4Src [4]byte  // 8: outer IPv4 source
	TunIPv4Dst [4]byte  // 12: outer IPv4 destination
	TunIPv6Src [16]byte // 16: outer IPv6 source
	TunIPv6Dst [16]byte // 32: outer IPv6 destination
	TunFlags   uint16   // 48: tunnel flags (TUNNEL_* bits)
	TunTOS     uint8    // 50: outer TOS / traffic class
	TunTTL     uint8    // 51: outer TTL / hop limit
	TunTpSrc   uint16   // 52: outer UDP source port
	TunTpDst   uint16   // 54: outer UDP destination port
	TunGBP     uint32   // 56: VXLAN group-based policy option
	TunProto   uint8    // 60: TunProtoIPv4, TunProtoIPv6 or 0 (no tunnel)
	// TunOptsLen is the number of option bytes in TunOpts (the
	// kernel's tun_opts_len); in a mask, 0xff when the options are
	// matched (their length then exactly, as the kernel's mask does).
	TunOptsLen uint8   // 61
	_          [2]byte // 62

	// Packet metadata (words 8-11).

	InPort      uint32 // 64: datapath port number the packet came in on
	RecircID    uint32 // 68: recirculation ID
	Priority    uint32 // 72: skb->priority
	SkbMark     uint32 // 76: skb->mark
	DPHash      uint32 // 80: datapath hash (ovs_flow_hash)
	CTState     uint8  // 84: conntrack state flags (OVS_CS_F_*)
	CTOrigProto uint8  // 85: conntrack original-direction IP protocol
	CTZone      uint16 // 86: conntrack zone
	CTMark      uint32 // 88: conntrack mark
	MacProto    uint8  // 92: MacProtoEthernet or MacProtoNone
	_           [3]byte

	// L2, IP scalars, L4 and IPv4 (words 12-16).

	EthSrc    [6]byte // 96: Ethernet source
	EthDst    [6]byte // 102: Ethernet destination
	EthType   uint16  // 108: Ethernet type after VLAN tags and LLC/SNAP
	VLANTCI   uint16  // 110: outer VLAN TCI | VLANTagPresent, or 0
	VLANTPID  uint16  // 112: outer VLAN TPID (0x8100 or 0x88a8), or 0
	CVLANTCI  uint16  // 114: inner VLAN TCI | VLANTagPresent, or 0
	CVLANTPID uint16  // 116: inner VLAN TPID, or 0
	IPProto   uint8   // 118: IP protocol / IPv6 next header; ARP opcode (low 8 bits)
	IPTOS     uint8   // 119: IPv4 TOS / IPv6 traffic class
	IPTTL     uint8   // 120: IPv4 TTL / IPv6 hop limit
	IPFrag    uint8   // 121: FragNone, FragFirst or FragLater
	TpSrc     uint16  // 122: L4 source port; ICMP/ICMPv6 type
	TpDst     uint16  // 124: L4 destination port; ICMP/ICMPv6 code
	TCPFlags  uint16  // 126: TCP flags (the 12 low bits of the TCP header's offset/flags word)
	IPv4Src   [4]byte // 128: IPv4 source; ARP sender protocol address
	IPv4Dst   [4]byte // 132: IPv4 destination; ARP target protocol address

	// IPv6 (words 17-21).

	IPv6Src     [16]byte // 136: IPv6 source
	IPv6Dst     [16]byte // 152: IPv6 destination
	IPv6Label   uint32   // 168: IPv6 flow label (20 bits)
	IPv6ExtHdrs uint16   // 172: ExtHdr* flags
	_           uint16   // 174

	// ND and ARP link-layer addresses (words 22-26).

	NDTarget [16]byte // 176: neighbour discovery target address
	NDSLL    [6]byte  // 192: ND source link-layer address option
	NDTLL    [6]byte  // 198: ND target link-layer address option
	ARPSHA   [6]byte  // 204: ARP sender hardware address
	ARPTHA   [6]byte  // 210: ARP target hardware address

	// MPLS (words 27-28) and NSH (words 29-31).

	MPLSLSE        [3]uint32 // 216: MPLS label stack entries, outermost first
	MPLSLabelsMask uint32    // 228: bit i set when MPLSLSE[i] is present (the kernel's num_labels_mask)
	NSHFlags       uint8     // 232: NSH base header flags
	NSHTTL         uint8     // 233: NSH TTL
	NSHMDType      uint8     // 234: NSH metadata type
	NSHNP          uint8     // 235: NSH next protocol
	NSHPathHdr     uint32    // 236: NSH service path ID (24 bits) and index (8 bits)
	NSHContext     [4]uint32 // 240: NSH MD type 1 context headers

	// Conntrack labels and original-direction tuple (words 32-39).

	CTLabels      [16]byte // 256: conntrack labels (128 bits, wire order)
	CTOrigIPv4Src [4]byte  // 272: original-direction IPv4 source
	CTOrigIPv4Dst [4]byte  // 276: original-direction IPv4 destination
	CTOrigIPv6Src [16]byte // 280: original-direction IPv6 source
	CTOrigIPv6Dst [16]byte // 296: original-direction IPv6 destination
	CTOrigTpSrc   uint16   // 312: original-direction L4 source port
	CTOrigTpDst   uint16   // 314: original-direction L4 destination port
	_             [4]byte  // 316

	// Geneve option bytes (words 40-71), last so that only masks that
	// match them have a Range that reaches them.

	// TunOpts are the Geneve options as on the wire, or with the
	// kernel's TUNNEL_ERSPAN_OPT in TunFlags the 12 bytes of struct
	// erspan_metadata (the kernel's tun_opts, here left-aligned;
	// TunFlags tells them apart as there): the first TunOptsLen bytes; the rest
	// is zero in a key (SetTunOpts keeps it so, and Extract clears the
	// options of the key it reuses only when there were some). In a
	// mask, the first TunOptsLen bytes of the flow's key are the
	// options' mask.
	TunOpts [TunOptsMax]byte // 320
	_       [4]byte          // 572
}

// TunOptsBytes returns the key's Geneve options, TunOpts[:TunOptsLen]
// (aliasing the key); nil when it has none. A mask's TunOptsLen of
// 0xff gives all of TunOpts.
func (k *Key) TunOptsBytes() []byte {
	if k.TunOptsLen == 0 {
		return nil
	}
	return k.TunOpts[:min(int(k.TunOptsLen), TunOptsMax)]
}

// SetTunOpts sets the key's Geneve options to opts (at most TunOptsMax
// bytes: the rest is cut off) and TunOptsLen to their length, zeroing
// the option bytes after them. opts may alias the key's own options.
// It does not touch TunFlags (the kernel's TUNNEL_GENEVE_OPT bit).
func (k *Key) SetTunOpts(opts []byte) {
	old := min(int(k.TunOptsLen), TunOptsMax)
	n := copy(k.TunOpts[:], opts)
	if old > n {
		clear(k.TunOpts[n:old])
	}
	k.TunOptsLen = uint8(n)
}

// The Key must be exactly KeyWords words and aligned like a uint64: these fail to
// compile otherwise.
var (
	_ [unsafe.Sizeof(Key{}) - KeyBytes]struct{}
	_ [KeyBytes - unsafe.Sizeof(Key{})]struct{}
	_ [unsafe.Alignof(Key{}) - unsafe.Alignof(uint64(0))]struct{}
)

// Words returns the key as an array of 64-bit words. The array aliases
// the key: writing a word changes the fields it covers. The value of a
// word depends on the host's byte order; only compare, hash and mask
// words produced on the same host.
func (k *Key) Words() *[KeyWords]uint64 {
	return (*[KeyWords]uint64)(unsafe.Pointer(k))
}

// Bytes returns the key's memory as a byte array (aliasing the key).
func (k *Key) Bytes() *[KeyBytes]byte {
	return (*[KeyBytes]byte)(unsafe.Pointer(k))
}

// Range is a half-open range of key words [Start, End), the part of a key
// that a mask uses. The zero Range is empty.
type Range struct {
	Start, End int
}

// FullRange covers the whole key.
var FullRange = Range{0, KeyWords}

// Len returns the number of words in the range.
func (r Range) Len() int { return r.End - r.Start }

// Valid reports whether r lies within a key.
func (r Range) Valid() bool { return 0 <= r.Start && r.Start <= r.End && r.End <= KeyWords }

// Range returns the smallest word range that contains every non-zero
// word of m, viewed as a mask. A mask with no bit set gives the empty
// Range{0, 0}.
func (m *Key) Range() Range {
	w := m.Words()
	start := 0
	for start < KeyWords && w[start] == 0 {
		start++
	}
	if start == KeyWords {
		return Range{}
	}
	end := KeyWords
	for w[end-1] == 0 {
		end--
	}
	return Range{start, end}
}

// IsZero reports whether every field of k is zero.
func (k *Key) IsZero() bool {
	var acc uint64
	for _, w := range k.Words() {
		acc |= w
	}
	return acc == 0
}

// wordsAt returns the n words at p as a slice.
func wordsAt(p *uint64, n int) []uint64 { return unsafe.Slice(p, n) }
