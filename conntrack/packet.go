package conntrack

// Packet is the tracker's view of one packet: what the kernel's
// nf_conntrack reads from it, already parsed (see FromKey for the adapter
// from a flow key and the L4 bytes). The tracker never reads packet
// bytes.
type Packet struct {
	// Tuple is the packet's tuple as on the wire. A ct action with NAT
	// rewrites it to the tuple the packet must carry afterwards (the
	// caller rewrites the packet to match: see Rewritten).
	Tuple Tuple
	// Len is the packet's length from the IP header on, for the
	// connection's byte counters.
	Len uint32
	// Malformed marks a packet whose L4 header is cut short or
	// inconsistent (the kernel's "truncated packet"): it is invalid.
	Malformed bool
	// TCP is the TCP header's part that the state machine reads, when
	// Tuple.Proto is TCP.
	TCP TCPInfo
	// Inner is the tuple of the packet embedded in an ICMP or ICMPv6
	// error, when HasInner; the error is then related to the connection
	// whose reply is Inner's inverse. A ct action with NAT rewrites it
	// like Tuple.
	Inner    Tuple
	HasInner bool

	// Rewritten reports what the last Execute changed: RewroteSrc,
	// RewroteDst (Tuple's source or destination address and port) and
	// RewroteInner (Inner).
	Rewritten uint8
}

// Bits of Packet.Rewritten.
const (
	RewroteSrc   = 1 << 0
	RewroteDst   = 1 << 1
	RewroteInner = 1 << 2
)

// TCP flag bits of TCPInfo.Flags (the TCP header's 13th byte, from its
// lowest bit: FIN, SYN, RST, PSH, ACK, URG, ECE, CWR).
const (
	TCPFin uint8 = 1 << iota
	TCPSyn
	TCPRst
	TCPPsh
	TCPAck
	TCPUrg
	TCPEce
	TCPCwr
)

// TCPInfo is what the TCP state machine and window tracking read from a
// segment (nf_conntrack_proto_tcp.c).
type TCPInfo struct {
	// Flags are the header's flag bits (TCPSyn...).
	Flags uint8
	// Seq and Ack are the sequence and acknowledgment numbers; Window is
	// the raw (unscaled) window.
	Seq, Ack uint32
	Window   uint16
	// DataLen is the payload length (the IP payload minus the TCP
	// header).
	DataLen uint32
	// HasOptions reports that the header has options (a data offset
	// above 5): the kernel then resets what it learnt of the sender's
	// window scale and SACK before reading them again.
	HasOptions bool
	// WScale is the window-scale option's shift when HasWScale.
	WScale    uint8
	HasWScale bool
	// SACKPerm reports the SACK-permitted option.
	SACKPerm bool
	// SACK is the highest right edge of the SACK blocks, when HasSACK.
	SACK    uint32
	HasSACK bool
}
