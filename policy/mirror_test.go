package policy

import (
	"reflect"
	"strings"
	"testing"

	"github.com/ovsdp/ovsdp/flowkeys"
)

func TestParseMirror(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want MirrorSpec
	}{
		{"veth0:mon0", MirrorSpec{Src: []string{"veth0"}, Dst: []string{"veth0"}, Out: "mon0"}},
		{"in=a,out=b,vlan=10,vlan=20,vlan=10:m", MirrorSpec{Src: []string{"a"}, Dst: []string{"b"}, VLANs: []uint16{10, 20}, Out: "m"}},
		{"all,vlan=0:m", MirrorSpec{All: true, VLANs: []uint16{0}, Out: "m"}},
		{"a,b:m", MirrorSpec{Src: []string{"a", "b"}, Dst: []string{"a", "b"}, Out: "m"}},
	} {
		got, err := ParseMirror(tc.in)
		tc.want.Text = tc.in
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ParseMirror(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
	for _, tc := range []struct{ in, msg string }{
		{"veth0", "want SELECT:OUTPUT_PORT"},
		{"veth0:", "no output port"},
		{":m", "nothing selected"},
		{"a,,b:m", "empty item 2"},
		{"vlan=10:m", "selects no port"},
		{"a,vlan=4096:m", "vlan=\"4096\": want a VLAN ID from 0 to 4095"},
		{"a,vlan=x:m", "want a VLAN ID"},
		{"in=:m", "in= needs a port name"},
		{"color=red:m", "unknown selection \"color=red\""},
		{"a,m:m", "the output port m is also selected"},
	} {
		_, err := ParseMirror(tc.in)
		if err == nil || !strings.Contains(err.Error(), tc.msg) || !strings.Contains(err.Error(), tc.in) {
			t.Errorf("ParseMirror(%q): %v, want an error naming it and saying %q", tc.in, err, tc.msg)
		}
	}
}

func TestMirrorResolve(t *testing.T) {
	spec, err := ParseMirror("in=a,out=b,c:m")
	if err != nil {
		t.Fatal(err)
	}
	m, missing, ok := spec.Resolve(map[string]uint32{"a": 1, "b": 2, "m": 9})
	if !ok || !reflect.DeepEqual(m.SrcPorts, []uint32{1}) || !reflect.DeepEqual(m.DstPorts, []uint32{2}) || m.Out != 9 || !reflect.DeepEqual(missing, []string{"c"}) {
		t.Errorf("resolved %+v, missing %v, ok %v", m, missing, ok)
	}
	if _, missing, ok := spec.Resolve(map[string]uint32{"a": 1}); ok || !reflect.DeepEqual(missing, []string{"c", "b", "m"}) {
		t.Errorf("without the output port: ok %v, missing %v", ok, missing)
	}
}

// TestTranslateMirrors: the copies of OVS's mirror semantics, each with
// the megaflow mask it needs.
func TestTranslateMirrors(t *testing.T) {
	tagged := func(vid uint16) func(*flowkeys.Key) {
		return func(k *flowkeys.Key) { k.VLANTCI, k.VLANTPID = flowkeys.VLANTagPresent|vid, flowkeys.EthTypeVLAN }
	}
	for _, tc := range []struct {
		name    string
		rule    string
		mirrors []Mirror
		in      uint32
		mod     func(*flowkeys.Key)
		want    string
	}{
		{"ingress copy comes first, as received", "actions=mod_nw_tos:32,output:2", []Mirror{{SrcPorts: []uint32{1}, Out: 9}}, 1, nil,
			"9,set(ipv4(tos=0x20/0xfc)),2"},
		{"ingress copy of a dropped packet", "actions=drop", []Mirror{{SrcPorts: []uint32{1}, Out: 9}}, 1, nil, "9"},
		{"other input ports are not selected", "actions=output:2", []Mirror{{SrcPorts: []uint32{1}, Out: 9}}, 3, nil, "2"},
		{"egress copy right after the output, as sent", "actions=output:3,mod_nw_tos:32,output:2,output:4", []Mirror{{DstPorts: []uint32{2}, Out: 9}}, 1, nil,
			"3,set(ipv4(tos=0x20/0xfc)),2,9,4"},
		{"a mirror copies once", "actions=output:2,output:3", []Mirror{{SrcPorts: []uint32{1}, DstPorts: []uint32{2, 3}, Out: 9}}, 1, nil, "9,2,3"},
		{"two mirrors copy each", "actions=output:2", []Mirror{{DstPorts: []uint32{2}, Out: 8}, {SrcPorts: []uint32{1}, Out: 9}}, 1, nil, "9,2,8"},
		{"never back to the input port", "actions=output:2", []Mirror{{All: true, Out: 1}}, 1, nil, "2"},
		{"not twice to the selected port", "actions=output:2", []Mirror{{DstPorts: []uint32{2}, Out: 2}}, 1, nil, "2"},
		{"select_all", "actions=output:2", []Mirror{{All: true, Out: 9}}, 3, nil, "9,2"},
		{"VLAN selected", "actions=output:2", []Mirror{{SrcPorts: []uint32{1}, VLANs: []uint16{10}, Out: 9}}, 1, tagged(10), "9,2"},
		{"VLAN not selected", "actions=output:2", []Mirror{{SrcPorts: []uint32{1}, VLANs: []uint16{10}, Out: 9}}, 1, tagged(20), "2"},
		{"VLAN 0 is untagged", "actions=output:2", []Mirror{{SrcPorts: []uint32{1}, VLANs: []uint16{0}, Out: 9}}, 1, nil, "9,2"},
		{"normal floods past the mirror's output port", "actions=normal", []Mirror{{SrcPorts: []uint32{2}, Out: 4}}, 1, nil, "2,3"},
		{"normal's flood to a selected port is copied", "actions=normal", []Mirror{{DstPorts: []uint32{3}, Out: 4}}, 1, nil, "2,3,4"},
		{"normal drops what comes in on a mirror's output port", "actions=normal", []Mirror{{SrcPorts: []uint32{1}, Out: 4}}, 4, nil, "drop"},
		{"explicit outputs still reach the mirror's output port", "actions=output:4", []Mirror{{SrcPorts: []uint32{2}, Out: 4}}, 1, nil, "4"},
	} {
		env := &Env{Ports: []uint32{1, 2, 3, 4}, Mirrors: tc.mirrors}
		rs, err := ParseRules("m", strings.NewReader(tc.rule+"\n"))
		if err != nil {
			t.Fatal(err)
		}
		k := tcpKey()
		k.InPort = tc.in
		if tc.mod != nil {
			tc.mod(&k)
		}
		var d Decision
		env.DecideInto(rs, &k, &d)
		if got := Translate(&d, &k, env).String(); got != tc.want {
			t.Errorf("%s: got %s, want %s", tc.name, got, tc.want)
		}
		if d.Mask.InPort != 0xffffffff {
			t.Errorf("%s: the mask lacks in_port", tc.name)
		}
		// Without port VLAN configuration a copy keeps the packet's tag,
		// but drops a priority tag whose PCP is 0 (xvlan_put): the
		// present bit and, for a tagged packet, the VID.
		wantTCI := uint16(flowkeys.VLANTagPresent)
		if k.VLANTCI != 0 {
			wantTCI |= 0xfff
		}
		if d.Mask.VLANTCI != wantTCI && !strings.Contains(tc.rule, "normal") {
			t.Errorf("%s: VLAN TCI mask %#x, want %#x", tc.name, d.Mask.VLANTCI, wantTCI)
		}
	}
}

// TestMirrorOutputNotLearned: normal learns nothing from a frame that
// comes in on a mirror's output port.
func TestMirrorOutputNotLearned(t *testing.T) {
	sw := NewLearningSwitch(LearningOptions{})
	env := &Env{Ports: []uint32{1, 2, 3}, Switch: sw, Mirrors: []Mirror{{SrcPorts: []uint32{1}, Out: 3}}}
	k := tcpKey()
	k.InPort = 3
	var d Decision
	env.DecideInto(DefaultRules(), &k, &d)
	if _, changed := env.Learn(&d, &k); changed {
		t.Error("learned from the mirror's output port")
	}
	if _, ok := sw.LookupVLAN(0, k.EthSrc); ok {
		t.Error("the address is in the table")
	}
	k.InPort = 2
	env.DecideInto(DefaultRules(), &k, &d)
	if _, changed := env.Learn(&d, &k); !changed {
		t.Error("did not learn from an ordinary port")
	}
}

// TestMirrorVLANs checks ingress copies against Open vSwitch's
// mirror_packet: a packet its input port drops for its VLAN is not
// copied by any mirror (input_vid_is_valid), and a copy leaves the
// mirror's output port with that port's VLAN treatment (output_normal):
// tagged with the packet's VLAN on a trunk, untagged on an access port.
// Ports: 1 access 10, 2 trunk of every VLAN, 3 access 10, 9 trunk of
// every VLAN (the mirror's output), 8 access 20 (another mirror output).
func TestMirrorVLANs(t *testing.T) {
	vlans := NewVLANTable(map[uint32]PortVLAN{
		1: {Mode: VLANAccess, Tag: 10},
		3: {Mode: VLANAccess, Tag: 10},
		8: {Mode: VLANAccess, Tag: 20},
	})
	for _, tc := range []struct {
		name    string
		rule    string
		mirrors []Mirror
		in      uint32
		tci     uint16 // with the present bit; 0: untagged
		want    string
	}{
		{"untagged from access 10 is copied tagged to a trunk", "actions=output:2", []Mirror{{SrcPorts: []uint32{1}, Out: 9}}, 1, 0,
			"push_vlan(vid=10,pcp=0),9,pop_vlan,2"},
		{"a priority tag's PCP is kept in the copy", "actions=output:2", []Mirror{{SrcPorts: []uint32{1}, Out: 9}}, 1, flowkeys.VLANTagPresent | 0xa000,
			"pop_vlan,push_vlan(vid=10,pcp=5),9,pop_vlan,push_vlan(vid=0,pcp=5),2"},
		{"tagged from a trunk is copied as it came", "actions=output:3", []Mirror{{SrcPorts: []uint32{2}, Out: 9}}, 2, flowkeys.VLANTagPresent | 10,
			"9,3"},
		{"copy to an access port is untagged", "actions=output:3", []Mirror{{SrcPorts: []uint32{2}, Out: 8}}, 2, flowkeys.VLANTagPresent | 10,
			"pop_vlan,8,push_vlan(vid=10,pcp=0),3"},
		{"a frame the access port drops is not copied", "actions=output:2", []Mirror{{SrcPorts: []uint32{1}, Out: 9}}, 1, flowkeys.VLANTagPresent | 10,
			"2"},
		{"but a mirror of every port copies it as sent to the trunk", "actions=output:2", []Mirror{{All: true, Out: 9}}, 1, flowkeys.VLANTagPresent | 10,
			"2,9"},
		{"the copy drops a priority tag with PCP 0", "actions=output:3", []Mirror{{SrcPorts: []uint32{2}, Out: 9}}, 2, flowkeys.VLANTagPresent,
			"pop_vlan,9,push_vlan(vid=0,pcp=0),3"},
	} {
		env := &Env{Ports: []uint32{1, 2, 3, 8, 9}, Mirrors: tc.mirrors, VLANs: vlans}
		rs, err := ParseRules("m", strings.NewReader(tc.rule+"\n"))
		if err != nil {
			t.Fatal(err)
		}
		k := tcpKey()
		k.InPort = tc.in
		if tc.tci != 0 {
			k.VLANTCI, k.VLANTPID = tc.tci, flowkeys.EthTypeVLAN
		}
		var d Decision
		env.DecideInto(rs, &k, &d)
		if got := Translate(&d, &k, env).String(); got != tc.want {
			t.Errorf("%s: got %s, want %s", tc.name, got, tc.want)
		}
		// The copies depend on the input port's VLAN and the tag's PCP
		// and TPID: the mask has the whole outer tag of a tagged packet
		// and the present bit of an untagged one.
		wantTCI, wantTPID := uint16(flowkeys.VLANTagPresent), uint16(0)
		if tc.tci != 0 {
			wantTCI, wantTPID = 0xffff, 0xffff
		}
		if d.Mask.VLANTCI&wantTCI != wantTCI || d.Mask.VLANTPID&wantTPID != wantTPID {
			t.Errorf("%s: mask tci %#x tpid %#x, want at least %#x %#x", tc.name, d.Mask.VLANTCI, d.Mask.VLANTPID, wantTCI, wantTPID)
		}
	}
}
