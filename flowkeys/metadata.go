package flowkeys

// Tunnel is the tunnel metadata a packet arrived with (the kernel's
// ip_tunnel_key). Proto is zero when the packet did not come through a
// tunnel; Extract then leaves every tunnel field of the key zero.
type Tunnel struct {
	Proto   uint8    // TunProtoIPv4, TunProtoIPv6 or 0
	ID      uint64   // tunnel ID, host order
	IPv4Src [4]byte  // outer IPv4 source (Proto == TunProtoIPv4)
	IPv4Dst [4]byte  // outer IPv4 destination
	IPv6Src [16]byte // outer IPv6 source (Proto == TunProtoIPv6)
	IPv6Dst [16]byte // outer IPv6 destination
	Flags   uint16   // TUNNEL_* flag bits
	TOS     uint8    // outer TOS
	TTL     uint8    // outer TTL
	TpSrc   uint16   // outer UDP source port
	TpDst   uint16   // outer UDP destination port
	GBP     uint32   // VXLAN group-based policy
	// Opts are the Geneve options (at most TunOptsMax bytes; Extract
	// copies them into the key's TunOpts). MetadataOf's alias its key.
	Opts []byte
}

// Metadata is what the datapath knows about a packet besides its bytes:
// the port it came in on, the skb's priority and mark, the recirculation
// state, tunnel metadata, and (after recirculation through conntrack)
// the conntrack fields. Extract copies it into the key unchanged.
type Metadata struct {
	InPort   uint32 // datapath port number
	Priority uint32 // skb->priority
	SkbMark  uint32 // skb->mark
	RecircID uint32 // recirculation ID (0 on first pass)
	DPHash   uint32 // datapath hash (0 unless set by a hash action)
	Tunnel   Tunnel // tunnel metadata; zero for none

	// L3 says the packet has no Ethernet header (the port is an L3
	// tunnel, ARPHRD_NONE); EthType then gives its protocol (the
	// kernel's skb->protocol), and the key's MacProto is MacProtoNone.
	L3      bool
	EthType uint16

	CTState       uint8    // conntrack state flags
	CTOrigProto   uint8    // conntrack original-direction protocol
	CTZone        uint16   // conntrack zone
	CTMark        uint32   // conntrack mark
	CTLabels      [16]byte // conntrack labels
	CTOrigIPv4Src [4]byte  // conntrack original tuple, IPv4
	CTOrigIPv4Dst [4]byte
	CTOrigIPv6Src [16]byte // conntrack original tuple, IPv6
	CTOrigIPv6Dst [16]byte
	CTOrigTpSrc   uint16 // conntrack original tuple, ports
	CTOrigTpDst   uint16
}

// MetadataOf returns the metadata of k, the fields Extract takes from
// its Metadata rather than from the packet (all of them but L3 and
// EthType), to extract a changed packet again with the same metadata.
// The tunnel's Opts alias k's TunOpts (Extract into k itself keeps them).
func MetadataOf(k *Key) Metadata {
	md := Metadata{InPort: k.InPort, Priority: k.Priority, SkbMark: k.SkbMark, RecircID: k.RecircID, DPHash: k.DPHash,
		CTState: k.CTState, CTOrigProto: k.CTOrigProto, CTZone: k.CTZone, CTMark: k.CTMark, CTLabels: k.CTLabels,
		CTOrigIPv4Src: k.CTOrigIPv4Src, CTOrigIPv4Dst: k.CTOrigIPv4Dst, CTOrigIPv6Src: k.CTOrigIPv6Src,
		CTOrigIPv6Dst: k.CTOrigIPv6Dst, CTOrigTpSrc: k.CTOrigTpSrc, CTOrigTpDst: k.CTOrigTpDst}
	if k.TunProto != 0 {
		md.Tunnel = Tunnel{Proto: k.TunProto, ID: k.TunID, IPv4Src: k.TunIPv4Src, IPv4Dst: k.TunIPv4Dst,
			IPv6Src: k.TunIPv6Src, IPv6Dst: k.TunIPv6Dst, Flags: k.TunFlags, TOS: k.TunTOS, TTL: k.TunTTL,
			TpSrc: k.TunTpSrc, TpDst: k.TunTpDst, GBP: k.TunGBP, Opts: k.TunOptsBytes()}
	}
	return md
}

// fill writes the metadata fields of k.
func (md *Metadata) fill(k *Key) {
	t := &md.Tunnel
	if t.Proto != 0 {
		k.TunProto = t.Proto
		k.TunID = t.ID
		k.TunIPv4Src = t.IPv4Src
		k.TunIPv4Dst = t.IPv4Dst
		k.TunIPv6Src = t.IPv6Src
		k.TunIPv6Dst = t.IPv6Dst
		k.TunFlags = t.Flags
		k.TunTOS = t.TOS
		k.TunTTL = t.TTL
		k.TunTpSrc = t.TpSrc
		k.TunTpDst = t.TpDst
		k.TunGBP = t.GBP
	}
	k.InPort = md.InPort
	k.Priority = md.Priority
	k.SkbMark = md.SkbMark
	k.RecircID = md.RecircID
	k.DPHash = md.DPHash
	k.CTState = md.CTState
	k.CTOrigProto = md.CTOrigProto
	k.CTZone = md.CTZone
	k.CTMark = md.CTMark
	k.CTLabels = md.CTLabels
	k.CTOrigIPv4Src = md.CTOrigIPv4Src
	k.CTOrigIPv4Dst = md.CTOrigIPv4Dst
	k.CTOrigIPv6Src = md.CTOrigIPv6Src
	k.CTOrigIPv6Dst = md.CTOrigIPv6Dst
	k.CTOrigTpSrc = md.CTOrigTpSrc
	k.CTOrigTpDst = md.CTOrigTpDst
}
