package odp

import (
	"errors"
	"strings"
	"testing"
)

func TestKeySyntaxErrors(t *testing.T) {
	for _, tc := range []struct {
		in     string
		masked bool
		col    int
		msg    string
	}{
		{"in_port(1),foo(2)", false, 12, "unknown key attribute"},
		{"in_port(x)", false, 9, "expected a number"},
		{"in_port(1/0xff)", false, 10, "mask is not allowed"},
		{"in_port(4294967296)", false, 9, "does not fit in 32 bits"},
		{"eth(src=00:01:02:03:04)", false, 9, "Ethernet address"},
		{"ipv4(src=1.2.3.256)", false, 10, "octet"},
		{"ipv4(frag=maybe)", false, 11, "frag="},
		{"ipv4(bogus=1)", false, 6, "unknown field"},
		{"ipv6(src=zz)", false, 10, "IPv6 address"},
		{"ipv6(label=0x100000)", false, 12, "20 bits"},
		{"vlan(vid=4096)", false, 10, "does not fit in 12 bits"},
		{"tcp_flags(syn|bogus)", false, 15, "unknown tcp_flags flag"},
		{"tcp_flags(+syn+syn)", true, 16, "only once"},
		{"recirc_id(1/2)", true, 12, "expected \")\""},
		{"in_port(1", false, 10, "expected \")\""},
		{"in_port(1))", false, 11, "unexpected"},
		{"mpls(label=1,label=2,label=3,label=4)", true, 30, "more than 3"},
		{"tunnel(erspan(ver=3))", true, 19, "ver must be 1 or 2"},
		{"ufid:1234 in_port(1)", false, 1, "bad UFID"},
		{"key3(0102)", false, 6, "bad in_port payload"},
	} {
		var err error
		if tc.masked {
			_, _, err = ParseMaskedKey(tc.in)
		} else {
			_, err = ParseKey(tc.in)
		}
		var se *SyntaxError
		if !errors.As(err, &se) {
			t.Errorf("%q: got %v, want a SyntaxError", tc.in, err)
			continue
		}
		if se.Column() != tc.col || !strings.Contains(se.Msg, tc.msg) {
			t.Errorf("%q: got column %d %q, want column %d containing %q", tc.in, se.Column(), se.Msg, tc.col, tc.msg)
		}
	}
}

func TestEncapDepth(t *testing.T) {
	nest := func(n int) string {
		return strings.Repeat("encap(", n) + "eth_type(0x0800)" + strings.Repeat(")", n)
	}
	k, err := ParseKey(nest(32))
	if err != nil {
		t.Fatalf("32 nested encaps: %v", err)
	}
	if _, err := ParseKey(nest(33)); err == nil || !strings.Contains(err.Error(), "nested more than 32") {
		t.Errorf("33 nested encaps: got %v, want an error", err)
	}
	// The decoder has the same bound.
	b, err := MarshalKey(k)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := UnmarshalKey(b); err != nil {
		t.Errorf("decoding 32 nested encaps: %v", err)
	}
	b = nla(1, b)
	_, err = UnmarshalKey(b)
	var de *DecodeError
	if !errors.As(err, &de) || !strings.Contains(de.Attr, "key.encap.encap") {
		t.Errorf("decoding 33 nested encaps: got %v, want a DecodeError", err)
	}
}

func TestKeyTooLong(t *testing.T) {
	s := strings.Repeat("in_port(1),", 8192) // 8192 * 8 bytes = 64 KiB
	if _, err := ParseKey(s); err == nil || !strings.Contains(err.Error(), "exceeds the netlink attribute limit") {
		t.Errorf("64 KiB key: got %v, want an error", err)
	}
	k := make(FlowKey, 8192)
	for i := range k {
		k[i] = InPort(1)
	}
	if _, err := MarshalKey(k); err == nil {
		t.Error("MarshalKey of a 64 KiB key succeeded")
	}
	if _, err := ParseKey(strings.Repeat("in_port(1),", 8000)); err != nil {
		t.Errorf("a key under the limit: %v", err)
	}
}

func TestKeyDecodeErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		b    []byte
		attr string
		off  int
	}{
		{"short header", []byte{8, 0}, "key", 0},
		{"length beyond buffer", append(nla(3, n32(1)), 12, 0, 3, 0), "key.type 3", 8},
		{"length below header", []byte{2, 0, 3, 0}, "key.type 3", 0},
		{"in_port too short", nla(3, n16(1)), "key.in_port", 0},
		{"ipv4 wrong size", append(nla(3, n32(1)), nla(7, raw(1, 2, 3))...), "key.ipv4", 8},
		{"mpls not a multiple of 4", nla(21, raw(1, 2, 3, 4, 5, 6)), "key.mpls", 0},
		{"bad nesting in encap", nla(1, raw(9, 0, 6, 0)), "key.encap.type 6", 4},
		{"encap child wrong size", nla(1, nla(6, raw(8))), "key.encap.eth_type", 4},
		{"tunnel child wrong size", nla(16, nla(0, n32(1))), "key.tunnel.tun_id", 4},
		{"tunnel bad nesting", nla(16, raw(1, 0)), "key.tunnel", 4},
		{"vxlan gbp wrong size", nla(16, nla(11, nla(1, n16(1)))), "key.tunnel.vxlan.gbp", 8},
		{"nsh base wrong size", nla(28, nla(1, n32(1))), "key.nsh.base", 4},
		{"erspan wrong size", nla(16, nla(15, n32(1))), "key.tunnel.erspan", 4},
	} {
		_, err := UnmarshalKey(tc.b)
		var de *DecodeError
		if !errors.As(err, &de) {
			t.Errorf("%s: got %v, want a DecodeError", tc.name, err)
			continue
		}
		if de.Attr != tc.attr || de.Offset != tc.off {
			t.Errorf("%s: got %s at %d (%v), want %s at %d", tc.name, de.Attr, de.Offset, err, tc.attr, tc.off)
		}
	}
	// Unknown attributes are kept, never an error.
	k, err := UnmarshalKey(nla(200, raw(1, 2, 3)))
	if err != nil || len(k) != 1 || FormatKey(k, nil, true) != "key200(010203)" {
		t.Errorf("unknown attribute: %v %v", k, err)
	}
}
