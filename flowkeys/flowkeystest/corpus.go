// Package flowkeystest holds a corpus of packets with the flow keys that
// the Linux kernel's openvswitch module (6.1) extracts from them, for
// flowkeys' own tests and for differential tests against the kernel.
//
// The expected keys are written down from how each packet was built and
// from the kernel's rules (net/openvswitch/flow.c), never computed by
// flowkeys.Extract.
package flowkeystest

import (
	"fmt"
	"testing"

	"github.com/ovsdp/ovsdp/flowkeys"
)

// Packet is one corpus entry.
type Packet struct {
	Name   string
	Data   []byte // starts at the Ethernet header
	InPort uint32 // the datapath port it is received on
	// Want is the key Extract must give with Metadata{InPort: InPort}
	// (ignored when WantErr is set).
	Want flowkeys.Key
	// WantErr is the error Extract must return, for packets the kernel
	// refuses; nil otherwise.
	WantErr error
}

// Protocol numbers used in the corpus.
const (
	pTCP, pUDP, pSCTP, pICMP, pICMPv6 = 6, 17, 132, 1, 58
	pHop, pRouting, pFrag, pAuth      = 0, 43, 44, 51
	pESP, pNone, pDest, pGRE          = 50, 59, 60, 47
)

// layer says how the key of a frame truncated below end differs from
// the full frame's: apply runs on it (errors, if set, is returned instead).
type layer struct {
	end   int
	apply func(*flowkeys.Key)
	err   error
}

func clearTp(k *flowkeys.Key) { k.TpSrc, k.TpDst, k.TCPFlags = 0, 0, 0 }

func clearND(k *flowkeys.Key) {
	k.NDTarget, k.NDSLL, k.NDTLL = [16]byte{}, [6]byte{}, [6]byte{}
}

func clearIPv4(k *flowkeys.Key) {
	k.IPProto, k.IPTOS, k.IPTTL, k.IPFrag = 0, 0, 0, 0
	k.IPv4Src, k.IPv4Dst = [4]byte{}, [4]byte{}
	clearTp(k)
}

func clearIPv6(k *flowkeys.Key) {
	k.IPProto, k.IPTOS, k.IPTTL, k.IPFrag = 0, 0, 0, 0
	k.IPv6Src, k.IPv6Dst = [16]byte{}, [16]byte{}
	k.IPv6Label, k.IPv6ExtHdrs = 0, 0
	clearTp(k)
	clearND(k)
}

// truncations returns the frame cut at every length below its full
// length, with the expected keys.
func truncations(name string, data []byte, inPort uint32, full flowkeys.Key, layers ...layer) []Packet {
	var out []Packet
	for n := 0; n < len(data); n++ {
		p := Packet{Name: fmt.Sprintf("%s/trunc%d", name, n), Data: data[:n:n], InPort: inPort}
		if n < 14 {
			p.WantErr = flowkeys.ErrShortFrame
			out = append(out, p)
			continue
		}
		p.Want = full
		for _, l := range layers {
			if n < l.end {
				if l.err != nil {
					p.WantErr = l.err
					break
				}
				l.apply(&p.Want)
			}
		}
		out = append(out, p)
	}
	return out
}

// Corpus returns every corpus packet: well-formed ones of each protocol,
// then malformed ones (every truncation of several frames, wrong lengths,
// bad header lengths, fragments, odd extension-header chains, malformed
// ND options, short ARP, MPLS and NSH, ...).
func Corpus() []Packet {
	var c []Packet
	add := func(name string, data []byte, want flowkeys.Key) {
		c = append(c, Packet{Name: name, Data: data, InPort: want.InPort, Want: want})
	}
	addErr := func(name string, data []byte, err error) {
		c = append(c, Packet{Name: name, Data: data, InPort: 1, WantErr: err})
	}
	v4 := func(port uint32, proto, tos, ttl uint8) flowkeys.Key {
		k := EthKey(port, flowkeys.EthTypeIPv4)
		k.IPProto, k.IPTOS, k.IPTTL = proto, tos, ttl
		k.IPv4Src, k.IPv4Dst = IPv4Src, IPv4Dst
		return k
	}
	v6 := func(port uint32, proto, tc uint8, label uint32, ext uint16) flowkeys.Key {
		k := EthKey(port, flowkeys.EthTypeIPv6)
		k.IPProto, k.IPTOS, k.IPTTL = proto, tc, 64
		k.IPv6Src, k.IPv6Dst = IPv6Src, IPv6Dst
		k.IPv6Label, k.IPv6ExtHdrs = label, ext
		return k
	}
	payload := []byte("hello!")

	// --- IPv4 ---
	{
		d := cat(Eth(0x0800), IPv4(IPv4Opts{Proto: pTCP, TOS: 0x10, TTL: 64}, cat(TCP(1234, 80, 0x018, 0), payload)))
		k := v4(1, pTCP, 0x10, 64)
		k.TpSrc, k.TpDst, k.TCPFlags = 1234, 80, 0x018
		add("ipv4/tcp", d, k)
		c = append(c, truncations("ipv4/tcp", d, 1, k, layer{end: 34, apply: clearIPv4}, layer{end: 54, apply: clearTp})...)
	}
	{
		d := cat(Eth(0x0800), IPv4(IPv4Opts{Proto: pUDP, TTL: 1}, UDP(5353, 53, payload)))
		k := v4(2, pUDP, 0, 1)
		k.TpSrc, k.TpDst = 5353, 53
		add("ipv4/udp", d, k)
		c = append(c, truncations("ipv4/udp", d, 2, k, layer{end: 34, apply: clearIPv4}, layer{end: 42, apply: clearTp})...)
	}
	{
		d := cat(Eth(0x0800), IPv4(IPv4Opts{Proto: pSCTP, TTL: 9}, SCTP(7, 9)))
		k := v4(3, pSCTP, 0, 9)
		k.TpSrc, k.TpDst = 7, 9
		add("ipv4/sctp", d, k)
		c = append(c, truncations("ipv4/sctp", d, 3, k, layer{end: 34, apply: clearIPv4}, layer{end: 46, apply: clearTp})...)
	}
	{
		d := cat(Eth(0x0800), IPv4(IPv4Opts{Proto: pICMP, TTL: 64}, ICMP(8, 0, payload)))
		k := v4(1, pICMP, 0, 64)
		k.TpSrc, k.TpDst = 8, 0
		add("ipv4/icmp-echo", d, k)
		c = append(c, truncations("ipv4/icmp", d, 1, k, layer{end: 34, apply: clearIPv4}, layer{end: 42, apply: clearTp})...)
		d2 := cat(Eth(0x0800), IPv4(IPv4Opts{Proto: pICMP, TTL: 64}, ICMP(3, 13, nil)))
		k.TpSrc, k.TpDst = 3, 13
		add("ipv4/icmp-unreach", d2, k)
	}
	{
		// IHL 6 (one option word): L4 starts at 38.
		d := cat(Eth(0x0800), IPv4(IPv4Opts{Proto: pTCP, TTL: 64, Options: []byte{0x94, 4, 0, 0}}, TCP(1, 2, 0x002, 0)))
		k := v4(1, pTCP, 0, 64)
		k.TpSrc, k.TpDst, k.TCPFlags = 1, 2, 0x002
		add("ipv4/options/tcp", d, k)
		c = append(c, truncations("ipv4/options/tcp", d, 1, k, layer{end: 38, apply: clearIPv4}, layer{end: 58, apply: clearTp})...)
	}
	{
		k := EthKey(1, flowkeys.EthTypeIPv4)
		add("ipv4/bad-ihl-4", cat(Eth(0x0800), IPv4(IPv4Opts{Proto: pUDP, TTL: 64, IHL: 4}, UDP(1, 2, payload))), k)
		add("ipv4/bad-ihl-0", cat(Eth(0x0800), IPv4(IPv4Opts{Proto: pUDP, TTL: 64, IHL: 0x10}, UDP(1, 2, payload))), k) // IHL nibble 0
		add("ipv4/ihl-15-beyond-packet", cat(Eth(0x0800), IPv4(IPv4Opts{Proto: pUDP, TTL: 64, IHL: 15}, UDP(1, 2, payload))), k)
		// IHL 15 with 60 bytes present: valid, L4 at 74.
		opts := make([]byte, 40)
		opts[0] = 1
		kk := v4(1, pUDP, 0, 64)
		kk.TpSrc, kk.TpDst = 1, 2
		add("ipv4/ihl-15-ok", cat(Eth(0x0800), IPv4(IPv4Opts{Proto: pUDP, TTL: 64, Options: opts}, UDP(1, 2, nil))), kk)
		add("ipv4/total-length-beyond-packet", cat(Eth(0x0800), IPv4(IPv4Opts{Proto: pUDP, TTL: 64, TotalLen: 1500}, UDP(1, 2, payload))), kk)
		add("ipv4/total-length-too-small", cat(Eth(0x0800), IPv4(IPv4Opts{Proto: pUDP, TTL: 64, TotalLen: 10}, UDP(1, 2, payload))), kk)
		bad := cat(Eth(0x0800), IPv4(IPv4Opts{Proto: pUDP, TTL: 64}, UDP(1, 2, payload)))
		bad[14] = 0x65 // version 6, IHL 5: the kernel does not check the version
		add("ipv4/version-6", bad, kk)
		df := cat(Eth(0x0800), IPv4(IPv4Opts{Proto: pUDP, TTL: 64}, UDP(1, 2, payload)))
		df[20] = 0x40 // DF only: not a fragment
		add("ipv4/dont-fragment", df, kk)
	}
	{
		k := v4(1, pUDP, 0, 64)
		k.IPFrag = flowkeys.FragFirst
		k.TpSrc, k.TpDst = 4000, 4001
		add("ipv4/frag-first", cat(Eth(0x0800), IPv4(IPv4Opts{Proto: pUDP, TTL: 64, MF: true}, UDP(4000, 4001, payload))), k)
		kl := v4(1, pUDP, 0, 64)
		kl.IPFrag = flowkeys.FragLater
		add("ipv4/frag-later", cat(Eth(0x0800), IPv4(IPv4Opts{Proto: pUDP, TTL: 64, FragOff: 185}, UDP(4000, 4001, payload))), kl)
		add("ipv4/frag-later-mf", cat(Eth(0x0800), IPv4(IPv4Opts{Proto: pUDP, TTL: 64, FragOff: 1, MF: true}, UDP(4000, 4001, payload))), kl)
		kt := v4(1, pTCP, 0, 64)
		kt.IPFrag = flowkeys.FragLater
		add("ipv4/frag-later-tcp-no-l4", cat(Eth(0x0800), IPv4(IPv4Opts{Proto: pTCP, TTL: 64, FragOff: 8}, TCP(1, 2, 0x12, 0))), kt)
		kf := v4(1, pTCP, 0, 64)
		kf.IPFrag = flowkeys.FragFirst
		add("ipv4/frag-first-truncated-tcp", cat(Eth(0x0800), IPv4(IPv4Opts{Proto: pTCP, TTL: 64, MF: true}, TCP(1, 2, 0x12, 0)[:10])), kf)
	}
	{
		k := v4(1, pTCP, 0, 64)
		add("ipv4/tcp-doff-4", cat(Eth(0x0800), IPv4(IPv4Opts{Proto: pTCP, TTL: 64}, TCP(1, 2, 0x10, 4))), k)
		add("ipv4/tcp-doff-15-beyond", cat(Eth(0x0800), IPv4(IPv4Opts{Proto: pTCP, TTL: 64}, TCP(1, 2, 0x10, 15)[:40])), k)
		ko := v4(1, pTCP, 0, 64)
		ko.TpSrc, ko.TpDst, ko.TCPFlags = 443, 55555, 0x0fff
		add("ipv4/tcp-options-all-flags", cat(Eth(0x0800), IPv4(IPv4Opts{Proto: pTCP, TTL: 64}, TCP(443, 55555, 0x0fff, 8))), ko)
		kg := v4(1, pGRE, 0, 64)
		add("ipv4/gre-no-l4", cat(Eth(0x0800), IPv4(IPv4Opts{Proto: pGRE, TTL: 64}, payload)), kg)
		add("ipv4/header-only-14", Eth(0x0800), EthKey(1, flowkeys.EthTypeIPv4))
	}

	// --- VLAN ---
	{
		d := cat(Eth(0x8100), u16(0x2005), u16(0x0800), IPv4(IPv4Opts{Proto: pUDP, TTL: 64}, UDP(1, 2, payload)))
		k := v4(1, pUDP, 0, 64)
		k.VLANTPID, k.VLANTCI = 0x8100, 0x2005|flowkeys.VLANTagPresent
		k.TpSrc, k.TpDst = 1, 2
		add("vlan/ipv4/udp", d, k)
		c = append(c, truncations("vlan/ipv4/udp", d, 1, k,
			layer{end: 18, apply: func(k *flowkeys.Key) { k.VLANTPID, k.VLANTCI, k.EthType = 0, 0, 0x8100; clearIPv4(k) }},
			layer{end: 38, apply: clearIPv4}, layer{end: 46, apply: clearTp})...)
	}
	{
		d := cat(MACDst[:], MACSrc[:], VLAN(0x88a8, 0x0064), VLAN(0x8100, 0xe00a), u16(0x86dd),
			IPv6(pTCP, 0xb8, 0x12345, TCP(80, 8080, 0x011, 0)))
		k := v6(1, pTCP, 0xb8, 0x12345, 0)
		k.VLANTPID, k.VLANTCI = 0x88a8, 0x0064|flowkeys.VLANTagPresent
		k.CVLANTPID, k.CVLANTCI = 0x8100, 0xe00a|flowkeys.VLANTagPresent
		k.TpSrc, k.TpDst, k.TCPFlags = 80, 8080, 0x011
		add("qinq/ipv6/tcp", d, k)
		c = append(c, truncations("qinq/ipv6/tcp", d, 1, k,
			layer{end: 18, apply: func(k *flowkeys.Key) { k.VLANTPID, k.VLANTCI = 0, 0; k.EthType = 0x88a8 }},
			layer{end: 22, apply: func(k *flowkeys.Key) {
				k.CVLANTPID, k.CVLANTCI = 0, 0
				if k.EthType != 0x88a8 {
					k.EthType = 0x8100
				}
				clearIPv6(k)
			}},
			layer{end: 62, apply: clearIPv6}, layer{end: 82, apply: clearTp})...)
	}
	{
		d := cat(MACDst[:], MACSrc[:], VLAN(0x8100, 1), VLAN(0x8100, 2), VLAN(0x8100, 3), u16(0x0800), IPv4(IPv4Opts{Proto: pUDP, TTL: 64}, UDP(1, 2, nil)))
		k := EthKey(1, 0x8100)
		k.VLANTPID, k.VLANTCI = 0x8100, 1|flowkeys.VLANTagPresent
		k.CVLANTPID, k.CVLANTCI = 0x8100, 2|flowkeys.VLANTagPresent
		add("vlan/triple-tag", d, k)
		k1 := EthKey(1, 0x88a8)
		k1.VLANTPID, k1.VLANTCI = 0x8100, 0xfff|flowkeys.VLANTagPresent
		add("vlan/inner-8021ad-type", cat(Eth(0x8100), u16(0x0fff), u16(0x88a8), []byte{1}), k1)
		k2 := EthKey(1, 0x0800)
		k2.VLANTPID, k2.VLANTCI = 0x88a8, 0x1000|flowkeys.VLANTagPresent // CFI already set in the packet
		add("vlan/8021ad-single-18-bytes", cat(Eth(0x88a8), u16(0x1000), u16(0x0800)), k2)
		d3 := cat(Eth(0x8100), u16(7), u16(20), []byte{0xaa, 0xaa, 3, 0, 0, 0}, u16(0x0800), IPv4(IPv4Opts{Proto: pICMP, TTL: 3}, ICMP(0, 0, nil)))
		k3 := v4(1, pICMP, 0, 3)
		k3.VLANTPID, k3.VLANTCI = 0x8100, 7|flowkeys.VLANTagPresent
		add("vlan/snap/ipv4/icmp", d3, k3)
	}

	// --- 802.3 / LLC / SNAP ---
	{
		d := cat(Eth(50), []byte{0xaa, 0xaa, 0x03, 0, 0, 0}, u16(0x0800), IPv4(IPv4Opts{Proto: pUDP, TTL: 64}, UDP(1, 2, nil)))
		k := v4(1, pUDP, 0, 64)
		k.TpSrc, k.TpDst = 1, 2
		add("snap/ipv4/udp", d, k)
		c = append(c, truncations("snap/ipv4/udp", d, 1, k,
			layer{end: 22, apply: func(k *flowkeys.Key) { k.EthType = flowkeys.EthType8022; clearIPv4(k) }},
			layer{end: 42, apply: clearIPv4}, layer{end: 50, apply: clearTp})...)
		k8022 := EthKey(1, flowkeys.EthType8022)
		add("llc/stp", cat(Eth(38), []byte{0x42, 0x42, 0x03, 0, 0, 0, 0, 0, 0, 0}), k8022)
		add("snap/nonzero-oui", cat(Eth(50), []byte{0xaa, 0xaa, 0x03, 0, 0, 0x0c}, u16(0x2000)), k8022)
		add("snap/type-below-0x600", cat(Eth(50), []byte{0xaa, 0xaa, 0x03, 0, 0, 0}, u16(0x0500), payload), k8022)
		add("snap/short-7", cat(Eth(50), []byte{0xaa, 0xaa, 0x03, 0, 0, 0, 0x08}), k8022)
		add("8023/length-only", Eth(0), k8022)
		add("snap/ctrl-not-checked", cat(Eth(50), []byte{0xaa, 0xaa, 0x77, 0, 0, 0}, u16(0x88cc)), EthKey(1, 0x88cc))
	}

	// --- ARP ---
	{
		arpKey := func(op uint8, t uint16) flowkeys.Key {
			k := EthKey(1, t)
			k.IPProto = op
			k.ARPSHA = [6]byte{0xa0, 0xa1, 0xa2, 0xa3, 0xa4, 0xa5}
			k.IPv4Src = [4]byte{0xa6, 0xa7, 0xa8, 0xa9}
			k.ARPTHA = [6]byte{0xaa, 0xab, 0xac, 0xad, 0xae, 0xaf}
			k.IPv4Dst = [4]byte{0xb0, 0xb1, 0xb2, 0xb3}
			return k
		}
		d := cat(Eth(0x0806), ARP(1, 0x0800, 6, 4, 1))
		k := arpKey(1, 0x0806)
		add("arp/request", d, k)
		clearARP := func(k *flowkeys.Key) {
			k.IPProto, k.IPv4Src, k.IPv4Dst, k.ARPSHA, k.ARPTHA = 0, [4]byte{}, [4]byte{}, [6]byte{}, [6]byte{}
		}
		c = append(c, truncations("arp/request", d, 1, k, layer{end: 42, apply: clearARP})...)
		add("arp/reply-padded", cat(Eth(0x0806), ARP(1, 0x0800, 6, 4, 2), make([]byte, 18)), arpKey(2, 0x0806))
		add("rarp/reverse-reply", cat(Eth(0x8035), ARP(1, 0x0800, 6, 4, 4)), arpKey(4, 0x8035))
		kop := arpKey(0, 0x0806)
		add("arp/op-above-255", cat(Eth(0x0806), ARP(1, 0x0800, 6, 4, 0x0101)), kop)
		add("arp/hln-8", cat(Eth(0x0806), ARP(1, 0x0800, 8, 4, 1)), EthKey(1, 0x0806))
		add("arp/pro-ipv6", cat(Eth(0x0806), ARP(1, 0x86dd, 6, 4, 1)), EthKey(1, 0x0806))
		add("arp/hrd-ieee802", cat(Eth(0x0806), ARP(6, 0x0800, 6, 4, 1)), EthKey(1, 0x0806))
		add("arp/pln-16-short", cat(Eth(0x0806), ARP(1, 0x0800, 6, 16, 1)[:28]), EthKey(1, 0x0806))
	}

	// --- MPLS ---
	{
		d := cat(Eth(0x8847), MPLS(100, 1, false, 64), MPLS(200, 0, true, 63), IPv4(IPv4Opts{Proto: pUDP, TTL: 64}, UDP(1, 2, nil)))
		k := EthKey(1, 0x8847)
		k.MPLSLSE[0] = 100<<12 | 1<<9 | 64
		k.MPLSLSE[1] = 200<<12 | 0x100 | 63
		k.MPLSLabelsMask = 3
		add("mpls/two-labels", d, k)
		c = append(c, truncations("mpls/two-labels", d, 1, k,
			layer{end: 18, apply: func(k *flowkeys.Key) { k.MPLSLSE[0] = 0 }},
			layer{end: 22, apply: func(k *flowkeys.Key) { k.MPLSLSE[1], k.MPLSLabelsMask = 0, 0 }})...)
		k1 := EthKey(1, 0x8848)
		k1.MPLSLSE[0] = 5<<12 | 0x100 | 1
		k1.MPLSLabelsMask = 1
		add("mpls/multicast-one-label", cat(Eth(0x8848), MPLS(5, 0, true, 1)), k1)
		k4 := EthKey(1, 0x8847)
		k4.MPLSLSE = [3]uint32{1<<12 | 9, 2<<12 | 9, 3<<12 | 9}
		k4.MPLSLabelsMask = 7
		add("mpls/four-labels", cat(Eth(0x8847), MPLS(1, 0, false, 9), MPLS(2, 0, false, 9), MPLS(3, 0, false, 9), MPLS(4, 0, true, 9)), k4)
		add("mpls/no-bottom-of-stack", cat(Eth(0x8847), MPLS(1, 0, false, 9), MPLS(2, 0, false, 9), MPLS(3, 0, false, 9), MPLS(4, 0, false, 9)), func() flowkeys.Key {
			k := k4
			k.MPLSLabelsMask = 0
			return k
		}())
	}

	// --- IPv6 ---
	{
		d := cat(Eth(0x86dd), IPv6(pUDP, 0x2e, 0xfffff, UDP(546, 547, payload)))
		k := v6(1, pUDP, 0x2e, 0xfffff, 0)
		k.TpSrc, k.TpDst = 546, 547
		add("ipv6/udp", d, k)
		c = append(c, truncations("ipv6/udp", d, 1, k, layer{end: 54, apply: clearIPv6}, layer{end: 62, apply: clearTp})...)
		d2 := cat(Eth(0x86dd), IPv6(pICMPv6, 0, 0, ICMP(128, 0, payload)))
		k2 := v6(1, pICMPv6, 0, 0, 0)
		k2.TpSrc = 128
		add("ipv6/icmpv6-echo", d2, k2)
		c = append(c, truncations("ipv6/icmpv6-echo", d2, 1, k2, layer{end: 54, apply: clearIPv6}, layer{end: 62, apply: clearTp})...)
		d3 := cat(Eth(0x86dd), IPv6(pSCTP, 0, 1, SCTP(3868, 3868)))
		k3 := v6(1, pSCTP, 0, 1, 0)
		k3.TpSrc, k3.TpDst = 3868, 3868
		add("ipv6/sctp", d3, k3)
		c = append(c, truncations("ipv6/sctp", d3, 1, k3, layer{end: 54, apply: clearIPv6}, layer{end: 66, apply: clearTp})...)
	}
	{
		// Extension-header chains.
		k := v6(1, pTCP, 0, 0, flowkeys.ExtHdrHop|flowkeys.ExtHdrDest|flowkeys.ExtHdrRouter)
		k.TpSrc, k.TpDst, k.TCPFlags = 22, 1022, 0x010
		add("ipv6/ext/hop-dest-routing-tcp", cat(Eth(0x86dd), IPv6(pHop, 0, 0, cat(ExtHdr(pDest, 0), ExtHdr(pRouting, 1), ExtHdr(pTCP, 0), TCP(22, 1022, 0x010, 0)))), k)

		kf := v6(1, pUDP, 0, 0, flowkeys.ExtHdrFrag)
		kf.IPFrag = flowkeys.FragFirst
		kf.TpSrc, kf.TpDst = 1, 2
		add("ipv6/frag-first-udp", cat(Eth(0x86dd), IPv6(pFrag, 0, 0, cat(FragHdr(pUDP, 0, true), UDP(1, 2, payload)))), kf)

		kl := v6(1, pFrag, 0, 0, flowkeys.ExtHdrFrag)
		kl.IPFrag = flowkeys.FragLater
		add("ipv6/frag-later-udp", cat(Eth(0x86dd), IPv6(pFrag, 0, 0, cat(FragHdr(pUDP, 100, false), UDP(1, 2, payload)))), kl)
		add("ipv6/frag-later-tcp-mf", cat(Eth(0x86dd), IPv6(pFrag, 0, 0, cat(FragHdr(pTCP, 8, true), TCP(1, 2, 2, 0)))), kl)
		kln := kl
		kln.IPv6ExtHdrs |= flowkeys.ExtHdrNoNext
		add("ipv6/frag-later-nonext", cat(Eth(0x86dd), IPv6(pFrag, 0, 0, FragHdr(pNone, 3, false))), kln)

		// A later fragment followed by an extension header: ipv6_find_hdr
		// fails with -ENOENT before reporting the offset, so the kernel
		// calls it a first fragment with no next header.
		kq := v6(1, pNone, 0, 0, flowkeys.ExtHdrFrag|flowkeys.ExtHdrUnseq|flowkeys.ExtHdrDest)
		kq.IPFrag = flowkeys.FragFirst
		add("ipv6/frag-later-then-dstopts", cat(Eth(0x86dd), IPv6(pFrag, 0, 0, cat(FragHdr(pDest, 100, true), ExtHdr(pUDP, 0), UDP(1, 2, nil)))), kq)

		// AH after a fragment header: RFC 2460's order, so in sequence.
		// (Debian's 6.1 module allows HOP, DEST, ROUTER, FRAG and UNREP
		// before AH: it tests the flags against 0xff07. The upstream
		// source's IPPROTO_FRAGMENT in that mask would make this
		// "unsequenced"; the kernel says 0x14.)
		ka := v6(1, pTCP, 0, 0, flowkeys.ExtHdrFrag|flowkeys.ExtHdrAuth)
		ka.IPFrag = flowkeys.FragFirst
		ka.TpSrc, ka.TpDst, ka.TCPFlags = 5, 6, 0x004
		add("ipv6/frag-first-ah-tcp", cat(Eth(0x86dd), IPv6(pFrag, 0, 0, cat(FragHdr(pAuth, 0, true), AuthHdr(pTCP, 0), TCP(5, 6, 0x004, 0)))), ka)
		// Two AHs: repeated, and (AUTH is not among the flags allowed
		// before AH) out of sequence.
		kaa := v6(1, pUDP, 0, 0, flowkeys.ExtHdrAuth|flowkeys.ExtHdrUnrep|flowkeys.ExtHdrUnseq)
		kaa.TpSrc, kaa.TpDst = 1, 2
		add("ipv6/ah-twice-udp", cat(Eth(0x86dd), IPv6(pAuth, 0, 0, cat(AuthHdr(pAuth, 0), AuthHdr(pUDP, 0), UDP(1, 2, nil)))), kaa)
		// Routing then AH: in sequence.
		kra := v6(1, pUDP, 0, 0, flowkeys.ExtHdrRouter|flowkeys.ExtHdrAuth)
		kra.TpSrc, kra.TpDst = 1, 2
		add("ipv6/routing-ah-udp", cat(Eth(0x86dd), IPv6(pRouting, 0, 0, cat(ExtHdr(pAuth, 0), AuthHdr(pUDP, 0), UDP(1, 2, nil)))), kra)

		// AH of 12 bytes: ipv6_find_hdr uses the AH length rule, the
		// extension-header flags use (len+1)*8 and wander into the
		// following headers.
		kah := v6(1, pUDP, 0, 0, flowkeys.ExtHdrAuth|flowkeys.ExtHdrDest|flowkeys.ExtHdrUnseq)
		kah.TpSrc, kah.TpDst = 1, 2
		add("ipv6/ah12-dest-udp", cat(Eth(0x86dd), IPv6(pAuth, 0, 0, cat(AuthHdr(pDest, 1), ExtHdr(pUDP, 0), UDP(1, 2, nil)))), kah)

		add("ipv6/no-next-header", cat(Eth(0x86dd), IPv6(pNone, 0, 0, nil)), v6(1, pNone, 0, 0, flowkeys.ExtHdrNoNext))
		add("ipv6/hop-no-next", cat(Eth(0x86dd), IPv6(pHop, 0, 0, ExtHdr(pNone, 0))), v6(1, pNone, 0, 0, flowkeys.ExtHdrHop|flowkeys.ExtHdrNoNext))
		add("ipv6/hop-truncated", cat(Eth(0x86dd), IPv6(pHop, 0, 0, []byte{6})), v6(1, pNone, 0, 0, flowkeys.ExtHdrHop))
		// The header claims 32 bytes, 16 are there: ipv6_find_hdr fails
		// with -EBADMSG (6.1 checks each extension header's declared
		// length against skb->len), so the protocol stays 59 and there
		// is no L4. The flags are computed separately and still say HOP.
		add("ipv6/hop-beyond-packet", cat(Eth(0x86dd), IPv6(pHop, 0, 0, ExtHdr(pTCP, 3)[:16])), v6(1, pNone, 0, 0, flowkeys.ExtHdrHop))
		// Exactly as long as declared: fine, TCP with no room for ports.
		add("ipv6/hop-ends-packet", cat(Eth(0x86dd), IPv6(pHop, 0, 0, ExtHdr(pTCP, 3))), v6(1, pTCP, 0, 0, flowkeys.ExtHdrHop))
		// AH claiming 16 bytes ((2+2)*4) with 12 present.
		add("ipv6/ah-beyond-packet", cat(Eth(0x86dd), IPv6(pAuth, 0, 0, AuthHdr(pUDP, 2)[:12])), v6(1, pNone, 0, 0, flowkeys.ExtHdrAuth))
		// A first fragment's header with 6 of its 8 bytes: -EBADMSG after
		// the fragment flag was set, so a first fragment with protocol 59.
		kfb := v6(1, pNone, 0, 0, flowkeys.ExtHdrFrag)
		kfb.IPFrag = flowkeys.FragFirst
		add("ipv6/frag-first-header-6-bytes", cat(Eth(0x86dd), IPv6(pFrag, 0, 0, FragHdr(pUDP, 0, true)[:6])), kfb)
		// A later fragment's header with 4 of its 8 bytes: ipv6_find_hdr
		// returns on the non-zero offset before the length check.
		kfl := v6(1, pFrag, 0, 0, flowkeys.ExtHdrFrag)
		kfl.IPFrag = flowkeys.FragLater
		add("ipv6/frag-later-header-4-bytes", cat(Eth(0x86dd), IPv6(pFrag, 0, 0, FragHdr(pUDP, 9, false)[:4])), kfl)
		// The second of two headers runs past the end: the whole walk
		// fails, although the first header was fine.
		add("ipv6/dest-then-routing-beyond", cat(Eth(0x86dd), IPv6(pDest, 0, 0, cat(ExtHdr(pRouting, 0), ExtHdr(pUDP, 1)[:12]))),
			v6(1, pNone, 0, 0, flowkeys.ExtHdrDest|flowkeys.ExtHdrRouter))
		add("ipv6/routing-3-bytes", cat(Eth(0x86dd), IPv6(pRouting, 0, 0, []byte{pTCP, 0, 0})), v6(1, pNone, 0, 0, flowkeys.ExtHdrRouter))
		kf2 := v6(1, pNone, 0, 0, flowkeys.ExtHdrFrag)
		kf2.IPFrag = flowkeys.FragFirst
		add("ipv6/frag-header-3-bytes", cat(Eth(0x86dd), IPv6(pFrag, 0, 0, []byte{pUDP, 0, 0})), kf2)
		kh := v6(1, pUDP, 0, 0, flowkeys.ExtHdrHop|flowkeys.ExtHdrUnrep|flowkeys.ExtHdrUnseq)
		kh.TpSrc, kh.TpDst = 1, 2
		add("ipv6/hop-twice", cat(Eth(0x86dd), IPv6(pHop, 0, 0, cat(ExtHdr(pHop, 0), ExtHdr(pUDP, 0), UDP(1, 2, nil)))), kh)
		kd := v6(1, pUDP, 0, 0, flowkeys.ExtHdrDest|flowkeys.ExtHdrUnrep)
		kd.TpSrc, kd.TpDst = 1, 2
		add("ipv6/dest-three-times", cat(Eth(0x86dd), IPv6(pDest, 0, 0, cat(ExtHdr(pDest, 0), ExtHdr(pDest, 0), ExtHdr(pUDP, 0), UDP(1, 2, nil)))), kd)
		kdh := v6(1, pUDP, 0, 0, flowkeys.ExtHdrDest|flowkeys.ExtHdrUnseq)
		kdh.TpSrc, kdh.TpDst = 1, 2
		add("ipv6/dest-then-hop", cat(Eth(0x86dd), IPv6(pDest, 0, 0, cat(ExtHdr(pHop, 0), ExtHdr(pUDP, 0), UDP(1, 2, nil)))), kdh)
		add("ipv6/esp", cat(Eth(0x86dd), IPv6(pESP, 0, 0, make([]byte, 16))), v6(1, pESP, 0, 0, 0))
		kt := v6(1, pTCP, 0, 0, flowkeys.ExtHdrDest)
		add("ipv6/dest-truncated-tcp", cat(Eth(0x86dd), IPv6(pDest, 0, 0, cat(ExtHdr(pTCP, 0), TCP(1, 2, 0, 0)[:19]))), kt)
	}
	{
		// Neighbour discovery.
		target := [16]byte{0x20, 0x01, 0x0d, 0xb8, 15: 9}
		sll := []byte{0x02, 0x11, 0x22, 0x33, 0x44, 0x55}
		tll := []byte{0x02, 0x66, 0x77, 0x88, 0x99, 0xaa}
		nd := func(typ uint8, t [16]byte, s, tl []byte) flowkeys.Key {
			k := v6(1, pICMPv6, 0, 0, 0)
			k.TpSrc = uint16(typ)
			k.NDTarget = t
			copy(k.NDSLL[:], s)
			copy(k.NDTLL[:], tl)
			return k
		}
		pkt := func(body []byte) []byte { return cat(Eth(0x86dd), IPv6(pICMPv6, 0, 0, body)) }

		d := pkt(ND(135, 0, target, NDOpt(1, 1, sll)))
		k := nd(135, target, sll, nil)
		add("nd/ns-sll", d, k)
		c = append(c, truncations("nd/ns-sll", d, 1, k,
			layer{end: 54, apply: clearIPv6}, layer{end: 62, apply: func(k *flowkeys.Key) { clearTp(k); clearND(k) }},
			layer{end: 78, apply: clearND}, layer{end: 86, apply: func(k *flowkeys.Key) { k.NDSLL = [6]byte{} }})...)
		add("nd/na-tll", pkt(ND(136, 0, target, NDOpt(2, 1, tll))), nd(136, target, nil, tll))
		add("nd/ns-sll-tll", pkt(ND(135, 0, target, NDOpt(1, 1, sll), NDOpt(2, 1, tll))), nd(135, target, sll, tll))
		add("nd/ns-duplicate-sll", pkt(ND(135, 0, target, NDOpt(1, 1, sll), NDOpt(2, 1, tll), NDOpt(1, 1, sll))), nd(135, [16]byte{}, nil, nil))
		add("nd/na-duplicate-tll", pkt(ND(136, 0, target, NDOpt(2, 1, tll), NDOpt(2, 1, tll))), nd(136, [16]byte{}, nil, nil))
		add("nd/ns-zero-sll-then-sll", pkt(ND(135, 0, target, NDOpt(1, 1, nil), NDOpt(1, 1, sll))), nd(135, target, sll, nil))
		add("nd/ns-option-len-0", pkt(ND(135, 0, target, NDOpt(1, 1, sll), NDOpt(2, 0, tll), make([]byte, 6))), nd(135, target, sll, nil))
		add("nd/ns-option-beyond", pkt(ND(135, 0, target, NDOpt(2, 2, tll)[:8])), nd(135, target, nil, nil))
		add("nd/ns-sll-16-bytes", pkt(ND(135, 0, target, NDOpt(1, 2, sll))), nd(135, target, nil, nil))
		add("nd/ns-unknown-option", pkt(ND(135, 0, target, NDOpt(14, 1, sll), NDOpt(2, 1, tll))), nd(135, target, nil, tll))
		add("nd/ns-trailing-7", pkt(ND(135, 0, target, NDOpt(1, 1, sll)[:7])), nd(135, target, nil, nil))
		kc := nd(135, [16]byte{}, nil, nil)
		kc.TpDst = 1
		add("nd/ns-code-1", pkt(ND(135, 1, target, NDOpt(1, 1, sll))), kc)
		add("nd/router-solicit", pkt(ND(133, 0, target, NDOpt(1, 1, sll))), nd(133, [16]byte{}, nil, nil))
		kx := nd(135, target, sll, nil)
		kx.IPv6ExtHdrs = flowkeys.ExtHdrHop
		add("nd/ns-after-hop", cat(Eth(0x86dd), IPv6(pHop, 0, 0, cat(ExtHdr(pICMPv6, 0), ND(135, 0, target, NDOpt(1, 1, sll))))), kx)
	}

	// --- NSH ---
	{
		ctx := []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
		d := cat(Eth(0x894f), NSH(0, 2, 63, 6, 1, 3, 0x00abcdff, ctx), Eth(0x0800))
		k := EthKey(1, 0x894f)
		k.NSHFlags, k.NSHTTL, k.NSHMDType, k.NSHNP, k.NSHPathHdr = 2, 63, 1, 3, 0x00abcdff
		k.NSHContext = [4]uint32{0x01020304, 0x05060708, 0x090a0b0c, 0x0d0e0f10}
		add("nsh/md1", d, k)
		c = append(c, truncations("nsh/md1", d, 1, k, layer{end: 22, err: flowkeys.ErrNSHShort}, layer{end: 38, err: flowkeys.ErrNSHLength})...)
		k2 := EthKey(1, 0x894f)
		k2.NSHTTL, k2.NSHMDType, k2.NSHNP, k2.NSHPathHdr = 1, 2, 1, 0x100
		add("nsh/md2", cat(Eth(0x894f), NSH(0, 0, 1, 2, 2, 1, 0x100, nil), payload), k2)
		add("nsh/md2-with-tlv", cat(Eth(0x894f), NSH(0, 0, 1, 4, 2, 1, 0x100, make([]byte, 8))), k2)
		addErr("nsh/version-1", cat(Eth(0x894f), NSH(1, 0, 1, 2, 2, 1, 0x100, nil)), flowkeys.ErrNSHVersion)
		addErr("nsh/md1-length-8", cat(Eth(0x894f), NSH(0, 0, 1, 2, 1, 1, 0x100, ctx)), flowkeys.ErrNSHMD1Length)
		addErr("nsh/md-type-3", cat(Eth(0x894f), NSH(0, 0, 1, 2, 3, 1, 0x100, nil)), flowkeys.ErrNSHMDType)
		addErr("nsh/length-beyond", cat(Eth(0x894f), NSH(0, 0, 1, 20, 2, 1, 0x100, nil)), flowkeys.ErrNSHLength)
	}

	// --- other ---
	add("lldp", cat(Eth(0x88cc), payload), EthKey(1, 0x88cc))
	add("in-port-65534", cat(Eth(0x88cc), payload), EthKey(65534, 0x88cc))
	return c
}

// CorpusPacket returns the data of the corpus packet named name, and
// fails t when there is none.
func CorpusPacket(t testing.TB, name string) []byte {
	t.Helper()
	for _, p := range Corpus() {
		if p.Name == name {
			return p.Data
		}
	}
	t.Fatalf("no corpus packet %q", name)
	return nil
}
