package policy

import (
	"errors"
	"strings"
	"testing"

	"github.com/ovsdp/ovsdp/flowkeys"
)

var fuzzSeeds = []string{
	"priority=100,tcp,nw_dst=10.0.0.0/8,tp_dst=80,actions=dec_ttl,output:2",
	"ip nw_src=10.1.2.3/255.0.255.0 actions=1,2,normal # comment",
	"arp,arp_spa=1.2.3.4,nw_proto=2,actions=flood\n\n# x\nipv6,actions=all",
	"dl_vlan=0xffff,actions=mod_vlan_vid:5,controller(userdata=01.02.ff)",
	"icmp6,icmp_type=128,ipv6_src=fe80::/10,actions=strip_vlan,controller",
	"udp,tp_src=0x100/0xff00,dl_dst=01:00:00:00:00:00/01:00:00:00:00:00,actions=mod_tp_dst:53,mod_nw_tos:8",
	"dl_type=0x1234,in_port=7,dl_src=aa:bb:cc:dd:ee:ff,actions=drop",
	"ip,nw_ttl=1,nw_tos=4,actions=mod_nw_ttl:3,mod_nw_src:1.1.1.1,mod_nw_dst:2.2.2.2,mod_dl_src:00:00:00:00:00:01,mod_dl_dst:00:00:00:00:00:02",
	"tcp6,tp_src=1,actions=mod_tp_src:9",
	"ipv6,ipv6_dst=2001:db8::1/ffff::ff,actions=1",
	"priority=5,tcp,udp,actions=1",
	"ip,actions=1,drop",
	"priority=3,in_port=veth0,actions=output:veth1,normal",
	"in_port=eth0.10,dl_vlan=10,actions=strip_vlan,output:gone,normal,output:3",
	"in_port=a,in_port=2,actions=output:b",
	"table=0,priority=9,ip,actions=mod_nw_dst:1.2.3.4,resubmit(,3),goto_table:7\ntable=3,nw_dst=1.2.3.4,actions=normal\ntable=7,actions=resubmit(,0)",
	"table=4,actions=goto_table:2",
	"ipv6,actions=set_field:2001:db8::1->ipv6_dst,set_field:4106->vlan_vid,set_field:3->vlan_pcp,push_vlan:0x88a8,pop_vlan,mod_vlan_pcp:7,output:1",
	"actions=set_field:12->ip_dscp,set_field:aa:bb:cc:dd:ee:ff->eth_src,set_field:1->in_port",
	"ip,actions=ct(table=1)\ntable=1,ct_state=+trk+est-new,ct_zone=5,ct_mark=0x1/0xff,ip,actions=ct(commit,zone=5,mark=3/7,nat(src=10.0.0.1-10.0.0.9:100-200,random),table=2)\ntable=2,actions=ct_clear,normal",
	"ipv6,actions=ct(force,exec(set_field:1->ct_mark),nat(dst=[2001:db8::1]:80,persistent)),ct(nat),1",
	"group_id=1,type=select,bucket=weight:3,watch_port:veth0,actions=output:veth0,bucket=actions=ct(commit),2\ngroup_id=2,type=fast_failover,bucket=watch_port:1,actions=group:1\ngroup_id=3,type=all,bucket=mod_nw_tos:8,1,bucket=2\nip,actions=group:2,group:3",
}

// FuzzParseRules: the parser never panics; a rule set it accepts formats
// canonically, and the canonical text parses back to an equal rule set
// that formats the same; Decide and Translate run on it.
func FuzzParseRules(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		rs, err := ParseRules("fuzz", strings.NewReader(s))
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error %T is not a ParseError: %v", err, err)
			}
			if pe.Line < 1 || pe.Col < 1 || pe.Msg == "" || pe.File != "fuzz" {
				t.Fatalf("bad error position: %+v", pe)
			}
			return
		}
		text := rs.String()
		rs2, err := ParseRules("again", strings.NewReader(text))
		if err != nil {
			t.Fatalf("canonical form does not parse: %v\n%s", err, text)
		}
		if !rs.Equal(rs2) {
			t.Fatalf("canonical form parses differently:\n%s\n%s", text, rs2)
		}
		if text2 := rs2.String(); text2 != text {
			t.Fatalf("canonical form not stable:\n%s\n%s", text, text2)
		}
		for i := range rs.Rules {
			r := &rs.Rules[i]
			// The value has no bit outside the mask.
			for j, w := range r.Match.Value.Words() {
				if w&^r.Match.Mask.Words()[j] != 0 {
					t.Fatalf("rule %s: value bits outside the mask", r)
				}
			}
			// A key equal to the rule's value matches it.
			k := r.Match.Value
			if !r.Match.Matches(&k) {
				t.Fatalf("rule %s does not match its own value", r)
			}
			// Decided from the rule's table (as after a recirculation to
			// it), the rule or an earlier one of its table matches.
			d := rs.DecideAt(&k, r.Table)
			if start, _ := rs.table(r.Table); d.Rule < start || d.Rule > i {
				t.Fatalf("rule %s: its own value decided by rule %d", r, d.Rule)
			}
			Translate(&d, &k, &Env{Ports: []uint32{1, 2}})
			Translate(&d, &k, &Env{Ports: []uint32{1, 2}, Recirc: NewRecircTable(), PortUp: func(p uint32) bool { return p != 2 }})
			d = rs.Decide(&k)
			Translate(&d, &k, &Env{Ports: []uint32{1, 2}, Recirc: NewRecircTable()})
		}
		// With its port names resolved, and on ports with VLANs.
		res, _ := rs.Resolve(map[string]uint32{"veth0": 1, "veth1": 2, "a": 3})
		env := &Env{Ports: []uint32{1, 2, 3}, Switch: NewLearningSwitch(LearningOptions{}),
			VLANs: NewVLANTable(map[uint32]PortVLAN{1: {Mode: VLANAccess, Tag: 10}, 2: {Mode: VLANNativeUntagged, Tag: 20, Trunks: []uint16{10}}})}
		for i := range res.Rules {
			k := res.Rules[i].Match.Value
			d := res.Decide(&k)
			env.Learn(&d, &k)
			Translate(&d, &k, env)
		}
	})
}

// FuzzParseMatch: no panic; an accepted match formats and parses back
// equal.
func FuzzParseMatch(f *testing.F) {
	for _, s := range []string{"", "tcp,nw_dst=10.0.0.0/8 tp_dst=80", "arp,arp_tpa=1.2.3.4/24", "dl_vlan=4095,in_port=3", "icmp,icmp_code=3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := ParseMatch(s)
		if err != nil {
			return
		}
		m2, err := ParseMatch(m.String())
		if err != nil || m2 != m {
			t.Fatalf("%q formats as %q which parses to %v, %v", s, m.String(), m2.String(), err)
		}
		var k flowkeys.Key
		k = m.Value
		if !m.Matches(&k) {
			t.Fatalf("%q does not match its own value", s)
		}
	})
}

// FuzzParsePortSpecs: no panic; every accepted port formats back (name
// and options) to text that parses to the same configuration.
func FuzzParsePortSpecs(f *testing.F) {
	for _, s := range []string{"veth0", "veth0,vlan=10,eth1,trunks=10,20", "n,vlan_mode=native-untagged,tag=5,trunks=1",
		"a,vlan_mode=trunk", "vlan=3", "a,tag=1,vlan=2", "a,trunks=4095,0,b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		specs, err := ParsePortSpecs([]string{s})
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error")
			}
			return
		}
		for _, sp := range specs {
			text := sp.Name
			if c := sp.VLAN.String(); c != "" {
				text += "," + c
			}
			again, err := ParsePortSpecs([]string{text})
			if err != nil || len(again) != 1 || again[0].Name != sp.Name || again[0].VLAN.String() != sp.VLAN.String() {
				t.Fatalf("%q: port %+v formats as %q, which parses to %+v, %v", s, sp, text, again, err)
			}
		}
	})
}
