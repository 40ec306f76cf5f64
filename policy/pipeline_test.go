package policy

import (
	"strings"
	"testing"

	"github.com/ovsdp/ovsdp/flowkeys"
)

func TestPipeline(t *testing.T) {
	env := &Env{Ports: []uint32{1, 2, 3, 4}}
	for _, tc := range []struct {
		name, rules string
		mod         func(k *flowkeys.Key)
		want        string
		mask        func(m *flowkeys.Key) bool // what the mask must (not) hold
	}{
		{"resubmit sees the rewritten packet, then the actions go on",
			"in_port=1,actions=mod_nw_dst:10.0.0.9,resubmit(,1),output:3\ntable=1,ip,nw_dst=10.0.0.9,actions=output:2\n", nil,
			"set(ipv4(dst=10.0.0.9)),2,3",
			func(m *flowkeys.Key) bool { return m.IPv4Dst == [4]byte{} && m.EthType == 0xffff }},
		{"goto_table reads the later table's fields",
			"priority=5,ip,actions=goto_table:2\ntable=2,tcp,tp_dst=80,actions=output:4\n", nil,
			"4",
			func(m *flowkeys.Key) bool { return m.TpDst == 0xffff && m.IPProto == 0xff && m.IPFrag == 0xff }},
		{"a table-miss after goto_table does nothing more",
			"ip,actions=output:2,goto_table:2\ntable=2,udp,actions=output:4\n", nil,
			"2", nil},
		{"dl_vlan in a later table matches the tag an action set (a constant)",
			"actions=mod_vlan_vid:5,resubmit(,1)\ntable=1,dl_vlan=5,actions=output:2\n", nil,
			"push_vlan(vid=5,pcp=0),2",
			func(m *flowkeys.Key) bool { return m.VLANTCI == flowkeys.VLANTagPresent }},
		{"dl_vlan in a later table after strip_vlan of a double tag is the inner tag",
			"actions=strip_vlan,resubmit(,1)\ntable=1,dl_vlan=6,actions=output:2\n",
			func(k *flowkeys.Key) {
				k.VLANTCI, k.VLANTPID, k.CVLANTCI, k.CVLANTPID = 0x1005, 0x88a8, 0x1006, 0x8100
			},
			"pop_vlan,2",
			func(m *flowkeys.Key) bool { return m.CVLANTCI == 0x1fff }},
		{"dec_ttl on TTL 1 in a later table stops the whole pipeline",
			"actions=resubmit(,1),output:3\ntable=1,actions=dec_ttl,output:2\n",
			func(k *flowkeys.Key) { k.IPTTL = 1 },
			"drop", nil},
		{"a resubmit loop drops the packet",
			"actions=output:2,resubmit(,0)\n", nil,
			"drop", nil},
		{"deep but bounded",
			"actions=resubmit(,1)\ntable=1,actions=resubmit(,2)\ntable=2,actions=output:4\n", nil,
			"4", nil},
	} {
		rs, err := ParseRules("p", strings.NewReader(tc.rules))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		k := tcpKey()
		if tc.mod != nil {
			tc.mod(&k)
		}
		d := rs.Decide(&k)
		if got := Translate(&d, &k, env).String(); got != tc.want {
			t.Errorf("%s: got %s, want %s", tc.name, got, tc.want)
		}
		if tc.mask != nil && !tc.mask(&d.Mask) {
			t.Errorf("%s: mask %+v", tc.name, d.Mask)
		}
		// The rules print back with their tables.
		if rs2, err := ParseRules("again", strings.NewReader(rs.String())); err != nil || !rs2.Equal(rs) {
			t.Errorf("%s: round trip: %v\n%s", tc.name, err, rs)
		}
	}
}

func TestPipelineErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"table=2,actions=goto_table:1", "p:1:28: goto_table:1 in table 2: goto_table goes to a later table (use resubmit(,1) to go back)"},
		{"actions=goto_table:1,output:2", "p:1:22: goto_table must be the last action"},
		{"table=255,actions=1", "p:1:7: expected a table number (0-254) after table="},
		{"actions=resubmit(1,2)", "p:1:17: expected (,TABLE) after resubmit (resubmitting to a port is not supported)"},
		{"actions=resubmit(,x)", "p:1:19: expected a table number (0-254) in resubmit(,TABLE)"},
		{"actions=goto_table:300", "p:1:20: expected a table number (0-254) after goto_table:"},
	} {
		_, err := ParseRules("p", strings.NewReader(tc.in))
		if err == nil || err.Error() != tc.want {
			t.Errorf("%q: error %v\nwant %s", tc.in, err, tc.want)
		}
	}
	if _, err := ParseMatch("table=1"); err == nil || !strings.Contains(err.Error(), "table= is not allowed in a match") {
		t.Errorf("ParseMatch(table=1): %v", err)
	}
}
