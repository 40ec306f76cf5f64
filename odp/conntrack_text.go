package odp

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"time"
)

// The text forms of conntrack entries and tuples, as ovs-dpctl prints and
// parses them (Open vSwitch's lib/ct-dpif.c ct_dpif_format_entry and
// lib/ofp-ct.c ofp_ct_tuple_parse).

// ctTCPStateNames are CT_DPIF_TCP_STATES' names, MAX_NUM included as
// ct_dpif_tcp_state_string has it.
var ctTCPStateNames = [...]string{"CLOSED", "LISTEN", "SYN_SENT", "SYN_RECV", "ESTABLISHED",
	"CLOSE_WAIT", "FIN_WAIT_1", "CLOSING", "LAST_ACK", "FIN_WAIT_2", "TIME_WAIT", "MAX_NUM"}

// ctSCTPStateNames are CT_DPIF_SCTP_STATES' names.
var ctSCTPStateNames = [...]string{"CLOSED", "COOKIE_WAIT", "COOKIE_ECHOED", "ESTABLISHED",
	"SHUTDOWN_SENT", "SHUTDOWN_RECD", "SHUTDOWN_ACK_SENT", "HEARTBEAT_SENT", "HEARTBEAT_ACKED", "MAX_NUM"}

// ctStatusNames name CTStatus's bits, lowest first.
var ctStatusNames = [...]string{"EXPECTED", "SEEN_REPLY", "ASSURED", "CONFIRMED", "SRC_NAT",
	"DST_NAT", "SEQ_ADJUST", "SRC_NAT_DONE", "DST_NAT_DONE", "DYING", "FIXED_TIMEOUT",
	"TEMPLATE", "UNTRACKED"}

// ctTCPFlagNames name CTTCPFlags's bits, lowest first.
var ctTCPFlagNames = [...]string{"WINDOW_SCALE", "SACK_PERM", "CLOSE_INIT", "BE_LIBERAL",
	"DATA_UNACKNOWLEDGED", "MAXACK_SET"}

// String is the state's name as ovs-dpctl prints it ("ESTABLISHED"), or
// "[N]" for a number it has no name for.
func (s CTTCPState) String() string {
	return enumName(uint32(s), ctTCPStateNames[:])
}

// enumName is ct_dpif_format_enum: names[v], or "[v]".
func enumName(v uint32, names []string) string {
	if int(v) < len(names) {
		return names[v]
	}
	return "[" + strconv.FormatUint(uint64(v), 10) + "]"
}

// Coalesce is the state that ovs-dpctl prints without -m: FIN_WAIT_2 as
// TIME_WAIT and SYN_RECV as ESTABLISHED, where the kernel's and Open
// vSwitch userspace's trackers see the connection differently.
func (s CTTCPState) Coalesce() CTTCPState {
	switch s {
	case CTTCPFinWait2:
		return CTTCPTimeWait
	case CTTCPSynRecv:
		return CTTCPEstablished
	}
	return s
}

// State is the one TCP state that ovs-dpctl prints for an entry: the
// larger of the two directions' states, coalesced.
func (p CTProtoInfo) State() CTTCPState {
	return max(p.StateOrig, p.StateReply).Coalesce()
}

// writeFlags is Open vSwitch's format_flags with '|': the names of the
// set bits, lowest first, then the unnamed ones in hex; "0" for none.
func writeFlags(b *strings.Builder, v uint32, names []string) {
	if v == 0 {
		b.WriteByte('0')
		return
	}
	var bad uint32
	first := true
	for i := 0; i < 32; i++ {
		bit := uint32(1) << i
		if v&bit == 0 {
			continue
		}
		if i >= len(names) {
			bad |= bit
			continue
		}
		if !first {
			b.WriteByte('|')
		}
		b.WriteString(names[i])
		first = false
	}
	if bad != 0 {
		if !first {
			b.WriteByte('|')
		}
		fmt.Fprintf(b, "0x%x", bad)
	}
}

// CTProtoName is the protocol's name in a conntrack entry ("tcp",
// "icmpv6"...) or its number.
func CTProtoName(proto uint8) string {
	switch proto {
	case IPProtoICMP:
		return "icmp"
	case IPProtoICMPv6:
		return "icmpv6"
	case IPProtoTCP:
		return "tcp"
	case IPProtoUDP:
		return "udp"
	case IPProtoSCTP:
		return "sctp"
	case IPProtoUDPLite:
		return "udplite"
	case IPProtoDCCP:
		return "dccp"
	case IPProtoIGMP:
		return "igmp"
	}
	return strconv.FormatUint(uint64(proto), 10)
}

// writeCTTuple is ct_dpif_format_tuple.
func writeCTTuple(b *strings.Builder, t *CTTuple) {
	if !t.Src.IsValid() || !t.Dst.IsValid() || t.Src.Is4() != t.Dst.Is4() {
		fmt.Fprintf(b, "unsupported address family: src=%v,dst=%v", t.Src, t.Dst)
		return
	}
	b.WriteString("src=")
	b.WriteString(t.Src.String())
	b.WriteString(",dst=")
	b.WriteString(t.Dst.String())
	if t.IsICMP() {
		fmt.Fprintf(b, ",id=%d,type=%d,code=%d", t.ICMPID, t.ICMPType, t.ICMPCode)
	} else {
		fmt.Fprintf(b, ",sport=%d,dport=%d", t.SrcPort, t.DstPort)
	}
}

// FormatCTTuple is a tuple as dump-conntrack prints it inside orig=(...):
// "src=10.0.0.1,dst=10.0.0.2,sport=1234,dport=80".
func FormatCTTuple(t CTTuple) string {
	var b strings.Builder
	writeCTTuple(&b, &t)
	return b.String()
}

// writeCTCounters is ct_dpif_format_counters.
func writeCTCounters(b *strings.Builder, c CTCounters) {
	if c.Packets != 0 || c.Bytes != 0 {
		fmt.Fprintf(b, ",packets=%d,bytes=%d", c.Packets, c.Bytes)
	}
}

// ctTimeFormat is ovs-dpctl's "%Y-%m-%dT%H:%M:%S.###".
const ctTimeFormat = "2006-01-02T15:04:05.000"

// FormatCTEntry is one line of ovs-dpctl dump-conntrack: verbose is -m
// (the ID, the status bits, each direction's TCP state, window scales
// and flags, and the parent tuple), stats is -s (counters, timestamps
// and the timeout). Times are in loc (ovs-dpctl uses local time); nil
// means time.Local.
func FormatCTEntry(e *CTEntry, verbose, stats bool, loc *time.Location) string {
	var b strings.Builder
	b.Grow(160)
	b.WriteString(CTProtoName(e.Orig.Proto))
	b.WriteString(",orig=(")
	writeCTTuple(&b, &e.Orig)
	if stats {
		writeCTCounters(&b, e.OrigCounters)
	}
	b.WriteString("),reply=(")
	writeCTTuple(&b, &e.Reply)
	if stats {
		writeCTCounters(&b, e.ReplyCounters)
	}
	b.WriteByte(')')
	if stats && (e.Start != 0 || e.Stop != 0) {
		if loc == nil {
			loc = time.Local
		}
		b.WriteString(",start=")
		b.WriteString(time.UnixMilli(int64(e.Start / 1e6)).In(loc).Format(ctTimeFormat))
		if e.Stop != 0 {
			b.WriteString(",stop=")
			b.WriteString(time.UnixMilli(int64(e.Stop / 1e6)).In(loc).Format(ctTimeFormat))
		}
	}
	if verbose {
		fmt.Fprintf(&b, ",id=%d", e.ID)
	}
	if e.Zone != 0 {
		fmt.Fprintf(&b, ",zone=%d", e.Zone)
	}
	if verbose {
		b.WriteString(",status=")
		writeFlags(&b, uint32(e.Status&CTStatusMask), ctStatusNames[:])
	}
	if stats {
		fmt.Fprintf(&b, ",timeout=%d", e.Timeout)
	}
	if e.Mark != 0 {
		fmt.Fprintf(&b, ",mark=%d", e.Mark)
	}
	if e.Labels != [16]byte{} {
		b.WriteString(",labels=")
		writeHexTrim(&b, e.Labels[:])
	}
	writeCTProtoInfo(&b, &e.ProtoInfo, verbose)
	if e.Helper != "" {
		b.WriteString(",helper=")
		b.WriteString(e.Helper)
	}
	if verbose && e.Parent.Src.IsValid() {
		b.WriteString(",parent=(")
		writeCTTuple(&b, &e.Parent)
		b.WriteByte(')')
	}
	return b.String()
}

// writeHexTrim is Open vSwitch's ds_put_hex: "0x" and the bytes in hex
// without leading zero bytes, the first without padding; "0" for none.
func writeHexTrim(b *strings.Builder, p []byte) {
	const digits = "0123456789abcdef"
	printed := false
	for _, v := range p {
		switch {
		case printed:
			b.WriteByte(digits[v>>4])
			b.WriteByte(digits[v&15])
		case v != 0:
			b.WriteString("0x")
			if v >= 16 {
				b.WriteByte(digits[v>>4])
			}
			b.WriteByte(digits[v&15])
			printed = true
		}
	}
	if !printed {
		b.WriteByte('0')
	}
}

// writeCTProtoInfo is ct_dpif_format_protoinfo with ",protoinfo=" as
// its title.
func writeCTProtoInfo(b *strings.Builder, p *CTProtoInfo, verbose bool) {
	switch p.Proto {
	case 0:
		return
	case IPProtoTCP:
		b.WriteString(",protoinfo=(")
		if !verbose {
			b.WriteString("state=")
			b.WriteString(p.State().String())
			break
		}
		b.WriteString("state_orig=")
		b.WriteString(p.StateOrig.String())
		b.WriteString(",state_reply=")
		b.WriteString(p.StateReply.String())
		if p.WScaleOrig != 0 || p.WScaleReply != 0 {
			fmt.Fprintf(b, ",wscale_orig=%d,wscale_reply=%d", p.WScaleOrig, p.WScaleReply)
		}
		b.WriteString(",flags_orig=")
		writeFlags(b, uint32(p.FlagsOrig), ctTCPFlagNames[:])
		b.WriteString(",flags_reply=")
		writeFlags(b, uint32(p.FlagsReply), ctTCPFlagNames[:])
	case IPProtoSCTP:
		b.WriteString(",protoinfo=(state=")
		b.WriteString(enumName(uint32(p.SCTPState), ctSCTPStateNames[:]))
		fmt.Fprintf(b, ",vtag_orig=%d,vtag_reply=%d", p.SCTPVTagOrig, p.SCTPVTagRp)
	default:
		// ct_dpif_format_protoinfo prints an empty group for another
		// protocol's information.
		b.WriteString(",protoinfo=(")
	}
	b.WriteByte(')')
}

// ParseCTFilter parses flush-conntrack's arguments after the datapath:
// "[zone=N] [ct-orig-tuple [ct-reply-tuple]]", as ovs-dpctl 3.1 does.
// A tuple is comma-separated fields: ct_nw_src, ct_nw_dst (IPv4),
// ct_ipv6_src, ct_ipv6_dst, ct_nw_proto, ct_tp_src, ct_tp_dst, and, after
// ct_nw_proto=1 or 58, icmp_type, icmp_code and icmp_id; for example
// "ct_nw_src=10.1.1.1,ct_nw_dst=10.1.1.2,ct_nw_proto=6,ct_tp_src=1,ct_tp_dst=2".
// An empty tuple argument matches any. The protocol and family that a
// tuple sets hold for both.
func ParseCTFilter(args []string) (CTFilter, error) {
	var f CTFilter
	if len(args) > 0 && strings.HasPrefix(args[0], "zone=") {
		z, err := strconv.ParseUint(args[0][len("zone="):], 10, 16)
		if err != nil {
			return f, fmt.Errorf("%q: the zone is not a number from 0 to 65535", args[0])
		}
		f.HasZone, f.Zone = true, uint16(z)
		args = args[1:]
	}
	if len(args) > 2 {
		return f, fmt.Errorf("%q: unexpected argument (at most an original and a reply tuple)", args[2])
	}
	for i, a := range args {
		t := &f.Orig
		if i == 1 {
			t = &f.Reply
		}
		if err := parseCTTuple(a, t, &f); err != nil {
			which := "original"
			if i == 1 {
				which = "reply"
			}
			return f, fmt.Errorf("%s tuple: %w", which, err)
		}
	}
	return f, finishCTFilter(&f)
}

// finishCTFilter checks the ports against the protocol that the tuples
// set and copies the protocol into both tuples.
func finishCTFilter(f *CTFilter) error {
	for _, t := range []*CTTuple{&f.Orig, &f.Reply} {
		if t.SrcPort == 0 && t.DstPort == 0 {
			t.Proto = f.Proto
			continue
		}
		switch f.Proto {
		case 0:
			return fmt.Errorf("a port is set without ct_nw_proto")
		case IPProtoICMP, IPProtoICMPv6:
			return fmt.Errorf("ct_tp_src and ct_tp_dst do not apply to ICMP (use icmp_id, icmp_type, icmp_code)")
		}
		t.Proto = f.Proto
	}
	return nil
}

// ParseCTTuple parses one conntrack tuple as flush-conntrack takes it
// (see ParseCTFilter) and returns it with the protocol it names.
func ParseCTTuple(s string) (CTTuple, error) {
	var f CTFilter
	if err := parseCTTuple(s, &f.Orig, &f); err != nil {
		return CTTuple{}, err
	}
	if err := finishCTFilter(&f); err != nil {
		return CTTuple{}, fmt.Errorf("%q: %w", s, err)
	}
	return f.Orig, nil
}

// parseCTTuple parses s into t, setting f's protocol and family.
func parseCTTuple(s string, t *CTTuple, f *CTFilter) error {
	seen := map[string]bool{}
	off := 0
	for _, item := range strings.Split(s, ",") {
		at := off
		off += len(item) + 1
		if item == "" {
			if s == "" {
				return nil
			}
			return &SyntaxError{Input: s, Offset: at, Msg: "empty field"}
		}
		key, val, _ := strings.Cut(item, "=")
		errAt := func(format string, a ...any) error {
			return &SyntaxError{Input: s, Offset: at, Msg: fmt.Sprintf(format, a...)}
		}
		if val == "" {
			return errAt("field %s missing value", key)
		}
		if seen[key] {
			return errAt("%s is set multiple times", key)
		}
		seen[key] = true
		switch key {
		case "ct_nw_src", "ct_nw_dst", "ct_ipv6_src", "ct_ipv6_dst":
			v6 := strings.HasPrefix(key, "ct_ipv6")
			fam := uint8(4)
			if v6 {
				fam = 6
			}
			if f.Family != 0 && f.Family != fam {
				return errAt("the L3 protocol does not match %s", val)
			}
			a, err := netip.ParseAddr(val)
			if err != nil || a.Zone() != "" || a.Is4() == v6 {
				return errAt("failed to parse field %s: %q is not an IPv%d address", key, val, fam)
			}
			f.Family = fam
			if strings.HasSuffix(key, "_src") {
				t.Src = a
			} else {
				t.Dst = a
			}
		case "ct_nw_proto":
			v, err := parseUintBase(val, 8)
			if err != nil {
				return errAt("failed to parse field %s: %v", key, err)
			}
			if f.Proto != 0 && f.Proto != uint8(v) {
				return errAt("ct_nw_proto=%d differs from the other tuple's %d", v, f.Proto)
			}
			f.Proto = uint8(v)
		case "ct_tp_src", "ct_tp_dst":
			v, err := parseUintBase(val, 16)
			if err != nil {
				return errAt("failed to parse field %s: %v", key, err)
			}
			if key == "ct_tp_src" {
				t.SrcPort = uint16(v)
			} else {
				t.DstPort = uint16(v)
			}
		case "icmp_type", "icmp_code", "icmp_id":
			if f.Proto != IPProtoICMP && f.Proto != IPProtoICMPv6 {
				return errAt("invalid L4 fields: %s needs ct_nw_proto=1 or 58 before it", key)
			}
			bits := 8
			if key == "icmp_id" {
				bits = 16
			}
			v, err := parseUintBase(val, bits)
			if err != nil {
				return errAt("failed to parse field %s: %v", key, err)
			}
			switch key {
			case "icmp_type":
				t.ICMPType = uint8(v)
			case "icmp_code":
				t.ICMPCode = uint8(v)
			default:
				t.ICMPID = uint16(v)
			}
		default:
			return errAt("invalid conntrack tuple field: %s", key)
		}
	}
	return nil
}

// parseUintBase parses a decimal, 0x-prefixed hexadecimal or 0-prefixed
// octal number that fits in bits bits, as Open vSwitch's str_to_u8 and
// str_to_u16 (strtol with base 0) do.
func parseUintBase(s string, bits int) (uint64, error) {
	v, err := strconv.ParseUint(s, 0, bits)
	if l := strings.ToLower(s); err != nil || strings.ContainsRune(s, '_') ||
		strings.HasPrefix(l, "0b") || strings.HasPrefix(l, "0o") {
		return 0, fmt.Errorf("%q is not a number from 0 to %d", s, uint64(1)<<bits-1)
	}
	return v, nil
}
