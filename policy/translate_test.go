package policy

import (
	"strings"
	"testing"

	"github.com/ovsdp/ovsdp/flowkeys"
	"github.com/ovsdp/ovsdp/internal/header"
	"github.com/ovsdp/ovsdp/odp"
)

func tcpKey() flowkeys.Key {
	var k flowkeys.Key
	k.MacProto = flowkeys.MacProtoEthernet
	k.InPort = 1
	k.EthSrc = [6]byte{0, 0, 0, 0, 0, 0xa}
	k.EthDst = [6]byte{0, 0, 0, 0, 0, 0xb}
	k.EthType, k.IPProto, k.IPTTL, k.IPTOS = ethIPv4, header.IPProtoTCP, 64, 0x01
	k.IPv4Src, k.IPv4Dst = [4]byte{10, 0, 0, 1}, [4]byte{10, 0, 0, 2}
	k.TpSrc, k.TpDst = 1000, 80
	return k
}

func TestTranslate(t *testing.T) {
	env := &Env{Ports: []uint32{1, 2, 3, 4}, ControllerPID: 99}
	for _, tc := range []struct {
		rule string
		mod  func(k *flowkeys.Key)
		want string
	}{
		{"actions=2", nil, "2"},
		{"actions=1", nil, "drop"}, // output to the input port is skipped
		{"actions=flood", nil, "2,3,4"},
		{"actions=all,output:9", nil, "2,3,4,9"},
		{"actions=drop", nil, "drop"},
		{"actions=dec_ttl,2", nil, "set(ipv4(ttl=63)),2"},
		{"actions=dec_ttl,dec_ttl,2,dec_ttl,3", nil, "set(ipv4(ttl=62)),2,set(ipv4(ttl=61)),3"},
		{"actions=2,dec_ttl,3", func(k *flowkeys.Key) { k.IPTTL = 1 }, "2"},
		{"actions=dec_ttl,2", func(k *flowkeys.Key) { k.EthType, k.IPProto = 0x1234, 0 }, "2"},
		{"actions=mod_nw_tos:8,mod_nw_src:1.2.3.4,2", nil, "set(ipv4(src=1.2.3.4,tos=0x8/0xfc)),2"},
		{"actions=mod_nw_ttl:5,dec_ttl,2", nil, "set(ipv4(ttl=4)),2"},
		{"actions=mod_nw_src:1.2.3.4,2", func(k *flowkeys.Key) { k.EthType = ethIPv6 }, "2"},
		{"actions=mod_nw_tos:4,mod_nw_ttl:7,2", func(k *flowkeys.Key) { k.EthType = ethIPv6 }, "set(ipv6(tclass=0x4/0xfc,hlimit=7)),2"},
		{"actions=mod_tp_dst:8080,mod_tp_src:1,2", nil, "set(tcp(src=1,dst=8080)),2"},
		{"actions=mod_tp_dst:53,2", func(k *flowkeys.Key) { k.IPProto = header.IPProtoUDP }, "set(udp(dst=53)),2"},
		{"actions=mod_tp_dst:53,2", func(k *flowkeys.Key) { k.IPFrag = flowkeys.FragLater }, "2"},
		{"actions=mod_dl_src:00:00:00:00:00:01,mod_dl_dst:00:00:00:00:00:02,2", nil, "set(eth(src=00:00:00:00:00:01,dst=00:00:00:00:00:02)),2"},
		{"actions=mod_dl_src:00:00:00:00:00:01,2,mod_nw_dst:9.9.9.9,3,mod_nw_dst:8.8.8.8", nil,
			"set(eth(src=00:00:00:00:00:01)),2,set(ipv4(dst=9.9.9.9)),3"},
		{"actions=mod_vlan_vid:10,2", nil, "push_vlan(vid=10,pcp=0),2"},
		{"actions=mod_vlan_vid:10,2", func(k *flowkeys.Key) { k.VLANTCI, k.VLANTPID = 0xb000|5, 0x88a8 },
			"pop_vlan,push_vlan(tpid=0x88a8,vid=10,pcp=5),2"},
		{"actions=strip_vlan,2", nil, "2"},
		{"actions=strip_vlan,strip_vlan,2", func(k *flowkeys.Key) {
			k.VLANTCI, k.VLANTPID, k.CVLANTCI, k.CVLANTPID = 0x1005, 0x88a8, 0x1006, 0x8100
		}, "pop_vlan,pop_vlan,2"},
		{"actions=strip_vlan,mod_vlan_vid:3,2", func(k *flowkeys.Key) { k.VLANTCI, k.VLANTPID = 0x1005, 0x8100 },
			"pop_vlan,push_vlan(vid=3,pcp=0),2"},
		{"actions=controller", nil, "userspace(pid=99)"},
		{"actions=controller(userdata=0102030405060708)", nil, "userspace(pid=99,userdata(0102030405060708))"},
		{"actions=normal", nil, "2,3,4"}, // no switch: flood
	} {
		r, err := ParseRule(tc.rule)
		if err != nil {
			t.Fatal(err)
		}
		rs := NewRuleSet("t", []Rule{r})
		k := tcpKey()
		if tc.mod != nil {
			tc.mod(&k)
		}
		d := rs.Decide(&k)
		acts := Translate(&d, &k, env)
		if got := acts.String(); got != tc.want {
			t.Errorf("%s: got %s, want %s", tc.rule, got, tc.want)
		}
		// Every action encodes for the kernel, and every set is masked.
		if _, err := odp.MarshalActions(acts); err != nil {
			t.Errorf("%s: %v", tc.rule, err)
		}
		for _, a := range acts {
			if _, ok := a.(odp.Set); ok {
				t.Errorf("%s: unmasked set %v", tc.rule, a)
			}
		}
	}
}

// TestTranslateSetMaskedFields checks the exact set_masked values and
// masks: only the modified fields are in the mask.
func TestTranslateSetMaskedFields(t *testing.T) {
	r, _ := ParseRule("ip,actions=dec_ttl,2")
	rs := NewRuleSet("t", []Rule{r})
	k := tcpKey()
	d := rs.Decide(&k)
	acts := Translate(&d, &k, &Env{})
	want := odp.SetMasked{Key: odp.IPv4{TTL: 63}, Mask: odp.IPv4{TTL: 0xff}}
	if len(acts) != 2 || acts[0] != want || acts[1] != (odp.Output{Port: 2}) {
		t.Errorf("got %#v", acts)
	}
	// A decision that drops translates to an empty list.
	empty := NewRuleSet("e", nil)
	d = empty.Decide(&k)
	if acts := Translate(&d, &k, &Env{Ports: []uint32{1, 2}}); acts == nil || len(acts) != 0 {
		t.Errorf("drop: %#v", acts)
	}
	// AppendTranslate appends.
	d = rs.Decide(&k)
	acts = AppendTranslate(odp.Actions{odp.Output{Port: 7}}, &d, &k, nil)
	if acts.String() != "7,set(ipv4(ttl=63)),2" {
		t.Errorf("append: %s", acts)
	}
}

func TestTranslateNormal(t *testing.T) {
	sw := NewLearningSwitch(LearningOptions{})
	env := &Env{Ports: []uint32{1, 2, 3}, Switch: sw}
	rs := DefaultRules()
	k := tcpKey() // from 0a on port 1 to 0b
	act := func() string {
		d := rs.Decide(&k)
		return Translate(&d, &k, env).String()
	}
	if got := act(); got != "2,3" {
		t.Errorf("unknown destination: %s", got)
	}
	sw.LearnMAC(k.EthDst, 3)
	if got := act(); got != "3" {
		t.Errorf("known destination: %s", got)
	}
	sw.LearnMAC(k.EthDst, 1)
	if got := act(); got != "drop" {
		t.Errorf("destination on the input port: %s", got)
	}
	k.EthDst = [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	sw.LearnMAC(k.EthDst, 3) // not learned: multicast
	if got := act(); got != "2,3" {
		t.Errorf("broadcast: %s", got)
	}
	// A rule's normal after mod_dl_dst uses the new address, and the mask
	// then has no dl_dst bits from the packet.
	sw.LearnMAC([6]byte{0, 0, 0, 0, 0, 0xc}, 2)
	r, _ := ParseRule("actions=mod_dl_dst:00:00:00:00:00:0c,normal")
	rs = NewRuleSet("n", []Rule{r})
	d := rs.Decide(&k)
	if got := Translate(&d, &k, env).String(); got != "set(eth(dst=00:00:00:00:00:0c)),2" {
		t.Errorf("mod_dl_dst,normal: %s", got)
	}
	if d.Mask.EthDst != [6]byte{} || !d.Normal {
		t.Errorf("mod_dl_dst,normal: mask %v normal %v", d.Mask.EthDst, d.Normal)
	}
}

func TestRuleOrder(t *testing.T) {
	rs, err := ParseRules("o", strings.NewReader("priority=1,actions=1\nip,actions=2\nip,actions=3\npriority=40000,tcp,actions=4\n"))
	if err != nil {
		t.Fatal(err)
	}
	k := tcpKey()
	k.InPort = 9
	for _, tc := range []struct {
		ethType uint16
		proto   uint8
		want    string
	}{{ethIPv4, header.IPProtoTCP, "4"}, {ethIPv4, header.IPProtoUDP, "2"}, {ethARP, 0, "1"}} {
		k.EthType, k.IPProto = tc.ethType, tc.proto
		d := rs.Decide(&k)
		if got := Translate(&d, &k, nil).String(); got != tc.want {
			t.Errorf("%#x/%d: got %s, want %s", tc.ethType, tc.proto, got, tc.want)
		}
	}
}

// TestPortSetKeepsAPortInTheKey: a port rewrite's megaflow keeps a
// nonzero port of the packet in its key, as the kernel requires of a
// flow with set(tcp|udp) (validate_tp_port on the masked key), and a
// packet with both ports 0 gets no port set (Open vSwitch's
// commit_set_port_action) and a megaflow exact on both.
func TestPortSetKeepsAPortInTheKey(t *testing.T) {
	env := &Env{Ports: []uint32{1, 2}}
	for _, tc := range []struct {
		rule               string
		src, dst           uint16
		want               string
		maskSrc, maskDst   uint16
		keySrcOrDstNonzero bool
	}{
		{"tcp,actions=mod_tp_dst:8080,2", 1000, 80, "set(tcp(dst=8080)),2", 0, 0xffff, true},
		{"tcp,actions=mod_tp_dst:8080,2", 1000, 0, "set(tcp(dst=8080)),2", 0xffff, 0, true},
		{"tcp,tp_src=1000,actions=mod_tp_dst:8080,2", 1000, 80, "set(tcp(dst=8080)),2", 0xffff, 0, true},
		{"tcp,actions=mod_tp_src:7,mod_tp_dst:8,2", 1000, 80, "set(tcp(src=7,dst=8)),2", 0, 0xffff, true},
		{"tcp,actions=mod_tp_dst:0,2", 0, 0, "2", 0xffff, 0xffff, false},
		{"tcp,actions=mod_tp_dst:80,2", 0, 0, "2", 0xffff, 0xffff, false},
	} {
		r, err := ParseRule(tc.rule)
		if err != nil {
			t.Fatal(err)
		}
		rs := NewRuleSet("t", []Rule{r})
		k := tcpKey()
		k.TpSrc, k.TpDst = tc.src, tc.dst
		d := rs.Decide(&k)
		if got := Translate(&d, &k, env).String(); got != tc.want {
			t.Errorf("%s on ports %d/%d: got %s, want %s", tc.rule, tc.src, tc.dst, got, tc.want)
		}
		if d.Mask.TpSrc != tc.maskSrc || d.Mask.TpDst != tc.maskDst {
			t.Errorf("%s on ports %d/%d: mask tp_src %#x tp_dst %#x, want %#x %#x", tc.rule, tc.src, tc.dst, d.Mask.TpSrc, d.Mask.TpDst, tc.maskSrc, tc.maskDst)
		}
		if nz := k.TpSrc&d.Mask.TpSrc != 0 || k.TpDst&d.Mask.TpDst != 0; nz != tc.keySrcOrDstNonzero {
			t.Errorf("%s on ports %d/%d: the megaflow's key has a nonzero port: %v, want %v", tc.rule, tc.src, tc.dst, nz, tc.keySrcOrDstNonzero)
		}
	}
}
