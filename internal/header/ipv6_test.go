package header

import (
	"bytes"
	"testing"
)

// ipv6With returns an IPv6 header with next header next followed by the
// bytes of rest.
func ipv6With(next uint8, rest ...[]byte) []byte {
	h := make([]byte, 40)
	h[0] = 0x60
	h[6] = next
	return append(h, bytes.Join(rest, nil)...)
}

func ext(next, len8 uint8) []byte {
	h := make([]byte, (int(len8)+1)*8)
	h[0], h[1] = next, len8
	return h
}

func frag(next uint8, off uint16, more bool) []byte {
	v := off << 3
	if more {
		v |= 1
	}
	return []byte{next, 0, byte(v >> 8), byte(v), 0, 0, 0xab, 0xcd}
}

func TestIPv6ExtWalk(t *testing.T) {
	routing := func(next, segs uint8) []byte { h := ext(next, 0); h[2], h[3] = 0, segs; return h }
	auth := func(next, len4 uint8) []byte { h := make([]byte, (int(len4)+2)*4); h[0], h[1] = next, len4; return h }
	for _, c := range []struct {
		name string
		p    []byte
		want IPv6Walk
	}{
		{"no extension headers", ipv6With(IPProtoTCP), IPv6Walk{OK: true, Next: IPProtoTCP, Offset: 40}},
		{"no next header", ipv6With(IPProtoNoNext), IPv6Walk{OK: true, Next: IPProtoNoNext, Offset: 40}},
		{"ESP is not walked", ipv6With(IPProtoESP, make([]byte, 8)), IPv6Walk{OK: true, Next: IPProtoESP, Offset: 40}},
		{"hop, dest, udp", ipv6With(IPProtoHopByHop, ext(IPProtoDestOpts, 1), ext(IPProtoUDP, 0)), IPv6Walk{OK: true, Next: IPProtoUDP, Offset: 64}},
		{"hop then nothing", ipv6With(IPProtoHopByHop, ext(IPProtoNoNext, 0)), IPv6Walk{OK: true, Next: IPProtoNoNext, Offset: 48}},
		{"auth is (len+2)*4", ipv6With(IPProtoAuth, auth(IPProtoTCP, 4)), IPv6Walk{OK: true, Next: IPProtoTCP, Offset: 64}},
		{"routing, segments left", ipv6With(IPProtoRouting, routing(IPProtoTCP, 2)), IPv6Walk{OK: true, Next: IPProtoTCP, Offset: 48, RoutingActive: true}},
		{"routing, no segments left", ipv6With(IPProtoRouting, routing(IPProtoTCP, 0)), IPv6Walk{OK: true, Next: IPProtoTCP, Offset: 48}},
		{"first fragment", ipv6With(IPProtoFragment, frag(IPProtoUDP, 0, true)), IPv6Walk{OK: true, Next: IPProtoUDP, Offset: 48, Fragment: true}},
		{"later fragment", ipv6With(IPProtoFragment, frag(IPProtoUDP, 100, false)), IPv6Walk{OK: true, Next: IPProtoUDP, Fragment: true, FragmentOffset: 800}},
		{"later fragment of a 4-byte header", ipv6With(IPProtoFragment, frag(IPProtoUDP, 100, false)[:4]), IPv6Walk{OK: true, Next: IPProtoUDP, Fragment: true, FragmentOffset: 800}},
		{"later fragment then an extension header", ipv6With(IPProtoFragment, frag(IPProtoDestOpts, 1, false)), IPv6Walk{Fragment: true, FragmentOffset: 8}},
		{"later fragment then no next header", ipv6With(IPProtoFragment, frag(IPProtoNoNext, 1, false)), IPv6Walk{OK: true, Next: IPProtoNoNext, Fragment: true, FragmentOffset: 8}},
		{"fragment header cut to 3 bytes", ipv6With(IPProtoFragment, frag(IPProtoUDP, 0, true)[:3]), IPv6Walk{Fragment: true}},
		{"first fragment cut to 6 bytes", ipv6With(IPProtoFragment, frag(IPProtoUDP, 0, true)[:6]), IPv6Walk{Fragment: true}},
		{"hop header 1 byte", ipv6With(IPProtoHopByHop, []byte{6}), IPv6Walk{}},
		{"hop header shorter than its length", ipv6With(IPProtoHopByHop, ext(IPProtoTCP, 1)[:15]), IPv6Walk{}},
		{"routing header 3 bytes", ipv6With(IPProtoRouting, []byte{6, 0, 0}), IPv6Walk{}},
		{"routing header 4 bytes, active", ipv6With(IPProtoRouting, []byte{6, 0, 0, 1}), IPv6Walk{RoutingActive: true}},
		{"header ending at the packet's end", ipv6With(IPProtoDestOpts, ext(IPProtoTCP, 0)), IPv6Walk{OK: true, Next: IPProtoTCP, Offset: 48}},
	} {
		if got := IPv6ExtWalk(c.p, 0); got != c.want {
			t.Errorf("%s: IPv6ExtWalk = %+v, want %+v", c.name, got, c.want)
		}
		// At an offset inside a larger frame the offsets shift with it.
		pre := append(make([]byte, 14), c.p...)
		want := c.want
		if want.OK && want.Offset != 0 {
			want.Offset += 14
		}
		if got := IPv6ExtWalk(pre, 14); got != want {
			t.Errorf("%s at offset 14: IPv6ExtWalk = %+v, want %+v", c.name, got, want)
		}
	}
	for n, want := range map[uint8]bool{0: true, 43: true, 44: true, 51: true, 59: true, 60: true, 50: false, 6: false, 17: false, 58: false, 135: false} {
		eq(t, "IsIPv6ExtHdr", IsIPv6ExtHdr(n), want)
	}
}
