package odp

import (
	"context"
	"encoding/binary"
	"net/netip"
)

// This file is the datapath-neutral model of a connection tracker: what
// dpctl's conntrack commands (dump-conntrack, flush-conntrack,
// ct-stats-show, ct-get-nconns, ct-set-maxconns...) read and change on
// either datapath. The kernel datapath's tracker is the kernel's
// nf_conntrack, read over ctnetlink; the userspace datapath's is its own.
// The names follow Open vSwitch's lib/ct-dpif.h.

// CTTuple is one direction of a tracked connection: addresses, protocol
// and ports (or, for ICMP and ICMPv6, the echo ID and the type and code).
type CTTuple struct {
	// Src and Dst are the addresses; both IPv4 or both IPv6.
	Src, Dst netip.Addr
	// Proto is the IP protocol number (6 TCP, 17 UDP, 1 ICMP, 58 ICMPv6...).
	Proto uint8
	// SrcPort and DstPort are the ports of TCP, UDP, SCTP, DCCP and
	// UDP-Lite; zero for other protocols.
	SrcPort, DstPort uint16
	// ICMPID, ICMPType and ICMPCode are an ICMP or ICMPv6 tuple's echo ID,
	// type and code; zero for other protocols.
	ICMPID             uint16
	ICMPType, ICMPCode uint8
}

// IsICMP reports whether t is an ICMP (IPv4, protocol 1) or ICMPv6
// (protocol 58) tuple, whose ID, type and code replace the ports.
func (t CTTuple) IsICMP() bool {
	return t.Proto == IPProtoICMP || t.Proto == IPProtoICMPv6
}

// IP protocol numbers that the conntrack model treats specially.
const (
	IPProtoICMP    = 1
	IPProtoIGMP    = 2
	IPProtoTCP     = 6
	IPProtoUDP     = 17
	IPProtoDCCP    = 33
	IPProtoICMPv6  = 58
	IPProtoSCTP    = 132
	IPProtoUDPLite = 136
)

// CTLabelsFromWire converts ct_label as the datapath holds it (the
// kernel's bitmap of two native-endian unsigned longs, which is also how
// OVS_KEY_ATTR_CT_LABELS carries it and how ovs-dpctl copies it into an
// ovs_u128) to CTEntry.Labels' network byte order: bit 0 is the last
// byte's lowest bit. A shorter b is zero-padded.
func CTLabelsFromWire(b []byte) [16]byte {
	var raw [16]byte
	copy(raw[:], b)
	var out [16]byte
	binary.BigEndian.PutUint64(out[:8], binary.NativeEndian.Uint64(raw[8:]))
	binary.BigEndian.PutUint64(out[8:], binary.NativeEndian.Uint64(raw[:8]))
	return out
}

// CTCounters are one direction's packet and byte counters.
type CTCounters struct {
	Packets, Bytes uint64
}

// CTStatus is a connection's status bits, numbered as the kernel's
// IPS_* bits (and Open vSwitch's CT_DPIF_STATUS_*).
type CTStatus uint32

// Status bits of CTStatus.
const (
	CTStatusExpected CTStatus = 1 << iota
	CTStatusSeenReply
	CTStatusAssured
	CTStatusConfirmed
	CTStatusSrcNAT
	CTStatusDstNAT
	CTStatusSeqAdjust
	CTStatusSrcNATDone
	CTStatusDstNATDone
	CTStatusDying
	CTStatusFixedTimeout
	CTStatusTemplate
	CTStatusUntracked
	// CTStatusMask is every bit that ovs-dpctl names.
	CTStatusMask CTStatus = 1<<13 - 1
)

// CTTCPState is a TCP connection's state in Open vSwitch's numbering
// (CT_DPIF_TCPS_*, which is BSD's, not the kernel's TCP_CONNTRACK_*).
type CTTCPState uint8

// TCP states of CTTCPState.
const (
	CTTCPClosed CTTCPState = iota
	CTTCPListen
	CTTCPSynSent
	CTTCPSynRecv
	CTTCPEstablished
	CTTCPCloseWait
	CTTCPFinWait1
	CTTCPClosing
	CTTCPLastAck
	CTTCPFinWait2
	CTTCPTimeWait
	// CTTCPMaxNum is one past the last state.
	CTTCPMaxNum
)

// The kernel's TCP conntrack states (enum tcp_conntrack in
// include/uapi/linux/netfilter/nf_conntrack_tcp.h), which the userspace
// tracker (package conntrack) numbers the same way.
const (
	kTCPNone = iota
	kTCPSynSent
	kTCPSynRecv
	kTCPEstablished
	kTCPFinWait
	kTCPCloseWait
	kTCPLastAck
	kTCPTimeWait
	kTCPClose
	kTCPSynSent2 // TCP_CONNTRACK_LISTEN, which the kernel reuses as SYN_SENT2
)

// CTTCPStateOfKernel maps a kernel TCP conntrack state (TCP_CONNTRACK_*)
// to Open vSwitch's numbering, as ovs-dpctl does
// (nl_ct_tcp_state_to_dpif): unknown states are CLOSED.
func CTTCPStateOfKernel(s uint8) CTTCPState {
	switch s {
	case kTCPSynSent, kTCPSynSent2:
		return CTTCPSynSent
	case kTCPSynRecv:
		return CTTCPSynRecv
	case kTCPEstablished:
		return CTTCPEstablished
	case kTCPFinWait:
		return CTTCPFinWait1
	case kTCPCloseWait:
		return CTTCPCloseWait
	case kTCPLastAck:
		return CTTCPLastAck
	case kTCPTimeWait:
		return CTTCPTimeWait
	case kTCPClose:
		return CTTCPClosing
	}
	return CTTCPClosed
}

// CTTCPFlags are a TCP direction's tracking flags (CT_DPIF_TCPF_*, the
// kernel's IP_CT_TCP_FLAG_* bits).
type CTTCPFlags uint8

// Flags of CTTCPFlags.
const (
	CTTCPWindowScale CTTCPFlags = 1 << iota
	CTTCPSackPerm
	CTTCPCloseInit
	CTTCPBeLiberal
	CTTCPDataUnacknowledged
	CTTCPMaxAckSet
)

// CTProtoInfo is protocol-specific state: for TCP (Proto 6) the state and
// window scale and flags of each direction. Proto 0 means none.
type CTProtoInfo struct {
	Proto                    uint8
	StateOrig, StateReply    CTTCPState
	WScaleOrig, WScaleReply  uint8
	FlagsOrig, FlagsReply    CTTCPFlags
	SCTPState                uint8
	SCTPVTagOrig, SCTPVTagRp uint32
}

// CTEntry is one tracked connection, as dump-conntrack prints it.
type CTEntry struct {
	// Orig is the original direction's tuple, Reply the reply direction's
	// (they differ by more than a swap when the connection is NATed).
	Orig, Reply CTTuple
	// Parent is the master connection's original tuple of a related
	// (expected) connection; its Proto is 0 when there is none.
	Parent CTTuple
	// Zone is the conntrack zone.
	Zone uint16
	// Mark is ct_mark.
	Mark uint32
	// Labels is ct_label, 128 bits in network byte order.
	Labels [16]byte
	// Status is the IPS_* status bits.
	Status CTStatus
	// Timeout is the seconds left before the entry expires.
	Timeout uint32
	// ID is the datapath's identifier of the entry, or 0.
	ID uint32
	// OrigCounters and ReplyCounters are each direction's counters (zero
	// where the datapath does not count, as the kernel without
	// nf_conntrack_acct).
	OrigCounters, ReplyCounters CTCounters
	// Start and Stop are the entry's creation and deletion times in
	// nanoseconds since the Unix epoch, or 0 (the kernel records them only
	// with nf_conntrack_timestamp).
	Start, Stop uint64
	// ProtoInfo is the protocol-specific state.
	ProtoInfo CTProtoInfo
	// Helper is the name of the connection's helper ("ftp"), or "".
	Helper string
	// Bucket is the entry's hash bucket, where the datapath exposes one
	// (Open vSwitch's userspace tracker, for ct-bkts); -1 otherwise.
	Bucket int64
}

// CTFilter selects the entries of a dump or a flush, as ovs-dpctl's
// flush-conntrack arguments do (Open vSwitch's ofp_ct_match). Its zero
// value selects every entry.
type CTFilter struct {
	// HasZone restricts to Zone.
	HasZone bool
	Zone    uint16
	// Family, when non-zero, restricts to IPv4 (4) or IPv6 (6) entries.
	Family uint8
	// Proto, when non-zero, restricts to entries of that IP protocol.
	Proto uint8
	// Orig and Reply are partial tuples that the entry's original and
	// reply tuples must match (see CTTuple.MatchesPartial). Their Proto is
	// ignored: Proto above says it. Dumps use only the zone.
	Orig, Reply CTTuple
}

// IsZero reports whether f selects every entry of its zone: no family,
// protocol or tuple field is set.
func (f CTFilter) IsZero() bool {
	return f.Family == 0 && f.Proto == 0 && f.Orig.isZero() && f.Reply.isZero()
}

// IsFiveTuple reports whether f names one connection by its original
// tuple alone: both addresses and (except for ICMP) both ports, and an
// empty reply tuple. A datapath can then delete that entry directly
// instead of walking the table.
func (f CTFilter) IsFiveTuple() bool {
	o := f.Orig
	if !o.Src.IsValid() || !o.Dst.IsValid() || !f.Reply.isZero() {
		return false
	}
	if f.Proto == IPProtoICMP || f.Proto == IPProtoICMPv6 {
		return true
	}
	return o.SrcPort != 0 && o.DstPort != 0
}

// Matches reports whether f selects e: its zone (when set), family,
// protocol, and both partial tuples.
func (f CTFilter) Matches(e *CTEntry) bool {
	if f.HasZone && e.Zone != f.Zone {
		return false
	}
	if f.Family == 4 && !e.Orig.Src.Is4() || f.Family == 6 && !e.Orig.Src.Is6() {
		return false
	}
	if f.Proto != 0 && e.Orig.Proto != f.Proto {
		return false
	}
	return e.Orig.MatchesPartial(f.Orig, f.Proto) && e.Reply.MatchesPartial(f.Reply, f.Proto)
}

// isZero reports whether no field of t but its protocol is set.
func (t CTTuple) isZero() bool {
	t.Proto = 0
	return t == CTTuple{}
}

// MatchesPartial reports whether t matches the partial tuple p of a
// filter with protocol proto, as Open vSwitch compares them: an invalid
// (unset) address or a zero port in p matches any; with proto ICMP or
// ICMPv6 the ID, type and code are compared exactly, zero included
// (type 0 is echo reply). An empty p matches any tuple: there ovs-dpctl
// 3.1 compares the ICMP fields of an empty reply tuple too, so that
// "ct_nw_proto=1,icmp_id=7,icmp_type=8" alone never matches a ping.
func (t CTTuple) MatchesPartial(p CTTuple, proto uint8) bool {
	if p.isZero() {
		return true
	}
	if p.Src.IsValid() && p.Src != t.Src || p.Dst.IsValid() && p.Dst != t.Dst {
		return false
	}
	if proto == IPProtoICMP || proto == IPProtoICMPv6 {
		return p.ICMPID == t.ICMPID && p.ICMPType == t.ICMPType && p.ICMPCode == t.ICMPCode
	}
	return (p.SrcPort == 0 || p.SrcPort == t.SrcPort) && (p.DstPort == 0 || p.DstPort == t.DstPort)
}

// CTStats are a tracker's global counters (ct-stats-show's "verbose"
// part; on the kernel datapath, ctnetlink's per-CPU statistics summed).
// A field the datapath does not keep is 0.
type CTStats struct {
	// Found, Invalid, Ignore, Insert, InsertFailed, Drop, EarlyDrop,
	// Error, SearchRestart: the kernel's nf_conntrack statistics.
	Found, Invalid, Ignore, Insert, InsertFailed uint64
	Drop, EarlyDrop, Error, SearchRestart        uint64
}

// Conntracker is the optional interface of a Datapath whose connection
// tracker can be read and changed; callers find it by type assertion:
//
//	if ct, ok := dp.(odp.Conntracker); ok { ... }
//
// A Datapath that lacks it, or whose methods return an error wrapping
// ErrUnsupported, has no such feature; the error says what.
type Conntracker interface {
	// DumpConntrack calls fn for every entry that f selects (only its
	// zone is used). An error from fn stops the dump and is returned.
	DumpConntrack(ctx context.Context, f CTFilter, fn func(*CTEntry) error) error
	// FlushConntrack deletes the entries that f selects (CTFilter.Matches):
	// every entry, a zone's, or those that match its tuples.
	FlushConntrack(ctx context.Context, f CTFilter) error
	// ConntrackStats returns the tracker's global counters.
	ConntrackStats(ctx context.Context) (CTStats, error)
	// ConntrackCount returns the number of tracked connections.
	ConntrackCount(ctx context.Context) (uint32, error)
	// MaxConns returns the maximum number of tracked connections.
	MaxConns(ctx context.Context) (uint32, error)
	// SetMaxConns sets the maximum number of tracked connections.
	SetMaxConns(ctx context.Context, n uint32) error
}

// CTBucketCounter is the optional interface of a Conntracker whose table
// has hash buckets that it reports in CTEntry.Bucket (Open vSwitch's
// userspace tracker; ct-bkts). The kernel's tracker has none.
type CTBucketCounter interface {
	// ConntrackBuckets returns the number of hash buckets.
	ConntrackBuckets(ctx context.Context) (int, error)
}

// CTTuner is the optional interface of a Datapath whose tracker has
// Open vSwitch userspace's settings (ct-*-tcp-seq-chk and
// ct-*-sweep-interval); the kernel datapath has none of them.
type CTTuner interface {
	// TCPSeqCheck reports whether TCP sequence numbers are checked.
	TCPSeqCheck(ctx context.Context) (bool, error)
	// SetTCPSeqCheck turns TCP sequence number checking on or off.
	SetTCPSeqCheck(ctx context.Context, on bool) error
	// SweepInterval returns the expiry sweeper's interval in milliseconds.
	SweepInterval(ctx context.Context) (uint32, error)
	// SetSweepInterval sets the expiry sweeper's interval in milliseconds.
	SetSweepInterval(ctx context.Context, ms uint32) error
}

// IPFStatus is one address family's fragment reassembly state and
// counters, as ipf-get-status prints them.
type IPFStatus struct {
	// Enabled reports whether reassembly of this family is on.
	Enabled bool
	// MinFragSize is the smallest fragment (all but the last) accepted.
	MinFragSize uint32
	// Accepted, CompletedSent, ExpiredSent, TooSmall, Overlap and Purged
	// count fragments: accepted, sent on after reassembly, sent on
	// unreassembled after their list expired (the userspace datapath
	// drops them then, as the kernel does, and counts them here),
	// refused as too small, refused as overlapping (or duplicating)
	// another, and purged with their datagram.
	Accepted, CompletedSent, ExpiredSent uint64
	TooSmall, Overlap, Purged            uint64
	// NoRoom and Invalid count fragments refused because the limits of
	// fragments or bytes held were reached, and as malformed or
	// inconsistent with their datagram (not in ipf-get-status' plain
	// output; -m shows them).
	NoRoom, Invalid uint64
}

// IPFQueue is a datagram whose fragments are being reassembled
// (ipf-get-status -m).
type IPFQueue struct {
	Src, Dst netip.Addr
	// ID is the IPv4 or IPv6 identification; Proto the IPv4 protocol (0
	// for IPv6, whose fragments are not told apart by it).
	ID    uint32
	Proto uint8
	Zone  uint16
	// Frags is the number of fragments held; First and Last whether the
	// first and the last fragment are among them.
	Frags       uint32
	First, Last bool
}

// IPFStatusAll is the fragment reassembler's state for both families.
type IPFStatusAll struct {
	V4, V6 IPFStatus
	// MaxFrags is the maximum number of fragments held at once (both
	// families together); NFrags the number held now.
	MaxFrags, NFrags uint32
}

// FragReassembler is the optional interface of a Datapath that
// reassembles fragments before tracking them with settings of its own
// (the ipf-* commands). The kernel's defragmentation has none.
type FragReassembler interface {
	// SetIPFEnabled turns reassembly of IPv4 (v6 false) or IPv6 on or off.
	SetIPFEnabled(ctx context.Context, v6, on bool) error
	// SetIPFMinFrag sets the smallest fragment accepted (all but the last).
	SetIPFMinFrag(ctx context.Context, v6 bool, size uint32) error
	// SetIPFMaxFrags sets the maximum number of fragments held at once.
	SetIPFMaxFrags(ctx context.Context, n uint32) error
	// IPFStatus returns the reassembler's settings and counters.
	IPFStatus(ctx context.Context) (IPFStatusAll, error)
	// IPFQueues returns the datagrams being reassembled.
	IPFQueues(ctx context.Context) ([]IPFQueue, error)
}

// CTZoneLimit is a conntrack zone's connection limit (the kernel's
// struct ovs_zone_limit). Zone CTDefaultZone stands for the default
// limit of every zone without its own. A Limit of 0 means unlimited.
// Count is the zone's number of committed connections (in replies
// only).
type CTZoneLimit struct {
	Zone  int32
	Limit uint32
	Count uint32
}

// CTDefaultZone is the Zone of a CTZoneLimit that is the default limit
// (OVS_ZONE_LIMIT_DEFAULT_ZONE).
const CTDefaultZone int32 = -1

// CTLimiter is the optional interface of a Datapath whose connection
// tracker limits the connections committed per zone (the kernel's
// ovs_ct_limit family; dpctl's ct-set-limits, ct-get-limits and
// ct-del-limits). A commit past its zone's limit is refused and the
// packet dropped.
type CTLimiter interface {
	// SetZoneLimits sets the limits of the given zones (CTDefaultZone:
	// the default).
	SetZoneLimits(ctx context.Context, limits []CTZoneLimit) error
	// ZoneLimits returns the limit and connection count of each given
	// zone (a zone without a limit of its own has the default's), or,
	// with no zones, of the default and of every zone with a limit.
	ZoneLimits(ctx context.Context, zones ...int32) ([]CTZoneLimit, error)
	// DelZoneLimits makes the given zones follow the default again
	// (CTDefaultZone: the default becomes unlimited).
	DelZoneLimits(ctx context.Context, zones ...int32) error
}
