package userdp

import (
	"context"
	"errors"
	"syscall"
	"testing"

	"github.com/ovsdp/ovsdp/odp"
)

// TestActionValidationAsKernel checks the rules of the kernel's
// __ovs_nla_copy_actions that depend on the packet's state as the
// actions change it (its eth_type, vlan_tci and mpls_label_count).
func TestActionValidationAsKernel(t *testing.T) {
	h := newHarness(t, 2)
	ip := "in_port(1)," + anyEth + "eth_type(0x0800),ipv4(frag=no)"
	arp := "in_port(2)," + anyEth + "eth_type(0x0806),arp(sip=0.0.0.0/0.0.0.0)"
	lldp := "in_port(1)," + anyEth + "eth_type(0x88cc)"
	mpls := "in_port(1)," + anyEth + "eth_type(0x8847),mpls(label=5,tc=0,ttl=64,bos=1)"
	vlan := "in_port(1)," + anyEth + "eth_type(0x8100),vlan(vid=9),encap(eth_type(0x0800),ipv4(frag=no))"
	for _, c := range []struct {
		key, acts string
		ok        bool
	}{
		{arp, "dec_ttl(le_1(drop)),1", true}, // any EtherType
		{ip, "push_mpls(label=7,tc=0,ttl=64,bos=1,eth_type=0x8847),2", true},
		{arp, "push_mpls(label=7,tc=0,ttl=64,bos=1,eth_type=0x8847),1", true},
		{lldp, "push_mpls(label=7,tc=0,ttl=64,bos=1,eth_type=0x8847),2", false},
		{vlan, "push_mpls(label=7,tc=0,ttl=64,bos=1,eth_type=0x8847),2", false},
		{vlan, "pop_vlan,push_mpls(label=7,tc=0,ttl=64,bos=1,eth_type=0x8847),2", true},
		{ip, "push_vlan(vid=3,pcp=0),push_mpls(label=7,tc=0,ttl=64,bos=1,eth_type=0x8847),2", false},
		{mpls, "pop_mpls(eth_type=0x800),2", true},
		{mpls, "pop_mpls(eth_type=0x800),set(ipv4(ttl=3)),2", false},          // eth_type unknown after the last label
		{mpls, "pop_mpls(eth_type=0x8847),pop_mpls(eth_type=0x800),2", false}, // one label only
		{mpls, "push_mpls(label=8,tc=0,ttl=64,bos=0,eth_type=0x8847),pop_mpls(eth_type=0x8847),pop_mpls(eth_type=0x800),2", true},
	} {
		k, m, err := odp.ParseMaskedKey(c.key)
		if err != nil {
			t.Fatal(err)
		}
		a, err := odp.ParseActions(c.acts)
		if err != nil {
			t.Fatal(err)
		}
		_, err = h.dp.PutFlow(context.Background(), &odp.Flow{Key: k, Mask: m, Actions: a}, odp.PutCreate)
		switch {
		case c.ok && err != nil:
			t.Errorf("%s actions %s: %v, the kernel accepts it", c.key, c.acts, err)
		case !c.ok && !errors.Is(err, syscall.EINVAL):
			t.Errorf("%s actions %s: %v, the kernel says EINVAL", c.key, c.acts, err)
		}
		h.dp.FlushFlows(context.Background())
	}
	// dec_ttl leaves an ARP packet alone.
	h.put(arp, "dec_ttl(le_1(drop)),1")
	f := []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 2, 0, 0, 0, 0, 1, 0x08, 0x06, 0, 1, 8, 0, 6, 4, 0, 1, 2, 0, 0, 0, 0, 1, 10, 0, 0, 1, 0, 0, 0, 0, 0, 0, 10, 0, 0, 2, 0, 0}
	h.send(2, f)
	h.expectFrame(1, f)
}

// TestPushMPLSEtherTypeField checks where push_mpls writes its
// EtherType: in the Ethernet header's type field (skb_mpls_push's
// eth_hdr), which for an LLC/SNAP frame is the 802.3 length field, while
// the label goes after the SNAP header (the kernel's mac_len).
func TestPushMPLSEtherTypeField(t *testing.T) {
	h := newHarness(t, 2)
	h.put("in_port(1),"+anyEth+"eth_type(0x0800),ipv4(frag=no)", "push_mpls(label=7,tc=0,ttl=64,bos=1,eth_type=0x8847),2")
	in := snapFrame(udpFrame(1, 2, 1000), 3)
	h.send(1, in)
	want := append(append(append([]byte(nil), in[:12]...), 0x88, 0x47), in[14:22]...)
	want = append(append(want, 0, 0, 0x71, 0x40), in[22:]...)
	h.expectFrame(2, want)
}
