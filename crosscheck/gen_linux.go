package crosscheck

import (
	"encoding/binary"
	"math/rand/v2"

	"github.com/ovsdp/ovsdp/flowkeys/flowkeystest"
	"github.com/ovsdp/ovsdp/internal/header"
	"github.com/ovsdp/ovsdp/internal/header/headertest"
)

// Frame size limits of generated packets: an Ethernet header at least,
// and no more than a 1500-byte MTU allows (with two VLAN tags).
const (
	MinFrame = 14
	MaxFrame = 1522
)

// Generator makes random and mutated packets, deterministically from a
// seed. Destination MACs never equal the hosts' (MAC1..MAC3), so the
// receiving hosts' stacks answer nothing.
type Generator struct {
	r     *rand.Rand
	seeds [][]byte
}

// NewGenerator returns a generator seeded with seed. Mutations start
// from flowkeys' packet corpus, MalformedFrames and packets it built
// itself.
func NewGenerator(seed uint64) *Generator {
	g := &Generator{r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
	for _, p := range flowkeystest.Corpus() {
		if len(p.Data) >= MinFrame && len(p.Data) <= MaxFrame {
			g.seeds = append(g.seeds, p.Data)
		}
	}
	g.seeds = append(g.seeds, MalformedFrames()...)
	return g
}

// Packets returns n packets: about half built at random, half mutated.
func (g *Generator) Packets(n int) [][]byte {
	out := make([][]byte, 0, n)
	for len(out) < n {
		var p []byte
		if g.r.IntN(2) == 0 {
			p = g.Random()
		} else {
			p = g.Mutated()
		}
		out = append(out, g.fix(p))
	}
	return out
}

func (g *Generator) bytes(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(g.r.Uint32())
	}
	return b
}

func (g *Generator) ip4() [4]byte {
	// Mostly in 10/8, to hit the flows; sometimes anything.
	if g.r.IntN(4) == 0 {
		return [4]byte(g.bytes(4))
	}
	return [4]byte{10, byte(g.r.IntN(4)), byte(g.r.IntN(4)), byte(g.r.IntN(256))}
}

func (g *Generator) ip6() [16]byte {
	a := B1
	a[15] = byte(g.r.IntN(256))
	if g.r.IntN(4) == 0 {
		return [16]byte(g.bytes(16))
	}
	return a
}

func (g *Generator) l4(proto uint8, v6 bool) []byte {
	payload := g.bytes(g.r.IntN(48))
	switch proto {
	case header.IPProtoTCP:
		return headertest.TCP(uint16(g.r.Uint32()), uint16(g.r.Uint32()), g.r.Uint32(), g.r.Uint32(), byte(g.r.Uint32()), payload)
	case header.IPProtoUDP:
		return headertest.UDP(uint16(g.r.Uint32()), uint16(g.r.Uint32()), payload)
	case header.IPProtoICMP:
		return headertest.ICMP(uint8(g.r.IntN(20)), uint8(g.r.IntN(4)), g.r.Uint32(), payload)
	case header.IPProtoICMPv6:
		typ := []uint8{1, 2, 3, 128, 129, 135, 136, 133}[g.r.IntN(8)]
		body := g.bytes(16)
		if typ == 135 || typ == 136 {
			// Target, then maybe a link-layer address option.
			if g.r.IntN(2) == 0 {
				body = append(body, byte(1+g.r.IntN(2)), 1)
				body = append(body, g.bytes(6)...)
			}
		}
		return headertest.ICMP(typ, 0, 0, body)
	case 132: // SCTP
		return append([]byte{byte(g.r.Uint32()), byte(g.r.Uint32()), byte(g.r.Uint32()), byte(g.r.Uint32()), 0, 0, 0, 1, 0, 0, 0, 0}, payload...)
	}
	return payload
}

var protos4 = []uint8{header.IPProtoTCP, header.IPProtoUDP, header.IPProtoICMP, 132, 47, 0}
var protos6 = []uint8{header.IPProtoTCP, header.IPProtoUDP, header.IPProtoICMPv6, 132, 59}

// Random returns a packet built from random header values.
func (g *Generator) Random() []byte {
	src := [6]byte(g.bytes(6))
	src[0] &^= 1
	dst := Nobody
	switch g.r.IntN(4) {
	case 0:
		dst = Bcast
	case 1:
		dst = [6]byte(g.bytes(6))
	}
	var tags [][2]uint16
	switch g.r.IntN(6) {
	case 0:
		tags = [][2]uint16{{header.EtherTypeVLAN, uint16(g.r.Uint32())}}
	case 1:
		tags = [][2]uint16{{header.EtherTypeQinQ, uint16(g.r.Uint32())}, {header.EtherTypeVLAN, uint16(g.r.Uint32())}}
	}
	var typ uint16
	var l3 []byte
	switch g.r.IntN(8) {
	case 0, 1, 2:
		typ = header.EtherTypeIPv4
		h := headertest.IPv4Hdr{Src: g.ip4(), Dst: g.ip4(), Proto: protos4[g.r.IntN(len(protos4))], TOS: byte(g.r.Uint32()),
			TTL: byte(g.r.IntN(4)) * byte(g.r.IntN(80)), ID: uint16(g.r.Uint32()), DF: g.r.IntN(2) == 0}
		if g.r.IntN(6) == 0 {
			h.Options = g.bytes(4 * (1 + g.r.IntN(10)))
		}
		switch g.r.IntN(6) {
		case 0:
			h.MF = true
		case 1:
			h.FragOff = uint16(1 + g.r.IntN(100))
			h.MF = g.r.IntN(2) == 0
		}
		l3 = headertest.IPv4(h, g.l4(h.Proto, false))
	case 3, 4:
		typ = header.EtherTypeIPv6
		next := protos6[g.r.IntN(len(protos6))]
		body := g.l4(next, true)
		first := next
		switch g.r.IntN(5) {
		case 0: // fragment header
			off := uint16(g.r.IntN(3)) << 3
			if g.r.IntN(2) == 0 {
				off |= 1
			}
			body = append([]byte{next, 0, byte(off >> 8), byte(off), 0, 0, 0, 7}, body...)
			first = 44
		case 1: // hop-by-hop
			body = append([]byte{next, 0, 1, 4, 0, 0, 0, 0}, body...)
			first = 0
		}
		l3 = headertest.IPv6(g.ip6(), g.ip6(), first, byte(g.r.IntN(256)), byte(g.r.Uint32()), g.r.Uint32(), body)
	case 5:
		typ = header.EtherTypeARP
		l3 = headertest.ARP(uint16(1+g.r.IntN(3)), src, g.ip4(), [6]byte(g.bytes(6)), g.ip4())
	case 6:
		typ = 0x8847 // MPLS
		n := 1 + g.r.IntN(3)
		for i := 0; i < n; i++ {
			lse := g.r.Uint32() &^ 0x100
			if i == n-1 {
				lse |= 0x100
			}
			l3 = binary.BigEndian.AppendUint32(l3, lse)
		}
		l3 = append(l3, headertest.IPv4(headertest.IPv4Hdr{Src: g.ip4(), Dst: g.ip4(), Proto: header.IPProtoUDP, TTL: 9}, g.l4(header.IPProtoUDP, false))...)
	default:
		typ = uint16(g.r.Uint32())
		l3 = g.bytes(g.r.IntN(64))
	}
	return headertest.Eth(dst, src, typ, l3, tags...)
}

// Mutated returns a seed packet (or a fresh random one) with one to four
// mutations: bit flips, byte overwrites, truncation, extension.
func (g *Generator) Mutated() []byte {
	var p []byte
	if g.r.IntN(3) == 0 {
		p = g.Random()
	} else {
		p = append([]byte(nil), g.seeds[g.r.IntN(len(g.seeds))]...)
	}
	for n := 1 + g.r.IntN(4); n > 0; n-- {
		switch g.r.IntN(5) {
		case 0, 1:
			i := g.r.IntN(len(p))
			p[i] ^= 1 << g.r.IntN(8)
		case 2:
			// Overwrite a byte past the MACs (headers are where it matters).
			if len(p) > 12 {
				p[12+g.r.IntN(len(p)-12)] = byte(g.r.Uint32())
			}
		case 3:
			if len(p) > MinFrame {
				p = p[:MinFrame+g.r.IntN(len(p)-MinFrame)]
			}
		case 4:
			p = append(p, g.bytes(1+g.r.IntN(32))...)
		}
	}
	return p
}

// fix enforces the size limits and keeps the hosts' MACs out of the
// destination.
func (g *Generator) fix(p []byte) []byte {
	if len(p) < MinFrame {
		p = append(p, make([]byte, MinFrame-len(p))...)
	}
	if len(p) > MaxFrame {
		p = p[:MaxFrame]
	}
	for _, h := range [][6]byte{MAC1, MAC2, MAC3} {
		if [6]byte(p[:6]) == h {
			copy(p, Nobody[:])
		}
	}
	return p
}

// FuzzFlows are the flows of the differential fuzz: disjoint megaflows
// of several masks with forwarding, masked sets, dec_ttl, VLAN, trunc
// and userspace actions; whatever matches none of them misses.
var FuzzFlows = []FlowSpec{
	{"in_port(1),eth(),eth_type(0x0800),ipv4(proto=6,frag=no),tcp(dst=0/0x8000)", "set(ipv4(src=10.99.0.1,ttl=9)),2"},
	{"in_port(1),eth(),eth_type(0x0800),ipv4(proto=17,frag=no),udp(src=0/0x8000)", "dec_ttl(le_1(drop)),set(ipv4(tos=0x48/0xfc)),3"},
	{"in_port(1),eth(),eth_type(0x0800),ipv4(proto=17,frag=no),udp(src=0x8000/0x8000,dst=0/0x8000)", "userspace(pid=$PID,userdata(0011223344556677)),2"},
	{"in_port(1),eth(),eth_type(0x0800),ipv4(proto=1,frag=no),icmp()", "trunc(64),2,3"},
	{"in_port(1),eth(),eth_type(0x0800),ipv4(frag=later)", "2"},
	{"in_port(1),eth(),eth_type(0x0800),ipv4(frag=first)", "3"},
	{"in_port(1),eth(),eth_type(0x86dd),ipv6(proto=17,frag=no),udp(dst=0/0x8000)", "set(ipv6(hlimit=3)),2"},
	{"in_port(1),eth(),eth_type(0x86dd),ipv6(proto=58,frag=no),icmpv6()", "3"},
	{"in_port(1),eth(),eth_type(0x0806),arp()", "push_vlan(vid=7,pcp=1),2"},
	{"in_port(1),eth(),eth_type(0x8100),vlan(vid=5/0xf),encap(eth_type(0x0800),ipv4(frag=no))", "pop_vlan,3"},
}
