package odp

import (
	"strings"
	"testing"
)

// TestSharedScanners: keys and actions read addresses, hex bytes and
// parse_int_string values with one set of scanners, which follow what
// Open vSwitch's ovs-dpctl accepts (odp-util.c: IP_SCAN_FMT,
// IPV6_SCAN_FMT, ETH_ADDR_SCAN_FMT, ofpbuf_put_hex, parse_int_string).
// Each input parses to the same text as its canonical form, or fails.
func TestSharedScanners(t *testing.T) {
	const (
		gre4 = "tnl_push(tnl_port(4),header(size=42,type=3,eth(dst=f8:bc:12:44:34:b6,src=f8:bc:12:46:58:e0,dl_type=0x0800),ipv4(src=%s,dst=1.1.2.92,proto=47,tos=0,ttl=64,frag=0x4000),gre((flags=0x2000,proto=0x6558),key=0x1e241)),out_port(1))"
		srv6 = "tnl_push(tnl_port(6),header(size=110,type=112,eth(dst=f8:bc:12:44:34:b6,src=f8:bc:12:46:58:e0,dl_type=0x86dd),ipv6(src=%s,dst=2001:cafe::92,label=0,proto=43,tclass=0x0,hlimit=64),srv6(segments_left=2,segs(2001:cafe::90,2001:cafe::91,2001:cafe::92))),out_port(1))"
	)
	sub := func(f, v string) string { return strings.Replace(f, "%s", v, 1) }
	for _, tc := range []struct {
		in, want string // want "" means an error
	}{
		// IPv4 in actions as in keys (%hhu): leading zeros are decimal.
		// The action side used netip, which refuses them.
		{sub(gre4, "001.001.002.088"), sub(gre4, "1.1.2.88")},
		{sub(gre4, "1.1.2.256"), ""},
		{sub(gre4, "1.1.2"), ""},
		{"ct(commit,nat(src=010.0.0.1-10.0.0.009))", "ct(commit,nat(src=10.0.0.1-10.0.0.9))"},
		{"ct(commit,nat(src=10.0.0.300))", ""},
		// IPv6: IPV6_SCAN_FMT has no brackets; only ct's nat ranges take
		// them (odp-util.c tries "["IPV6_SCAN_FMT"]" there alone).
		{sub(srv6, "[2001:cafe::88]"), ""},
		{sub(srv6, "2001:cafe::88"), sub(srv6, "2001:cafe::88")},
		{"ct(commit,nat(src=[2001:db8::1]:443))", "ct(commit,nat(src=[2001:db8::1]:443))"},
		{"ct(commit,nat(src=2001:db8::1))", "ct(commit,nat(src=2001:db8::1))"},
		{"ct(commit,nat(src=[2001:db8::1))", ""},
		// Ethernet addresses: one or two hex digits a byte.
		{"push_eth(src=0:1:2:3:4:5,dst=a:b:c:d:e:f)", "push_eth(src=00:01:02:03:04:05,dst=0a:0b:0c:0d:0e:0f)"},
		{"push_eth(src=0:1:2:3:4,dst=a:b:c:d:e:f)", ""},
		// ofpbuf_put_hex: blanks (tabs and newlines too) between bytes.
		{"userspace(pid=1,userdata(00 01\t02\n03))", "userspace(pid=1,userdata(00010203))"},
		{"userspace(pid=1,userdata(000))", ""},
		// parse_int_string for ct's label as for the key's ct_label:
		// blanks between hex digits, strtoull's sign for a decimal.
		{"ct(commit,label=0x12 34)", "ct(commit,label=0x1234)"},
		{"ct(commit,label=-1)", "ct(commit,label=0xffffffffffffffff)"},
		{"ct(commit,label=0x1" + strings.Repeat("0", 32) + ")", ""},
		// Numbers: scan_int ("%i", "%u", "%x") for actions as for keys:
		// blanks before the number and a sign (wrapping as in C).
		{"check_pkt_len(size= 0x10,gt(1),le(2))", "check_pkt_len(size=16,gt(1),le(2))"},
		{"recirc(-1)", "recirc(4294967295)"},
		{"recirc(4294967296)", ""},
		{"ct(commit,mark=10/0xff)", "ct(commit,mark=0x10/0xff)"},
	} {
		got, err := ParseActions(tc.in)
		if tc.want == "" {
			if err == nil {
				t.Errorf("ParseActions(%s) = %s, want an error", tc.in, got)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseActions(%s): %v", tc.in, err)
			continue
		}
		want, err := ParseActions(tc.want)
		if err != nil {
			t.Fatalf("canonical %s: %v", tc.want, err)
		}
		if FormatActions(got) != FormatActions(want) {
			t.Errorf("ParseActions(%s) = %s, want %s", tc.in, got, want)
		}
	}
	for _, tc := range []struct {
		in, want string
	}{
		// The same scanners in keys.
		{"ipv4(src=010.0.0.0255)", "ipv4(src=10.0.0.255)"},
		{"ct_label(0x12 34)", "ct_label(0x1234)"},
		{"eth(src=0:1:2:3:4:5)", "eth(src=00:01:02:03:04:05)"},
	} {
		k, m, err := ParseMaskedKey(tc.in)
		if err != nil {
			t.Errorf("ParseMaskedKey(%s): %v", tc.in, err)
			continue
		}
		wk, wm, err := ParseMaskedKey(tc.want)
		if err != nil {
			t.Fatalf("canonical %s: %v", tc.want, err)
		}
		if FormatKey(k, m, true) != FormatKey(wk, wm, true) {
			t.Errorf("ParseMaskedKey(%s) = %s, want %s", tc.in, FormatKey(k, m, true), FormatKey(wk, wm, true))
		}
	}
}
