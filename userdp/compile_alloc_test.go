package userdp

import (
	"strings"
	"testing"

	"github.com/ovsdp/ovsdp/flowkeys"
	"github.com/ovsdp/ovsdp/odp"
)

// Compiling a flow's or an execute's actions allocates only the program:
// an action's path is formatted for an error only, and the encoding
// measured against the kernel's limit goes to a pooled buffer.
func TestCompileActionsAllocatesOnlyTheProgram(t *testing.T) {
	if raceDetector {
		t.Skip("allocation counts under the race detector: its sync.Pool drops items at random")
	}
	k := flowkeys.Key{MacProto: flowkeys.MacProtoEthernet, EthType: 0x0800, InPort: 1}
	as := odp.Actions{odp.Output{Port: 2}, odp.Output{Port: 3}, odp.Output{Port: 4}}
	if _, err := compileActions(as, &k); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(100, func() { _, _ = compileActions(as, &k) }); n > 1 {
		t.Errorf("compiling 3 outputs allocates %v times, want 1 (the program)", n)
	}
}

// A failing action is named by its path, as before the path became lazy,
// nested lists included, and the key state the actions before it changed
// is the one it is checked against.
func TestCompileActionsErrorNamesTheAction(t *testing.T) {
	k := flowkeys.Key{MacProto: flowkeys.MacProtoEthernet, EthType: 0x0800, InPort: 1}
	for _, c := range []struct {
		as   odp.Actions
		want string
	}{
		{odp.Actions{odp.Output{Port: 2}, odp.Drop{}, odp.Output{Port: 3}}, "actions[1] drop: drop must be the last action"},
		{odp.Actions{odp.Output{Port: 2}, odp.Clone{Actions: odp.Actions{odp.Output{Port: 3}, odp.PushVLAN{TPID: 0x1234, TCI: 0x1001}}}},
			"actions[1] clone[1] push_vlan: TPID 0x1234 is neither 0x8100 nor 0x88a8"},
		// push_vlan then pop_vlan twice: the second pop fails only in
		// the state after the first, which the retry must start from.
		{odp.Actions{odp.PushVLAN{TPID: 0x8100, TCI: 0x1001}, odp.PopVLAN{}, odp.PushMPLS{EthType: 0x8847}, odp.PushVLAN{TPID: 0x8100, TCI: 0x1001}, odp.PushMPLS{EthType: 0x8847}},
			"actions[4] push_mpls"},
	} {
		_, err := compileActions(c.as, &k)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("compileActions(%s) = %v, want an error containing %q", odp.FormatActions(c.as), err, c.want)
		}
	}
}

// A flow put with a UFID is still named by it in errors, now formatted
// only for the error.
func TestPutFlowErrorNamesTheUFID(t *testing.T) {
	dp, err := New("upname", WithoutLocalPort())
	if err != nil {
		t.Fatal(err)
	}
	defer dp.Close()
	key, mask, err := odp.ParseMaskedKey("in_port(1),eth(src=02:00:00:00:00:01,dst=02:00:00:00:00:02),eth_type(0x0800),ipv4(src=10.0.0.1,dst=10.0.0.2,proto=17,tos=0,ttl=64,frag=no),udp(src=1,dst=9)")
	if err != nil {
		t.Fatal(err)
	}
	u := odp.UFID{1, 2, 3}
	f := &odp.Flow{UFID: u, Key: key, Mask: mask, Actions: odp.Actions{odp.Drop{}}}
	if _, err := dp.PutFlow(t.Context(), f, odp.PutCreate); err != nil {
		t.Fatal(err)
	}
	_, err = dp.PutFlow(t.Context(), f, odp.PutCreate)
	if err == nil || !strings.Contains(err.Error(), "create flow "+u.String()+":") {
		t.Errorf("second create: %v, want it to name %s", err, u)
	}
	f2 := &odp.Flow{UFID: odp.UFID{9}, Key: key, Mask: mask, Actions: odp.Actions{odp.Drop{}}}
	_, err = dp.PutFlow(t.Context(), f2, odp.PutModify)
	if err == nil || !strings.Contains(err.Error(), "modify flow "+f2.UFID.String()+":") {
		t.Errorf("modify of a missing flow: %v, want it to name %s", err, f2.UFID)
	}
}
