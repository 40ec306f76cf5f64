package userdp

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/ovsdp/ovsdp/flowkeys"
	"github.com/ovsdp/ovsdp/flowkeys/flowkeystest"
	"github.com/ovsdp/ovsdp/internal/header"
	"github.com/ovsdp/ovsdp/odp"
)

func TestParseHeaders(t *testing.T) {
	rng := newRand(t)
	f := testIPv4(rng, header.IPProtoTCP, 10, 0)
	h := mustParse(t, f)
	if h.EthType != header.EtherTypeIPv4 || h.L3 != 14 || h.L4 != 34 || h.Proto != header.IPProtoTCP || h.Frag != header.FragNone || h.MACLen != 14 {
		t.Errorf("IPv4/TCP: %+v", *h)
	}
	// Two VLAN tags.
	tagged := append(append(append([]byte(nil), f[:12]...), 0x88, 0xa8, 0, 5, 0x81, 0, 0, 7), f[12:]...)
	h = mustParse(t, tagged)
	if h.EthType != header.EtherTypeIPv4 || h.L3 != 22 || h.L4 != 42 || h.MACLen != 22 {
		t.Errorf("QinQ IPv4: %+v", *h)
	}
	// Later fragment: L4 right after the IP header, as the kernel.
	h = mustParse(t, testIPv4(rng, header.IPProtoUDP, 8, 0x0010))
	if h.Frag != header.FragLater || h.L4 != 34 {
		t.Errorf("later fragment: %+v", *h)
	}
	h = mustParse(t, testIPv4(rng, header.IPProtoUDP, 8, 0x2000))
	if h.Frag != header.FragFirst || h.L4 != 34 {
		t.Errorf("first fragment: %+v", *h)
	}
	// Bad IHL: no L4.
	bad := testIPv4(rng, header.IPProtoUDP, 8, 0)
	bad[14] = 0x44
	if h = mustParse(t, bad); h.L4 != -1 {
		t.Errorf("IHL 4: L4 %d, want -1", h.L4)
	}
	// Truncated IPv4.
	if h = mustParse(t, f[:30]); h.L4 != -1 || h.EthType != header.EtherTypeIPv4 {
		t.Errorf("truncated: %+v", *h)
	}
	// IPv6 with hop-by-hop, routing (segments left 2), then UDP.
	hop := []byte{header.IPProtoHopByHop, 0, 0, 1, 4, 0, 0, 0, 0}
	rt := []byte{header.IPProtoRouting, 0, 0, 0, 2, 0, 0, 0, 0}
	f6 := testIPv6(rng, header.IPProtoUDP, 4, hop, rt)
	h = mustParse(t, f6)
	if h.EthType != header.EtherTypeIPv6 || h.L4 != 14+40+16 || h.Proto != header.IPProtoUDP || !h.IPv6RoutingActive {
		t.Errorf("IPv6 ext: %+v", *h)
	}
	// IPv6 later fragment.
	frag := []byte{header.IPProtoFragment, 0, 0, 0, 0x10, 0, 0, 0, 1}
	h = mustParse(t, testIPv6(rng, header.IPProtoTCP, 0, frag))
	if h.Frag != header.FragLater || h.L4 != -1 || h.Proto != header.IPProtoFragment {
		t.Errorf("IPv6 later fragment: %+v", *h)
	}
	// IPv6 first fragment.
	frag = []byte{header.IPProtoFragment, 0, 0, 0, 0x01, 0, 0, 0, 1}
	h = mustParse(t, testIPv6(rng, header.IPProtoTCP, 0, frag))
	if h.Frag != header.FragFirst || h.L4 != 14+48 || h.Proto != header.IPProtoTCP {
		t.Errorf("IPv6 first fragment: %+v", *h)
	}
	// An extension header claiming more bytes than the frame has: no L4.
	long := testIPv6(rng, header.IPProtoTCP, 0, []byte{header.IPProtoDestOpts, 0, 50, 0, 0, 0, 0, 0, 0})
	if h = mustParse(t, long); h.L4 != -1 {
		t.Errorf("extension header beyond the frame: L4 %d (frame %d bytes)", h.L4, len(long))
	}
	// LLC/SNAP carrying IPv4.
	snap := append(append(append([]byte(nil), f[:12]...), 0, 60, 0xaa, 0xaa, 3, 0, 0, 0, 0x08, 0x00), f[14:]...)
	if h = mustParse(t, snap); h.EthType != header.EtherTypeIPv4 || h.L3 != 22 || h.L4 != 42 {
		t.Errorf("SNAP: %+v", *h)
	}
	// Plain 802.3 LLC.
	llc := append(append([]byte(nil), f[:12]...), 0, 10, 0x42, 0x42, 3, 1, 2, 3, 4, 5, 6, 7)
	if h = mustParse(t, llc); h.EthType != header.EtherType8022 {
		t.Errorf("LLC: %+v", *h)
	}
	var hh pktHeaders
	if err := parseHeaders(make([]byte, 13), &hh); !errors.Is(err, errTooShort) {
		t.Errorf("13-byte frame: %v, want errTooShort", err)
	}
}

func TestSetIPv4Masked(t *testing.T) {
	rng := newRand(t)
	for _, proto := range []uint8{header.IPProtoTCP, header.IPProtoUDP, header.IPProtoSCTP, header.IPProtoICMP} {
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
			if err := setIPv4Masked(f, h, &key, &mask); err != nil {
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
				case proto == header.IPProtoTCP && (j == 34+16 || j == 34+17), proto == header.IPProtoUDP && (j == 34+6 || j == 34+7):
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
			if proto == header.IPProtoSCTP && !bytes.Equal(f[34:], orig[34:]) {
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
	f := testIPv4(rng, header.IPProtoUDP, 12, 0)
	f[34+6], f[34+7] = 0, 0
	if err := setIPv4Masked(f, mustParse(t, f), &key, &mask); err != nil {
		t.Fatal(err)
	}
	if c := binary.BigEndian.Uint16(f[34+6:]); c != 0 {
		t.Errorf("UDP checksum 0 became %#x", c)
	}
	checkIPv4(t, f, 14)
	// A checksum that computes to 0 after the change is stored as 0xffff:
	// build the packet as it will be after the change, tune a payload word
	// so that its checksum is 0, then put the old address back.
	f = testIPv4(rng, header.IPProtoUDP, 12, 0)
	old := append([]byte(nil), f[26:30]...)
	copy(f[26:30], key.Src[:])
	f[34+6], f[34+7] = 0, 0
	f[34+8], f[34+9] = 0, 0
	ip := f[14:]
	seg := ip[20:]
	ph := append(append(append([]byte(nil), ip[12:20]...), 0, header.IPProtoUDP), byte(len(seg)>>8), byte(len(seg)))
	s := refSum(refSum(0, ph), seg)
	binary.BigEndian.PutUint16(f[34+8:], 0xffff-uint16(s)) // sum becomes 0xffff: checksum 0
	copy(f[26:30], old)
	fixIPv4(f, 14)
	if err := setIPv4Masked(f, mustParse(t, f), &key, &mask); err != nil {
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
	f := testIPv4(rng, header.IPProtoTCP, 20, 0x2000)
	if err := setIPv4Masked(f, mustParse(t, f), &key, &mask); err != nil {
		t.Fatal(err)
	}
	checkIPv4(t, f, 14)
	// Later fragment: the "L4 checksum" bytes are payload and stay.
	f = testIPv4(rng, header.IPProtoTCP, 20, 0x0008)
	before := append([]byte(nil), f[34:]...)
	if err := setIPv4Masked(f, mustParse(t, f), &key, &mask); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, f[34:]) {
		t.Errorf("later fragment payload changed")
	}
	checkIPv4(t, f, 14)
	// Truncated TCP header: IP checksum updated, L4 left alone.
	f = testIPv4(rng, header.IPProtoTCP, 0, 0)[:34+12]
	before = append([]byte(nil), f[34:]...)
	if err := setIPv4Masked(f, mustParse(t, f), &key, &mask); err != nil {
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
	f := testIPv4(rng, header.IPProtoUDP, 0, 0)
	h := mustParse(t, f)
	var key odp.IPv4
	if err := setIPv4Masked(f, h, &key, &odp.IPv4{Proto: 0xff}); !errors.Is(err, errNotSettable) {
		t.Errorf("proto mask: %v, want errNotSettable", err)
	}
	if err := setIPv4Masked(f, h, &key, &odp.IPv4{Frag: 0xff}); !errors.Is(err, errNotSettable) {
		t.Errorf("frag mask: %v, want errNotSettable", err)
	}
	short := f[:14+19]
	hs := mustParse(t, short)
	if err := setIPv4Masked(short, hs, &key, &odp.IPv4{TTL: 0xff}); !errors.Is(err, errTooShort) {
		t.Errorf("19-byte IPv4 header: %v, want errTooShort", err)
	}
	arp := append([]byte(nil), f...)
	binary.BigEndian.PutUint16(arp[12:], header.EtherTypeARP)
	if err := setIPv4Masked(arp, mustParse(t, arp), &key, &odp.IPv4{TTL: 0xff}); !errors.Is(err, errWrongProtocol) {
		t.Errorf("ARP frame: %v, want errWrongProtocol", err)
	}
}

func TestSetIPv6Masked(t *testing.T) {
	rng := newRand(t)
	hop := []byte{header.IPProtoHopByHop, 0, 0, 1, 4, 0, 0, 0, 0}
	rtActive := []byte{header.IPProtoRouting, 0, 0, 0, 3, 0, 0, 0, 0}
	rtDone := []byte{header.IPProtoRouting, 0, 0, 0, 0, 0, 0, 0, 0}
	for _, proto := range []uint8{header.IPProtoTCP, header.IPProtoUDP, header.IPProtoICMPv6, header.IPProtoSCTP} {
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
				if err := setIPv6Masked(f, h, &key, &mask); err != nil {
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
				if proto == header.IPProtoSCTP && !bytes.Equal(f[h.L4:], orig[h.L4:]) {
					t.Fatalf("SCTP changed by an address change")
				}
			}
		}
	}
	f := testIPv6(rng, header.IPProtoUDP, 0)
	h := mustParse(t, f)
	if err := setIPv6Masked(f, h, &odp.IPv6{}, &odp.IPv6{Label: 0x100000}); !errors.Is(err, errNotSettable) {
		t.Errorf("label mask beyond 20 bits: %v", err)
	}
	if err := setIPv6Masked(f[:14+39], h, &odp.IPv6{}, &odp.IPv6{HLimit: 1}); !errors.Is(err, errTooShort) {
		t.Errorf("short: %v", err)
	}
}

func TestSetPorts(t *testing.T) {
	rng := newRand(t)
	set := map[uint8]func([]byte, *pktHeaders, *odp.TCP, *odp.TCP) error{
		header.IPProtoTCP: setTCPMasked,
		header.IPProtoUDP: func(f []byte, h *pktHeaders, k, m *odp.TCP) error {
			return setUDPMasked(f, h, (*odp.UDP)(k), (*odp.UDP)(m))
		},
		header.IPProtoSCTP: func(f []byte, h *pktHeaders, k, m *odp.TCP) error {
			return setSCTPMasked(f, h, (*odp.SCTP)(k), (*odp.SCTP)(m))
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
	f := testIPv4(rng, header.IPProtoSCTP, 16, 0)
	f[34+8] ^= 0x5a
	if err := setSCTPMasked(f, mustParse(t, f), &odp.SCTP{Src: 99}, &odp.SCTP{Src: 0xffff}); err != nil {
		t.Fatal(err)
	}
	if got, want := binary.LittleEndian.Uint32(f[34+8:]), refSCTPCheck(f[34:])^0x5a; got != want {
		t.Errorf("SCTP bad checksum carried as %#x, want %#x", got, want)
	}
	// UDP without checksum stays without.
	f = testIPv4(rng, header.IPProtoUDP, 4, 0)
	f[34+6], f[34+7] = 0, 0
	if err := setUDPMasked(f, mustParse(t, f), &odp.UDP{Src: 1, Dst: 2}, &odp.UDP{Src: 0xffff, Dst: 0xffff}); err != nil {
		t.Fatal(err)
	}
	if f[34+6]|f[34+7] != 0 || binary.BigEndian.Uint16(f[34:]) != 1 || binary.BigEndian.Uint16(f[36:]) != 2 {
		t.Errorf("UDP without checksum: % x", f[34:42])
	}
	// Wrong protocol and short headers.
	f = testIPv4(rng, header.IPProtoUDP, 0, 0)
	if err := setTCPMasked(f, mustParse(t, f), &odp.TCP{}, &odp.TCP{Src: 1}); !errors.Is(err, errWrongProtocol) {
		t.Errorf("set(tcp) on UDP: %v", err)
	}
	f = testIPv4(rng, header.IPProtoTCP, 0, 0)[:34+19]
	if err := setTCPMasked(f, mustParse(t, f), &odp.TCP{}, &odp.TCP{Src: 1}); !errors.Is(err, errTooShort) {
		t.Errorf("19-byte TCP header: %v", err)
	}
}

func TestSetEthernetAndMPLS(t *testing.T) {
	f := []byte{1, 2, 3, 4, 5, 6, 11, 12, 13, 14, 15, 16, 0x88, 0x47, 0x12, 0x34, 0x51, 0x40}
	key := odp.Ethernet{Dst: [6]byte{0xa0, 0, 0, 0, 0, 0xb0}, Src: [6]byte{0, 0, 0, 0, 0, 0x0f}}
	mask := odp.Ethernet{Dst: [6]byte{0xf0, 0, 0, 0, 0, 0xff}, Src: [6]byte{0, 0, 0, 0, 0, 0x0f}}
	if err := setEthernetMasked(f, &key, &mask); err != nil {
		t.Fatal(err)
	}
	want := []byte{0xa1, 2, 3, 4, 5, 0xb0, 11, 12, 13, 14, 15, 0x1f}
	if !bytes.Equal(f[:12], want) {
		t.Errorf("eth: % x, want % x", f[:12], want)
	}
	if err := setEthernetMasked(f[:13], &key, &mask); !errors.Is(err, errTooShort) {
		t.Errorf("13 bytes: %v", err)
	}
	h := mustParse(t, f)
	if err := setMPLSMasked(f, h, 0xabcde000, 0xfffff000); err != nil {
		t.Fatal(err)
	}
	if got := binary.BigEndian.Uint32(f[14:]); got != 0xabcde140 {
		t.Errorf("mpls lse %#x", got)
	}
}

func TestVLANPushPop(t *testing.T) {
	rng := newRand(t)
	pkt := testIPv4(rng, header.IPProtoUDP, 10, 0)
	f, buf := headroomFrame(pkt)
	if err := pushVLAN(&f, header.EtherTypeVLAN, 0x1064); err != nil {
		t.Fatal(err)
	}
	if err := pushVLAN(&f, header.EtherTypeQinQ, 0x2005); err != nil {
		t.Fatal(err)
	}
	want := append(append(append([]byte(nil), pkt[:12]...), 0x88, 0xa8, 0x20, 0x05, 0x81, 0x00, 0x00, 0x64), pkt[12:]...)
	if !bytes.Equal(f.Bytes(), want) {
		t.Fatalf("after two pushes:\n% x\nwant\n% x", f.Bytes(), want)
	}
	if skbProtocol(f.Bytes()) != header.EtherTypeVLAN || skbLen(f.Bytes()) != len(pkt)+4 {
		t.Errorf("skbProtocol %#x skbLen %d", skbProtocol(f.Bytes()), skbLen(f.Bytes()))
	}
	for i := 0; i < 2; i++ {
		if err := popVLAN(&f); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(f.Bytes(), pkt) || f.Off != DefaultHeadroom {
		t.Fatalf("after pops: off %d\n% x", f.Off, f.Bytes())
	}
	if err := popVLAN(&f); err != nil || !bytes.Equal(f.Bytes(), pkt) {
		t.Fatalf("pop on untagged: %v", err)
	}
	g := frameBuf{Buf: buf, Off: 2, Len: 20}
	if err := pushVLAN(&g, header.EtherTypeVLAN, 1); !errors.Is(err, errNoHeadroom) {
		t.Errorf("2 bytes headroom: %v", err)
	}
	g = frameBuf{Buf: []byte{0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 0x81, 0, 0}, Off: 4, Len: 15}
	if err := popVLAN(&g); !errors.Is(err, errTooShort) {
		t.Errorf("short tagged: %v", err)
	}
	g = frameBuf{Buf: buf, Off: 10, Len: len(buf)}
	if err := popVLAN(&g); !errors.Is(err, errBadFrame) {
		t.Errorf("bad bounds: %v", err)
	}
}

func TestMPLSPushPop(t *testing.T) {
	rng := newRand(t)
	pkt := testIPv4(rng, header.IPProtoTCP, 6, 0)
	f, _ := headroomFrame(pkt)
	if err := pushMPLS(&f, mustParse(t, f.Bytes()), 0x00011140, header.EtherTypeMPLS); err != nil {
		t.Fatal(err)
	}
	if err := pushMPLS(&f, mustParse(t, f.Bytes()), 0x00022040, header.EtherTypeMPLS); err != nil {
		t.Fatal(err)
	}
	want := append(append(append([]byte(nil), pkt[:12]...), 0x88, 0x47, 0, 2, 0x20, 0x40, 0, 1, 0x11, 0x40), pkt[14:]...)
	if !bytes.Equal(f.Bytes(), want) {
		t.Fatalf("after pushes:\n% x\nwant\n% x", f.Bytes(), want)
	}
	if err := popMPLS(&f, mustParse(t, f.Bytes()), header.EtherTypeMPLS, true); err != nil {
		t.Fatal(err)
	}
	if err := popMPLS(&f, mustParse(t, f.Bytes()), header.EtherTypeIPv4, true); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(f.Bytes(), pkt) {
		t.Fatalf("after pops:\n% x\nwant\n% x", f.Bytes(), pkt)
	}
	// Not MPLS: pop does nothing.
	if err := popMPLS(&f, mustParse(t, f.Bytes()), header.EtherTypeIPv4, true); err != nil || !bytes.Equal(f.Bytes(), pkt) {
		t.Fatalf("pop on IPv4: %v", err)
	}
	// With a VLAN tag, the label goes after it.
	if err := pushVLAN(&f, header.EtherTypeVLAN, 7); err != nil {
		t.Fatal(err)
	}
	if err := pushMPLS(&f, mustParse(t, f.Bytes()), 0x12345140, header.EtherTypeMPLSMC); err != nil {
		t.Fatal(err)
	}
	b := f.Bytes()
	if binary.BigEndian.Uint16(b[12:]) != header.EtherTypeVLAN || binary.BigEndian.Uint16(b[16:]) != header.EtherTypeMPLSMC || binary.BigEndian.Uint32(b[18:]) != 0x12345140 || !bytes.Equal(b[22:], pkt[14:]) {
		t.Fatalf("push_mpls on tagged: % x", b[:26])
	}
	if err := pushMPLS(&f, mustParse(t, f.Bytes()), 1, header.EtherTypeIPv4); !errors.Is(err, errNotSettable) {
		t.Errorf("non-MPLS ethertype: %v", err)
	}
}

func TestTruncLen(t *testing.T) {
	f := make([]byte, 100)
	binary.BigEndian.PutUint16(f[12:], header.EtherTypeIPv4)
	for _, c := range []struct {
		max  uint32
		want int
	}{{200, 100}, {100, 100}, {60, 60}, {5, 14}, {0, 14}} {
		if got := truncLen(f, c.max); got != c.want {
			t.Errorf("untagged trunc(%d) = %d, want %d", c.max, got, c.want)
		}
	}
	binary.BigEndian.PutUint16(f[12:], header.EtherTypeVLAN)
	for _, c := range []struct {
		max  uint32
		want int
	}{{96, 100}, {95, 99}, {60, 64}, {5, 18}} {
		if got := truncLen(f, c.max); got != c.want {
			t.Errorf("tagged trunc(%d) = %d, want %d", c.max, got, c.want)
		}
	}
}

func TestDecTTL(t *testing.T) {
	rng := newRand(t)
	f := testIPv4(rng, header.IPProtoUDP, 8, 0)
	f[22] = 64
	fixIPv4(f, 14)
	exp, err := decTTLHeaders(f, mustParse(t, f))
	if err != nil || exp || f[22] != 63 {
		t.Fatalf("dec_ttl: expired %v err %v ttl %d", exp, err, f[22])
	}
	checkIPv4(t, f, 14)
	for _, ttl := range []byte{1, 0} {
		f[22] = ttl
		fixIPv4(f, 14)
		before := append([]byte(nil), f...)
		exp, err = decTTLHeaders(f, mustParse(t, f))
		if err != nil || !exp || !bytes.Equal(f, before) {
			t.Fatalf("ttl %d: expired %v err %v, changed %v", ttl, exp, err, !bytes.Equal(f, before))
		}
	}
	f6 := testIPv6(rng, header.IPProtoUDP, 0)
	f6[14+7] = 2
	exp, err = decTTLHeaders(f6, mustParse(t, f6))
	if err != nil || exp || f6[14+7] != 1 {
		t.Fatalf("ipv6: %v %v %d", exp, err, f6[14+7])
	}
	if exp, _ = decTTLHeaders(f6, mustParse(t, f6)); !exp {
		t.Fatal("hop limit 1 did not expire")
	}
	// One VLAN tag (the kernel's accelerated tag): decremented.
	tagged := append(append(append([]byte(nil), f[:12]...), 0x81, 0, 0, 5), f[12:]...)
	tagged[26] = 9
	fixIPv4(tagged, 18)
	if _, err = decTTLHeaders(tagged, mustParse(t, tagged)); err != nil || tagged[26] != 8 {
		t.Fatalf("tagged: %v ttl %d", err, tagged[26])
	}
	checkIPv4(t, tagged, 18)
	// Two tags: skb->protocol is 0x8100 in the kernel, nothing happens.
	qinq := append(append(append([]byte(nil), tagged[:12]...), 0x88, 0xa8, 0, 1), tagged[12:]...)
	before := append([]byte(nil), qinq...)
	if exp, err = decTTLHeaders(qinq, mustParse(t, qinq)); err != nil || exp || !bytes.Equal(qinq, before) {
		t.Fatalf("QinQ: %v %v changed %v", exp, err, !bytes.Equal(qinq, before))
	}
	short := f[:30]
	if _, err = decTTLHeaders(short, mustParse(t, short)); !errors.Is(err, errTooShort) {
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
			want := header.ChecksumUpdate2(uint16(csum), uint16(ttl)<<8|17, uint16(ttl-1)<<8|17)
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
	base := testIPv4(rng, header.IPProtoUDP, 4, 0)
	var out [][]byte
	heads := [][]byte{
		snapFrame(base, 3), snapFrame(base, 0x54),
		vlanFrame(snapFrame(base, 3), [2]uint16{header.EtherTypeVLAN, 5}),
		vlanFrame(snapFrame(base, 3), [2]uint16{header.EtherTypeQinQ, 5}, [2]uint16{header.EtherTypeVLAN, 6}),
		vlanFrame(base, [2]uint16{header.EtherTypeVLAN, 5}),
		vlanFrame(base, [2]uint16{header.EtherTypeQinQ, 5}, [2]uint16{header.EtherTypeVLAN, 6}, [2]uint16{header.EtherTypeVLAN, 7}),
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

// checkParseMatchesExtract fails unless parseHeaders puts the network
// header and EtherType where flowkeys.Extract finds them, and
// pktHeaders.Protocol is the skb->protocol key extraction leaves.
func checkParseMatchesExtract(t *testing.T, frame []byte) {
	t.Helper()
	var k flowkeys.Key
	if err := flowkeys.Extract(frame, &flowkeys.Metadata{InPort: 1}, &k); err != nil {
		return
	}
	var h pktHeaders
	if err := parseHeaders(frame, &h); err != nil {
		t.Fatalf("parseHeaders fails where Extract succeeds: %v\n% x", err, frame)
	}
	if h.EthType != k.EthType || h.Protocol != keyProtocol(&k) || skbProtocol(frame) != h.Protocol {
		t.Fatalf("EtherType %#04x protocol %#04x (skbProtocol %#04x), Extract: eth_type %#04x protocol %#04x\n% x",
			h.EthType, h.Protocol, skbProtocol(frame), k.EthType, keyProtocol(&k), frame)
	}
	// The fragment type and the transport protocol are the key's: a
	// later fragment is one for both, and where parseHeaders found a
	// transport header, Extract read the same protocol.
	if (k.IPFrag == header.FragLater) != (h.Frag == header.FragLater) && k.EthType == h.EthType &&
		(k.EthType == header.EtherTypeIPv4 || k.EthType == header.EtherTypeIPv6) && !(h.Frag == header.FragLater && k.IPProto == header.IPProtoNoNext) {
		t.Fatalf("fragment type %d, Extract's %d\n% x", h.Frag, k.IPFrag, frame)
	}
	if h.L4 >= 0 && (h.Proto != k.IPProto || h.Frag != k.IPFrag) {
		t.Fatalf("transport protocol %d fragment type %d, Extract's %d and %d\n% x", h.Proto, h.Frag, k.IPProto, k.IPFrag, frame)
	}
	switch {
	case k.EthType == header.EtherTypeIPv4 && k.IPProto != 0:
		// Extract read the IPv4 header: it is at h.L3.
		if h.L4 < 0 || !bytes.Equal(frame[h.L3+12:h.L3+16], k.IPv4Src[:]) || frame[h.L3+9] != k.IPProto || frame[h.L3+8] != k.IPTTL {
			t.Fatalf("IPv4 header at %d (L4 %d) is not the one Extract read (src %v proto %d)\n% x", h.L3, h.L4, k.IPv4Src, k.IPProto, frame)
		}
	case k.EthType == header.EtherTypeIPv6 && len(frame) >= h.L3+40:
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
	t.Logf("%d frames: parseHeaders and flowkeys.Extract agree", len(c))
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

// TestParseHeadersMatchesExtractCorpus runs the same check over the
// flowkeys corpus (IPv6 extension-header chains, fragments, ND, ...)
// cut at every length: the two parsers share one IPv6 extension-header
// walk, so a truncated fragment header is a fragment for both.
func TestParseHeadersMatchesExtractCorpus(t *testing.T) {
	n := 0
	for _, p := range flowkeystest.Corpus() {
		for l := 14; l <= len(p.Data); l++ {
			checkParseMatchesExtract(t, p.Data[:l])
			n++
		}
	}
	t.Logf("%d frames: parseHeaders and flowkeys.Extract agree", n)
}

// TestHeadersFromExtractedOffset checks pktCtx.headers' shortcut (an
// IPv4 packet starts from the network header offset key extraction
// found) against parseHeaders on every packet of the corpus, and on
// each cut short byte by byte: the same headers, or the same refusal.
func TestHeadersFromExtractedOffset(t *testing.T) {
	shortcuts := 0
	for _, cp := range flowkeystest.Corpus() {
		for n := len(cp.Data); n >= 0; n-- {
			frame := cp.Data[:n]
			var c pktCtx
			c.f = frameBuf{Buf: frame, Len: n}
			l3, err := flowkeys.ExtractPortL3(frame, 1, &c.key)
			if err != nil {
				continue
			}
			c.l3off, c.keyValid, c.proto = l3, true, keyProtocol(&c.key)
			if c.l3off > 0 && c.proto == header.EtherTypeIPv4 && c.key.EthType == header.EtherTypeIPv4 {
				shortcuts++
			}
			var want pktHeaders
			wantErr := parseHeaders(frame, &want)
			want.Protocol = c.proto
			got, err := c.headers()
			if (err != nil) != (wantErr != nil) {
				t.Fatalf("%s cut to %d bytes: error %v, parseHeaders %v", cp.Name, n, err, wantErr)
			}
			if err == nil && *got != want {
				t.Fatalf("%s cut to %d bytes: headers %+v, parseHeaders %+v", cp.Name, n, *got, want)
			}
		}
	}
	if shortcuts < 100 {
		t.Errorf("only %d frames took the shortcut", shortcuts)
	}
}
