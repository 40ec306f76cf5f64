package kernelct

import (
	"github.com/ti-mo/conntrack"

	"github.com/ovsdp/ovsdp/odp"
)

// sctpState maps a kernel SCTP state (enum sctp_conntrack: NONE, CLOSED,
// COOKIE_WAIT...) to Open vSwitch's (CLOSED, COOKIE_WAIT...): the kernel's
// is one more from COOKIE_WAIT on; NONE, CLOSED and unknown states are
// CLOSED.
func sctpState(s uint8) uint8 {
	if s >= 2 && s <= 9 {
		return s - 1
	}
	return 0
}

// tuple converts a ctnetlink tuple.
func tuple(t conntrack.Tuple) odp.CTTuple {
	out := odp.CTTuple{
		Src:   t.IP.SourceAddress,
		Dst:   t.IP.DestinationAddress,
		Proto: t.Proto.Protocol,
	}
	if out.IsICMP() {
		out.ICMPID, out.ICMPType, out.ICMPCode = t.Proto.ICMPID, t.Proto.ICMPType, t.Proto.ICMPCode
	} else {
		out.SrcPort, out.DstPort = t.Proto.SourcePort, t.Proto.DestinationPort
	}
	return out
}

// ctTuple converts a tuple back for ctnetlink.
func ctTuple(t odp.CTTuple) conntrack.Tuple {
	out := conntrack.Tuple{
		IP:    conntrack.IPTuple{SourceAddress: t.Src, DestinationAddress: t.Dst},
		Proto: conntrack.ProtoTuple{Protocol: t.Proto},
	}
	if t.IsICMP() {
		out.Proto.ICMPID, out.Proto.ICMPType, out.Proto.ICMPCode = t.ICMPID, t.ICMPType, t.ICMPCode
	} else {
		out.Proto.SourcePort, out.Proto.DestinationPort = t.SrcPort, t.DstPort
	}
	return out
}

// Entry converts a ctnetlink flow to the odp model, field by field as
// ovs-dpctl reads one (nl_ct_attrs_to_ct_dpif_entry).
func Entry(f *conntrack.Flow) odp.CTEntry {
	e := odp.CTEntry{
		Orig:          tuple(f.TupleOrig),
		Reply:         tuple(f.TupleReply),
		Zone:          f.Zone,
		Mark:          f.Mark,
		Status:        odp.CTStatus(f.Status) & odp.CTStatusMask,
		Timeout:       f.Timeout,
		ID:            f.ID,
		OrigCounters:  odp.CTCounters{Packets: f.CountersOrig.Packets, Bytes: f.CountersOrig.Bytes},
		ReplyCounters: odp.CTCounters{Packets: f.CountersReply.Packets, Bytes: f.CountersReply.Bytes},
		Helper:        f.Helper.Name,
		Bucket:        -1,
	}
	if f.TupleMaster.IP.SourceAddress.IsValid() {
		e.Parent = tuple(f.TupleMaster)
	}
	if len(f.Labels) > 0 {
		e.Labels = odp.CTLabelsFromWire(f.Labels)
	}
	if !f.Timestamp.Start.IsZero() {
		e.Start = uint64(f.Timestamp.Start.UnixNano())
	}
	if !f.Timestamp.Stop.IsZero() {
		e.Stop = uint64(f.Timestamp.Stop.UnixNano())
	}
	switch {
	case f.ProtoInfo.TCP != nil:
		t := f.ProtoInfo.TCP
		s := odp.CTTCPStateOfKernel(t.State)
		// The kernel keeps one state per connection; ovs-dpctl shows it
		// for both directions. Each direction's flags are the first byte
		// of struct nf_ct_tcp_flags {flags, mask}.
		e.ProtoInfo = odp.CTProtoInfo{Proto: odp.IPProtoTCP, StateOrig: s, StateReply: s,
			WScaleOrig: t.OriginalWindowScale, WScaleReply: t.ReplyWindowScale,
			FlagsOrig:  odp.CTTCPFlags(t.OriginalFlags>>8) & tcpFlagsMask,
			FlagsReply: odp.CTTCPFlags(t.ReplyFlags>>8) & tcpFlagsMask}
	case f.ProtoInfo.SCTP != nil:
		s := f.ProtoInfo.SCTP
		e.ProtoInfo = odp.CTProtoInfo{Proto: odp.IPProtoSCTP, SCTPState: sctpState(s.State),
			SCTPVTagOrig: s.VTagOriginal, SCTPVTagRp: s.VTagReply}
	}
	return e
}

// tcpFlagsMask is the IP_CT_TCP_FLAG_* bits that ovs-dpctl names
// (ip_ct_tcp_flags_to_dpif drops the others).
const tcpFlagsMask = odp.CTTCPWindowScale | odp.CTTCPSackPerm | odp.CTTCPCloseInit |
	odp.CTTCPBeLiberal | odp.CTTCPDataUnacknowledged | odp.CTTCPMaxAckSet
