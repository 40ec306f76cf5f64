package odp

import (
	"errors"
	"strings"
	"testing"
)

// TestParseActionsErrors checks that bad action text is rejected with a
// SyntaxError at a column inside the input.
func TestParseActionsErrors(t *testing.T) {
	bad := []string{
		"psample()",
		"psample(group=abc)",
		"psample(cookie=0x010203)",
		"psample(group=12,cookie=0x010203,group=12)",
		"psample(group=12,cookie=wrong)",
		"psample(group=12,cookie=0x0102030405060708090a0b0c0d0e0f1011)",
		"psample(group_id=12,cookie=0x0102030405060708090a0b0c0d0e0f0f0f)",
		"psample(group=12,cookie=0x)",
		"encap_nsh@:{@",
		"push_vlan(vid=4096,pcp=0)",
		"push_vlan(vid=1,pcp=8)",
		"push_vlan(vid=1)",
		"ct(commit,force_commit)",
		"ct(nat(src,dst))",
		"ct(nat(src=10.0.0.2-10.0.0.1))",
		"ct(nat(src=10.0.0.1:20-10))",
		"ct(nat(src,hash,random))",
		"ct(helper=abcdefghijklmnop)",
		"ct(bogus)",
		"sample(sample=101%,actions(1))",
		"sample(sample=50%,actions(1)",
		"clone(1",
		"1)",
		"1 2",
		"99999999999",
		"hash(l3(1))",
		"recirc(x)",
		"userspace(pid=1,userdata(012))",
		"userspace(pid=1,foo(1))",
		"userspace(pid=1,slow_path(bogus))",
		"userspace(pid=1,actions,userdata(00))",
		"set(ipv4(ttl=1)",
		"set()",
		"unknown_action",
		"tnl_push(tnl_port(6),header(size=94,type=112,eth(dst=f8:bc:12:44:34:b6,src=f8:bc:12:46:58:e0,dl_type=0x86dd),ipv6(src=2001:cafe::88,dst=2001:cafe::92,label=0,proto=43,tclass=0x0,hlimit=64),srv6(segments_left=2,segs(2001:cafe::90,2001:cafe::91))),out_port(1))",
		"tnl_push(tnl_port(6),header(size=126,type=112,eth(dst=f8:bc:12:44:34:b6,src=f8:bc:12:46:58:e0,dl_type=0x86dd),ipv6(src=2001:cafe::88,dst=2001:cafe::92,label=0,proto=43,tclass=0x0,hlimit=64),srv6(segments_left=2,segs(2001:cafe::90,2001:cafe::91,2001:cafe::92,2001:cafe::93))),out_port(1))",
		"tnl_push(tnl_port(4),header(size=43,type=3,eth(dst=f8:bc:12:44:34:b6,src=f8:bc:12:46:58:e0,dl_type=0x0800),ipv4(src=1.1.2.88,dst=1.1.2.92,proto=47,tos=0,ttl=64,frag=0x4000),gre((flags=0x2000,proto=0x6558),key=0x1e241)),out_port(1))",
		"push_nsh(mdtype=3)",
		"check_pkt_len(size=70000,gt(1),le(2))",
		"dec_ttl(1)",
		"action5x",
	}
	for _, s := range bad {
		as, err := ParseActions(s)
		if err == nil {
			t.Errorf("%q: accepted as %s", s, FormatActions(as))
			continue
		}
		var se *SyntaxError
		if !errors.As(err, &se) {
			t.Errorf("%q: error %v is not a *SyntaxError", s, err)
			continue
		}
		if se.Column() < 1 || se.Offset > len(s) {
			t.Errorf("%q: column %d outside the input", s, se.Column())
		}
	}
}

// TestParseActionsErrorColumn checks the column of a few errors.
func TestParseActionsErrorColumn(t *testing.T) {
	for _, c := range []struct {
		in  string
		col int
	}{
		{"1,bogus(2)", 3},
		{"psample(group=abc)", 15},
		{"psample(group=12,cookie=0x010203,group=12)", 34},
		{"clone(1,push_vlan(vid=4096,pcp=0))", 23},
	} {
		_, err := ParseActions(c.in)
		var se *SyntaxError
		if !errors.As(err, &se) {
			t.Errorf("%q: want a SyntaxError, got %v", c.in, err)
			continue
		}
		if se.Column() != c.col {
			t.Errorf("%q: column %d, want %d (%v)", c.in, se.Column(), c.col, err)
		}
	}
}

// TestParseActionsLimits checks the netlink size limits Open vSwitch's own
// tests check (tests/odp.at): the whole list, and userdata.
func TestParseActionsLimits(t *testing.T) {
	// 8 bytes per output action; 8191 fit in 65,535 bytes, 8192 do not.
	ok := strings.Repeat("1,", 8190) + "1"
	if _, err := ParseActions(ok); err != nil {
		t.Errorf("8191 actions: %v", err)
	}
	var se *SyntaxError
	if _, err := ParseActions(ok + ",1"); !errors.As(err, &se) {
		t.Errorf("8192 actions: want a SyntaxError, got %v", err)
	}
	for _, c := range []struct {
		bytes  int
		suffix string
		ok     bool
	}{
		{65512, ",actions)", true},
		{65513, ",actions)", false},
		{65508, ",tunnel_out_port=10)", true},
		{65509, ",tunnel_out_port=10)", false},
		{70000, ")", false},
	} {
		s := "userspace(pid=1234567,userdata(" + strings.Repeat("aa", c.bytes) + ")" + c.suffix
		out, err := RoundTripActions(s)
		if c.ok && (err != nil || out != s) {
			t.Errorf("userdata of %d bytes with %s: %v", c.bytes, c.suffix, err)
		}
		if !c.ok {
			_, perr := ParseActions(s)
			if !errors.As(perr, &se) {
				t.Errorf("userdata of %d bytes with %s: want a SyntaxError, got %v", c.bytes, c.suffix, perr)
			}
		}
	}
}

// TestParseActionsDeepNesting checks that deeply nested text is rejected
// without exhausting the stack, and that reasonable nesting works.
func TestParseActionsDeepNesting(t *testing.T) {
	deep := strings.Repeat("clone(", 200000) + "1" + strings.Repeat(")", 200000)
	var se *SyntaxError
	if _, err := ParseActions(deep); !errors.As(err, &se) {
		t.Errorf("200000 nested clones: want a SyntaxError, got %v", err)
	}
	unclosed := strings.Repeat("sample(sample=1%,actions(", 100000)
	if _, err := ParseActions(unclosed); !errors.As(err, &se) {
		t.Errorf("unclosed samples: want a SyntaxError, got %v", err)
	}
	ok := strings.Repeat("clone(", 16) + "1" + strings.Repeat(")", 16)
	if out, err := RoundTripActions(ok); err != nil || out != ok {
		t.Errorf("16 nested clones: %q, %v", out, err)
	}
}

// TestUnmarshalActionsErrors checks that malformed netlink is rejected with
// a DecodeError naming the attribute path and offset.
func TestUnmarshalActionsErrors(t *testing.T) {
	for _, c := range []struct {
		name, wire string
		path       string
		offset     int
	}{
		{"short output", "n16:6 n16:1 0100 0000", "actions.output", 0},
		{"long output", "n16:c n16:1 n32:1 n32:2", "actions.output", 0},
		{"trailing bytes", "n16:8 n16:1 n32:1 010203", "actions", 8},
		{"length beyond buffer", "n16:8 n16:1 n32:1 n16:20 n16:1 n32:1", "actions", 8},
		{"length below header", "n16:2 n16:1", "actions", 0},
		{"pop_vlan with payload", "n16:8 n16:5 n32:0", "actions.pop_vlan", 0},
		{"push_vlan short", "n16:6 n16:4 8100 0000", "actions.push_vlan", 0},
		{"clone of bad set", "n16:10 n16:14 n16:c n16:3 n16:6 n16:3 0200 0000", "actions.clone.set.in_port", 8},
		{"set with two keys", "n16:14 n16:3 n16:8 n16:3 n32:2 n16:8 n16:3 n32:2", "actions.set", 0},
		{"empty set", "n16:4 n16:3", "actions.set", 0},
		{"set_masked odd", "n16:c n16:b n16:7 n16:3 010203 00", "actions.set_masked.in_port", 4},
		{"userspace without pid", "n16:8 n16:2 n16:4 n16:4", "actions.userspace", 0},
		{"userspace pid short", "n16:c n16:2 n16:6 n16:1 0100 0000", "actions.userspace.pid", 4},
		{"userspace duplicate pid", "n16:14 n16:2 n16:8 n16:1 n32:1 n16:8 n16:1 n32:1", "actions.userspace.pid", 12},
		{"sample without actions", "n16:c n16:6 n16:8 n16:1 n32:1", "actions.sample", 0},
		{"sample bad inner", "n16:18 n16:6 n16:8 n16:1 n32:1 n16:c n16:2 n16:6 n16:1 0100 0000", "actions.sample.actions.output", 16},
		{"ct mark short", "n16:c n16:c n16:8 n16:3 n32:1", "actions.ct.mark", 4},
		{"ct unknown attribute", "n16:8 n16:c n16:4 n16:1e", "actions.ct.attr30", 4},
		{"nat address of 5 bytes", "n16:14 n16:c n16:10 n16:6 n16:9 n16:3 0102030405 000000", "actions.ct.nat.ip_min", 8},
		{"check_pkt_len missing le", "n16:14 n16:15 n16:6 n16:1 n16:c8 0000 n16:4 n16:2 n16:4 n16:3", "", -1},
		{"check_pkt_len missing gt", "n16:10 n16:15 n16:6 n16:1 n16:c8 0000 n16:4 n16:3", "actions.check_pkt_len", 0},
		{"dec_ttl empty", "n16:4 n16:17", "actions.dec_ttl", 0},
		{"psample cookie too long", "n16:24 n16:19 n16:8 n16:1 n32:1 n16:15 n16:2 0102030405060708090a0b0c0d0e0f101100000000", "actions.psample.cookie", 12},
		{"psample without group", "n16:4 n16:19", "actions.psample", 0},
		{"tnl_push short", "n16:8 n16:1a n32:1", "actions.tnl_push", 0},
		{"tnl_push header_len lies", "n16:16 n16:1a n32:1 n32:2 n32:9 n32:3 01020304 0000", "actions.tnl_push", 0},
		{"push_nsh mdtype 1 without md1", "n16:14 n16:11 n16:10 n16:1c n16:c n16:1 003f0103 000001ff", "actions.push_nsh.nsh", 4},
		{"hash short", "n16:8 n16:8 n32:0", "actions.hash", 0},
		{"drop short", "n16:4 n16:18", "actions.drop", 0},
	} {
		b := wire(t, c.wire)
		as, err := UnmarshalActions(b)
		if err == nil {
			if c.offset == -1 {
				// The first check_pkt_len case is valid (le present); the
				// vector is here to show that a list of both parts decodes.
				continue
			}
			t.Errorf("%s: accepted as %s", c.name, FormatActions(as))
			continue
		}
		var de *DecodeError
		if !errors.As(err, &de) {
			t.Errorf("%s: error %v is not a *DecodeError", c.name, err)
			continue
		}
		if de.Attr != c.path || de.Offset != c.offset {
			t.Errorf("%s: error at %s offset %d, want %s offset %d (%v)", c.name, de.Attr, de.Offset, c.path, c.offset, err)
		}
	}
}

// TestUnmarshalActionsDeepNesting builds clone attributes nested far
// beyond the limit: a DecodeError, no stack exhaustion.
func TestUnmarshalActionsDeepNesting(t *testing.T) {
	inner := []byte{}
	for i := 0; i < 1000 && len(inner)+4 <= 0xffff; i++ {
		b := appendAttrHeader(nil, uint16(ActionClone), len(inner))
		inner = append(b, inner...)
	}
	_, err := UnmarshalActions(inner)
	var de *DecodeError
	if !errors.As(err, &de) {
		t.Fatalf("1000 nested clones: want a DecodeError, got %v", err)
	}
	if !strings.HasPrefix(de.Attr, "actions.clone.clone") {
		t.Errorf("path %q", de.Attr)
	}
}

// TestMarshalActionsErrors checks values that cannot be encoded.
func TestMarshalActionsErrors(t *testing.T) {
	for _, as := range []Actions{
		{Psample{Group: 1, Cookie: make([]byte, 17)}},
		{Set{}},
		{SetMasked{Key: nil}},
		{CT{Helper: strings.Repeat("h", 16)}},
		{TunnelPush{Header: make([]byte, 513)}},
		{PushNSH{MDType: 1, SPI: 1 << 24}},
		{Userspace{PID: 1, Userdata: make([]byte, 65520)}},
		{Clone{Actions: Actions{Psample{Group: 1, Cookie: make([]byte, 20)}}}},
	} {
		if b, err := MarshalActions(as); err == nil {
			t.Errorf("%#v: encoded as %x", as, b)
		}
	}
	big := make(Actions, 8192)
	for i := range big {
		big[i] = Output{Port: 1}
	}
	if _, err := MarshalActions(big); err == nil {
		t.Error("8192 outputs: encoded beyond 65,535 bytes")
	}
}

// TestSetMaskedNormalize checks that Normalize clears value bits outside
// the mask, which the kernel requires.
func TestSetMaskedNormalize(t *testing.T) {
	as, err := ParseActions("set(ipv4(src=35.8.2.41/255.255.255.0))")
	if err != nil {
		t.Fatal(err)
	}
	sm, ok := as[0].(SetMasked)
	if !ok {
		t.Fatalf("got %T", as[0])
	}
	n := sm.Normalize()
	if got := FormatActions(Actions{n}); got != "set(ipv4(src=35.8.2.0/255.255.255.0))" {
		t.Errorf("normalized: %s", got)
	}
	if got := FormatActions(Actions{sm}); got != "set(ipv4(src=35.8.2.41/255.255.255.0))" {
		t.Errorf("original changed: %s", got)
	}
}
