package odp

import (
	"encoding/binary"
	"net/netip"
	"strings"
	"testing"
	"time"
)

func TestFormatCTEntry(t *testing.T) {
	a := netip.MustParseAddr
	tcp := CTEntry{
		Orig:  CTTuple{Src: a("10.1.1.1"), Dst: a("10.1.1.2"), Proto: 6, SrcPort: 34567, DstPort: 80},
		Reply: CTTuple{Src: a("10.1.1.2"), Dst: a("10.1.1.1"), Proto: 6, SrcPort: 80, DstPort: 34567},
		ID:    3735928559, Status: CTStatusSeenReply | CTStatusAssured | CTStatusConfirmed, Timeout: 431999,
		ProtoInfo: CTProtoInfo{Proto: 6, StateOrig: CTTCPEstablished, StateReply: CTTCPEstablished,
			WScaleOrig: 7, WScaleReply: 7, FlagsOrig: CTTCPWindowScale | CTTCPSackPerm, FlagsReply: CTTCPWindowScale | CTTCPSackPerm | CTTCPDataUnacknowledged},
		OrigCounters: CTCounters{Packets: 6, Bytes: 402}, ReplyCounters: CTCounters{Packets: 4, Bytes: 300},
	}
	zoned := tcp
	zoned.Zone, zoned.Mark = 5, 42
	zoned.Labels[15], zoned.Labels[14] = 0x01, 0x02 // 0x0201
	zoned.Start = uint64(time.Date(2026, 1, 2, 3, 4, 5, 678_000_000, time.UTC).UnixNano())
	synRecv := tcp
	synRecv.ProtoInfo.StateOrig, synRecv.ProtoInfo.StateReply = CTTCPSynRecv, CTTCPSynRecv
	finWait2 := tcp
	finWait2.ProtoInfo.StateOrig, finWait2.ProtoInfo.StateReply = CTTCPFinWait2, CTTCPClosed
	icmp := CTEntry{
		Orig:  CTTuple{Src: a("10.1.1.1"), Dst: a("10.1.1.2"), Proto: 1, ICMPID: 4660, ICMPType: 8},
		Reply: CTTuple{Src: a("10.1.1.2"), Dst: a("10.1.1.1"), Proto: 1, ICMPID: 4660, ICMPType: 0},
	}
	udp6 := CTEntry{
		Orig:   CTTuple{Src: a("fc00::1"), Dst: a("fc00::2"), Proto: 17, SrcPort: 1, DstPort: 2},
		Reply:  CTTuple{Src: a("fc00::2"), Dst: a("fc00::1"), Proto: 17, SrcPort: 2, DstPort: 1},
		Status: CTStatusConfirmed | 1<<20, Helper: "tftp",
		Parent: CTTuple{Src: a("fc00::1"), Dst: a("fc00::2"), Proto: 17, SrcPort: 9, DstPort: 69},
	}
	sctp := CTEntry{
		Orig:      CTTuple{Src: a("10.0.0.1"), Dst: a("10.0.0.2"), Proto: 132, SrcPort: 5, DstPort: 6},
		Reply:     CTTuple{Src: a("10.0.0.2"), Dst: a("10.0.0.1"), Proto: 132, SrcPort: 6, DstPort: 5},
		ProtoInfo: CTProtoInfo{Proto: 132, SCTPState: 3, SCTPVTagOrig: 10, SCTPVTagRp: 11},
	}
	other := CTEntry{Orig: CTTuple{Src: a("10.0.0.1"), Dst: a("10.0.0.2"), Proto: 47},
		Reply:     CTTuple{Src: a("10.0.0.2"), Dst: a("10.0.0.1"), Proto: 47},
		ProtoInfo: CTProtoInfo{Proto: 6, StateOrig: 12}}
	entries := map[string]CTEntry{"tcp": tcp, "zoned": zoned, "synRecv": synRecv, "finWait2": finWait2,
		"icmp": icmp, "udp6": udp6, "sctp": sctp, "other": other, "invalid": {Orig: CTTuple{Proto: 6}}}
	// One case a line: the entry, the options (- for none, m for -m, s
	// for -s) and the line that ovs-dpctl's ct_dpif_format_entry prints.
	const cases = `tcp - tcp,orig=(src=10.1.1.1,dst=10.1.1.2,sport=34567,dport=80),reply=(src=10.1.1.2,dst=10.1.1.1,sport=80,dport=34567),protoinfo=(state=ESTABLISHED)
tcp s tcp,orig=(src=10.1.1.1,dst=10.1.1.2,sport=34567,dport=80,packets=6,bytes=402),reply=(src=10.1.1.2,dst=10.1.1.1,sport=80,dport=34567,packets=4,bytes=300),timeout=431999,protoinfo=(state=ESTABLISHED)
tcp m tcp,orig=(src=10.1.1.1,dst=10.1.1.2,sport=34567,dport=80),reply=(src=10.1.1.2,dst=10.1.1.1,sport=80,dport=34567),id=3735928559,status=SEEN_REPLY|ASSURED|CONFIRMED,protoinfo=(state_orig=ESTABLISHED,state_reply=ESTABLISHED,wscale_orig=7,wscale_reply=7,flags_orig=WINDOW_SCALE|SACK_PERM,flags_reply=WINDOW_SCALE|SACK_PERM|DATA_UNACKNOWLEDGED)
zoned s tcp,orig=(src=10.1.1.1,dst=10.1.1.2,sport=34567,dport=80,packets=6,bytes=402),reply=(src=10.1.1.2,dst=10.1.1.1,sport=80,dport=34567,packets=4,bytes=300),start=2026-01-02T03:04:05.678,zone=5,timeout=431999,mark=42,labels=0x201,protoinfo=(state=ESTABLISHED)
synRecv - tcp,orig=(src=10.1.1.1,dst=10.1.1.2,sport=34567,dport=80),reply=(src=10.1.1.2,dst=10.1.1.1,sport=80,dport=34567),protoinfo=(state=ESTABLISHED)
synRecv m tcp,orig=(src=10.1.1.1,dst=10.1.1.2,sport=34567,dport=80),reply=(src=10.1.1.2,dst=10.1.1.1,sport=80,dport=34567),id=3735928559,status=SEEN_REPLY|ASSURED|CONFIRMED,protoinfo=(state_orig=SYN_RECV,state_reply=SYN_RECV,wscale_orig=7,wscale_reply=7,flags_orig=WINDOW_SCALE|SACK_PERM,flags_reply=WINDOW_SCALE|SACK_PERM|DATA_UNACKNOWLEDGED)
finWait2 - tcp,orig=(src=10.1.1.1,dst=10.1.1.2,sport=34567,dport=80),reply=(src=10.1.1.2,dst=10.1.1.1,sport=80,dport=34567),protoinfo=(state=TIME_WAIT)
icmp - icmp,orig=(src=10.1.1.1,dst=10.1.1.2,id=4660,type=8,code=0),reply=(src=10.1.1.2,dst=10.1.1.1,id=4660,type=0,code=0)
icmp m icmp,orig=(src=10.1.1.1,dst=10.1.1.2,id=4660,type=8,code=0),reply=(src=10.1.1.2,dst=10.1.1.1,id=4660,type=0,code=0),id=0,status=0
udp6 ms udp,orig=(src=fc00::1,dst=fc00::2,sport=1,dport=2),reply=(src=fc00::2,dst=fc00::1,sport=2,dport=1),id=0,status=CONFIRMED,timeout=0,helper=tftp,parent=(src=fc00::1,dst=fc00::2,sport=9,dport=69)
udp6 - udp,orig=(src=fc00::1,dst=fc00::2,sport=1,dport=2),reply=(src=fc00::2,dst=fc00::1,sport=2,dport=1),helper=tftp
sctp - sctp,orig=(src=10.0.0.1,dst=10.0.0.2,sport=5,dport=6),reply=(src=10.0.0.2,dst=10.0.0.1,sport=6,dport=5),protoinfo=(state=ESTABLISHED,vtag_orig=10,vtag_reply=11)
other - 47,orig=(src=10.0.0.1,dst=10.0.0.2,sport=0,dport=0),reply=(src=10.0.0.2,dst=10.0.0.1,sport=0,dport=0),protoinfo=(state=[12])
invalid - tcp,orig=(unsupported address family: src=invalid IP,dst=invalid IP),reply=(unsupported address family: src=invalid IP,dst=invalid IP)`
	for _, line := range strings.Split(cases, "\n") {
		f := strings.SplitN(line, " ", 3)
		e, ok := entries[f[0]]
		if !ok || len(f) != 3 {
			t.Fatalf("bad case %q", line)
		}
		if got := FormatCTEntry(&e, strings.Contains(f[1], "m"), strings.Contains(f[1], "s"), time.UTC); got != f[2] {
			t.Errorf("%s %s:\ngot  %s\nwant %s", f[0], f[1], got, f[2])
		}
	}
}

func TestWriteFlagsUnknownBits(t *testing.T) {
	var b strings.Builder
	writeFlags(&b, uint32(CTStatusAssured)|1<<13|1<<20, ctStatusNames[:])
	if got, want := b.String(), "ASSURED|0x102000"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestParseCTFilter(t *testing.T) {
	a := netip.MustParseAddr
	for _, c := range []struct {
		args []string
		want CTFilter
	}{
		{nil, CTFilter{}},
		{[]string{"zone=5"}, CTFilter{HasZone: true, Zone: 5}},
		{[]string{"zone=0"}, CTFilter{HasZone: true}},
		{[]string{"ct_nw_src=10.1.1.1,ct_nw_dst=10.1.1.2,ct_nw_proto=6,ct_tp_src=1,ct_tp_dst=0x50"},
			CTFilter{Family: 4, Proto: 6, Orig: CTTuple{Src: a("10.1.1.1"), Dst: a("10.1.1.2"), Proto: 6, SrcPort: 1, DstPort: 80}, Reply: CTTuple{Proto: 6}}},
		{[]string{"zone=65535", "", "ct_ipv6_src=fc00::2,ct_nw_proto=17"},
			CTFilter{HasZone: true, Zone: 65535, Family: 6, Proto: 17, Orig: CTTuple{Proto: 17}, Reply: CTTuple{Src: a("fc00::2"), Proto: 17}}},
		{[]string{"ct_nw_proto=1,icmp_type=8,icmp_code=0,icmp_id=010", "ct_nw_proto=1"},
			CTFilter{Proto: 1, Orig: CTTuple{Proto: 1, ICMPType: 8, ICMPID: 8}, Reply: CTTuple{Proto: 1}}},
	} {
		got, err := ParseCTFilter(c.args)
		if err != nil {
			t.Errorf("ParseCTFilter(%q): %v", c.args, err)
			continue
		}
		if got != c.want {
			t.Errorf("ParseCTFilter(%q) = %+v, want %+v", c.args, got, c.want)
		}
	}
}

func TestParseCTFilterErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"zone=65536"}, "zone is not a number"},
		{[]string{"zone=-1"}, "zone is not a number"},
		{[]string{"zone="}, "zone is not a number"},
		{[]string{"a", "b", "c"}, `"c": unexpected argument`},
		{[]string{"ct_nw_src"}, "column 1, at \"ct_nw_src\": field ct_nw_src missing value"},
		{[]string{"ct_nw_src="}, "field ct_nw_src missing value"},
		{[]string{"ct_nw_src=10.0.0.1,,ct_nw_dst=10.0.0.2"}, "column 20, at \",ct_nw_dst=10.0.0.2\": empty field"},
		{[]string{"ct_nw_src=10.0.0.1,"}, "column 20 (end of input): empty field"},
		{[]string{"ct_nw_src=10.0.0"}, `"10.0.0" is not an IPv4 address`},
		{[]string{"ct_nw_src=fc00::1"}, `"fc00::1" is not an IPv4 address`},
		{[]string{"ct_ipv6_src=10.0.0.1"}, `"10.0.0.1" is not an IPv6 address`},
		{[]string{"ct_ipv6_src=fe80::1%eth0"}, "is not an IPv6 address"},
		{[]string{"ct_nw_src=10.0.0.1,ct_ipv6_dst=fc00::1"}, "the L3 protocol does not match fc00::1"},
		{[]string{"ct_nw_src=10.0.0.1", "ct_ipv6_dst=fc00::1"}, "reply tuple: column 1"},
		{[]string{"ct_nw_src=10.0.0.1,ct_nw_src=10.0.0.2"}, "ct_nw_src is set multiple times"},
		{[]string{"ct_nw_proto=256"}, `"256" is not a number from 0 to 255`},
		{[]string{"ct_nw_proto=6", "ct_nw_proto=17"}, "ct_nw_proto=17 differs from the other tuple's 6"},
		{[]string{"ct_tp_src=65536,ct_nw_proto=6"}, `"65536" is not a number from 0 to 65535`},
		{[]string{"ct_tp_src=1_0,ct_nw_proto=6"}, `"1_0" is not a number`},
		{[]string{"ct_tp_src=0b1,ct_nw_proto=6"}, `"0b1" is not a number`},
		{[]string{"ct_tp_src=80"}, "a port is set without ct_nw_proto"},
		{[]string{"", "ct_tp_dst=80"}, "a port is set without ct_nw_proto"},
		{[]string{"ct_nw_proto=1,ct_tp_src=80"}, "do not apply to ICMP"},
		{[]string{"icmp_type=8,ct_nw_proto=1"}, "invalid L4 fields: icmp_type needs ct_nw_proto=1 or 58 before it"},
		{[]string{"ct_nw_proto=58,icmp_code=256"}, `"256" is not a number from 0 to 255`},
		{[]string{"ct_nw_proto=58,icmp_id=65536"}, `"65536" is not a number from 0 to 65535`},
		{[]string{"ct_nw_proto=6,zone=1"}, "invalid conntrack tuple field: zone"},
		{[]string{"mark=1"}, "invalid conntrack tuple field: mark"},
	} {
		_, err := ParseCTFilter(c.args)
		if err == nil {
			t.Errorf("ParseCTFilter(%q): no error, want one with %q", c.args, c.want)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseCTFilter(%q) = %v, want it to say %q", c.args, err, c.want)
		}
	}
}

func TestParseCTTuple(t *testing.T) {
	got, err := ParseCTTuple("ct_nw_src=10.0.0.1,ct_nw_dst=10.0.0.2,ct_nw_proto=17,ct_tp_src=53,ct_tp_dst=5353")
	want := CTTuple{Src: netip.MustParseAddr("10.0.0.1"), Dst: netip.MustParseAddr("10.0.0.2"), Proto: 17, SrcPort: 53, DstPort: 5353}
	if err != nil || got != want {
		t.Errorf("got %+v, %v; want %+v", got, err, want)
	}
	if _, err := ParseCTTuple("zone=1"); err == nil || !strings.Contains(err.Error(), "invalid conntrack tuple field: zone") {
		t.Errorf("zone=1 as a tuple: %v", err)
	}
	if _, err := ParseCTTuple("ct_tp_dst=1"); err == nil || !strings.Contains(err.Error(), `"ct_tp_dst=1": a port is set without ct_nw_proto`) {
		t.Errorf("port without protocol: %v", err)
	}
}

func TestCTFilterMatches(t *testing.T) {
	a := netip.MustParseAddr
	e := &CTEntry{
		Orig:  CTTuple{Src: a("10.1.1.1"), Dst: a("10.1.1.2"), Proto: 6, SrcPort: 1000, DstPort: 80},
		Reply: CTTuple{Src: a("10.1.1.2"), Dst: a("10.1.1.1"), Proto: 6, SrcPort: 80, DstPort: 1000},
		Zone:  3,
	}
	ping := &CTEntry{
		Orig:  CTTuple{Src: a("10.1.1.1"), Dst: a("10.1.1.2"), Proto: 1, ICMPID: 7, ICMPType: 8},
		Reply: CTTuple{Src: a("10.1.1.2"), Dst: a("10.1.1.1"), Proto: 1, ICMPID: 7},
	}
	for _, c := range []struct {
		args []string
		e    *CTEntry
		want bool
	}{
		{nil, e, true},
		{[]string{"zone=3"}, e, true},
		{[]string{"zone=0"}, e, false},
		{[]string{"ct_nw_proto=6"}, e, true},
		{[]string{"ct_nw_proto=17"}, e, false},
		{[]string{"ct_ipv6_src=fc00::1"}, e, false},
		{[]string{"ct_nw_src=10.1.1.1"}, e, true},
		{[]string{"ct_nw_src=10.1.1.2"}, e, false},
		{[]string{"ct_nw_proto=6,ct_tp_dst=80"}, e, true},
		{[]string{"ct_nw_proto=6,ct_tp_dst=81"}, e, false},
		{[]string{"", "ct_nw_proto=6,ct_tp_src=80,ct_nw_dst=10.1.1.1"}, e, true},
		{[]string{"", "ct_nw_proto=6,ct_tp_src=1000"}, e, false},
		{[]string{"ct_nw_proto=1,icmp_id=7,icmp_type=8"}, ping, true},
		// ICMP fields compare exactly, zero included, as Open vSwitch does.
		{[]string{"ct_nw_proto=1,icmp_id=7"}, ping, false},
		{[]string{"ct_nw_proto=1,icmp_id=7,icmp_type=8", "ct_nw_proto=1,icmp_id=7"}, ping, true},
	} {
		f, err := ParseCTFilter(c.args)
		if err != nil {
			t.Fatalf("ParseCTFilter(%q): %v", c.args, err)
		}
		if got := f.Matches(c.e); got != c.want {
			t.Errorf("%q matches %s: %v, want %v", c.args, FormatCTEntry(c.e, false, false, nil), got, c.want)
		}
	}
}

func TestCTFilterIsFiveTuple(t *testing.T) {
	for _, c := range []struct {
		args []string
		want bool
	}{
		{nil, false},
		{[]string{"ct_nw_src=1.1.1.1,ct_nw_dst=2.2.2.2,ct_nw_proto=6,ct_tp_src=1,ct_tp_dst=2"}, true},
		{[]string{"ct_nw_src=1.1.1.1,ct_nw_dst=2.2.2.2,ct_nw_proto=6,ct_tp_src=1"}, false},
		{[]string{"ct_nw_src=1.1.1.1,ct_nw_dst=2.2.2.2,ct_nw_proto=1"}, true},
		{[]string{"ct_nw_src=1.1.1.1,ct_nw_dst=2.2.2.2,ct_nw_proto=1", "ct_nw_src=2.2.2.2"}, false},
	} {
		f, err := ParseCTFilter(c.args)
		if err != nil {
			t.Fatal(err)
		}
		if got := f.IsFiveTuple(); got != c.want {
			t.Errorf("%q: IsFiveTuple %v, want %v", c.args, got, c.want)
		}
		if f.IsZero() != (len(c.args) == 0) {
			t.Errorf("%q: IsZero %v", c.args, f.IsZero())
		}
	}
}

func FuzzParseCTFilter(f *testing.F) {
	for _, s := range []string{"zone=5", "ct_nw_src=10.1.1.1,ct_nw_dst=10.1.1.2,ct_nw_proto=6,ct_tp_src=1,ct_tp_dst=2",
		"ct_ipv6_src=fc00::1,ct_nw_proto=58,icmp_type=128,icmp_id=0x10", "", "ct_nw_proto=1,icmp_code=3"} {
		f.Add(s, "ct_nw_proto=6")
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		for _, args := range [][]string{{a}, {a, b}, {"zone=1", a, b}} {
			flt, err := ParseCTFilter(args)
			if err != nil {
				if err.Error() == "" {
					t.Fatalf("%q: empty error", args)
				}
				continue
			}
			// Every tuple the parser accepts carries the filter's protocol,
			// and has ports only with a protocol that has them.
			for _, tp := range []CTTuple{flt.Orig, flt.Reply} {
				if tp.Proto != flt.Proto {
					t.Fatalf("%q: tuple protocol %d, filter %d", args, tp.Proto, flt.Proto)
				}
				if (tp.SrcPort != 0 || tp.DstPort != 0) && (flt.Proto == 0 || tp.IsICMP()) {
					t.Fatalf("%q: ports with protocol %d", args, flt.Proto)
				}
				if tp.Src.IsValid() && (tp.Src.Is4() != (flt.Family == 4)) {
					t.Fatalf("%q: address %v in family %d", args, tp.Src, flt.Family)
				}
			}
			// The entry formed from the filter's own tuples matches it.
			e := &CTEntry{Orig: flt.Orig, Reply: flt.Reply, Zone: flt.Zone}
			if flt.Family == 0 && flt.Orig.Src.IsValid() {
				t.Fatalf("%q: address without family", args)
			}
			if flt.Family == 0 && !flt.Orig.Src.IsValid() && !flt.Orig.Dst.IsValid() {
				return
			}
			if !flt.Orig.Src.IsValid() || !flt.Reply.Src.IsValid() {
				return // the family test reads Orig.Src
			}
			if !flt.Matches(e) {
				t.Fatalf("%q: %+v does not match its own tuples", args, flt)
			}
		}
	})
}

// TestCTLabelsFromWire: the bitmap of two native-endian words becomes the
// 128-bit number in network byte order.
func TestCTLabelsFromWire(t *testing.T) {
	var wire [16]byte
	binary.NativeEndian.PutUint64(wire[:8], 0x561234)
	binary.NativeEndian.PutUint64(wire[8:], 1<<63)
	want := [16]byte{0: 0x80, 13: 0x56, 14: 0x12, 15: 0x34}
	if got := CTLabelsFromWire(wire[:]); got != want {
		t.Errorf("CTLabelsFromWire(%x) = %x, want %x", wire, got, want)
	}
	if got := CTLabelsFromWire([]byte{1}); got[15] != 1 || CTLabelsFromWire(nil) != ([16]byte{}) {
		t.Errorf("short input: %x", got)
	}
}
