package policy

import (
	"strings"
	"testing"

	"github.com/ovsdp/ovsdp/flowkeys"
	"github.com/ovsdp/ovsdp/odp"
)

func TestSetFieldAndVLANActions(t *testing.T) {
	env := &Env{Ports: []uint32{1, 2}}
	v6 := func(k *flowkeys.Key) {
		k.EthType = ethIPv6
		k.IPv6Src, k.IPv6Dst = [16]byte{0x20, 0x01, 0x0d, 0xb8, 15: 1}, [16]byte{0x20, 0x01, 0x0d, 0xb8, 15: 2}
	}
	tagged := func(k *flowkeys.Key) { k.VLANTCI, k.VLANTPID = 0xa000|flowkeys.VLANTagPresent|10, flowkeys.EthTypeQinQ }
	for _, tc := range []struct {
		actions string
		mod     func(k *flowkeys.Key)
		want    string
		canon   string // the actions as they print
	}{
		{"set_field:2001:db8::9->ipv6_src,set_field:fe80::1->ipv6_dst,2", v6,
			"set(ipv6(src=2001:db8::9,dst=fe80::1)),2", "set_field:2001:db8::9->ipv6_src,set_field:fe80::1->ipv6_dst,output:2"},
		{"set_field:2001:db8::9->ipv6_src,2", nil, "2", ""}, // not IPv6: nothing to set
		{"set_field:00:00:00:00:00:07->eth_dst,set_field:10.0.0.9->ip_src,2", nil,
			"set(eth(dst=00:00:00:00:00:07)),set(ipv4(src=10.0.0.9)),2", "mod_dl_dst:00:00:00:00:00:07,mod_nw_src:10.0.0.9,output:2"},
		{"set_field:12->ip_dscp,set_field:7->nw_ttl,set_field:99->tcp_dst,2", nil,
			"set(ipv4(tos=0x30/0xfc,ttl=7)),set(tcp(dst=99)),2", "mod_nw_tos:48,mod_nw_ttl:7,mod_tp_dst:99,output:2"},
		{"set_field:4106->vlan_vid,2", nil, "push_vlan(vid=10,pcp=0),2", "mod_vlan_vid:10,output:2"},
		{"set_field:5->vlan_pcp,2", nil, "push_vlan(vid=0,pcp=5),2", "mod_vlan_pcp:5,output:2"},
		{"mod_vlan_pcp:3,2", tagged, "pop_vlan,push_vlan(tpid=0x88a8,vid=10,pcp=3),2", ""},
		{"push_vlan:0x8100,2", tagged, "push_vlan(vid=0,pcp=0),2", "push_vlan:0x8100,output:2"},
		{"push_vlan:0x88a8,mod_vlan_vid:20,2", nil, "push_vlan(tpid=0x88a8,vid=0,pcp=0),pop_vlan,push_vlan(tpid=0x88a8,vid=20,pcp=0),2", ""},
		{"pop_vlan,2", tagged, "pop_vlan,2", "strip_vlan,output:2"},
	} {
		r, err := ParseRule("actions=" + tc.actions)
		if err != nil {
			t.Errorf("%s: %v", tc.actions, err)
			continue
		}
		k := tcpKey()
		if tc.mod != nil {
			tc.mod(&k)
		}
		rs := NewRuleSet("s", []Rule{r})
		d := rs.Decide(&k)
		if got := Translate(&d, &k, env).String(); got != tc.want {
			t.Errorf("%s: got %s, want %s", tc.actions, got, tc.want)
		}
		if _, err := odp.MarshalActions(Translate(&d, &k, env)); err != nil {
			t.Errorf("%s: the actions do not encode: %v", tc.actions, err)
		}
		if tc.canon != "" && formatActions(r.Actions) != tc.canon {
			t.Errorf("%s: prints as %s, want %s", tc.actions, formatActions(r.Actions), tc.canon)
		}
		if r2, err := ParseRule(r.String()); err != nil || !r2.Equal(&r) {
			t.Errorf("%s: round trip %s: %v", tc.actions, r.String(), err)
		}
	}
	for _, tc := range []struct{ in, want string }{
		{"actions=set_field:1->in_port", "column 22: set_field cannot set in_port"},
		{"actions=set_field:1->nw_proto", "column 22: set_field cannot set nw_proto"},
		{"actions=set_field:1.2.3.4->arp_spa", "column 28: set_field cannot set arp_spa: the kernel datapath cannot rewrite ARP or ICMP fields"},
		{"actions=set_field:3->icmp_type", "column 22: set_field cannot set icmp_type: the kernel datapath"},
		{"actions=set_field:1->bogus", `column 22: unknown field "bogus" after set_field:VALUE->`},
		{"actions=set_field:1", "column 19: expected VALUE->FIELD after set_field:"},
		{"actions=set_field:8->vlan_pcp", "column 19: expected a priority (0-7) before ->vlan_pcp"},
		{"actions=set_field:3->nw_tos", "column 19: expected a DSCP value (0-255, a multiple of 4) before ->nw_tos"},
		{"actions=set_field:1.2.3->ip_src", "column 19: expected an IPv4 address before ->ip_src"},
		{"actions=set_field:10.0.0.1->ipv6_src", "column 19: expected an IPv6 address before ->ipv6_src"},
		{"actions=push_vlan:0x800", "column 19: expected a TPID (0x8100 or 0x88a8) after push_vlan:"},
		{"actions=mod_vlan_pcp:8", "column 22: expected a priority (0-7) after mod_vlan_pcp:"},
	} {
		_, err := ParseRule(tc.in)
		if err == nil || !strings.HasPrefix(err.Error(), "line 1, "+tc.want) {
			t.Errorf("%q: %v\nwant line 1, %s", tc.in, err, tc.want)
		}
	}
}
