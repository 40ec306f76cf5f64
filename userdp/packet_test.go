package userdp

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/ovsdp/ovsdp/flowkeys"
	"github.com/ovsdp/ovsdp/odp"
)

func TestCsumReplaceMatchesRecomputation(t *testing.T) {
	rng := newRand(t)
	for i := 0; i < 2000; i++ {
		n := 2 * (2 + rng.IntN(40))
		b := make([]byte, n)
		for j := range b {
			b[j] = byte(rng.Uint32())
		}
		c := refCsum(b)
		off := 2 * rng.IntN(n/2-1)
		switch i % 3 {
		case 0:
			old := binary.BigEndian.Uint16(b[off:])
			nw := uint16(rng.Uint32())
			binary.BigEndian.PutUint16(b[off:], nw)
			if got, want := CsumReplace2(c, old, nw), refCsum(b); got != want {
				t.Fatalf("CsumReplace2 %#x -> %#x: got %#04x, recomputed %#04x", old, nw, got, want)
			}
		case 1:
			old := binary.BigEndian.Uint32(b[off:])
			nw := rng.Uint32()
			binary.BigEndian.PutUint32(b[off:], nw)
			if got, want := CsumReplace4(c, old, nw), refCsum(b); got != want {
				t.Fatalf("CsumReplace4 %#x -> %#x: got %#04x, recomputed %#04x", old, nw, got, want)
			}
		case 2:
			if n < 18 {
				continue
			}
			off = 2 * rng.IntN((n-16)/2+1)
			var old, nw [16]byte
			copy(old[:], b[off:])
			for j := range nw {
				nw[j] = byte(rng.Uint32())
			}
			copy(b[off:], nw[:])
			if got, want := CsumReplace16(c, &old, &nw), refCsum(b); got != want {
				t.Fatalf("CsumReplace16: got %#04x, recomputed %#04x", got, want)
			}
		}
		// The full computation agrees with the reference too.
		if got, want := Csum(CsumPartial(b, 0)), refCsum(b); got != want {
			t.Fatalf("Csum(CsumPartial) = %#04x, reference %#04x (len %d)", got, want, n)
		}
	}
	// Odd length.
	b := []byte{1, 2, 3, 4, 5}
	if got, want := Csum(CsumPartial(b, 0)), refCsum(b); got != want {
		t.Fatalf("odd length: %#04x, reference %#04x", got, want)
	}
}

func TestCsumReplaceUDP(t *testing.T) {
	if got := CsumReplaceUDP(0, 0x1234); got != 0 {
		t.Errorf("zero (no) checksum became %#x", got)
	}
	if got := CsumReplaceUDP(0x1111, 0); got != 0xffff {
		t.Errorf("computed 0 stored as %#x, want 0xffff", got)
	}
	if got := CsumReplaceUDP(0x1111, 0x2222); got != 0x2222 {
		t.Errorf("got %#x, want 0x2222", got)
	}
}

func TestParseHeaders(t *testing.T) {
	rng := newRand(t)
	f := testIPv4(rng, ProtoTCP, 10, 0)
	h := mustParse(t, f)
	if h.EthType != EthTypeIPv4 || h.L3 != 14 || h.L4 != 34 || h.Proto != ProtoTCP || h.Frag != FragNone || h.MACLen != 14 {
		t.Errorf("IPv4/TCP: %+v", *h)
	}
	// Two VLAN tags.
	tagged := append(append(append([]byte(nil), f[:12]...), 0x88, 0xa8, 0, 5, 0x81, 0, 0, 7), f[12:]...)
	h = mustParse(t, tagged)
	if h.EthType != EthTypeIPv4 || h.L3 != 22 || h.L4 != 42 || h.MACLen != 22 {
		t.Errorf("QinQ IPv4: %+v", *h)
	}
	// Later fragment: L4 right after the IP header, as the kernel.
	h = mustParse(t, testIPv4(rng, ProtoUDP, 8, 0x0010))
	if h.Frag != FragLater || h.L4 != 34 {
		t.Errorf("later fragment: %+v", *h)
	}
	h = mustParse(t, testIPv4(rng, ProtoUDP, 8, 0x2000))
	if h.Frag != FragFirst || h.L4 != 34 {
		t.Errorf("first fragment: %+v", *h)
	}
	// Bad IHL: no L4.
	bad := testIPv4(rng, ProtoUDP, 8, 0)
	bad[14] = 0x44
	if h = mustParse(t, bad); h.L4 != -1 {
		t.Errorf("IHL 4: L4 %d, want -1", h.L4)
	}
	// Truncated IPv4.
	if h = mustParse(t, f[:30]); h.L4 != -1 || h.EthType != EthTypeIPv4 {
		t.Errorf("truncated: %+v", *h)
	}
	// IPv6 with hop-by-hop, routing (segments left 2), then UDP.
	hop := []byte{nhHop, 0, 0, 1, 4, 0, 0, 0, 0}
	rt := []byte{nhRouting, 0, 0, 0, 2, 0, 0, 0, 0}
	f6 := testIPv6(rng, ProtoUDP, 4, hop, rt)
	h = mustParse(t, f6)
	if h.EthType != EthTypeIPv6 || h.L4 != 14+40+16 || h.Proto != ProtoUDP || !h.IPv6RoutingActive {
		t.Errorf("IPv6 ext: %+v", *h)
	}
	// IPv6 later fragment.
	frag := []byte{nhFragment, 0, 0, 0, 0x10, 0, 0, 0, 1}
	h = mustParse(t, testIPv6(rng, ProtoTCP, 0, frag))
	if h.Frag != FragLater || h.L4 != -1 || h.Proto != nhFragment {
		t.Errorf("IPv6 later fragment: %+v", *h)
	}
	// IPv6 first fragment.
	frag = []byte{nhFragment, 0, 0, 0, 0x01, 0, 0, 0, 1}
	h = mustParse(t, testIPv6(rng, ProtoTCP, 0, frag))
	if h.Frag != FragFirst || h.L4 != 14+48 || h.Proto != ProtoTCP {
		t.Errorf("IPv6 first fragment: %+v", *h)
	}
	// An extension header claiming more bytes than the frame has: no L4.
	long := testIPv6(rng, ProtoTCP, 0, []byte{nhDest, 0, 50, 0, 0, 0, 0, 0, 0})
	if h = mustParse(t, long); h.L4 != -1 {
		t.Errorf("extension header beyond the frame: L4 %d (frame %d bytes)", h.L4, len(long))
	}
	// LLC/SNAP carrying IPv4.
	snap := append(append(append([]byte(nil), f[:12]...), 0, 60, 0xaa, 0xaa, 3, 0, 0, 0, 0x08, 0x00), f[14:]...)
	if h = mustParse(t, snap); h.EthType != EthTypeIPv4 || h.L3 != 22 || h.L4 != 42 {
		t.Errorf("SNAP: %+v", *h)
	}
	// Plain 802.3 LLC.
	llc := append(append([]byte(nil), f[:12]...), 0, 10, 0x42, 0x42, 3, 1, 2, 3, 4, 5, 6, 7)
	if h = mustParse(t, llc); h.EthType != EthType8022 {
		t.Errorf("LLC: %+v", *h)
	}
	var hh Headers
	if err := ParseHeaders(make([]byte, 13), &hh); !errors.Is(err, ErrTooShort) {
		t.Errorf("13-byte frame: %v, want ErrTooShort", err)
	}
}

func TestSetIPv4Masked(t *testing.T) {
	rng := newRand(t)
	for _, proto := range []uint8{ProtoTCP, ProtoUDP, ProtoSCTP, ProtoICMP} {
		for i := 0; i < 50; i++ {
			f := testIPv4(rng, proto, rng.IntN(40), 0)
			orig := append([]byte(nil), f...)
			h := mustParse(t, f)
			var key, mask odp.IPv4
			binary.BigEndian.PutUint32(mask.Src[:], rng.Uint32())
			binary.BigEndian.PutUint32(mask.Dst[:], rng.Uint32())
			mask.TOS, mask.TTL = byte(rng.Uint32()), byte(rng.Uint32())
			binary.BigEndian.PutUint32(key.Src[:], rng.Uint32()&binary.BigEndian.Uint32(mask.Src[:]))
			binary.BigEndian.PutUint32(key.Dst[:], rng.Uint32()&binary.BigEndian.Uint32(mask.Dst[:]))
			key.TOS, key.TTL = byte(rng.Uint32())&mask.TOS, byte(rng.Uint32())&mask.TTL
			if err := SetIPv4Masked(f, h, &key, &mask); err != nil {
				t.Fatal(err)
			}
			// Only masked bits changed.
			for j := range f {
				var m byte
				switch {
				case j >= 26 && j < 30:
					m = mask.Src[j-26]
				case j >= 30 && j < 34:
					m = mask.Dst[j-30]
				case j == 15:
					m = mask.TOS
				case j == 22:
					m = mask.TTL
				case j == 24 || j == 25: // IP checksum
					m = 0xff
				case proto == ProtoTCP && (j == 34+16 || j == 34+17), proto == ProtoUDP && (j == 34+6 || j == 34+7):
					m = 0xff
				}
				if (f[j]^orig[j])&^m != 0 {
					t.Fatalf("proto %d: byte %d changed outside the mask: %#x -> %#x (mask %#x)", proto, j, orig[j], f[j], m)
				}
			}
			if got, want := binary.BigEndian.Uint32(f[26:]), binary.BigEndian.Uint32(orig[26:])&^binary.BigEndian.Uint32(mask.Src[:])|binary.BigEndian.Uint32(key.Src[:]); got != want {
				t.Fatalf("src %#x, want %#x", got, want)
			}
			if got, want := binary.BigEndian.Uint32(f[30:]), binary.BigEndian.Uint32(orig[30:])&^binary.BigEndian.Uint32(mask.Dst[:])|binary.BigEndian.Uint32(key.Dst[:]); got != want {
				t.Fatalf("dst %#x, want %#x", got, want)
			}
			if got, want := f[22], orig[22]&^mask.TTL|key.TTL; got != want {
				t.Fatalf("ttl %d, want %d", got, want)
			}
			if got, want := f[15], orig[15]&^mask.TOS|key.TOS; got != want {
				t.Fatalf("tos %#x, want %#x", got, want)
			}
			checkIPv4(t, f, 14)
			if proto == ProtoSCTP && !bytes.Equal(f[34:], orig[34:]) {
				t.Fatalf("SCTP packet changed by an IPv4 address change")
			}
		}
	}
}

func TestSetIPv4UDPChecksumRules(t *testing.T) {
	rng := newRand(t)
	key := odp.IPv4{Src: [4]byte{10, 1, 2, 3}}
	mask := odp.IPv4{Src: [4]byte{0xff, 0xff, 0xff, 0xff}}
	// Checksum 0 (none) stays 0.
	f := testIPv4(rng, ProtoUDP, 12, 0)
	f[34+6], f[34+7] = 0, 0
	if err := SetIPv4Masked(f, mustParse(t, f), &key, &mask); err != nil {
		t.Fatal(err)
	}
	if c := binary.BigEndian.Uint16(f[34+6:]); c != 0 {
		t.Errorf("UDP checksum 0 became %#x", c)
	}
	checkIPv4(t, f, 14)
	// A checksum that computes to 0 after the change is stored as 0xffff:
	// build the packet as it will be after the change, tune a payload word
	// so that its checksum is 0, then put the old address back.
	f = testIPv4(rng, ProtoUDP, 12, 0)
	old := append([]byte(nil), f[26:30]...)
	copy(f[26:30], key.Src[:])
	f[34+6], f[34+7] = 0, 0
	f[34+8], f[34+9] = 0, 0
	ip := f[14:]
	seg := ip[20:]
	ph := append(append(append([]byte(nil), ip[12:20]...), 0, ProtoUDP), byte(len(seg)>>8), byte(len(seg)))
	s := refSum(refSum(0, ph), seg)
	binary.BigEndian.PutUint16(f[34+8:], 0xffff-uint16(s)) // sum becomes 0xffff: checksum 0
	copy(f[26:30], old)
	fixIPv4(f, 14)
	if err := SetIPv4Masked(f, mustParse(t, f), &key, &mask); err != nil {
		t.Fatal(err)
	}
	if c := binary.BigEndian.Uint16(f[34+6:]); c != 0xffff {
		t.Errorf("UDP checksum computing to 0 stored as %#x, want 0xffff", c)
	}
	checkIPv4(t, f, 14)
}

func TestSetIPv4Fragments(t *testing.T) {
	rng := newRand(t)
	key := odp.IPv4{Dst: [4]byte{192, 0, 2, 1}}
	mask := odp.IPv4{Dst: [4]byte{0xff, 0xff, 0xff, 0xff}}
	// First fragment: L4 checksum updated (the header is there).
	f := testIPv4(rng, ProtoTCP, 20, 0x2000)
	if err := SetIPv4Masked(f, mustParse(t, f), &key, &mask); err != nil {
		t.Fatal(err)
	}
	checkIPv4(t, f, 14)
	// Later fragment: the "L4 checksum" bytes are payload and stay.
	f = testIPv4(rng, ProtoTCP, 20, 0x0008)
	before := append([]byte(nil), f[34:]...)
	if err := SetIPv4Masked(f, mustParse(t, f), &key, &mask); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, f[34:]) {
		t.Errorf("later fragment payload changed")
	}
	checkIPv4(t, f, 14)
	// Truncated TCP header: IP checksum updated, L4 left alone.
	f = testIPv4(rng, ProtoTCP, 0, 0)[:34+12]
	before = append([]byte(nil), f[34:]...)
	if err := SetIPv4Masked(f, mustParse(t, f), &key, &mask); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, f[34:]) {
		t.Errorf("truncated TCP header changed")
	}
	if got, want := binary.BigEndian.Uint16(f[24:]), refIPv4Check(f[14:]); got != want {
		t.Errorf("IP checksum %#x, want %#x", got, want)
	}
}

func TestSetIPv4Errors(t *testing.T) {
	rng := newRand(t)
	f := testIPv4(rng, ProtoUDP, 0, 0)
	h := mustParse(t, f)
	var key odp.IPv4
	if err := SetIPv4Masked(f, h, &key, &odp.IPv4{Proto: 0xff}); !errors.Is(err, ErrNotSettable) {
		t.Errorf("proto mask: %v, want ErrNotSettable", err)
	}
	if err := SetIPv4Masked(f, h, &key, &odp.IPv4{Frag: 0xff}); !errors.Is(err, ErrNotSettable) {
		t.Errorf("frag mask: %v, want ErrNotSettable", err)
	}
	short := f[:14+19]
	hs := mustParse(t, short)
	if err := SetIPv4Masked(short, hs, &key, &odp.IPv4{TTL: 0xff}); !errors.Is(err, ErrTooShort) {
		t.Errorf("19-byte IPv4 header: %v, want ErrTooShort", err)
	}
	arp := append([]byte(nil), f...)
	binary.BigEndian.PutUint16(arp[12:], EthTypeARP)
	if err := SetIPv4Masked(arp, mustParse(t, arp), &key, &odp.IPv4{TTL: 0xff}); !errors.Is(err, ErrWrongProtocol) {
		t.Errorf("ARP frame: %v, want ErrWrongProtocol", err)
	}
}

func TestSetIPv6Masked(t *testing.T) {
	rng := newRand(t)
	hop := []byte{nhHop, 0, 0, 1, 4, 0, 0, 0, 0}
	rtActive := []byte{nhRouting, 0, 0, 0, 3, 0, 0, 0, 0}
	rtDone := []byte{nhRouting, 0, 0, 0, 0, 0, 0, 0, 0}
	for _, proto := range []uint8{ProtoTCP, ProtoUDP, ProtoICMPv6, ProtoSCTP} {
		for _, ext := range [][][]byte{nil, {hop}, {hop, rtDone}, {rtActive}} {
			for i := 0; i < 20; i++ {
				f := testIPv6(rng, proto, rng.IntN(30), ext...)
				h := mustParse(t, f)
				orig := append([]byte(nil), f...)
				var key, mask odp.IPv6
				for j := 0; j < 16; j++ {
					mask.Src[j], mask.Dst[j] = byte(rng.Uint32()), byte(rng.Uint32())
					key.Src[j], key.Dst[j] = byte(rng.Uint32())&mask.Src[j], byte(rng.Uint32())&mask.Dst[j]
				}
				mask.Label = rng.Uint32() & 0xfffff
				key.Label = rng.Uint32() & mask.Label
				mask.TClass, mask.HLimit = byte(rng.Uint32()), byte(rng.Uint32())
				key.TClass, key.HLimit = byte(rng.Uint32())&mask.TClass, byte(rng.Uint32())&mask.HLimit
				if err := SetIPv6Masked(f, h, &key, &mask); err != nil {
					t.Fatal(err)
				}
				ip, oip := f[14:], orig[14:]
				for j := 0; j < 16; j++ {
					if want := oip[8+j]&^mask.Src[j] | key.Src[j]; ip[8+j] != want {
						t.Fatalf("src byte %d: %#x want %#x", j, ip[8+j], want)
					}
					if want := oip[24+j]&^mask.Dst[j] | key.Dst[j]; ip[24+j] != want {
						t.Fatalf("dst byte %d: %#x want %#x", j, ip[24+j], want)
					}
				}
				w, ow := binary.BigEndian.Uint32(ip), binary.BigEndian.Uint32(oip)
				if want := ow&^(uint32(mask.TClass)<<20|mask.Label) | uint32(key.TClass)<<20 | key.Label; w != want {
					t.Fatalf("first word %#08x, want %#08x", w, want)
				}
				if want := oip[7]&^mask.HLimit | key.HLimit; ip[7] != want {
					t.Fatalf("hop limit %d, want %d", ip[7], want)
				}
				if h.IPv6RoutingActive {
					// Only the source change went into the L4 checksum:
					// recompute with the original destination.
					check := append([]byte(nil), f...)
					copy(check[14+24:14+40], orig[14+24:14+40])
					checkIPv6(t, check, 14, h.L4, proto)
				} else {
					checkIPv6(t, f, 14, h.L4, proto)
				}
				if proto == ProtoSCTP && !bytes.Equal(f[h.L4:], orig[h.L4:]) {
					t.Fatalf("SCTP changed by an address change")
				}
			}
		}
	}
	f := testIPv6(rng, ProtoUDP, 0)
	h := mustParse(t, f)
	if err := SetIPv6Masked(f, h, &odp.IPv6{}, &odp.IPv6{Label: 0x100000}); !errors.Is(err, ErrNotSettable) {
		t.Errorf("label mask beyond 20 bits: %v", err)
	}
	if err := SetIPv6Masked(f[:14+39], h, &odp.IPv6{}, &odp.IPv6{HLimit: 1}); !errors.Is(err, ErrTooShort) {
		t.Errorf("short: %v", err)
	}
}

func TestSetPorts(t *testing.T) {
	rng := newRand(t)
	// odp.TCP, UDP and SCTP are the same two ports.
	set := map[uint8]func([]byte, *Headers, *odp.TCP, *odp.TCP) error{
		ProtoTCP: SetTCPMasked,
		ProtoUDP: func(f []byte, h *Headers, k, m *odp.TCP) error {
			return SetUDPMasked(f, h, (*odp.UDP)(k), (*odp.UDP)(m))
		},
		ProtoSCTP: func(f []byte, h *Headers, k, m *odp.TCP) error {
			return SetSCTPMasked(f, h, (*odp.SCTP)(k), (*odp.SCTP)(m))
		},
	}
	for proto, fn := range set {
		for i := 0; i < 100; i++ {
			var f []byte
			var l4 int
			if i%2 == 0 {
				f, l4 = testIPv4(rng, proto, rng.IntN(50), 0), 34
			} else {
				f, l4 = testIPv6(rng, proto, rng.IntN(50)), 54
			}
			orig := append([]byte(nil), f...)
			mask := odp.TCP{Src: uint16(rng.Uint32()), Dst: uint16(rng.Uint32())}
			key := odp.TCP{Src: uint16(rng.Uint32()) & mask.Src, Dst: uint16(rng.Uint32()) & mask.Dst}
			if err := fn(f, mustParse(t, f), &key, &mask); err != nil {
				t.Fatal(err)
			}
			if got, want := binary.BigEndian.Uint16(f[l4:]), binary.BigEndian.Uint16(orig[l4:])&^mask.Src|key.Src; got != want {
				t.Fatalf("proto %d src port %d want %d", proto, got, want)
			}
			if got, want := binary.BigEndian.Uint16(f[l4+2:]), binary.BigEndian.Uint16(orig[l4+2:])&^mask.Dst|key.Dst; got != want {
				t.Fatalf("proto %d dst port %d want %d", proto, got, want)
			}
			if i%2 == 0 {
				checkIPv4(t, f, 14)
			} else {
				checkIPv6(t, f, 14, l4, proto)
			}
		}
	}
	// SCTP: a wrong checksum stays wrong by the same error.
	f := testIPv4(rng, ProtoSCTP, 16, 0)
	f[34+8] ^= 0x5a
	if err := SetSCTPMasked(f, mustParse(t, f), &odp.SCTP{Src: 99}, &odp.SCTP{Src: 0xffff}); err != nil {
		t.Fatal(err)
	}
	if got, want := binary.LittleEndian.Uint32(f[34+8:]), refSCTPCheck(f[34:])^0x5a; got != want {
		t.Errorf("SCTP bad checksum carried as %#x, want %#x", got, want)
	}
	// UDP without checksum stays without.
	f = testIPv4(rng, ProtoUDP, 4, 0)
	f[34+6], f[34+7] = 0, 0
	if err := SetUDPMasked(f, mustParse(t, f), &odp.UDP{Src: 1, Dst: 2}, &odp.UDP{Src: 0xffff, Dst: 0xffff}); err != nil {
		t.Fatal(err)
	}
	if f[34+6]|f[34+7] != 0 || binary.BigEndian.Uint16(f[34:]) != 1 || binary.BigEndian.Uint16(f[36:]) != 2 {
		t.Errorf("UDP without checksum: % x", f[34:42])
	}
	// Wrong protocol and short headers.
	f = testIPv4(rng, ProtoUDP, 0, 0)
	if err := SetTCPMasked(f, mustParse(t, f), &odp.TCP{}, &odp.TCP{Src: 1}); !errors.Is(err, ErrWrongProtocol) {
		t.Errorf("set(tcp) on UDP: %v", err)
	}
	f = testIPv4(rng, ProtoTCP, 0, 0)[:34+19]
	if err := SetTCPMasked(f, mustParse(t, f), &odp.TCP{}, &odp.TCP{Src: 1}); !errors.Is(err, ErrTooShort) {
		t.Errorf("19-byte TCP header: %v", err)
	}
}

func TestSetEthernetAndMPLS(t *testing.T) {
	f := []byte{1, 2, 3, 4, 5, 6, 11, 12, 13, 14, 15, 16, 0x88, 0x47, 0x12, 0x34, 0x51, 0x40}
	key := odp.Ethernet{Dst: [6]byte{0xa0, 0, 0, 0, 0, 0xb0}, Src: [6]byte{0, 0, 0, 0, 0, 0x0f}}
	mask := odp.Ethernet{Dst: [6]byte{0xf0, 0, 0, 0, 0, 0xff}, Src: [6]byte{0, 0, 0, 0, 0, 0x0f}}
	if err := SetEthernetMasked(f, &key, &mask); err != nil {
		t.Fatal(err)
	}
	want := []byte{0xa1, 2, 3, 4, 5, 0xb0, 11, 12, 13, 14, 15, 0x1f}
	if !bytes.Equal(f[:12], want) {
		t.Errorf("eth: % x, want % x", f[:12], want)
	}
	if err := SetEthernetMasked(f[:13], &key, &mask); !errors.Is(err, ErrTooShort) {
		t.Errorf("13 bytes: %v", err)
	}
	h := mustParse(t, f)
	if err := SetMPLSMasked(f, h, 0xabcde000, 0xfffff000); err != nil {
		t.Fatal(err)
	}
	if got := binary.BigEndian.Uint32(f[14:]); got != 0xabcde140 {
		t.Errorf("mpls lse %#x", got)
	}
}

func TestVLANPushPop(t *testing.T) {
	rng := newRand(t)
	pkt := testIPv4(rng, ProtoUDP, 10, 0)
	buf := make([]byte, DefaultHeadroom+len(pkt)+8)
	copy(buf[DefaultHeadroom:], pkt)
	f := Frame{Buf: buf, Off: DefaultHeadroom, Len: len(pkt)}
	if err := PushVLAN(&f, EthTypeVLAN, 0x1064); err != nil {
		t.Fatal(err)
	}
	if err := PushVLAN(&f, EthTypeQinQ, 0x2005); err != nil {
		t.Fatal(err)
	}
	want := append(append(append([]byte(nil), pkt[:12]...), 0x88, 0xa8, 0x20, 0x05, 0x81, 0x00, 0x00, 0x64), pkt[12:]...)
	if !bytes.Equal(f.Bytes(), want) {
		t.Fatalf("after two pushes:\n% x\nwant\n% x", f.Bytes(), want)
	}
	if SkbProtocol(f.Bytes()) != EthTypeVLAN || SkbLen(f.Bytes()) != len(pkt)+4 {
		t.Errorf("SkbProtocol %#x SkbLen %d", SkbProtocol(f.Bytes()), SkbLen(f.Bytes()))
	}
	for i := 0; i < 2; i++ {
		if err := PopVLAN(&f); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(f.Bytes(), pkt) || f.Off != DefaultHeadroom {
		t.Fatalf("after pops: off %d\n% x", f.Off, f.Bytes())
	}
	if err := PopVLAN(&f); err != nil || !bytes.Equal(f.Bytes(), pkt) {
		t.Fatalf("pop on untagged: %v", err)
	}
	g := Frame{Buf: buf, Off: 2, Len: 20}
	if err := PushVLAN(&g, EthTypeVLAN, 1); !errors.Is(err, ErrNoHeadroom) {
		t.Errorf("2 bytes headroom: %v", err)
	}
	g = Frame{Buf: []byte{0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 0x81, 0, 0}, Off: 4, Len: 15}
	if err := PopVLAN(&g); !errors.Is(err, ErrTooShort) {
		t.Errorf("short tagged: %v", err)
	}
	g = Frame{Buf: buf, Off: 10, Len: len(buf)}
	if err := PopVLAN(&g); !errors.Is(err, ErrBadFrame) {
		t.Errorf("bad bounds: %v", err)
	}
}

func TestMPLSPushPop(t *testing.T) {
	rng := newRand(t)
	pkt := testIPv4(rng, ProtoTCP, 6, 0)
	buf := make([]byte, DefaultHeadroom+len(pkt)+8)
	copy(buf[DefaultHeadroom:], pkt)
	f := Frame{Buf: buf, Off: DefaultHeadroom, Len: len(pkt)}
	if err := PushMPLS(&f, mustParse(t, f.Bytes()), 0x00011140, EthTypeMPLS); err != nil {
		t.Fatal(err)
	}
	if err := PushMPLS(&f, mustParse(t, f.Bytes()), 0x00022040, EthTypeMPLS); err != nil {
		t.Fatal(err)
	}
	want := append(append(append([]byte(nil), pkt[:12]...), 0x88, 0x47, 0, 2, 0x20, 0x40, 0, 1, 0x11, 0x40), pkt[14:]...)
	if !bytes.Equal(f.Bytes(), want) {
		t.Fatalf("after pushes:\n% x\nwant\n% x", f.Bytes(), want)
	}
	if err := PopMPLS(&f, mustParse(t, f.Bytes()), EthTypeMPLS); err != nil {
		t.Fatal(err)
	}
	if err := PopMPLS(&f, mustParse(t, f.Bytes()), EthTypeIPv4); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(f.Bytes(), pkt) {
		t.Fatalf("after pops:\n% x\nwant\n% x", f.Bytes(), pkt)
	}
	// Not MPLS: pop does nothing.
	if err := PopMPLS(&f, mustParse(t, f.Bytes()), EthTypeIPv4); err != nil || !bytes.Equal(f.Bytes(), pkt) {
		t.Fatalf("pop on IPv4: %v", err)
	}
	// With a VLAN tag, the label goes after it.
	if err := PushVLAN(&f, EthTypeVLAN, 7); err != nil {
		t.Fatal(err)
	}
	if err := PushMPLS(&f, mustParse(t, f.Bytes()), 0x12345140, EthTypeMPLSMC); err != nil {
		t.Fatal(err)
	}
	b := f.Bytes()
	if binary.BigEndian.Uint16(b[12:]) != EthTypeVLAN || binary.BigEndian.Uint16(b[16:]) != EthTypeMPLSMC || binary.BigEndian.Uint32(b[18:]) != 0x12345140 || !bytes.Equal(b[22:], pkt[14:]) {
		t.Fatalf("push_mpls on tagged: % x", b[:26])
	}
	if err := PushMPLS(&f, mustParse(t, f.Bytes()), 1, EthTypeIPv4); !errors.Is(err, ErrNotSettable) {
		t.Errorf("non-MPLS ethertype: %v", err)
	}
}

func TestTruncLen(t *testing.T) {
	f := make([]byte, 100)
	binary.BigEndian.PutUint16(f[12:], EthTypeIPv4)
	for _, c := range []struct {
		max  uint32
		want int
	}{{200, 100}, {100, 100}, {60, 60}, {5, 14}, {0, 14}} {
		if got := TruncLen(f, c.max); got != c.want {
			t.Errorf("untagged trunc(%d) = %d, want %d", c.max, got, c.want)
		}
	}
	binary.BigEndian.PutUint16(f[12:], EthTypeVLAN)
	for _, c := range []struct {
		max  uint32
		want int
	}{{96, 100}, {95, 99}, {60, 64}, {5, 18}} {
		if got := TruncLen(f, c.max); got != c.want {
			t.Errorf("tagged trunc(%d) = %d, want %d", c.max, got, c.want)
		}
	}
}

func TestDecTTL(t *testing.T) {
	rng := newRand(t)
	f := testIPv4(rng, ProtoUDP, 8, 0)
	f[22] = 64
	fixIPv4(f, 14)
	exp, err := DecTTL(f, mustParse(t, f))
	if err != nil || exp || f[22] != 63 {
		t.Fatalf("dec_ttl: expired %v err %v ttl %d", exp, err, f[22])
	}
	checkIPv4(t, f, 14)
	for _, ttl := range []byte{1, 0} {
		f[22] = ttl
		fixIPv4(f, 14)
		before := append([]byte(nil), f...)
		exp, err = DecTTL(f, mustParse(t, f))
		if err != nil || !exp || !bytes.Equal(f, before) {
			t.Fatalf("ttl %d: expired %v err %v, changed %v", ttl, exp, err, !bytes.Equal(f, before))
		}
	}
	f6 := testIPv6(rng, ProtoUDP, 0)
	f6[14+7] = 2
	exp, err = DecTTL(f6, mustParse(t, f6))
	if err != nil || exp || f6[14+7] != 1 {
		t.Fatalf("ipv6: %v %v %d", exp, err, f6[14+7])
	}
	if exp, _ = DecTTL(f6, mustParse(t, f6)); !exp {
		t.Fatal("hop limit 1 did not expire")
	}
	// One VLAN tag (the kernel's accelerated tag): decremented.
	tagged := append(append(append([]byte(nil), f[:12]...), 0x81, 0, 0, 5), f[12:]...)
	tagged[26] = 9
	fixIPv4(tagged, 18)
	if _, err = DecTTL(tagged, mustParse(t, tagged)); err != nil || tagged[26] != 8 {
		t.Fatalf("tagged: %v ttl %d", err, tagged[26])
	}
	checkIPv4(t, tagged, 18)
	// Two tags: skb->protocol is 0x8100 in the kernel, nothing happens.
	qinq := append(append(append([]byte(nil), tagged[:12]...), 0x88, 0xa8, 0, 1), tagged[12:]...)
	before := append([]byte(nil), qinq...)
	if exp, err = DecTTL(qinq, mustParse(t, qinq)); err != nil || exp || !bytes.Equal(qinq, before) {
		t.Fatalf("QinQ: %v %v changed %v", exp, err, !bytes.Equal(qinq, before))
	}
	short := f[:30]
	if _, err = DecTTL(short, mustParse(t, short)); !errors.Is(err, ErrTooShort) {
		t.Errorf("short: %v", err)
	}
}

// TestDecIPv4TTLIsCsumReplace2: the inlined TTL decrement's checksum
// update is csum_replace2 of the TTL's 16-bit word, for every checksum
// value and every TTL that does not expire, ones'-complement zero
// representations included.
func TestDecIPv4TTLIsCsumReplace2(t *testing.T) {
	ip := make([]byte, 20)
	for ttl := 0; ttl < 256; ttl++ {
		for csum := 0; csum < 0x10000; csum++ {
			ip[8], ip[9] = byte(ttl), 17
			binary.BigEndian.PutUint16(ip[10:], uint16(csum))
			expired := decIPv4TTL(ip)
			if expired != (ttl <= 1) {
				t.Fatalf("ttl %d: expired %v", ttl, expired)
			}
			if expired {
				if ip[8] != byte(ttl) || binary.BigEndian.Uint16(ip[10:]) != uint16(csum) {
					t.Fatalf("ttl %d: an expired header was changed", ttl)
				}
				break
			}
			want := CsumReplace2(uint16(csum), uint16(ttl)<<8|17, uint16(ttl-1)<<8|17)
			if got := binary.BigEndian.Uint16(ip[10:]); ip[8] != byte(ttl-1) || got != want {
				t.Fatalf("ttl %d csum %#04x: ttl %d csum %#04x, want %d %#04x", ttl, csum, ip[8], got, ttl-1, want)
			}
		}
	}
}

// l2Corpus returns frames that exercise the VLAN and LLC/SNAP rules at
// every length around their limits.
func l2Corpus() [][]byte {
	rng := rand.New(rand.NewPCG(7, 8))
	base := testIPv4(rng, ProtoUDP, 4, 0)
	var out [][]byte
	heads := [][]byte{
		snapFrame(base, 3), snapFrame(base, 0x54),
		vlanFrame(snapFrame(base, 3), [2]uint16{EthTypeVLAN, 5}),
		vlanFrame(snapFrame(base, 3), [2]uint16{EthTypeQinQ, 5}, [2]uint16{EthTypeVLAN, 6}),
		vlanFrame(base, [2]uint16{EthTypeVLAN, 5}),
		vlanFrame(base, [2]uint16{EthTypeQinQ, 5}, [2]uint16{EthTypeVLAN, 6}, [2]uint16{EthTypeVLAN, 7}),
	}
	// SNAP with a non-zero OUI, other SAPs, a SNAP type below 0x600,
	// Novell raw 802.3.
	for _, llc := range [][]byte{
		{0xaa, 0xaa, 3, 0, 0, 1, 0x08, 0x00}, {0xaa, 0xab, 3, 0, 0, 0, 0x08, 0x00},
		{0xaa, 0xaa, 3, 0, 0, 0, 0x05, 0xff}, {0xff, 0xff, 0, 0, 0, 0, 0, 0},
		{0xaa, 0xaa, 3, 0, 0, 0, 0x81, 0x00}, {0xaa, 0xaa, 3, 0, 0, 0, 0x86, 0xdd},
	} {
		f := append(append(append([]byte(nil), base[:12]...), 0, 40), llc...)
		heads = append(heads, append(f, base[14:]...))
	}
	for _, f := range heads {
		for n := 14; n <= len(f); n++ {
			out = append(out, f[:n])
		}
	}
	return out
}

// checkParseMatchesExtract fails unless ParseHeaders puts the network
// header and EtherType where flowkeys.Extract finds them, and
// Headers.Protocol is the skb->protocol key extraction leaves.
func checkParseMatchesExtract(t *testing.T, frame []byte) {
	t.Helper()
	var k flowkeys.Key
	if err := flowkeys.Extract(frame, &flowkeys.Metadata{InPort: 1}, &k); err != nil {
		return
	}
	var h Headers
	if err := ParseHeaders(frame, &h); err != nil {
		t.Fatalf("ParseHeaders fails where Extract succeeds: %v\n% x", err, frame)
	}
	if h.EthType != k.EthType || h.Protocol != keyProtocol(&k) || SkbProtocol(frame) != h.Protocol {
		t.Fatalf("EtherType %#04x protocol %#04x (SkbProtocol %#04x), Extract: eth_type %#04x protocol %#04x\n% x",
			h.EthType, h.Protocol, SkbProtocol(frame), k.EthType, keyProtocol(&k), frame)
	}
	switch {
	case k.EthType == EthTypeIPv4 && k.IPProto != 0:
		// Extract read the IPv4 header: it is at h.L3.
		if h.L4 < 0 || !bytes.Equal(frame[h.L3+12:h.L3+16], k.IPv4Src[:]) || frame[h.L3+9] != k.IPProto || frame[h.L3+8] != k.IPTTL {
			t.Fatalf("IPv4 header at %d (L4 %d) is not the one Extract read (src %v proto %d)\n% x", h.L3, h.L4, k.IPv4Src, k.IPProto, frame)
		}
	case k.EthType == EthTypeIPv6 && len(frame) >= h.L3+40:
		if !bytes.Equal(frame[h.L3+8:h.L3+24], k.IPv6Src[:]) || frame[h.L3+7] != k.IPTTL {
			t.Fatalf("IPv6 header at %d is not the one Extract read\n% x", h.L3, frame)
		}
	}
}

func TestParseHeadersMatchesExtract(t *testing.T) {
	c := l2Corpus()
	for _, f := range c {
		checkParseMatchesExtract(t, f)
	}
	t.Logf("%d frames: ParseHeaders and flowkeys.Extract agree", len(c))
}

// FuzzParseHeadersMatchesExtract checks on arbitrary frames that the
// packet operations' parser and flowkeys.Extract agree on the network
// header, the EtherType and skb->protocol.
func FuzzParseHeadersMatchesExtract(f *testing.F) {
	for i, fr := range l2Corpus() {
		if i%7 == 0 {
			f.Add(fr)
		}
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		checkParseMatchesExtract(t, frame)
	})
}
