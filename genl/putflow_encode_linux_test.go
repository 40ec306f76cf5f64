//go:build !genl_stub

package genl

import (
	"bytes"
	"testing"

	"github.com/mdlayher/netlink"

	"github.com/ovsdp/ovsdp/odp"
)

// referenceFlowPut is a flow put's payload as putFlow built it with an
// AttributeEncoder before appendFlowPut.
func referenceFlowPut(t *testing.T, dpIndex int32, f *odp.Flow, flags odp.PutFlags, o flowOptions) []byte {
	t.Helper()
	ae := netlink.NewAttributeEncoder()
	if err := flowAttrs(ae, f.UFID, f.Key, f.Mask, o); err != nil {
		t.Fatal(err)
	}
	acts, err := odp.MarshalActions(f.Actions)
	if err != nil {
		t.Fatal(err)
	}
	ae.Bytes(flowAttrActions, acts)
	if flags&odp.PutZeroStats != 0 {
		ae.Flag(flowAttrClear, true)
	}
	b, err := ovsHeader(dpIndex, ae)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func testPutFlows(t *testing.T) []*odp.Flow {
	t.Helper()
	var flows []*odp.Flow
	for _, c := range []struct{ key, acts string }{
		{"in_port(1),eth(src=02:aa:00:00:00:01/ff:ff:ff:ff:ff:ff,dst=02:00:00:00:00:02),eth_type(0x0800),ipv4(src=10.9.0.1/255.255.255.0,proto=17),udp(src=1024,dst=9/0xff00)", "2"},
		{"in_port(1),eth(src=02:aa:00:00:00:01,dst=02:00:00:00:00:02),eth_type(0x0806)", "push_vlan(vid=10,pcp=0),3,pop_vlan,4"},
		{"in_port(2),eth(src=02:aa:00:00:00:03,dst=02:00:00:00:00:04),eth_type(0x86dd),ipv6(src=fe80::1,proto=6),tcp(src=80,dst=1024)", "drop"},
		{"recirc_id(0),in_port(3),eth(src=02:aa:00:00:00:05,dst=02:00:00:00:00:06),eth_type(0x0800),ipv4(proto=1),icmp(type=8,code=0)", "set(ipv4(src=10.0.0.1,dst=10.0.0.2,tos=0,ttl=64,frag=no)),1"},
	} {
		key, mask, err := odp.ParseMaskedKey(c.key)
		if err != nil {
			t.Fatalf("%s: %v", c.key, err)
		}
		acts, err := odp.ParseActions(c.acts)
		if err != nil {
			t.Fatalf("%s: %v", c.acts, err)
		}
		flows = append(flows, &odp.Flow{Key: key, Mask: mask, Actions: acts, UFID: odp.UFID{byte(len(flows) + 1), 2, 3}})
	}
	// No mask, no UFID, no actions.
	flows = append(flows, &odp.Flow{Key: flows[0].Key})
	return flows
}

// TestAppendFlowPut: appendFlowPut encodes what the AttributeEncoder
// did, byte for byte, for every combination of options and flags.
func TestAppendFlowPut(t *testing.T) {
	for _, f := range testPutFlows(t) {
		for _, o := range []flowOptions{{}, {UFIDFlags: Terse}, {Probe: true, UFIDFlags: Terse}} {
			for _, flags := range []odp.PutFlags{odp.PutCreate, odp.PutModify | odp.PutZeroStats} {
				want := referenceFlowPut(t, 7, f, flags, o)
				prefix := []byte{0xee, 0xee, 0xee, 0xee}
				got, err := appendFlowPut(prefix, 7, f, flags, o)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got[:4], prefix) || !bytes.Equal(got[4:], want) {
					t.Errorf("%s %+v %#x:\n got % x\nwant % x", odp.FormatKey(f.Key, f.Mask, false), o, flags, got[4:], want)
				}
			}
		}
	}
}

// TestAppendFlowPutAllocs: with the room in its buffer, encoding a put
// allocates nothing (putFlows' batch reuses one; before appendFlowPut a
// put's encoding took an AttributeEncoder, the key's, the mask's and
// the actions' encodings, the encoder's output, the ovs_header copy and
// the generic netlink message).
func TestAppendFlowPutAllocs(t *testing.T) {
	flows := testPutFlows(t)
	buf := make([]byte, 0, 4096)
	allocs := testing.AllocsPerRun(100, func() {
		b := buf[:0]
		for _, f := range flows {
			b, _ = appendFlowPut(b, 7, f, odp.PutCreate, flowOptions{UFIDFlags: Terse})
		}
	})
	if allocs != 0 {
		t.Errorf("appendFlowPut allocates %v times for %d flows, want 0", allocs, len(flows))
	}
}

// referenceExecute is an execute's payload as executeRequest built it
// with an AttributeEncoder before appendExecute.
func referenceExecute(t *testing.T, dpIndex int32, p *odp.Packet) []byte {
	t.Helper()
	kb, err := odp.MarshalKey(p.Key)
	if err != nil {
		t.Fatal(err)
	}
	ab, err := odp.MarshalActions(p.Actions)
	if err != nil {
		t.Fatal(err)
	}
	ae := netlink.NewAttributeEncoder()
	ae.Bytes(packetAttrPacket, p.Data)
	ae.Bytes(packetAttrKey, kb)
	ae.Bytes(packetAttrActions, ab)
	if p.Probe {
		ae.Flag(packetAttrProbe, true)
	}
	if p.MRU != 0 {
		ae.Uint16(packetAttrMRU, p.MRU)
	}
	if p.Hash != 0 {
		ae.Uint64(packetAttrHash, p.Hash)
	}
	if p.UpcallPID != 0 {
		ae.Uint32(packetAttrUpcallPID, p.UpcallPID)
	}
	b, err := ovsHeader(dpIndex, ae)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func testExecutes(t *testing.T) []*odp.Packet {
	var pkts []*odp.Packet
	for i, f := range testPutFlows(t) {
		data := make([]byte, 60+i) // lengths that need padding
		for j := range data {
			data[j] = byte(j * 7)
		}
		p := &odp.Packet{Data: data, Key: f.Key, Actions: f.Actions}
		switch i {
		case 1:
			p.Probe, p.MRU = true, 1500
		case 2:
			p.Hash, p.UpcallPID = 0x1234567890, 99
		}
		pkts = append(pkts, p)
	}
	return pkts
}

// TestAppendExecute: appendExecute encodes what the AttributeEncoder
// did, byte for byte.
func TestAppendExecute(t *testing.T) {
	c := &client{packetMaxAttr: packetAttrUpcallPID}
	for _, p := range testExecutes(t) {
		want := referenceExecute(t, 3, p)
		prefix := []byte{0xee, 0xee, 0xee, 0xee}
		got, err := c.appendExecute(prefix, 3, p)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got[:4], prefix) || !bytes.Equal(got[4:], want) {
			t.Errorf("%s:\n got % x\nwant % x", odp.FormatKey(p.Key, nil, false), got[4:], want)
		}
	}
	old := &client{packetMaxAttr: packetAttrUpcallPID - 1}
	if b, err := old.appendExecute(nil, 3, &odp.Packet{UpcallPID: 1}); err == nil || len(b) != 0 {
		t.Errorf("an upcall PID on a kernel without the attribute: %d bytes, error %v", len(b), err)
	}
}

// TestAppendExecuteAllocs: with the room in its buffer, encoding an
// execute allocates nothing (before appendExecute: the key's and the
// actions' encodings, an AttributeEncoder, its output, the ovs_header
// copy and, in a batch, the generic netlink message).
func TestAppendExecuteAllocs(t *testing.T) {
	c := &client{packetMaxAttr: packetAttrUpcallPID}
	pkts := testExecutes(t)
	buf := make([]byte, 0, 8192)
	allocs := testing.AllocsPerRun(100, func() {
		b := buf[:0]
		for _, p := range pkts {
			b, _ = c.appendExecute(b, 3, p)
		}
	})
	if allocs != 0 {
		t.Errorf("appendExecute allocates %v times for %d packets, want 0", allocs, len(pkts))
	}
}
