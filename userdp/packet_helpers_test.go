package userdp

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/ovsdp/ovsdp/internal/header"
)

// This file holds the tests' independent reference computations: plain
// byte-at-a-time checksums written without the package's helpers.

// refSum is the RFC 1071 one's complement sum, byte by byte.
func refSum(sum uint32, b []byte) uint32 {
	for i := 0; i < len(b); i++ {
		if i%2 == 0 {
			sum += uint32(b[i]) << 8
		} else {
			sum += uint32(b[i])
		}
		for sum > 0xffff {
			sum = sum&0xffff + sum>>16
		}
	}
	return sum
}

func refCsum(b []byte) uint16 { return ^uint16(refSum(0, b)) }

// refIPv4Check computes the IPv4 header checksum from scratch.
func refIPv4Check(ip []byte) uint16 {
	ihl := int(ip[0]&0xf) * 4
	h := append([]byte(nil), ip[:ihl]...)
	h[10], h[11] = 0, 0
	return refCsum(h)
}

// refL4Check computes the TCP/UDP/ICMPv6 checksum of the segment seg
// (checksum at csumOff) from scratch with the pseudo-header of src/dst.
func refL4Check(src, dst []byte, proto uint8, seg []byte, csumOff int) uint16 {
	var ph []byte
	ph = append(ph, src...)
	ph = append(ph, dst...)
	if len(src) == 4 {
		ph = append(ph, 0, proto, byte(len(seg)>>8), byte(len(seg)))
	} else {
		ph = append(ph, byte(len(seg)>>24), byte(len(seg)>>16), byte(len(seg)>>8), byte(len(seg)), 0, 0, 0, proto)
	}
	s := append([]byte(nil), seg...)
	s[csumOff], s[csumOff+1] = 0, 0
	c := ^uint16(refSum(refSum(0, ph), s))
	if proto == header.IPProtoUDP && c == 0 {
		c = 0xffff
	}
	return c
}

// refCRC32c is a bitwise CRC32c (Castagnoli, reflected 0x82F63B78).
func refCRC32c(b []byte) uint32 {
	crc := ^uint32(0)
	for _, x := range b {
		crc ^= uint32(x)
		for k := 0; k < 8; k++ {
			if crc&1 != 0 {
				crc = crc>>1 ^ 0x82f63b78
			} else {
				crc >>= 1
			}
		}
	}
	return ^crc
}

func refSCTPCheck(seg []byte) uint32 {
	s := append([]byte(nil), seg...)
	s[8], s[9], s[10], s[11] = 0, 0, 0, 0
	return refCRC32c(s)
}

func csumOffset(proto uint8) int {
	switch proto {
	case header.IPProtoTCP:
		return 16
	case header.IPProtoUDP:
		return 6
	case header.IPProtoICMPv6, header.IPProtoICMP:
		return 2
	}
	return -1
}

func l4Len(proto uint8) int {
	switch proto {
	case header.IPProtoTCP:
		return 20
	case header.IPProtoUDP, header.IPProtoICMPv6, header.IPProtoICMP:
		return 8
	case header.IPProtoSCTP:
		return 12
	}
	return 0
}

// testIPv4 builds an Ethernet+IPv4 frame carrying proto with payload
// bytes of random data after a zeroed L4 header, with all checksums
// correct (computed by the reference functions).
func testIPv4(rng *rand.Rand, proto uint8, payload int, fragOff uint16) []byte {
	hl := l4Len(proto)
	f := make([]byte, 14+20+hl+payload)
	for i := range f {
		f[i] = byte(rng.Uint32())
	}
	binary.BigEndian.PutUint16(f[12:], header.EtherTypeIPv4)
	ip := f[14:]
	ip[0] = 0x45
	binary.BigEndian.PutUint16(ip[2:], uint16(20+hl+payload))
	binary.BigEndian.PutUint16(ip[6:], fragOff)
	ip[9] = proto
	if proto == header.IPProtoUDP {
		binary.BigEndian.PutUint16(ip[20+4:], uint16(hl+payload))
	}
	fixIPv4(f, 14)
	return f
}

// fixIPv4 recomputes the IPv4 and L4 checksums with the references.
func fixIPv4(f []byte, l3 int) {
	ip := f[l3:]
	binary.BigEndian.PutUint16(ip[10:], refIPv4Check(ip))
	proto := ip[9]
	seg := ip[20:]
	if binary.BigEndian.Uint16(ip[6:])&0x1fff != 0 {
		return
	}
	switch proto {
	case header.IPProtoTCP, header.IPProtoUDP:
		binary.BigEndian.PutUint16(seg[csumOffset(proto):], refL4Check(ip[12:16], ip[16:20], proto, seg, csumOffset(proto)))
	case header.IPProtoSCTP:
		binary.LittleEndian.PutUint32(seg[8:], refSCTPCheck(seg))
	}
}

// testIPv6 builds an Ethernet+IPv6 frame with the extension headers ext
// (each: next-header value it carries is filled in), then proto.
func testIPv6(rng *rand.Rand, proto uint8, payload int, ext ...[]byte) []byte {
	hl := l4Len(proto)
	el := 0
	for _, e := range ext {
		el += len(e)
	}
	f := make([]byte, 14+40+el+hl+payload)
	for i := range f {
		f[i] = byte(rng.Uint32())
	}
	binary.BigEndian.PutUint16(f[12:], header.EtherTypeIPv6)
	ip := f[14:]
	ip[0] = 0x60 | ip[0]&0x0f
	binary.BigEndian.PutUint16(ip[4:], uint16(el+hl+payload))
	off := 40
	nhField := 6
	for _, e := range ext {
		// e[0] is the type of this header (taken out); e[1:] its bytes.
		ip[nhField] = e[0]
		copy(ip[off:], e[1:])
		nhField = off
		off += len(e) - 1
	}
	ip[nhField] = proto
	f = f[:14+40+off-40+hl+payload]
	binary.BigEndian.PutUint16(ip[4:], uint16(off-40+hl+payload))
	fixIPv6(f, 14, 14+off)
	return f
}

func fixIPv6(f []byte, l3, l4 int) {
	ip := f[l3:]
	var h pktHeaders
	if err := parseHeaders(f, &h); err != nil {
		panic(err)
	}
	if h.L4 != l4 {
		return
	}
	seg := f[l4:]
	switch h.Proto {
	case header.IPProtoTCP, header.IPProtoUDP, header.IPProtoICMPv6:
		binary.BigEndian.PutUint16(seg[csumOffset(h.Proto):], refL4Check(ip[8:24], ip[24:40], h.Proto, seg, csumOffset(h.Proto)))
	case header.IPProtoSCTP:
		binary.LittleEndian.PutUint32(seg[8:], refSCTPCheck(seg))
	}
}

// checkIPv4 fails t unless the IPv4 header checksum and (for non-later
// fragments) the L4 checksum equal the reference recomputation.
func checkIPv4(t *testing.T, f []byte, l3 int) {
	t.Helper()
	ip := f[l3:]
	if got, want := binary.BigEndian.Uint16(ip[10:]), refIPv4Check(ip); got != want {
		t.Errorf("IPv4 header checksum %#04x, recomputed %#04x", got, want)
	}
	if binary.BigEndian.Uint16(ip[6:])&0x1fff != 0 {
		return
	}
	if proto := ip[9]; proto != header.IPProtoICMPv6 {
		checkL4(t, ip[int(ip[0]&0xf)*4:], ip[12:16], ip[16:20], proto)
	}
}

func checkIPv6(t *testing.T, f []byte, l3, l4 int, proto uint8) {
	t.Helper()
	checkL4(t, f[l4:], f[l3+8:l3+24], f[l3+24:l3+40], proto)
}

// checkL4 fails t unless the TCP, UDP, ICMPv6 or SCTP checksum of seg
// (a zero UDP checksum: none) equals the reference recomputation with
// the pseudo-header addresses src and dst.
func checkL4(t *testing.T, seg, src, dst []byte, proto uint8) {
	t.Helper()
	switch proto {
	case header.IPProtoTCP, header.IPProtoUDP, header.IPProtoICMPv6:
		got := binary.BigEndian.Uint16(seg[csumOffset(proto):])
		if proto == header.IPProtoUDP && got == 0 {
			return
		}
		if want := refL4Check(src, dst, proto, seg, csumOffset(proto)); got != want {
			t.Errorf("L4 (proto %d) checksum %#04x, recomputed %#04x", proto, got, want)
		}
	case header.IPProtoSCTP:
		if got, want := binary.LittleEndian.Uint32(seg[8:]), refSCTPCheck(seg); got != want {
			t.Errorf("SCTP checksum %#08x, recomputed %#08x", got, want)
		}
	}
}

func mustParse(t testing.TB, f []byte) *pktHeaders {
	t.Helper()
	h := new(pktHeaders)
	if err := parseHeaders(f, h); err != nil {
		t.Fatalf("parseHeaders: %v", err)
	}
	return h
}

func newRand(t testing.TB) *rand.Rand {
	return rand.New(rand.NewPCG(uint64(len(t.Name())), 0x5eed))
}

// itoa formats n in decimal.
func itoa(n uint32) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}

// udpFrame64 is a 60-byte (64 with the FCS) Ethernet/IPv4/UDP frame to a
// MAC address no interface has.
func udpFrame64(seq int) []byte {
	f := make([]byte, 60)
	copy(f, []byte{0x02, 0, 0, 0, 0, 0x02, 0x02, 0, 0, 0, 0, 0x01, 0x08, 0x00})
	ip := f[14:]
	ip[0], ip[8], ip[9] = 0x45, 64, header.IPProtoUDP
	binary.BigEndian.PutUint16(ip[2:], 46)
	copy(ip[12:], []byte{10, 0, 0, 1, 10, 0, 0, 2})
	binary.BigEndian.PutUint16(ip[10:], refIPv4Check(ip))
	binary.BigEndian.PutUint16(ip[20:], uint16(seq))
	binary.BigEndian.PutUint16(ip[22:], 9)
	binary.BigEndian.PutUint16(ip[24:], 26)
	return f
}

// decTTLHeaders is decTTL for the frame whose headers h describes.
func decTTLHeaders(frame []byte, h *pktHeaders) (expired bool, err error) {
	return decTTL(frame, h.Protocol, h.L3)
}

// headroomFrame returns pkt copied into a buffer with DefaultHeadroom
// bytes in front of it and 8 behind, and the frameBuf over it.
func headroomFrame(pkt []byte) (frameBuf, []byte) {
	buf := make([]byte, DefaultHeadroom+len(pkt)+8)
	copy(buf[DefaultHeadroom:], pkt)
	return frameBuf{Buf: buf, Off: DefaultHeadroom, Len: len(pkt)}, buf
}
