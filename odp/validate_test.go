package odp_test

import (
	"bytes"
	"errors"
	"strings"
	"syscall"
	"testing"

	"github.com/ovsdp/ovsdp/flowkeys"
	"github.com/ovsdp/ovsdp/odp"
)

var (
	eth      = odp.Ethernet{Src: [6]byte{2, 0, 0, 0, 0, 1}, Dst: [6]byte{2, 0, 0, 0, 0, 2}}
	ip4      = odp.IPv4{Src: [4]byte{10, 0, 0, 1}, Dst: [4]byte{10, 0, 0, 2}, Proto: 6, TTL: 64}
	ip6ICMP  = odp.IPv6{Src: [16]byte{0: 0xfe, 1: 0x80, 15: 1}, Proto: 58, HLimit: 255}
	tcpPorts = odp.TCP{Src: 1, Dst: 2}
)

func fk(a ...odp.KeyAttr) odp.FlowKey { return odp.FlowKey(a) }

// TestToFlowKeysRules: each kernel rejection with a key (and mask) that
// triggers it, next to an accepted neighbour. reason is a substring of
// the error; "" means accepted. mask nil means no mask attribute.
func TestToFlowKeysRules(t *testing.T) {
	tests := []struct {
		name      string
		key, mask odp.FlowKey
		reason    string
	}{
		{"ipv4 tcp with tcp_flags", fk(odp.InPort(1), eth, odp.Ethertype(0x0800), ip4, tcpPorts, odp.TCPFlags(0)), nil, ""},
		{"ipv4 tcp without tcp_flags", fk(odp.InPort(1), eth, odp.Ethertype(0x0800), ip4, tcpPorts), nil, "missing key attribute tcp_flags"},
		{"ipv4 without ipv4", fk(eth, odp.Ethertype(0x0800)), nil, "missing key attribute ipv4"},
		{"ipv4 later fragment without l4", fk(eth, odp.Ethertype(0x0800), odp.IPv4{Proto: 6, Frag: 2}), nil, ""},
		{"ipv4 first fragment needs l4", fk(eth, odp.Ethertype(0x0800), odp.IPv4{Proto: 17, Frag: 1}), nil, "missing key attribute udp"},
		{"frag type 3", fk(eth, odp.Ethertype(0x0800), odp.IPv4{Proto: 47, Frag: 3}), nil, "IPv4 frag type 3 is out of range"},
		{"ipv6 frag type 3", fk(eth, odp.Ethertype(0x86dd), odp.IPv6{Proto: 47, Frag: 3}), nil, "IPv6 frag type 3 is out of range"},
		{"ipv6 label 20 bits", fk(eth, odp.Ethertype(0x86dd), odp.IPv6{Proto: 47, Label: 0xfffff}), nil, ""},
		{"ipv6 label 21 bits", fk(eth, odp.Ethertype(0x86dd), odp.IPv6{Proto: 47, Label: 0x100000}), nil, "IPv6 flow label 100000 is out of range"},
		{"in_port 65534", fk(odp.InPort(65534), eth), nil, ""},
		{"in_port 65535", fk(odp.InPort(65535), eth), nil, "port 65535 exceeds max allowable 65535"},
		{"eth_type 0x600", fk(eth, odp.Ethertype(0x0600)), nil, ""},
		{"eth_type 0x5ff", fk(eth, odp.Ethertype(0x05ff)), nil, "EtherType 5ff is less than min 600"},
		{"l3 eth_type 0x5ff", fk(odp.Ethertype(0x05ff)), nil, "EtherType 5ff is less than min 600"},
		{"l3 ipv4", fk(odp.Ethertype(0x0800), ip4, tcpPorts, odp.TCPFlags(0)), nil, ""},
		{"neither eth nor eth_type", fk(odp.InPort(1)), nil, "either Ethernet header or EtherType is required"},
		{"802.2 (eth only)", fk(eth), nil, ""},
		{"vlan", fk(eth, odp.Ethertype(0x8100), odp.VLAN(0x1005), odp.Encap{Key: fk(odp.Ethertype(0x0806), odp.ARP{Op: 1})}), nil, ""},
		{"vlan eth_type without vlan", fk(eth, odp.Ethertype(0x8100)), nil, "invalid VLAN frame"},
		{"vlan without encap", fk(eth, odp.Ethertype(0x8100), odp.VLAN(0x1005)), nil, "invalid VLAN frame"},
		{"vlan tci without CFI", fk(eth, odp.Ethertype(0x8100), odp.VLAN(0x0005), odp.Encap{}), nil, "TCI does not have VLAN_CFI_MASK bit set"},
		// The empty encap of a truncated tag is all zero, so as a
		// mask attribute it counts as absent, and the mask's vlan is
		// then unexpected: the kernel takes this key only with a
		// mask that leaves vlan out.
		{"truncated vlan, exact", fk(eth, odp.Ethertype(0x8100), odp.VLAN(0), odp.Encap{}), nil, "VLAN attribute unexpected"},
		{"truncated vlan, mask without vlan", fk(eth, odp.Ethertype(0x8100), odp.VLAN(0), odp.Encap{}), fk(odp.Ethertype(0xffff)), ""},
		{"truncated vlan, non-empty encap", fk(eth, odp.Ethertype(0x8100), odp.VLAN(0), odp.Encap{Key: fk(odp.Ethertype(0x0800))}), nil, "truncated VLAN header has non-zero encap attribute"},
		{"vlan without vlan eth_type", fk(eth, odp.Ethertype(0x0806), odp.VLAN(0x1005), odp.ARP{}), nil, "VLAN attribute unexpected"},
		{"inner C-VLAN without CFI", fk(eth, odp.Ethertype(0x88a8), odp.VLAN(0x1005), odp.Encap{Key: fk(odp.Ethertype(0x8100), odp.VLAN(5), odp.Encap{})}), nil, "C-VLAN TCI does not have VLAN_CFI_MASK"},
		{"duplicate across encap", fk(eth, odp.InPort(1), odp.Ethertype(0x8100), odp.VLAN(0x1005), odp.Encap{Key: fk(odp.InPort(2), odp.Ethertype(0x0806), odp.ARP{})}), nil, "duplicate key (type 3)"},
		{"duplicate", fk(odp.InPort(1), odp.InPort(1), eth), nil, "duplicate key (type 3)"},
		{"packet_type", fk(eth, odp.PacketType{}), nil, "key type 29 is not supported"},
		{"type 33", fk(eth, odp.UnknownKey{Type: 33, Data: []byte{1, 2, 3, 4}}), nil, "key type 33 is out of range max 32"},
		{"wrong length", fk(eth, odp.UnknownKey{Type: odp.KeyPriority, Data: []byte{1, 2}}), nil, "key 2 has unexpected len 2 expected 4"},
		{"zero-length unspec", fk(eth, odp.UnknownKey{Type: 0}), nil, "unknown key attributes 1"},
		{"arp op 255", fk(eth, odp.Ethertype(0x0806), odp.ARP{Op: 255}), nil, ""},
		{"arp op 256", fk(eth, odp.Ethertype(0x0806), odp.ARP{Op: 256}), nil, "unknown ARP opcode (opcode=256)"},
		{"arp without arp", fk(eth, odp.Ethertype(0x0806)), nil, "missing key attribute arp"},
		{"ipv4 attr in an arp key (exact mask)", fk(eth, odp.Ethertype(0x0806), odp.ARP{}, ip4), nil, "unexpected mask attribute ipv4"},
		{"mpls 3 labels", fk(eth, odp.Ethertype(0x8847), odp.MPLS{1, 2, 0x100}), nil, ""},
		{"mpls 4 labels", fk(eth, odp.Ethertype(0x8847), odp.MPLS{1, 2, 3, 0x100}), nil, "want 1 to 3 labels"},
		{"mpls 0 labels", fk(eth, odp.Ethertype(0x8847), odp.MPLS{}), nil, "want 1 to 3 labels"},
		{"ct_state 0xff", fk(eth, odp.CTState(0xff)), nil, ""},
		{"ct_state 0x100", fk(eth, odp.CTState(0x100)), nil, "ct_state flags 00000100 unsupported"},
		{"nd for NS", fk(eth, odp.Ethertype(0x86dd), ip6ICMP, odp.ICMPv6{Type: 135}, odp.ND{}), nil, ""},
		{"NS without nd", fk(eth, odp.Ethertype(0x86dd), ip6ICMP, odp.ICMPv6{Type: 135}), nil, "missing key attribute nd"},
		{"ct_tuple6 with nd", fk(eth, odp.CTTupleIPv6{Proto: 58}, odp.Ethertype(0x86dd), ip6ICMP, odp.ICMPv6{Type: 136}, odp.ND{}), nil, "unexpected mask attribute ct_tuple6"},
		{"nsh md1", fk(eth, odp.Ethertype(0x894f), odp.NSH{HasBase: true, MDType: 1, HasMD1: true}), nil, ""},
		{"nsh md1 with md type 2", fk(eth, odp.Ethertype(0x894f), odp.NSH{HasBase: true, MDType: 2, HasMD1: true}), nil, "unmatched MD type 2"},
		{"nsh md2", fk(eth, odp.Ethertype(0x894f), odp.NSH{HasBase: true, MDType: 2, MD2: []byte{0, 0, 0, 0}}), nil, "MD type 2 is not supported"},
		{"tunnel", fk(odp.Tunnel{Present: odp.TunnelHasIPv4Dst | odp.TunnelHasTTL, IPv4Dst: [4]byte{1, 2, 3, 4}, TTL: 64}, eth), nil, ""},
		{"tunnel without ttl", fk(odp.Tunnel{Present: odp.TunnelHasIPv4Dst, IPv4Dst: [4]byte{1, 2, 3, 4}}, eth), nil, "IP tunnel TTL not specified"},
		{"tunnel without address", fk(odp.Tunnel{Present: odp.TunnelHasTTL, TTL: 64}, eth), nil, "IP tunnel dst address not specified"},
		{"tunnel zero dst", fk(odp.Tunnel{Present: odp.TunnelHasIPv4Src | odp.TunnelHasTTL, IPv4Src: [4]byte{1, 2, 3, 4}, TTL: 64}, eth), nil, "IPv4 tunnel dst address is zero"},
		{"tunnel v4 and v6", fk(odp.Tunnel{Present: odp.TunnelHasIPv4Dst | odp.TunnelHasIPv6Dst | odp.TunnelHasTTL, IPv4Dst: [4]byte{1}, IPv6Dst: [16]byte{1}, TTL: 1}, eth), nil, "mixed IPv4 and IPv6"},
		{"tunnel vxlan gbp", fk(odp.Tunnel{Present: odp.TunnelHasIPv4Dst | odp.TunnelHasTTL | odp.TunnelHasVXLAN, IPv4Dst: [4]byte{1}, TTL: 1, VXLANGBP: 7}, eth), nil, ""},
		{"tunnel geneve odd length", fk(odp.Tunnel{Present: odp.TunnelHasIPv4Dst | odp.TunnelHasTTL | odp.TunnelHasGeneve, IPv4Dst: [4]byte{1}, TTL: 1, Geneve: []byte{1, 2, 3}}, eth), nil, "Geneve opt len 3 is not a multiple of 4"},

		// Masks.
		{"ipv4 mask with exact eth_type", fk(eth, odp.Ethertype(0x0800), ip4, tcpPorts, odp.TCPFlags(0)),
			fk(odp.Ethertype(0xffff), odp.IPv4{Src: [4]byte{255, 255, 255, 0}}), ""},
		{"ipv4 mask with wildcarded eth_type", fk(eth, odp.Ethertype(0x0800), ip4, tcpPorts, odp.TCPFlags(0)),
			fk(odp.IPv4{Src: [4]byte{255, 255, 255, 0}}), "unexpected mask attribute ipv4"},
		{"tcp mask with exact proto", fk(eth, odp.Ethertype(0x0800), ip4, tcpPorts, odp.TCPFlags(0)),
			fk(odp.Ethertype(0xffff), odp.IPv4{Proto: 0xff}, odp.TCP{Dst: 0xffff}), ""},
		{"tcp mask with partial proto", fk(eth, odp.Ethertype(0x0800), ip4, tcpPorts, odp.TCPFlags(0)),
			fk(odp.Ethertype(0xffff), odp.IPv4{Proto: 0xfe}, odp.TCP{Dst: 0xffff}), "unexpected mask attribute tcp"},
		{"nd mask with exact icmpv6 type", fk(eth, odp.Ethertype(0x86dd), ip6ICMP, odp.ICMPv6{Type: 135}, odp.ND{}),
			fk(odp.Ethertype(0xffff), odp.IPv6{Proto: 0xff}, odp.ICMPv6{Type: 0xff}, odp.ND{Target: [16]byte{0xff}}), ""},
		{"nd mask with wildcarded icmpv6 type", fk(eth, odp.Ethertype(0x86dd), ip6ICMP, odp.ICMPv6{Type: 135}, odp.ND{}),
			fk(odp.Ethertype(0xffff), odp.IPv6{Proto: 0xff}, odp.ICMPv6{Code: 0xff}, odp.ND{Target: [16]byte{0xff}}), "unexpected mask attribute nd"},
		{"vlan mask", fk(eth, odp.Ethertype(0x8100), odp.VLAN(0x1005), odp.Encap{Key: fk(odp.Ethertype(0x0806), odp.ARP{})}),
			fk(odp.Ethertype(0xffff), odp.VLAN(0x1fff), odp.Encap{Key: fk(odp.Ethertype(0xffff))}), ""},
		{"vlan mask, tpid not exact", fk(eth, odp.Ethertype(0x8100), odp.VLAN(0x1005), odp.Encap{Key: fk(odp.Ethertype(0x0806), odp.ARP{})}),
			fk(odp.Ethertype(0xff00), odp.VLAN(0x1fff), odp.Encap{Key: fk(odp.Ethertype(0xffff))}), "must have an exact match on VLAN TPID"},
		{"vlan mask without CFI", fk(eth, odp.Ethertype(0x8100), odp.VLAN(0x1005), odp.Encap{Key: fk(odp.Ethertype(0x0806), odp.ARP{})}),
			fk(odp.Ethertype(0xffff), odp.VLAN(0x0fff), odp.Encap{Key: fk(odp.Ethertype(0xffff))}), "TCI mask does not have exact match for VLAN_CFI_MASK"},
		{"encap mask for untagged key", fk(eth, odp.Ethertype(0x0806), odp.ARP{}),
			fk(odp.Ethertype(0xffff), odp.Encap{Key: fk(odp.Ethertype(0xffff))}), "encap mask attribute is set for non-VLAN frame"},
		{"mask attribute not in key", fk(eth, odp.Ethertype(0x0806), odp.ARP{}),
			fk(odp.SkbMark(1)), "unexpected mask attribute skb_mark"},
		{"zero mask attribute not in key", fk(eth, odp.Ethertype(0x0806), odp.ARP{}),
			fk(odp.SkbMark(0)), ""},
		{"in_port mask always allowed", fk(eth), fk(odp.InPort(0xffffffff)), ""},
		{"ct_state mask 0x100", fk(eth, odp.CTState(1)), fk(odp.CTState(0x100)), "ct_state flags 00000100 unsupported"},
	}
	for _, tc := range tests {
		_, _, err := odp.ToFlowKeys(tc.key, tc.mask)
		if tc.reason == "" {
			if err != nil {
				t.Errorf("%s: %s / %v: rejected: %v", tc.name, tc.key, tc.mask, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("%s: %s / %v: accepted, want %q", tc.name, tc.key, tc.mask, tc.reason)
			continue
		}
		if !errors.Is(err, syscall.EINVAL) || !strings.Contains(err.Error(), tc.reason) {
			t.Errorf("%s: error %q (EINVAL %v), want EINVAL with %q", tc.name, err, errors.Is(err, syscall.EINVAL), tc.reason)
		}
		var ke *odp.KeyError
		if !errors.As(err, &ke) || ke.Attr == "" {
			t.Errorf("%s: error %v is not a *KeyError naming an attribute", tc.name, err)
		}
	}
}

// TestToFlowKeysValues checks what ToFlowKeys fills in: the exact mask
// of a key without mask attribute, the always-exact fields, masking.
func TestToFlowKeysValues(t *testing.T) {
	key := fk(odp.InPort(3), eth, odp.Ethertype(0x0800), odp.IPv4{Src: [4]byte{10, 1, 2, 3}, Proto: 17, TTL: 9}, odp.UDP{Src: 5, Dst: 6})
	k, m, err := odp.ToFlowKeys(key, nil)
	if err != nil {
		t.Fatal(err)
	}
	if k.InPort != 3 || m.InPort != 0xffff || k.EthType != 0x0800 || m.EthType != 0xffff ||
		m.MacProto != 0xff || k.MacProto != flowkeys.MacProtoEthernet || m.IPTTL != 0xff || k.IPTTL != 9 ||
		m.TpSrc != 0xffff || k.TpDst != 6 || m.VLANTCI != 0xffff || m.CVLANTCI != 0xffff || m.SkbMark != 0 {
		t.Errorf("exact flow: key %+v\nmask %+v", k, m)
	}
	mask := fk(odp.Ethertype(0xffff), odp.IPv4{Src: [4]byte{255, 255, 0, 0}, Proto: 0xff}, odp.UDP{Dst: 0xff00})
	k, m, err = odp.ToFlowKeys(key, mask)
	if err != nil {
		t.Fatal(err)
	}
	if m.InPort != 0 || k.InPort != 0 || k.IPv4Src != [4]byte{10, 1, 0, 0} || k.IPTTL != 0 || m.TpDst != 0xff00 || k.TpDst != 0 || k.TpSrc != 0 {
		t.Errorf("masked flow: key %+v\nmask %+v", k, m)
	}
	// No in_port: the kernel's key has DP_MAX_PORTS, masked to 0.
	k, err = odp.ToFlowKeysExact(fk(eth))
	if err != nil || k.InPort != odp.DPMaxPorts || k.EthType != flowkeys.EthType8022 {
		t.Errorf("ToFlowKeysExact(eth()) = %+v, %v", k, err)
	}
	// Tunnels: an exact flow matches every tunnel field.
	tk := fk(odp.Tunnel{Present: odp.TunnelHasID | odp.TunnelHasIPv4Dst | odp.TunnelHasTTL, ID: 7, IPv4Dst: [4]byte{1, 2, 3, 4}, TTL: 3, Flags: odp.TunnelCSUM}, eth)
	k, m, err = odp.ToFlowKeys(tk, nil)
	if err != nil || k.TunProto != flowkeys.TunProtoIPv4 || m.TunProto != 0xff || m.TunTOS != 0xff || m.TunIPv4Src != [4]byte{255, 255, 255, 255} ||
		k.TunID != 7 || k.TunFlags != odp.KernelTunnelKey|odp.KernelTunnelCSUM || m.TunFlags != odp.KernelTunnelKey|odp.KernelTunnelCSUM {
		t.Errorf("tunnel flow: %v\nkey %+v\nmask %+v", err, k, m)
	}
}

// geneveTun is a tunnel attribute with Geneve options opts (nil: none).
func geneveTun(opts []byte) odp.Tunnel {
	t := odp.Tunnel{Present: odp.TunnelHasIPv4Dst | odp.TunnelHasTTL, IPv4Dst: [4]byte{1, 2, 3, 4}, TTL: 64}
	if opts != nil {
		t.Present |= odp.TunnelHasGeneve
		t.Geneve = opts
	}
	return t
}

// TestToFlowKeysGeneveOpts: Geneve options are held in the key
// (genev_tun_opt_from_nlattr): the key's bytes and length, a mask's
// bytes with an exact length; the kernel's rules on them; and a flow's
// dump (KeyFromFlowKeys, MaskFromFlowKeys) gives them back.
func TestToFlowKeysGeneveOpts(t *testing.T) {
	opt := []byte{0x01, 0x02, 0x80, 0x01, 0xde, 0xad, 0xbe, 0xef} // class 0x102, type 0x80, 4 bytes
	key := fk(geneveTun(opt), odp.InPort(1), eth, odp.Ethertype(0x88b5))
	k, m, err := odp.ToFlowKeys(key, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(k.TunOptsBytes(), opt) || k.TunFlags&odp.KernelTunnelGeneveOpt == 0 {
		t.Errorf("exact flow: key options %x (len %d, flags %#x), want %x", k.TunOptsBytes(), k.TunOptsLen, k.TunFlags, opt)
	}
	if m.TunOptsLen != 0xff || !bytes.Equal(m.TunOpts[:len(opt)], bytes.Repeat([]byte{0xff}, len(opt))) || m.TunOpts[len(opt)] != 0 {
		t.Errorf("exact flow: mask options %x (len %#x), want %d bytes of 0xff and length 0xff", m.TunOpts[:16], m.TunOptsLen, len(opt))
	}
	if got := odp.FormatKey(odp.KeyFromFlowKeys(&k), odp.MaskFromFlowKeys(&m, &k), false); !strings.Contains(got, "geneve({class=0x102,type=0x80,len=4,0xdeadbeef})") {
		t.Errorf("dump of the exact flow: %s", got)
	}
	if r := m.Range(); r.End != flowkeys.KeyHeadWords+1 {
		t.Errorf("mask on 8 option bytes has range %v, want it to end at word %d", r, flowkeys.KeyHeadWords+1)
	}

	// A mask on the option's value only: the key keeps the bytes the
	// mask has, the dump puts them back.
	mask := fk(odp.Tunnel{Present: odp.TunnelHasIPv4Dst | odp.TunnelHasTTL | odp.TunnelHasGeneve, IPv4Dst: [4]byte{255, 255, 255, 255},
		Geneve: []byte{0, 0, 0, 0, 0xff, 0xff, 0, 0}}, odp.InPort(0xffff), odp.Ethernet{}, odp.Ethertype(0xffff))
	k, m, err = odp.ToFlowKeys(key, mask)
	if err != nil {
		t.Fatal(err)
	}
	if want := []byte{0, 0, 0, 0, 0xde, 0xad, 0, 0}; !bytes.Equal(k.TunOptsBytes(), want) || m.TunOptsLen != 0xff {
		t.Errorf("masked flow: key options %x, want %x; mask length %#x", k.TunOptsBytes(), want, m.TunOptsLen)
	}
	dk, dm := odp.KeyFromFlowKeys(&k), odp.MaskFromFlowKeys(&m, &k)
	k2, m2, err := odp.ToFlowKeys(dk, dm)
	if err != nil || k2 != k || m2 != m {
		t.Errorf("dump and put again of %s: %v (changed: %v)", odp.FormatKey(dk, dm, false), err, k2 != k || m2 != m)
	}

	// A mask whose tunnel leaves the options out wildcards them (and
	// their length).
	k, m, err = odp.ToFlowKeys(key, fk(odp.Tunnel{Present: odp.TunnelHasIPv4Dst, IPv4Dst: [4]byte{255, 255, 255, 255}}, odp.Ethernet{}))
	if err != nil || k.TunOptsLen != 0 || m.TunOptsLen != 0 || k.TunOpts != ([flowkeys.TunOptsMax]byte{}) || m.Range().End > flowkeys.KeyHeadWords {
		t.Errorf("mask without options: %v; key options %x, mask length %#x, range %v", err, k.TunOptsBytes(), m.TunOptsLen, m.Range())
	}

	// The upcall path: the key's options, no mask.
	ek, err := odp.ToFlowKeysExact(key)
	if err != nil || !bytes.Equal(ek.TunOptsBytes(), opt) {
		t.Errorf("ToFlowKeysExact: %v, options %x", err, ek.TunOptsBytes())
	}
	if back := odp.FormatKey(odp.KeyFromFlowKeys(&ek), nil, true); !strings.Contains(back, "geneve({class=0x102,type=0x80,len=4,0xdeadbeef})") {
		t.Errorf("KeyFromFlowKeys of an upcall key lost its options: %s", back)
	}

	// An empty geneve(): the flow matches packets without options (its
	// mask has the length), and dumps without geneve(), as Linux 6.1's
	// (it puts options only for a key that has some; seen in the VM).
	k, m, err = odp.ToFlowKeys(fk(geneveTun([]byte{}), odp.InPort(1), eth, odp.Ethertype(0x88b5)), nil)
	if err != nil || k.TunOptsLen != 0 || m.TunOptsLen != 0xff || k.TunFlags&odp.KernelTunnelGeneveOpt == 0 {
		t.Errorf("geneve(): %v; key length %d flags %#x, mask length %#x", err, k.TunOptsLen, k.TunFlags, m.TunOptsLen)
	}
	if got := odp.FormatKey(odp.KeyFromFlowKeys(&k), odp.MaskFromFlowKeys(&m, &k), false); strings.Contains(got, "geneve") {
		t.Errorf("the flow of geneve() dumps as %s, want no geneve()", got)
	}

	// The longest options: 252 bytes.
	long := make([]byte, flowkeys.TunOptsMax)
	long[0], long[1], long[2], long[3] = 0, 1, 2, 31 // one option of 31 words
	long[flowkeys.TunOptsMax-1] = 0x77
	k, _, err = odp.ToFlowKeys(fk(geneveTun(long), eth), nil)
	if err != nil || !bytes.Equal(k.TunOptsBytes(), long) {
		t.Errorf("252 bytes of options: %v, %d bytes back", err, len(k.TunOptsBytes()))
	}

	// The kernel's EINVALs.
	for _, c := range []struct {
		name      string
		key, mask odp.FlowKey
		reason    string
	}{
		{"256 bytes", fk(geneveTun(make([]byte, 256)), eth), nil, "Geneve option length err (len 256, max 255)"},
		{"6 bytes", fk(geneveTun(make([]byte, 6)), eth), nil, "Geneve opt len 6 is not a multiple of 4"},
		{"mask longer than key", key, fk(geneveTun(make([]byte, 12)), odp.Ethernet{}), "Geneve option len 8 != mask len 12"},
		{"mask shorter than key", key, fk(geneveTun(make([]byte, 4)), odp.Ethernet{}), "Geneve option len 8 != mask len 4"},
		{"mask options, key without", fk(geneveTun(nil), eth), fk(geneveTun(opt), odp.Ethernet{}), "Geneve option len 0 != mask len 8"},
		{"two option blocks", fk(odp.Tunnel{Present: odp.TunnelHasIPv4Dst | odp.TunnelHasTTL | odp.TunnelHasGeneve | odp.TunnelHasVXLAN,
			IPv4Dst: [4]byte{1}, TTL: 1, Geneve: opt}, eth), nil, "multiple metadata blocks"},
	} {
		_, _, err := odp.ToFlowKeys(c.key, c.mask)
		if !errors.Is(err, syscall.EINVAL) || !strings.Contains(err.Error(), c.reason) {
			t.Errorf("%s: %v, want EINVAL with %q", c.name, err, c.reason)
		}
	}
}

// TestToFlowKeysExactRules: the execute/upcall path accepts the kernel's
// own truncated forms but keeps the metadata rules.
func TestToFlowKeysExactRules(t *testing.T) {
	for _, key := range []odp.FlowKey{
		fk(eth, odp.Ethertype(0), odp.VLAN(0), odp.Encap{}),
		fk(eth, odp.Ethertype(0x8847), odp.MPLS{}),
		fk(eth, odp.Ethertype(0x0800), ip4, tcpPorts), // no tcp_flags
		fk(eth, odp.Ethertype(0x0800), odp.IPv4{Frag: 7}),
	} {
		if _, err := odp.ToFlowKeysExact(key); err != nil {
			t.Errorf("ToFlowKeysExact(%s): %v", key, err)
		}
	}
	for _, tc := range []struct {
		key    odp.FlowKey
		reason string
	}{
		{fk(odp.InPort(65535), eth), "exceeds max allowable"},
		{fk(odp.CTState(0x100), eth), "unsupported"},
		{fk(odp.Ethertype(0x100)), "less than min"},
		{fk(odp.Tunnel{Present: odp.TunnelHasTTL, TTL: 1}, eth), "dst address not specified"},
		{fk(eth, odp.InPort(1), odp.InPort(2)), "duplicate"},
		{fk(eth, odp.UnknownKey{Type: 31, Data: []byte{}}), "not supported"},
	} {
		_, err := odp.ToFlowKeysExact(tc.key)
		if !errors.Is(err, syscall.EINVAL) || !strings.Contains(err.Error(), tc.reason) {
			t.Errorf("ToFlowKeysExact(%s): %v, want EINVAL with %q", tc.key, err, tc.reason)
		}
	}
}

// FuzzToFlowKeys: decoded random attributes never make ToFlowKeys or
// ToFlowKeysExact panic; an accepted flow dumps (KeyFromFlowKeys,
// MaskFromFlowKeys) to attributes that encode, and converting its dump
// is stable: dump, put, dump, put gives the same key and mask as the
// first put of the dump.
func FuzzToFlowKeys(f *testing.F) {
	seeds := []string{
		"in_port(1),eth(),eth_type(0x0800),ipv4(src=10.0.0.0/255.0.0.0,proto=6,frag=no),tcp(dst=80),tcp_flags(0/0)",
		"in_port(2),eth(dst=01:00:00:00:00:00/01:00:00:00:00:00),eth_type(0x8100),vlan(vid=5,pcp=0),encap(eth_type(0x0806),arp(op=1))",
		"skb_mark(0x5/0xf),eth(),eth_type(0x86dd),ipv6(proto=58,frag=no),icmpv6(type=135),nd(target=::1)",
		"tunnel(tun_id=0x5,dst=1.2.3.4,ttl=64),eth(),eth_type(0x8847),mpls(label=5,tc=0,ttl=1,bos=1)",
		"tunnel(tun_id=0x5,dst=1.2.3.4,ttl=64,geneve({class=0x102,type=0x80,len=4,0xdeadbeef/0xffff0000}),flags(key)),in_port(3),eth()",
		"tunnel(dst=1.2.3.4,ttl=64,geneve({class=0xffff,type=0x1,len=0}{class=0x1,type=0x2,len=8,0x0102030405060708}),flags(+key)),eth()",
		"tunnel(src=1.1.1.1,dst=2.2.2.2,ttl=64,erspan(ver=1,idx=0x7/0xff)),in_port(1),eth(),eth_type(0x0800),ipv4(frag=no)",
		"tunnel(tun_id=0x3,dst=2.2.2.2,ttl=64,erspan(ver=2,dir=1/0x1,hwid=0x5/0xf),flags(+key)),eth(),eth_type(0x86dd),ipv6(frag=no)",
	}
	for _, s := range seeds {
		key, mask, err := odp.ParseMaskedKey(s)
		if err != nil {
			f.Fatalf("seed %s: %v", s, err)
		}
		kb, _ := odp.MarshalKey(key)
		mb, _ := odp.MarshalKey(mask)
		f.Add(kb, mb, true)
		f.Add(kb, []byte(nil), false)
	}
	f.Fuzz(func(t *testing.T, kb, mb []byte, haveMask bool) {
		key, err := odp.UnmarshalKey(kb)
		if err != nil {
			return
		}
		var mask odp.FlowKey
		if haveMask {
			if mask, err = odp.UnmarshalKey(mb); err != nil {
				return
			}
			if mask == nil {
				mask = odp.FlowKey{}
			}
		}
		odp.ToFlowKeysExact(key)
		k, m, err := odp.ToFlowKeys(key, mask)
		if err != nil {
			var ke *odp.KeyError
			if !errors.As(err, &ke) {
				t.Fatalf("error %v is not a *KeyError", err)
			}
			return
		}
		k1, m1, err := odp.ToFlowKeys(key, mask)
		if err != nil || k1 != k || m1 != m {
			t.Fatalf("ToFlowKeys is not deterministic")
		}
		dk, dm := odp.KeyFromFlowKeys(&k), odp.MaskFromFlowKeys(&m, &k)
		if _, err := odp.MarshalKey(dk); err != nil {
			t.Fatalf("dumped key %s does not encode: %v", dk, err)
		}
		if _, err := odp.MarshalKey(dm); err != nil {
			t.Fatalf("dumped mask %s does not encode: %v", dm, err)
		}
		k2, m2, err := odp.ToFlowKeys(dk, dm)
		if err != nil {
			return // the kernel does not take back every dump either
		}
		k3, m3, err := odp.ToFlowKeys(odp.KeyFromFlowKeys(&k2), odp.MaskFromFlowKeys(&m2, &k2))
		if err != nil || k3 != k2 || m3 != m2 {
			t.Fatalf("dump/put is not stable for %s / %s: %v\nkey  %+v\n  -> %+v\nmask %+v\n  -> %+v",
				odp.FormatKey(key, nil, true), odp.FormatKey(mask, nil, true), err, k2, k3, m2, m3)
		}
	})
}

// erspanTun is a tunnel key with the given ERSPAN option attribute:
// raw bytes as OVS_TUNNEL_KEY_ATTR_ERSPAN_OPTS (any length, as the
// kernel takes), or nil for none.
func erspanTun(raw []byte) odp.Tunnel {
	t := geneveTun(nil)
	if raw != nil {
		t.Unknown = []odp.UnknownKey{{Type: 15, Data: raw}}
	}
	return t
}

// erspanV1 is struct erspan_metadata for version 1 with index idx.
func erspanV1(idx uint32) []byte {
	return []byte{1, 0, 0, 0, byte(idx >> 24), byte(idx >> 16), byte(idx >> 8), byte(idx), 0, 0, 0, 0}
}

// TestToFlowKeysERSPAN: ERSPAN options in flows as Linux 6.1's
// erspan_tun_opt_from_nlattr takes them: the 12 bytes of struct
// erspan_metadata in TunOpts with TUNNEL_ERSPAN_OPT, tun_opts_len 12
// (0xff in the mask), an attribute of another length right-aligned in
// those 12 bytes, and the dump as the kernel's (then ovs-dpctl's text).
func TestToFlowKeysERSPAN(t *testing.T) {
	md := erspanV1(7)
	key := fk(erspanTun(md), odp.InPort(1), eth, odp.Ethertype(0x88b5))
	k, m, err := odp.ToFlowKeys(key, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(k.TunOptsBytes(), md) || k.TunFlags&odp.KernelTunnelERSPANOpt == 0 || k.TunFlags&odp.KernelTunnelGeneveOpt != 0 {
		t.Errorf("exact flow: key options %x (len %d, flags %#x), want %x with TUNNEL_ERSPAN_OPT", k.TunOptsBytes(), k.TunOptsLen, k.TunFlags, md)
	}
	if m.TunOptsLen != 0xff || !bytes.Equal(m.TunOpts[:12], bytes.Repeat([]byte{0xff}, 12)) || m.TunOpts[12] != 0 {
		t.Errorf("exact flow: mask options %x (len %#x), want 12 bytes of 0xff and length 0xff", m.TunOpts[:16], m.TunOptsLen)
	}
	if got := odp.FormatKey(odp.KeyFromFlowKeys(&k), odp.MaskFromFlowKeys(&m, &k), false); !strings.Contains(got, "erspan(ver=1,idx=0x7/0xffffffff)") {
		t.Errorf("dump of the exact flow: %s", got)
	}
	if got := odp.FormatKey(odp.KeyFromFlowKeys(&k), nil, false); !strings.Contains(got, "erspan(ver=1,idx=0x7)") {
		t.Errorf("dump of the exact key: %s", got)
	}
	exactMask := m

	// A mask on the index's low byte: the key keeps it, the dump puts
	// it back.
	mask := fk(odp.Tunnel{Present: odp.TunnelHasIPv4Dst | odp.TunnelHasTTL, IPv4Dst: [4]byte{255, 255, 255, 255},
		Unknown: []odp.UnknownKey{{Type: 15, Data: []byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0xff, 0, 0, 0, 0}}}},
		odp.InPort(0xffff), odp.Ethernet{}, odp.Ethertype(0xffff))
	k, m, err = odp.ToFlowKeys(fk(erspanTun(erspanV1(0x1234)), odp.InPort(1), eth, odp.Ethertype(0x88b5)), mask)
	if err != nil {
		t.Fatal(err)
	}
	if want := erspanV1(0x34); !bytes.Equal(k.TunOptsBytes(), want) || m.TunOptsLen != 0xff {
		t.Errorf("masked flow: key options %x, want %x; mask length %#x", k.TunOptsBytes(), want, m.TunOptsLen)
	}
	dk, dm := odp.KeyFromFlowKeys(&k), odp.MaskFromFlowKeys(&m, &k)
	if got := odp.FormatKey(dk, dm, false); !strings.Contains(got, "erspan(ver=1,idx=0x34/0xff)") {
		t.Errorf("dump of the masked flow: %s", got)
	}
	if k2, m2, err := odp.ToFlowKeys(dk, dm); err != nil || k2 != k || m2 != m {
		t.Errorf("dump and put again of %s: %v (changed: %v)", odp.FormatKey(dk, dm, false), err, k2 != k || m2 != m)
	}

	// hwid_upper is matched but not shown, as format_odp_tun_erspan_opt.
	v2 := []byte{2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01, 0x78}
	k, m, err = odp.ToFlowKeys(fk(erspanTun(v2), eth), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := odp.FormatKey(odp.KeyFromFlowKeys(&k), nil, false); !strings.Contains(got, "erspan(ver=2,dir=1,hwid=0x7)") {
		t.Errorf("hwid_upper 1, hwid 7 dumps as %s", got)
	}
	if !bytes.Equal(k.TunOptsBytes(), v2) {
		t.Errorf("v2 key options %x, want %x", k.TunOptsBytes(), v2)
	}

	// A mask without the options wildcards them and their length; the
	// dump then has no erspan().
	k, m, err = odp.ToFlowKeys(key, fk(odp.Tunnel{Present: odp.TunnelHasIPv4Dst, IPv4Dst: [4]byte{255, 255, 255, 255}}, odp.Ethernet{}))
	if err != nil || k.TunOptsLen != 0 || m.TunOptsLen != 0 || k.TunOpts != ([flowkeys.TunOptsMax]byte{}) || m.Range().End > flowkeys.KeyHeadWords {
		t.Errorf("mask without options: %v; key options %x, mask length %#x, range %v", err, k.TunOptsBytes(), m.TunOptsLen, m.Range())
	}
	if got := odp.FormatKey(odp.KeyFromFlowKeys(&k), odp.MaskFromFlowKeys(&m, &k), false); strings.Contains(got, "erspan") {
		t.Errorf("a flow with the options wildcarded dumps as %s", got)
	}

	// An attribute shorter than 12 bytes fills the last bytes of the
	// 12; the version stays zero.
	k, m, err = odp.ToFlowKeys(fk(erspanTun([]byte{0, 0, 0, 7, 0, 0, 0, 0}), eth), nil)
	want := []byte{0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 0}
	if err != nil || !bytes.Equal(k.TunOptsBytes(), want) || m.TunOptsLen != 0xff ||
		!bytes.Equal(m.TunOpts[:12], []byte{0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}) {
		t.Errorf("8-byte attribute: %v; key %x, mask %x (len %#x), want key %x", err, k.TunOptsBytes(), m.TunOpts[:12], m.TunOptsLen, want)
	}

	// A longer one: its first bytes are outside the 12. Zero there, the
	// flow is the 12-byte one's; otherwise flowkeys.Key cannot hold it.
	long := append(make([]byte, 4), md...)
	if k, m2, err := odp.ToFlowKeys(fk(erspanTun(long), eth), nil); err != nil || !bytes.Equal(k.TunOptsBytes(), md) || m2.TunOpts != exactMask.TunOpts {
		t.Errorf("16-byte attribute with 4 zero bytes first: %v; key %x", err, k.TunOptsBytes())
	}
	long[0] = 1
	if _, _, err := odp.ToFlowKeys(fk(erspanTun(long), eth), nil); !errors.Is(err, errors.ErrUnsupported) || !strings.Contains(err.Error(), "before the 12") {
		t.Errorf("16-byte attribute matching a byte before the 12: %v, want ErrUnsupported", err)
	}
	// ... unless the mask leaves that byte out.
	if _, _, err := odp.ToFlowKeys(fk(erspanTun(long), eth), fk(erspanTun(append(make([]byte, 4), bytes.Repeat([]byte{0xff}, 12)...)), odp.Ethernet{})); err != nil {
		t.Errorf("16-byte attribute, its first byte not in the mask: %v", err)
	}

	// The upcall and execute path: the key's options.
	ek, err := odp.ToFlowKeysExact(key)
	if err != nil || !bytes.Equal(ek.TunOptsBytes(), md) || ek.TunFlags&odp.KernelTunnelERSPANOpt == 0 {
		t.Errorf("ToFlowKeysExact: %v, options %x, flags %#x", err, ek.TunOptsBytes(), ek.TunFlags)
	}
	if back := odp.FormatKey(odp.KeyFromFlowKeys(&ek), nil, true); !strings.Contains(back, "erspan(ver=1,idx=0x7)") {
		t.Errorf("KeyFromFlowKeys of an upcall key lost its options: %s", back)
	}

	// The kernel's EINVALs.
	both := erspanTun(md)
	both.Present |= odp.TunnelHasGeneve
	both.Geneve = []byte{}
	for _, c := range []struct {
		name      string
		key, mask odp.FlowKey
		reason    string
	}{
		{"256 bytes", fk(erspanTun(make([]byte, 256)), eth), nil, "ERSPAN option length err (len 256, max 255)"},
		{"geneve and erspan", fk(both, eth), nil, "multiple metadata blocks"},
		{"mask geneve of another length", key, fk(geneveTun(make([]byte, 8)), odp.Ethernet{}), "Geneve option len 12 != mask len 8"},
	} {
		_, _, err := odp.ToFlowKeys(c.key, c.mask)
		if !errors.Is(err, syscall.EINVAL) || !strings.Contains(err.Error(), c.reason) {
			t.Errorf("%s: %v, want EINVAL with %q", c.name, err, c.reason)
		}
	}
}

// vxlanTun is a tunnel key with VXLAN options holding gbp.
func vxlanTun(gbp uint32) odp.Tunnel {
	t := geneveTun(nil)
	t.Present |= odp.TunnelHasVXLAN
	t.VXLANGBP = gbp
	return t
}

// TestToFlowKeysTunnelOptionTypes: a mask whose tunnel option block is
// of another type than the key's (FuzzToFlowKeys' corpus entries
// ab8d67dffb5b5abb and 56c86a8397d6229b: Geneve in the key, ERSPAN in
// the mask). Linux 6.1's ip_tun_from_nlattr takes such a pair (only a
// Geneve mask is checked, for the key's tun_opts_len: 12 for ERSPAN, 4
// for VXLAN), but its flow does not read back: the masked key loses its
// option flag, so the dump drops the key's options while tun_opts_len
// keeps them, and the next dump drops the mask's. ToFlowKeys refuses it
// as unsupported, naming both types; it keeps the kernel's EINVALs, and
// accepts a mask with options for a key without.
func TestToFlowKeysTunnelOptionTypes(t *testing.T) {
	geneve12 := []byte{0x01, 0x02, 0x80, 0x02, 0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4} // class 0x102, type 0x80, 8 bytes
	et, mt := odp.Ethertype(0x88b5), odp.Ethertype(0xffff)
	ones := func(n int) []byte { return bytes.Repeat([]byte{0xff}, n) }
	for _, c := range []struct {
		name      string
		key, mask odp.FlowKey
		reason    string // "" accepted; else a substring of the ErrUnsupported or EINVAL error
		einval    bool
	}{
		{"geneve key, erspan mask", fk(geneveTun(geneve12), eth, et), fk(erspanTun(ones(12)), odp.Ethernet{}, mt), "erspan options in the mask of a key with geneve options", false},
		{"erspan key, geneve mask", fk(erspanTun(erspanV1(7)), eth, et), fk(geneveTun(ones(12)), odp.Ethernet{}, mt), "geneve options in the mask of a key with erspan options", false},
		{"geneve key, vxlan mask", fk(geneveTun(geneve12), eth, et), fk(vxlanTun(0xffffffff), odp.Ethernet{}, mt), "vxlan options in the mask of a key with geneve options", false},
		{"vxlan key, erspan mask", fk(vxlanTun(0x10005), eth, et), fk(erspanTun(ones(12)), odp.Ethernet{}, mt), "erspan options in the mask of a key with vxlan options", false},
		{"vxlan key, geneve mask of 4", fk(vxlanTun(0x10005), eth, et), fk(geneveTun(ones(4)), odp.Ethernet{}, mt), "geneve options in the mask of a key with vxlan options", false},
		// The kernel's tun_opts_len of a VXLAN key is 4.
		{"vxlan key, empty geneve mask", fk(vxlanTun(0x10005), eth, et), fk(geneveTun([]byte{}), odp.Ethernet{}, mt), "Geneve option len 4 != mask len 0", true},
		{"erspan key, geneve mask of 8", fk(erspanTun(erspanV1(7)), eth, et), fk(geneveTun(ones(8)), odp.Ethernet{}, mt), "Geneve option len 12 != mask len 8", true},
		// Accepted: the same type, or options in the mask only.
		{"geneve key, geneve mask", fk(geneveTun(geneve12), eth, et), fk(geneveTun(ones(12)), odp.Ethernet{}, mt), "", false},
		{"vxlan key, vxlan mask", fk(vxlanTun(0x10005), eth, et), fk(vxlanTun(0xffff), odp.Ethernet{}, mt), "", false},
		{"no key options, erspan mask", fk(geneveTun(nil), eth, et), fk(erspanTun(ones(12)), odp.Ethernet{}, mt), "", false},
		{"no key options, vxlan mask", fk(geneveTun(nil), eth, et), fk(vxlanTun(0xffff), odp.Ethernet{}, mt), "", false},
		{"no key options, empty geneve mask", fk(geneveTun(nil), eth, et), fk(geneveTun([]byte{}), odp.Ethernet{}, mt), "", false},
	} {
		k, m, err := odp.ToFlowKeys(c.key, c.mask)
		switch {
		case c.reason == "":
			if err != nil {
				t.Errorf("%s: %v, want accepted", c.name, err)
				continue
			}
			// What is accepted reads back: dump, put, dump, put.
			k2, m2, err := odp.ToFlowKeys(odp.KeyFromFlowKeys(&k), odp.MaskFromFlowKeys(&m, &k))
			if err != nil {
				t.Errorf("%s: its dump does not put back: %v", c.name, err)
				continue
			}
			k3, m3, err := odp.ToFlowKeys(odp.KeyFromFlowKeys(&k2), odp.MaskFromFlowKeys(&m2, &k2))
			if err != nil || k3 != k2 || m3 != m2 {
				t.Errorf("%s: dump/put is not stable (%v)", c.name, err)
			}
		case c.einval:
			if !errors.Is(err, syscall.EINVAL) || !strings.Contains(err.Error(), c.reason) {
				t.Errorf("%s: %v, want EINVAL with %q", c.name, err, c.reason)
			}
		default:
			var ke *odp.KeyError
			if !errors.Is(err, errors.ErrUnsupported) || !errors.As(err, &ke) || ke.Attr != "mask.tunnel" || !strings.Contains(err.Error(), c.reason) {
				t.Errorf("%s: %v, want ErrUnsupported at mask.tunnel with %q", c.name, err, c.reason)
			}
		}
	}
}

// TestToFlowKeysVXLANMaskLength: a VXLAN mask matches the options'
// length exactly, as the kernel's (vxlan_tun_opt_from_nlattr puts
// tun_opts_len 0xff in the mask): a flow whose key has no options and
// whose mask has vxlan() does not match a packet with Geneve options.
func TestToFlowKeysVXLANMaskLength(t *testing.T) {
	et, mt := odp.Ethertype(0x88b5), odp.Ethertype(0xffff)
	k, m, err := odp.ToFlowKeys(fk(geneveTun(nil), eth, et), fk(vxlanTun(0xffff), odp.Ethernet{}, mt))
	if err != nil {
		t.Fatal(err)
	}
	if m.TunOptsLen != 0xff {
		t.Errorf("mask length %#x, want 0xff", m.TunOptsLen)
	}
	pkt, err := odp.ToFlowKeysExact(fk(geneveTun([]byte{0x01, 0x02, 0x80, 0x01, 0xde, 0xad, 0xbe, 0xef}), eth, et))
	if err != nil {
		t.Fatal(err)
	}
	matches := func(p *flowkeys.Key) bool {
		pw, kw, mw := p.Words(), k.Words(), m.Words()
		for i := range mw {
			if pw[i]&mw[i] != kw[i] {
				return false
			}
		}
		return true
	}
	if matches(&pkt) {
		t.Errorf("the flow matches a packet with Geneve options")
	}
	// A packet without options (the flow's own key) still matches.
	if pkt, err = odp.ToFlowKeysExact(fk(geneveTun(nil), eth, et)); err != nil || !matches(&pkt) {
		t.Errorf("the flow does not match a packet without options (%v)", err)
	}
	// A VXLAN flow still matches its VXLAN packets (TunOptsLen 0).
	k, m, err = odp.ToFlowKeys(fk(vxlanTun(0x10005), eth, et), nil)
	if err != nil || m.TunOptsLen != 0xff || k.TunOptsLen != 0 {
		t.Fatalf("vxlan flow: %v; key length %d, mask length %#x", err, k.TunOptsLen, m.TunOptsLen)
	}
	if pkt, err = odp.ToFlowKeysExact(fk(vxlanTun(0x10005), eth, et)); err != nil || !matches(&pkt) {
		t.Errorf("the vxlan flow does not match its packet (%v)", err)
	}
}
