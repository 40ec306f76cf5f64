package main

import (
	"errors"
	"fmt"
	"net"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"

	"github.com/ovsdp/ovsdp/flowkeys"
	"github.com/ovsdp/ovsdp/internal/header"
)

// composePacket builds the packet that an exact flow key describes (the
// inverse of flowkeys.Extract for what a key holds: Ethernet, up to two
// VLAN tags, MPLS, ARP, IPv4 and IPv6 with TCP, UDP, SCTP, ICMP, ICMPv6
// and neighbour discovery), with gopacket's serializers computing
// lengths and checksums. What a key cannot say (IP identification, TCP
// sequence numbers, payload) is zero or empty. It fails, saying what,
// for keys it cannot build: IPv6 fragments, NSH, L3 (no Ethernet)
// packets.
func composePacket(k *flowkeys.Key) ([]byte, error) {
	if k.MacProto == flowkeys.MacProtoNone {
		return nil, errors.New("an L3 packet (no eth()) can't be built from a flow: give its bytes in hex")
	}
	var ls []gopacket.SerializableLayer
	eth := &layers.Ethernet{SrcMAC: net.HardwareAddr(k.EthSrc[:]), DstMAC: net.HardwareAddr(k.EthDst[:])}
	ls = append(ls, eth)
	next := func(t uint16) { // sets the EtherType of the last L2 layer
		switch l := ls[len(ls)-1].(type) {
		case *layers.Ethernet:
			l.EthernetType = layers.EthernetType(t)
		case *layers.Dot1Q:
			l.Type = layers.EthernetType(t)
		}
	}
	for _, tag := range [][2]uint16{{k.VLANTPID, k.VLANTCI}, {k.CVLANTPID, k.CVLANTCI}} {
		if tag[1]&flowkeys.VLANTagPresent == 0 {
			break
		}
		tpid := tag[0]
		if tpid == 0 {
			tpid = header.EtherTypeVLAN
		}
		next(tpid)
		ls = append(ls, &layers.Dot1Q{Priority: uint8(tag[1] >> 13), VLANIdentifier: tag[1] & 0x0fff})
	}
	next(k.EthType)
	l4 := k.IPFrag != flowkeys.FragLater
	switch k.EthType {
	case header.EtherTypeARP, header.EtherTypeRARP:
		ls = append(ls, &layers.ARP{AddrType: layers.LinkTypeEthernet, Protocol: layers.EthernetTypeIPv4,
			HwAddressSize: 6, ProtAddressSize: 4, Operation: uint16(k.IPProto),
			SourceHwAddress: k.ARPSHA[:], SourceProtAddress: k.IPv4Src[:], DstHwAddress: k.ARPTHA[:], DstProtAddress: k.IPv4Dst[:]})
		return serialize(ls)
	case header.EtherTypeMPLS, header.EtherTypeMPLSMC:
		for i := 0; i < 3; i++ {
			if k.MPLSLabelsMask&(1<<i) == 0 {
				break
			}
			lse := k.MPLSLSE[i]
			ls = append(ls, &layers.MPLS{Label: lse >> 12, TrafficClass: uint8(lse>>9) & 7, StackBottom: lse&0x100 != 0, TTL: uint8(lse)})
		}
		return serialize(ls)
	case header.EtherTypeIPv4:
		ip := &layers.IPv4{Version: 4, IHL: 5, TOS: k.IPTOS, TTL: k.IPTTL, Protocol: layers.IPProtocol(k.IPProto),
			SrcIP: net.IP(k.IPv4Src[:]), DstIP: net.IP(k.IPv4Dst[:])}
		switch k.IPFrag {
		case flowkeys.FragFirst:
			ip.Flags = layers.IPv4MoreFragments
		case flowkeys.FragLater:
			ip.FragOffset = 1
		}
		ls = append(ls, ip)
		if l4 {
			return addL4(ls, k, ip)
		}
		return serialize(ls)
	case header.EtherTypeIPv6:
		if k.IPFrag != flowkeys.FragNone {
			return nil, errors.New("an IPv6 fragment can't be built from a flow: give its bytes in hex")
		}
		ip := &layers.IPv6{Version: 6, TrafficClass: k.IPTOS, FlowLabel: k.IPv6Label, NextHeader: layers.IPProtocol(k.IPProto),
			HopLimit: k.IPTTL, SrcIP: net.IP(k.IPv6Src[:]), DstIP: net.IP(k.IPv6Dst[:])}
		ls = append(ls, ip)
		return addL4(ls, k, ip)
	case 0x894f:
		return nil, errors.New("an NSH packet can't be built from a flow: give its bytes in hex")
	}
	return serialize(ls)
}

// addL4 appends the key's transport header to ls and serializes.
func addL4(ls []gopacket.SerializableLayer, k *flowkeys.Key, ip gopacket.NetworkLayer) ([]byte, error) {
	switch k.IPProto {
	case header.IPProtoTCP:
		f := k.TCPFlags
		tcp := &layers.TCP{SrcPort: layers.TCPPort(k.TpSrc), DstPort: layers.TCPPort(k.TpDst), DataOffset: 5, Window: 0,
			FIN: f&0x001 != 0, SYN: f&0x002 != 0, RST: f&0x004 != 0, PSH: f&0x008 != 0, ACK: f&0x010 != 0,
			URG: f&0x020 != 0, ECE: f&0x040 != 0, CWR: f&0x080 != 0, NS: f&0x100 != 0}
		if err := tcp.SetNetworkLayerForChecksum(ip); err != nil {
			return nil, err
		}
		ls = append(ls, tcp)
	case header.IPProtoUDP:
		udp := &layers.UDP{SrcPort: layers.UDPPort(k.TpSrc), DstPort: layers.UDPPort(k.TpDst)}
		if err := udp.SetNetworkLayerForChecksum(ip); err != nil {
			return nil, err
		}
		ls = append(ls, udp)
	case header.IPProtoSCTP:
		// gopacket does not serialize SCTP: the common header, no chunks.
		h := header.Ports(make([]byte, header.SCTPMinimumSize))
		h.SetSource(k.TpSrc)
		h.SetDestination(k.TpDst)
		ls = append(ls, gopacket.Payload(h))
	case header.IPProtoICMP:
		if _, v4 := ip.(*layers.IPv4); v4 {
			ls = append(ls, &layers.ICMPv4{TypeCode: layers.CreateICMPv4TypeCode(uint8(k.TpSrc), uint8(k.TpDst))})
		}
	case header.IPProtoICMPv6:
		if _, v6 := ip.(*layers.IPv6); !v6 {
			break
		}
		icmp := &layers.ICMPv6{TypeCode: layers.CreateICMPv6TypeCode(uint8(k.TpSrc), uint8(k.TpDst))}
		if err := icmp.SetNetworkLayerForChecksum(ip); err != nil {
			return nil, err
		}
		ls = append(ls, icmp)
		var zero [6]byte
		switch k.TpSrc {
		case header.ICMPv6NeighborSolicit:
			ns := &layers.ICMPv6NeighborSolicitation{TargetAddress: net.IP(k.NDTarget[:])}
			if k.NDSLL != zero {
				ns.Options = append(ns.Options, layers.ICMPv6Option{Type: layers.ICMPv6OptSourceAddress, Data: k.NDSLL[:]})
			}
			ls = append(ls, ns)
		case header.ICMPv6NeighborAdvert:
			na := &layers.ICMPv6NeighborAdvertisement{TargetAddress: net.IP(k.NDTarget[:])}
			if k.NDTLL != zero {
				na.Options = append(na.Options, layers.ICMPv6Option{Type: layers.ICMPv6OptTargetAddress, Data: k.NDTLL[:]})
			}
			ls = append(ls, na)
		default:
			// The rest of the 8-byte ICMPv6 header (an echo's identifier
			// and sequence number): without it the kernel reads no type.
			ls = append(ls, gopacket.Payload(make([]byte, 4)))
		}
	}
	return serialize(ls)
}

func serialize(ls []gopacket.SerializableLayer) ([]byte, error) {
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, ls...); err != nil {
		return nil, fmt.Errorf("building the packet: %w", err)
	}
	return buf.Bytes(), nil
}
