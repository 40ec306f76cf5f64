package policy

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/ovsdp/ovsdp/flowkeys"
)

func TestParseRulesCanonical(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"priority=100,tcp,nw_dst=10.0.0.0/8,tp_dst=80,actions=dec_ttl,output:2",
			"priority=100,tcp,nw_dst=10.0.0.0/8,tp_dst=80,actions=dec_ttl,output:2"},
		{"ip nw_src=10.1.2.3/255.0.255.0 actions=1,2,normal",
			"priority=32768,ip,nw_src=10.0.2.0/255.0.255.0,actions=output:1,output:2,normal"},
		{"arp,nw_src=1.2.3.4,nw_proto=1,actions=flood", "priority=32768,arp,nw_proto=1,arp_spa=1.2.3.4,actions=flood"},
		{"arp_tpa=1.2.3.0/24,arp,actions=FLOOD", "priority=32768,arp,arp_tpa=1.2.3.0/24,actions=flood"},
		{"dl_vlan=0xffff,actions=mod_vlan_vid:5,controller(userdata=01.02.ff)",
			"priority=32768,dl_vlan=0xffff,actions=mod_vlan_vid:5,controller(userdata=0102ff)"},
		{"dl_vlan=10,in_port=3,actions=strip_vlan,controller", "priority=32768,in_port=3,dl_vlan=10,actions=strip_vlan,controller"},
		{"icmp6,icmp_type=128,ipv6_src=fe80::/10,actions=all",
			"priority=32768,icmp6,ipv6_src=fe80::/10,icmp_type=128,actions=all"},
		{"icmp,icmp_type=8,icmp_code=0,actions=drop", "priority=32768,icmp,icmp_type=8,icmp_code=0,actions=drop"},
		{"udp,tp_src=0x100/0xff00,dl_dst=01:00:00:00:00:00/01:00:00:00:00:00,actions=mod_tp_dst:53,mod_nw_tos:8",
			"priority=32768,udp,dl_dst=01:00:00:00:00:00/01:00:00:00:00:00,tp_src=0x0100/0xff00,actions=mod_tp_dst:53,mod_nw_tos:8"},
		{"dl_type=0x1234,actions=drop", "priority=32768,dl_type=0x1234,actions=drop"},
		{"dl_type=0x0800,nw_proto=6,actions=drop", "priority=32768,tcp,actions=drop"},
		{"dl_type=0x86dd,nw_proto=17,ipv6_dst=2001:db8::1,actions=drop", "priority=32768,udp6,ipv6_dst=2001:db8::1,actions=drop"},
		{"ipv6,nw_proto=50,nw_tos=252,nw_ttl=1,actions=mod_nw_ttl:9", "priority=32768,ipv6,nw_proto=50,nw_tos=252,nw_ttl=1,actions=mod_nw_ttl:9"},
		{"priority=0,dl_src=AA:bb:0:1:2:3,dl_dst=ff:ff:ff:ff:ff:ff,actions=mod_dl_src:00:00:00:00:00:01,mod_dl_dst:1:2:3:4:5:6",
			"priority=0,dl_src=aa:bb:00:01:02:03,dl_dst=ff:ff:ff:ff:ff:ff,actions=mod_dl_src:00:00:00:00:00:01,mod_dl_dst:01:02:03:04:05:06"},
		{"ip,nw_src=0.0.0.0/0,actions=mod_nw_src:1.2.3.4,mod_nw_dst:5.6.7.8", "priority=32768,ip,actions=mod_nw_src:1.2.3.4,mod_nw_dst:5.6.7.8"},
		{"tcp6,tp_src=22,tp_dst=0x0050,actions=mod_tp_src:1", "priority=32768,tcp6,tp_src=22,tp_dst=80,actions=mod_tp_src:1"},
		{"ip,tcp,nw_proto=6,actions=drop", "priority=32768,tcp,actions=drop"},
		{"  actions=output:4294967295  ", "priority=32768,actions=output:4294967295"},
		{"ip,nw_dst=10.1.0.0/255.0.255.0,actions=drop", "priority=32768,ip,nw_dst=10.0.0.0/255.0.255.0,actions=drop"},
		{"ipv6,ipv6_src=2001:db8::1/ffff::ff,actions=drop", "priority=32768,ipv6,ipv6_src=2001::1/ffff::ff,actions=drop"},
	} {
		rs, err := ParseRules("r", strings.NewReader(tc.in))
		if err != nil {
			t.Errorf("%q: %v", tc.in, err)
			continue
		}
		got := strings.TrimSuffix(rs.String(), "\n")
		if got != tc.want {
			t.Errorf("%q:\n got %s\nwant %s", tc.in, got, tc.want)
		}
		rs2, err := ParseRules("r2", strings.NewReader(got))
		if err != nil || !rs.Equal(rs2) {
			t.Errorf("%q: canonical form does not parse back equal: %v", tc.in, err)
		}
	}
}

func TestParseRulesErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"priority=5,nw_src=1.2.3.4,actions=1", `rules.txt:1:12: nw_src requires ip or arp (add "ip,", "arp," or dl_type=0x0800)`},
		{"ipv6,nw_dst=1.2.3.4,actions=1", `rules.txt:1:6: nw_dst requires ip or arp (add "ip,", "arp," or dl_type=0x0800)`},
		{"ip,arp_spa=1.2.3.4,actions=1", `rules.txt:1:4: arp_spa requires arp (add "arp," or dl_type=0x0806)`},
		{"ip,ipv6_src=::1,actions=1", `rules.txt:1:4: ipv6_src requires ipv6 (add "ipv6," or dl_type=0x86dd)`},
		{"nw_proto=6,actions=1", `rules.txt:1:1: nw_proto requires ip, ipv6 or arp (add "ip,", "ipv6," or "arp,")`},
		{"arp,nw_ttl=3,actions=1", `rules.txt:1:5: nw_ttl requires ip or ipv6 (add "ip," or "ipv6,")`},
		{"ip,tp_dst=80,actions=1", `rules.txt:1:4: tp_dst requires tcp or udp (add "tcp,", "udp,", "tcp6," or "udp6,")`},
		{"icmp,tp_dst=80,actions=1", `rules.txt:1:6: tp_dst requires tcp or udp (add "tcp,", "udp,", "tcp6," or "udp6,")`},
		{"tcp,icmp_type=8,actions=1", `rules.txt:1:5: icmp_type requires icmp or icmp6 (add "icmp," or "icmp6,")`},
		{"ipv6,nw_proto=1,icmp_code=0,actions=1", `rules.txt:1:17: icmp_code requires icmp or icmp6 (add "icmp," or "icmp6,")`},
		{"priority=5,tcp,udp,actions=1", "rules.txt:1:16: udp conflicts with an earlier nw_proto"},
		{"ip,arp,actions=1", "rules.txt:1:4: arp conflicts with an earlier dl_type"},
		{"tcp,nw_proto=17,actions=1", "rules.txt:1:5: nw_proto=17 conflicts with an earlier match on the same field"},
		{"priority=5,ip,nw_src=1.2.3.x,actions=1", "rules.txt:1:22: expected an IPv4 address or CIDR after nw_src="},
		{"ip,nw_src=1.2.3.4/33,actions=1", "rules.txt:1:11: expected an IPv4 address or CIDR after nw_src="},
		{"ipv6,ipv6_dst=1.2.3.4,actions=1", "rules.txt:1:15: expected an IPv6 address or CIDR after ipv6_dst="},
		{"dl_src=00:11:22:33:44,actions=1", "rules.txt:1:8: expected a MAC address (xx:xx:xx:xx:xx:xx, optionally /mask) after dl_src="},
		{"dl_type=0x10000,actions=1", "rules.txt:1:9: expected an Ethernet type (0-0xffff) after dl_type="},
		{"dl_vlan=4096,actions=1", "rules.txt:1:9: expected a VLAN ID (0-4095, or 0xffff for no VLAN) after dl_vlan="},
		{"in_port=-1,actions=1", "rules.txt:1:9: expected a port number (0-4294967295) or name after in_port="},
		{"ip,nw_tos=3,actions=1", "rules.txt:1:11: expected a DSCP value (0-255, a multiple of 4) after nw_tos="},
		{"tcp,tp_src=65536,actions=1", "rules.txt:1:12: expected a port number (0-65535, optionally /mask) after tp_src="},
		{"tcp,tp_src=1/x,actions=1", "rules.txt:1:12: expected a port number (0-65535, optionally /mask) after tp_src="},
		{"icmp,icmp_type=256,actions=1", "rules.txt:1:16: expected a number 0-255 after icmp_type="},
		{"priority=70000,ip,actions=1", "rules.txt:1:10: expected a priority (0-65535) after priority="},
		{"foo=1,actions=1", `rules.txt:1:1: unknown field "foo"`},
		{"ipx,actions=1", `rules.txt:1:1: unknown field or shorthand "ipx"`},
		{"tcp,tp_dst,actions=1", "rules.txt:1:11: expected '=' after tp_dst"},
		{"tcp;tp_dst=1,actions=1", `rules.txt:1:4: expected '=', ',' or a blank after tcp, found ';'`},
		{"ip,=1,actions=1", `rules.txt:1:4: expected a field name, found '='`},
		{"priority=5,ip", "rules.txt:1:14: expected actions="},
		{"priority=5,ip,actions=", `rules.txt:1:23: expected an action after actions= (use "drop" to drop)`},
		{"ip,actions=1,", "rules.txt:1:14: expected an action after ','"},
		{"ip,actions=,1", "rules.txt:1:12: expected an action, found ','"},
		{"ip,actions=1, ,2", "rules.txt:1:15: expected an action, found ','"},
		{"priority=5,ip,actions=1,drop", "rules.txt:1:25: drop must be the only action"},
		{"ip,actions=drop,1", "rules.txt:1:12: drop must be the only action"},
		{"priority=5,ip,actions=output:0x", "rules.txt:1:30: expected a port number (0-4294967295) or name after output:"},
		{"priority=5,ip,actions=output:veth0!", "rules.txt:1:30: expected a port number (0-4294967295) or name after output:"},
		{"in_port=veth0,in_port=veth1,actions=1", "rules.txt:1:15: in_port=veth1 conflicts with an earlier match on the same field"},
		{"in_port=veth0,in_port=2,actions=1", "rules.txt:1:15: in_port=2 conflicts with an earlier match on the same field"},
		{"in_port=2,in_port=veth0,actions=1", "rules.txt:1:11: in_port=veth0 conflicts with an earlier match on the same field"},
		{"ip,actions=output", "rules.txt:1:18: expected ':' and a port number or name after output"},
		{"ip,actions=99999999999", "rules.txt:1:12: expected a port number (0-4294967295) as an output action"},
		{"ip,actions=mod_nw_tos:3", "rules.txt:1:23: expected a DSCP value (0-255, a multiple of 4) after mod_nw_tos:"},
		{"ip,actions=mod_vlan_vid:4096", "rules.txt:1:25: expected a VLAN ID (0-4095) after mod_vlan_vid:"},
		{"ip,actions=mod_nw_ttl:256", "rules.txt:1:23: expected a TTL (0-255) after mod_nw_ttl:"},
		{"ip,actions=mod_tp_dst:x", "rules.txt:1:23: expected a port number (0-65535) after mod_tp_dst:"},
		{"ip,actions=mod_dl_src:1:2:3", "rules.txt:1:23: expected a MAC address (xx:xx:xx:xx:xx:xx) after mod_dl_src:"},
		{"ip,actions=mod_nw_dst:::1", "rules.txt:1:23: expected an IPv4 address after mod_nw_dst:"},
		{"ip,actions=normal:1", `rules.txt:1:18: unexpected ":1" after normal`},
		{"ip,actions=controller(max_len=1)", "rules.txt:1:22: expected nothing or (userdata=HEX) after controller"},
		{"ip,actions=controller(userdata=xyz)", "rules.txt:1:32: expected 1 to 256 bytes of hex (dots allowed between bytes) after userdata="},
		{"ip,actions=bogus", `rules.txt:1:12: unknown action "bogus"`},
		{"ip,actions=(1)", `rules.txt:1:12: expected an action, found '('`},
		{"ip,priority=1,priority=x,actions=1", "rules.txt:1:24: expected a priority (0-65535) after priority="},
	} {
		_, err := ParseRules("rules.txt", strings.NewReader(tc.in))
		if err == nil {
			t.Errorf("%q: no error, want %s", tc.in, tc.want)
			continue
		}
		if err.Error() != tc.want {
			t.Errorf("%q:\n got %v\nwant %s", tc.in, err, tc.want)
		}
		var pe *ParseError
		if !errors.As(err, &pe) {
			t.Errorf("%q: error %T is not a *ParseError", tc.in, err)
		}
	}
}

func TestParseRulesFile(t *testing.T) {
	const file = `# a comment
priority=10,ip,actions=1   # trailing comment

	# indented comment
ip actions=2
priority=10,arp,actions=3
priority=20,actions=drop
`
	rs, err := ParseRules("f", strings.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	want := "priority=32768,ip,actions=output:2\n" +
		"priority=20,actions=drop\n" +
		"priority=10,ip,actions=output:1\n" +
		"priority=10,arp,actions=output:3\n"
	if got := rs.String(); got != want {
		t.Errorf("got\n%swant\n%s", got, want)
	}
	var lines []int
	for _, r := range rs.Rules {
		lines = append(lines, r.Line)
	}
	if want := []int{5, 7, 2, 6}; !slices.Equal(lines, want) {
		t.Errorf("lines %v, want %v", lines, want)
	}

	// The error names the line in the file.
	_, err = ParseRules("f", strings.NewReader(file+"\n# x\nip,nw_src=1.2.3,actions=1\n"))
	if err == nil || err.Error() != "f:10:11: expected an IPv4 address or CIDR after nw_src=" {
		t.Errorf("got %v", err)
	}
	// A line that is too long.
	_, err = ParseRules("f", strings.NewReader("ip,actions=1\n"+strings.Repeat("x", MaxLineLen+1)))
	if err == nil || err.Error() != "f:2:1: line longer than 65536 bytes" {
		t.Errorf("got %v", err)
	}
	// An empty file is an empty rule set that drops everything.
	rs, err = ParseRules("empty", strings.NewReader("# nothing\n\n"))
	if err != nil || len(rs.Rules) != 0 {
		t.Fatalf("got %v, %v", rs, err)
	}
	var k flowkeys.Key
	if d := rs.Decide(&k); d.Rule != -1 || len(d.Actions) != 0 || !d.Mask.IsZero() {
		t.Errorf("empty rule set: %+v", d)
	}
}

func TestReload(t *testing.T) {
	old, err := ParseRules("a", strings.NewReader("ip,actions=1\n"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := Reload(old, "b", strings.NewReader("ip,actions=1\nip,nw_src=x,actions=2\n"))
	if got != old {
		t.Errorf("bad file replaced the rules")
	}
	var pe *ParseError
	if !errors.As(err, &pe) || pe.File != "b" || pe.Line != 2 || pe.Col != 11 {
		t.Errorf("error %v, want a ParseError at b:2:11", err)
	}
	got, err = Reload(old, "c", strings.NewReader("arp,actions=3\n"))
	if err != nil || got == old || got.String() != "priority=32768,arp,actions=output:3\n" || got.Name != "c" {
		t.Errorf("good file: %v, %v", got, err)
	}
}

func TestParseMatch(t *testing.T) {
	m, err := ParseMatch("tcp,nw_dst=10.0.0.0/8 tp_dst=80")
	if err != nil {
		t.Fatal(err)
	}
	if m.String() != "tcp,nw_dst=10.0.0.0/8,tp_dst=80" {
		t.Errorf("String: %s", m.String())
	}
	var k flowkeys.Key
	k.EthType, k.IPProto, k.IPv4Dst, k.TpDst = 0x0800, 6, [4]byte{10, 9, 8, 7}, 80
	if !m.Matches(&k) {
		t.Errorf("does not match %+v", k)
	}
	k.IPv4Dst[0] = 11
	if m.Matches(&k) {
		t.Errorf("matches 11.9.8.7")
	}
	if m.Mask.EthType != 0xffff || m.Mask.IPProto != 0xff || m.Mask.TpDst != 0xffff || m.Mask.IPv4Dst != [4]byte{255} {
		t.Errorf("mask %+v", m.Mask)
	}
	if m, err := ParseMatch(""); err != nil || !m.Mask.IsZero() || m.String() != "" {
		t.Errorf("empty match: %v %v", m, err)
	}
	for in, want := range map[string]string{
		"tcp,actions=1":   "column 5: actions= is not allowed in a match",
		"priority=1":      "column 1: priority= is not allowed in a match",
		"ip,nw_src=1.2.3": "column 11: expected an IPv4 address or CIDR after nw_src=",
		"tp_src=1":        `column 1: tp_src requires tcp or udp (add "tcp,", "udp,", "tcp6," or "udp6,")`,
	} {
		if _, err := ParseMatch(in); err == nil || err.Error() != want {
			t.Errorf("%q: got %v, want %s", in, err, want)
		}
	}
}

func TestParseRule(t *testing.T) {
	r, err := ParseRule("priority=7,udp,actions=controller")
	if err != nil || r.String() != "priority=7,udp,actions=controller" {
		t.Errorf("%v %v", r.String(), err)
	}
	if _, err := ParseRule("udp,actions=foo"); err == nil || err.Error() != `line 1, column 13: unknown action "foo"` {
		t.Errorf("got %v", err)
	}
}
