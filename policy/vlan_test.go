package policy

import (
	"strings"
	"testing"

	"github.com/ovsdp/ovsdp/flowkeys"
)

// vlanPorts: 1 access 10, 2 access 20, 3 trunk 10,20, 4 native-untagged
// 10 (trunks 20), 5 native-tagged 20 (trunks every VLAN), 6 unconfigured (trunk
// of every VLAN), 7 access 10.
func vlanPorts() *Env {
	return &Env{
		Ports: []uint32{1, 2, 3, 4, 5, 6, 7},
		VLANs: NewVLANTable(map[uint32]PortVLAN{
			1: {Mode: VLANAccess, Tag: 10},
			2: {Mode: VLANAccess, Tag: 20},
			3: {Mode: VLANTrunk, Trunks: []uint16{10, 20}},
			4: {Mode: VLANNativeUntagged, Tag: 10, Trunks: []uint16{20}},
			5: {Mode: VLANNativeTagged, Tag: 20},
			7: {Mode: VLANAccess, Tag: 10},
		}),
	}
}

func TestTranslateNormalVLANs(t *testing.T) {
	untagged := func(k *flowkeys.Key) {}
	tag := func(tci uint16) func(k *flowkeys.Key) {
		return func(k *flowkeys.Key) { k.VLANTCI, k.VLANTPID = flowkeys.VLANTagPresent|tci, flowkeys.EthTypeVLAN }
	}
	for _, tc := range []struct {
		name string
		in   uint32
		mod  func(k *flowkeys.Key)
		want string
	}{
		// Flooding stays in the VLAN: access ports of the VLAN untagged,
		// trunks tagged, native-untagged untagged for its native VLAN.
		{"access 10 floods VLAN 10", 1, untagged, "4,7,push_vlan(vid=10,pcp=0),3,5,6"},
		{"access 20 floods VLAN 20", 2, untagged, "push_vlan(vid=20,pcp=0),3,4,5,6"},
		{"access port drops a tagged frame", 1, tag(10), "drop"},
		{"access port takes a priority tag as untagged", 1, tag(0xa000), "pop_vlan,4,7,push_vlan(vid=10,pcp=5),3,5,6"},
		{"trunk frame of VLAN 10", 3, tag(10), "5,6,pop_vlan,1,4,7"},
		{"trunk frame of VLAN 20 keeps its PCP", 3, tag(0x6000 | 20), "4,5,6,pop_vlan,2"},
		{"trunk drops a VLAN it does not trunk", 3, tag(30), "drop"},
		{"trunk drops untagged (VLAN 0 not trunked)", 3, untagged, "drop"},
		{"native-untagged: untagged is the native VLAN", 4, untagged, "1,7,push_vlan(vid=10,pcp=0),3,5,6"},
		{"native-tagged: untagged is the native VLAN, leaves tagged", 5, untagged, "2,push_vlan(vid=20,pcp=0),3,4,6"},
		// bundle_set: a native port (tag 10/20) never trunks VLAN 0.
		{"unconfigured trunk, untagged: native ports do not carry VLAN 0", 6, untagged, "drop"},
		{"unconfigured trunk, VLAN 30", 6, tag(30), "5"},
	} {
		env := vlanPorts()
		rs := DefaultRules()
		k := tcpKey()
		k.InPort = tc.in
		tc.mod(&k)
		d := rs.Decide(&k)
		if got := Translate(&d, &k, env).String(); got != tc.want {
			t.Errorf("%s: got %s, want %s", tc.name, got, tc.want)
		}
	}
}

// TestTranslateNormalVLAN0 checks VLAN 0 against Open vSwitch's
// xvlan_output_translate and xvlan_put: a frame of VLAN 0 leaves a
// trunk or native-tagged port with a priority tag (its TPID and PCP)
// when its PCP is not 0, untagged when it is; access ports and a
// native-untagged port of VLAN 0 strip the tag. Ports: 1, 2 trunks of
// every VLAN, 3 access 0, 4 native-tagged 0, 5 native-untagged 0.
func TestTranslateNormalVLAN0(t *testing.T) {
	ports := map[uint32]PortVLAN{3: {Mode: VLANAccess}, 4: {Mode: VLANNativeTagged}, 5: {Mode: VLANNativeUntagged}}
	env := &Env{Ports: []uint32{1, 2, 3, 4, 5}, VLANs: NewVLANTable(ports)}
	for _, tc := range []struct {
		name      string
		in        uint32
		tpid, tci uint16 // tci without the present bit; tpid 0: untagged
		want      string
	}{
		{"untagged from a trunk", 1, 0, 0, "2,3,4,5"},
		{"priority tag PCP 5 from a trunk", 1, flowkeys.EthTypeVLAN, 0xa000, "2,4,pop_vlan,3,5"},
		{"priority tag PCP 5, TPID 0x88a8, from a trunk", 1, flowkeys.EthTypeQinQ, 0xa000, "2,4,pop_vlan,3,5"},
		{"priority tag PCP 0 from a trunk", 1, flowkeys.EthTypeVLAN, 0, "pop_vlan,2,3,4,5"},
		{"priority tag PCP 3 from access 0", 3, flowkeys.EthTypeVLAN, 0x6000, "1,2,4,pop_vlan,5"},
		{"priority tag PCP 3 from native-untagged 0", 5, flowkeys.EthTypeVLAN, 0x6000, "1,2,4,pop_vlan,3"},
		{"untagged from access 0", 3, 0, 0, "1,2,4,5"},
	} {
		k := tcpKey()
		k.InPort = tc.in
		if tc.tpid != 0 {
			k.VLANTCI, k.VLANTPID = flowkeys.VLANTagPresent|tc.tci, tc.tpid
		}
		d := DefaultRules().Decide(&k)
		if got := Translate(&d, &k, env).String(); got != tc.want {
			t.Errorf("%s: got %s, want %s", tc.name, got, tc.want)
		}
	}
}

// TestNativeVLAN0 checks ofproto-dpif's bundle_set: a native port whose
// VLAN is not 0 never trunks VLAN 0, even when trunks= lists it, and
// always trunks its native VLAN.
func TestNativeVLAN0(t *testing.T) {
	vt := NewVLANTable(map[uint32]PortVLAN{
		1: {Mode: VLANNativeTagged, Tag: 10},
		2: {Mode: VLANNativeUntagged, Tag: 10, Trunks: []uint16{0, 20}},
		3: {Mode: VLANNativeTagged, Tag: 0},
		4: {Mode: VLANTrunk, Trunks: []uint16{0, 20}},
	})
	for _, tc := range []struct {
		port uint32
		vlan uint16
		want bool
	}{
		{1, 0, false}, {1, 10, true}, {1, 30, true},
		{2, 0, false}, {2, 10, true}, {2, 20, true}, {2, 30, false},
		{3, 0, true}, {3, 30, true},
		{4, 0, true}, {4, 20, true}, {4, 10, false},
	} {
		if got := vt.port(tc.port).includes(tc.vlan); got != tc.want {
			t.Errorf("port %d carries VLAN %d: %v, want %v", tc.port, tc.vlan, got, tc.want)
		}
	}
	// Untagged frames still enter port 2 (its native VLAN); a frame
	// tagged with VLAN 0 is a priority-tagged frame, also native.
	for _, tci := range []uint16{0, flowkeys.VLANTagPresent, flowkeys.VLANTagPresent | 0xa000} {
		if v, ok := vt.InputVLAN(2, tci); !ok || v != 10 {
			t.Errorf("port 2, tci %#x: VLAN %d %v, want 10", tci, v, ok)
		}
	}
}

// TestVLANIsolation: the same addresses in two VLANs are learned apart,
// and a frame to an address known only in the other VLAN floods its own
// VLAN instead of crossing.
func TestVLANIsolation(t *testing.T) {
	env := vlanPorts()
	env.Switch = NewLearningSwitch(LearningOptions{})
	rs := DefaultRules()
	send := func(in uint32, src, dst byte, tci uint16) string {
		k := tcpKey()
		k.InPort = in
		k.EthSrc, k.EthDst = [6]byte{2, 0, 0, 0, 0, src}, [6]byte{2, 0, 0, 0, 0, dst}
		if tci != 0 {
			k.VLANTCI, k.VLANTPID = flowkeys.VLANTagPresent|tci, flowkeys.EthTypeVLAN
		}
		d := rs.Decide(&k)
		env.Learn(&d, &k)
		return Translate(&d, &k, env).String()
	}
	// Host a in VLAN 10 on port 1, host b in VLAN 20 on port 2.
	send(1, 0xa, 0xff, 0)
	send(2, 0xb, 0xff, 0)
	if p, ok := env.Switch.LookupVLAN(10, [6]byte{2, 0, 0, 0, 0, 0xa}); !ok || p != 1 {
		t.Fatalf("a not learned on port 1 in VLAN 10: %d %v", p, ok)
	}
	if _, ok := env.Switch.LookupVLAN(20, [6]byte{2, 0, 0, 0, 0, 0xa}); ok {
		t.Fatal("a learned in VLAN 20")
	}
	// b (VLAN 20) to a: a is unknown in VLAN 20, so VLAN 20 floods; port 1
	// never gets it.
	if got := send(2, 0xb, 0xa, 0); got != "push_vlan(vid=20,pcp=0),3,4,5,6" {
		t.Errorf("b to a: %s", got)
	}
	// A frame from the trunk in VLAN 10 to a goes to port 1 untagged.
	if got := send(3, 0xc, 0xa, 10); got != "pop_vlan,1" {
		t.Errorf("trunk VLAN 10 to a: %s", got)
	}
	// The same address in VLAN 20 on port 3 is another entry.
	send(3, 0xa, 0xff, 20)
	if p, ok := env.Switch.LookupVLAN(20, [6]byte{2, 0, 0, 0, 0, 0xa}); !ok || p != 3 {
		t.Errorf("a in VLAN 20: %d %v", p, ok)
	}
	if p, _ := env.Switch.LookupVLAN(10, [6]byte{2, 0, 0, 0, 0, 0xa}); p != 1 {
		t.Errorf("a in VLAN 10 moved to %d", p)
	}
	// A dropped frame teaches nothing.
	send(1, 0xd, 0xff, 10)
	if _, ok := env.Switch.LookupVLAN(10, [6]byte{2, 0, 0, 0, 0, 0xd}); ok {
		t.Error("learned from a frame the access port drops")
	}
}

// TestNormalRestoresTag: actions after normal see the packet as it was.
func TestNormalRestoresTag(t *testing.T) {
	env := vlanPorts()
	for _, tc := range []struct {
		rule string
		in   uint32
		tci  uint16
		want string
	}{
		{"actions=normal,output:6", 3, 0x2000 | 10, "5,6,pop_vlan,1,4,7,push_vlan(vid=10,pcp=1),6"},
		{"actions=normal,output:2", 1, 0, "4,7,push_vlan(vid=10,pcp=0),3,5,6,pop_vlan,2"},
		{"actions=normal,normal", 6, 30, "5,5"},
	} {
		r, err := ParseRule(tc.rule)
		if err != nil {
			t.Fatal(err)
		}
		k := tcpKey()
		k.InPort = tc.in
		if tc.tci != 0 {
			k.VLANTCI, k.VLANTPID = flowkeys.VLANTagPresent|tc.tci, flowkeys.EthTypeVLAN
		}
		rs := NewRuleSet("r", []Rule{r})
		d := rs.Decide(&k)
		if got := Translate(&d, &k, env).String(); got != tc.want {
			t.Errorf("%s from %d: got %s, want %s", tc.rule, tc.in, got, tc.want)
		}
	}
}

func TestParsePortSpecs(t *testing.T) {
	for _, tc := range []struct {
		in   []string
		want string // name[:config] joined by ";"
	}{
		{[]string{"veth0", "veth1,veth2"}, "veth0;veth1;veth2"},
		{[]string{"veth0,vlan=10"}, "veth0:vlan=10"},
		{[]string{"veth0,tag=10,veth1"}, "veth0:vlan=10;veth1"},
		{[]string{"t0,trunks=10,20,30,veth1,vlan=4095"}, "t0:trunks=10,20,30;veth1:vlan=4095"},
		{[]string{"n0,vlan_mode=native-untagged,tag=10,trunks=20"}, "n0:vlan_mode=native-untagged,tag=10,trunks=20"},
		{[]string{"n0,tag=0,vlan_mode=NATIVE-TAGGED"}, "n0:vlan_mode=native-tagged,tag=0"},
		{[]string{"a,vlan_mode=access,vlan=3"}, "a:vlan=3"},
		{[]string{"a,vlan_mode=trunk"}, "a"},
	} {
		specs, err := ParsePortSpecs(tc.in)
		if err != nil {
			t.Errorf("%q: %v", tc.in, err)
			continue
		}
		var got []string
		for _, s := range specs {
			g := s.Name
			if c := s.VLAN.String(); c != "" {
				g += ":" + c
			}
			got = append(got, g)
		}
		if g := strings.Join(got, ";"); g != tc.want {
			t.Errorf("%q: got %s, want %s", tc.in, g, tc.want)
		}
	}
	for _, tc := range []struct {
		in   string
		want string
	}{
		{"vlan=10,veth0", `port option "vlan=10" comes before any interface name`},
		{"veth0,vlan=4096", "port veth0: vlan=4096: want a VLAN ID 0-4095"},
		{"veth0,vlan=x", "port veth0: vlan=x: want a VLAN ID 0-4095"},
		{"veth0,vlan=1,tag=2", "port veth0: tag= given twice"},
		{"veth0,vlan=1,trunks=2", "port veth0: trunks= on an access port"},
		{"veth0,vlan_mode=native-tagged", "port veth0: vlan_mode=native-tagged needs tag=N"},
		{"veth0,vlan_mode=trunk,tag=3", "port veth0: tag= on a trunk port"},
		{"veth0,vlan_mode=bridge", "port veth0: vlan_mode=bridge: want trunk, access"},
		{"veth0,trunks=", "port veth0: trunks=: want a list"},
		{"veth0,trunks=1,1", "port veth0: trunks: VLAN 1 listed twice"},
		{"veth0,colour=red", `port veth0: unknown option "colour="`},
		{"veth0,veth0", "port veth0: given twice"},
		{"veth0,vlan_mode=access", "port veth0: vlan_mode=access needs vlan=N"},
	} {
		_, err := ParsePortSpecs([]string{tc.in})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want %q", tc.in, err, tc.want)
		}
	}
}
