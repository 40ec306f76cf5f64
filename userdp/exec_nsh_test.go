package userdp

import (
	"context"
	"encoding/binary"
	"errors"
	"syscall"
	"testing"

	"github.com/ovsdp/ovsdp/flowkeys"
	"github.com/ovsdp/ovsdp/internal/header"
	"github.com/ovsdp/ovsdp/odp"
)

// nshHeader is an MD type 1 NSH header: TTL 63, length 6 words, next
// protocol np, SPI 0x10, SI 255, context 1, 2, 3, 4.
func nshHeader(np byte) []byte {
	h := []byte{0x0f, 0xc6, 1, np, 0, 0, 0x10, 0xff}
	for i := uint32(1); i <= 4; i++ {
		h = binary.BigEndian.AppendUint32(h, i)
	}
	return h
}

// TestActionPushPopNSH checks push_nsh and pop_nsh as the kernel's: the
// header built from the action with the next protocol the packet gives
// (Ethernet for a frame, IPv4 for an L3 IPv4 packet: the action's np is
// overwritten), and pop_nsh giving the packet its next protocol's
// EtherType (an Ethernet frame for np 3).
func TestActionPushPopNSH(t *testing.T) {
	h := newHarness(t, 3)
	rs, err := h.dp.Upcalls(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	f := udpFrame(1, 2, 1000)
	eth := func(et uint16) []byte {
		return []byte{2, 0, 0, 0, 0, 0xbb, 2, 0, 0, 0, 0, 0xaa, byte(et >> 8), byte(et)}
	}
	const push = "push_eth(src=02:00:00:00:00:aa,dst=02:00:00:00:00:bb)"
	const nsh = "push_nsh(flags=0,ttl=63,mdtype=1,np=7,spi=0x10,si=255,c1=0x1,c2=0x2,c3=0x3,c4=0x4)"

	// On a frame: in front of the Ethernet header, np 3.
	h.mustExecute(f, nsh+","+push+",2")
	h.expectFrame(2, append(append(eth(header.EtherTypeNSH), nshHeader(nshNPEthernet)...), f...))
	// On an L3 IPv4 packet: np 1.
	h.mustExecute(f, "pop_eth,"+nsh+","+push+",2")
	h.expectFrame(2, append(append(eth(header.EtherTypeNSH), nshHeader(nshNPIPv4)...), f[14:]...))
	// MD type 2.
	md2 := odp.PushNSH{TTL: 1, MDType: odp.NSHMDType2, NP: 0, SPI: 1, SI: 2, MD2: []byte{0, 1, 2, 4, 9, 9, 9, 9}}
	h.execActions(f, odp.Actions{odp.PopEth{}, md2, odp.PushEth{Src: [6]byte{2, 0, 0, 0, 0, 0xaa}, Dst: [6]byte{2, 0, 0, 0, 0, 0xbb}}, odp.Output{Port: 2}})
	want := append(eth(header.EtherTypeNSH), 0x00, 0x44, 2, nshNPIPv4, 0, 0, 1, 2, 0, 1, 2, 4, 9, 9, 9, 9)
	h.expectFrame(2, append(want, f[14:]...))

	// The recirculated key of the NSH packet: no eth, nsh().
	h.mustExecute(f, "pop_eth,"+nsh+",recirc(4)")
	u := recvUpcall(t, rs[0])
	k, err := odp.ToFlowKeysExact(u.Key)
	if err != nil {
		t.Fatal(err)
	}
	if k.MacProto != flowkeys.MacProtoNone || k.EthType != header.EtherTypeNSH || k.NSHNP != nshNPIPv4 || k.NSHPathHdr != 0x10ff || k.NSHContext != [4]uint32{1, 2, 3, 4} || k.NSHTTL != 63 {
		t.Errorf("NSH miss key %s", odp.FormatKey(u.Key, nil, false))
	}

	// pop_nsh of an Ethernet frame carrying NSH over IPv4 (after
	// pop_eth, as Open vSwitch does it).
	in := append(append(eth(header.EtherTypeNSH), nshHeader(nshNPIPv4)...), f[14:]...)
	h.mustExecute(in, "pop_eth,pop_nsh,"+push+",2")
	h.expectFrame(2, append(eth(header.EtherTypeIPv4), f[14:]...))
	// Over Ethernet: the inner frame.
	in = append(append(eth(header.EtherTypeNSH), nshHeader(nshNPEthernet)...), f...)
	h.mustExecute(in, "pop_eth,pop_nsh,2")
	h.expectFrame(2, f)
	// pop_nsh of the frame itself reads its Ethernet header as NSH, as
	// the kernel's nsh_pop: length 0 words, dropped.
	h.mustExecute(in, "pop_nsh,2")
	h.expectNone(2)
	if d := h.dp.Drops(); d.ActionErrors != 1 {
		t.Errorf("drops %+v, want 1 action error", d)
	}
}

// TestNSHValidation checks which NSH lists the kernel accepts and which
// it refuses: set(nsh) and its masked form are EINVAL, as Linux 6.1
// answers them.
func TestNSHValidation(t *testing.T) {
	h := newHarness(t, 2)
	ip := "in_port(1)," + anyEth + "eth_type(0x0800),ipv4(frag=no)"
	lldp := "in_port(1)," + anyEth + "eth_type(0x88cc)"
	nshKey := func(np int) string {
		return "in_port(1)," + anyEth + "eth_type(0x894f),nsh(np=" + itoa(uint32(np)) + ")"
	}
	const nsh = "push_nsh(flags=0,ttl=63,mdtype=1,np=3,spi=0x10,si=255,c1=0x1,c2=0x2,c3=0x3,c4=0x4)"
	for _, c := range []struct {
		key, acts string
		ok        bool
	}{
		{ip, nsh + ",2", true},
		{lldp, nsh + ",2", true}, // an Ethernet frame: any EtherType
		{lldp, "pop_eth," + nsh + ",2", false},
		{ip, "pop_eth," + nsh + ",2", true},
		{ip, nsh + ",push_vlan(vid=1,pcp=0),2", false}, // no Ethernet header
		{ip, "push_nsh(mdtype=2,np=3,spi=0x1,si=1),2", false},
		{ip, "pop_nsh,2", false},
		{nshKey(1), "pop_eth,pop_nsh,2", true},
		{nshKey(1), "pop_eth,pop_nsh,push_vlan(vid=1,pcp=0),2", false}, // L3 after it
		{nshKey(3), "pop_eth,pop_nsh,push_vlan(vid=1,pcp=0),2", true},  // Ethernet after it
		{nshKey(9), "pop_eth,pop_nsh,2", false},                        // unknown next protocol
	} {
		h.checkPut(c.key, c.acts, c.ok)
	}
	// set(nsh) (the text parser makes every set(nsh) masked, so these
	// are built), and MD2 the kernel would cut.
	base := odp.NSH{HasBase: true, MDType: 1, NP: 1, PathHdr: 0x503, HasMD1: true, Context: [4]uint32{1, 2, 3, 4}}
	mask := odp.NSH{HasBase: true, PathHdr: 0xffffffff, HasMD1: true}
	for _, c := range []struct {
		key  string
		acts odp.Actions
		want error
	}{
		{nshKey(1), odp.Actions{odp.Set{Key: base}, odp.Output{Port: 2}}, syscall.EINVAL},
		{nshKey(1), odp.Actions{odp.SetMasked{Key: base, Mask: mask}, odp.Output{Port: 2}}, syscall.EINVAL},
		{ip, odp.Actions{odp.Set{Key: base}, odp.Output{Port: 2}}, syscall.EINVAL}, // not NSH
		{ip, odp.Actions{odp.PushNSH{MDType: odp.NSHMDType2, MD2: []byte{1, 2, 3, 4, 5}}, odp.Output{Port: 2}}, odp.ErrUnsupported},
	} {
		k, m, err := odp.ParseMaskedKey(c.key)
		if err != nil {
			t.Fatal(err)
		}
		_, err = h.dp.PutFlow(context.Background(), &odp.Flow{Key: k, Mask: m, Actions: c.acts}, odp.PutCreate)
		if !errors.Is(err, c.want) {
			t.Errorf("%s actions %s: %v, want %v", c.key, c.acts, err, c.want)
		}
	}
}
