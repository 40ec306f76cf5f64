package odp

import "github.com/ovsdp/ovsdp/internal/header"

// AddRequiredKeys returns key and mask completed with every attribute
// the kernel's match_validate requires and the key lacks, each fully
// wildcarded (zero in the key, zero in the mask), so that a flow written
// with only the fields it matches on is accepted: arp for eth_type
// 0x0806/0x8035, mpls for 0x8847/0x8848, ipv4 or ipv6 for 0x0800/0x86dd,
// then (unless the key is a later fragment) udp, sctp, tcp with
// tcp_flags, icmp (IPv4 proto 1), icmpv6 (IPv6 proto 58) for the key's
// IP protocol, and nd for ICMPv6 neighbour solicitations and
// advertisements (types 135, 136). The same holds inside VLAN encaps,
// at every depth (QinQ).
// The kernel decides on the key's values, not its mask: ipv4(proto=1/0)
// still needs icmp(). NSH keys are left alone (the nsh attribute is
// nested and has no all-wildcard form the kernel takes). The inputs are
// not modified.
func AddRequiredKeys(key, mask FlowKey) (FlowKey, FlowKey) {
	return inEveryLevel(key, mask, func(key, mask FlowKey) (FlowKey, FlowKey) {
		return addTCPFlagsLevel(addRequiredLevel(key, mask))
	})
}

// addRequiredLevel completes one level of a key (AddRequiredKeys without
// the encap and tcp_flags).
func addRequiredLevel(key, mask FlowKey) (FlowKey, FlowKey) {
	add := func(after KeyType, a KeyAttr) { key, mask = insertBoth(key, mask, after, a) }
	et, ok := key.Find(KeyEthertype).(Ethertype)
	if !ok {
		return key, mask
	}
	switch et {
	case header.EtherTypeARP, header.EtherTypeRARP:
		if key.Find(KeyARP) == nil {
			add(KeyEthertype, ARP{})
		}
	case header.EtherTypeMPLS, header.EtherTypeMPLSMC:
		if key.Find(KeyMPLS) == nil {
			add(KeyEthertype, MPLS{0})
		}
	case header.EtherTypeIPv4, header.EtherTypeIPv6:
		l3, icmp := KeyIPv4, uint8(header.IPProtoICMP)
		var l3zero KeyAttr = IPv4{}
		if et == header.EtherTypeIPv6 {
			l3, icmp, l3zero = KeyIPv6, header.IPProtoICMPv6, IPv6{}
		}
		if key.Find(l3) == nil {
			add(KeyEthertype, l3zero)
		}
		var proto, frag uint8
		switch ip := key.Find(l3).(type) {
		case IPv4:
			proto, frag = ip.Proto, ip.Frag
		case IPv6:
			proto, frag = ip.Proto, ip.Frag
		}
		if frag == FragLater {
			break
		}
		var l4 KeyAttr
		switch proto {
		case header.IPProtoTCP:
			l4 = TCP{}
		case header.IPProtoUDP:
			l4 = UDP{}
		case header.IPProtoSCTP:
			l4 = SCTP{}
		case icmp:
			l4 = ICMP{}
			if et == header.EtherTypeIPv6 {
				l4 = ICMPv6{}
			}
		}
		if l4 != nil && key.Find(l4.KeyType()) == nil {
			add(l3, l4)
		}
		if et == header.EtherTypeIPv6 && proto == header.IPProtoICMPv6 {
			if ic, ok := key.Find(KeyICMPv6).(ICMPv6); ok && (ic.Type == header.ICMPv6NeighborSolicit || ic.Type == header.ICMPv6NeighborAdvert) && key.Find(KeyND) == nil {
				add(KeyICMPv6, ND{})
			}
		}
	}
	return key, mask
}
