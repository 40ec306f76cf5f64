package userdp

import (
	"encoding/binary"
	"github.com/ovsdp/ovsdp/internal/header"
	"testing"

	"github.com/ovsdp/ovsdp/odp"
)

// TestSetMaskedTakesODPKeys: the masked set operations take the key and
// mask of a parsed odp.SetMasked as they are (odp.Ethernet, odp.IPv4,
// odp.IPv6, odp.TCP, odp.UDP, odp.SCTP), with no copy into types of
// their own; each rewrites the masked bits and keeps the checksums right.
func TestSetMaskedTakesODPKeys(t *testing.T) {
	rng := newRand(t)
	// set applies the set action text to f through the operation for its
	// attribute's type, passing the parsed key and mask themselves.
	set := func(f []byte, text string) {
		t.Helper()
		acts, err := odp.ParseActions(text)
		if err != nil {
			t.Fatalf("%s: %v", text, err)
		}
		sm, ok := acts[0].(odp.SetMasked)
		if !ok {
			t.Fatalf("%s parsed to %T, not a SetMasked", text, acts[0])
		}
		h := mustParse(t, f)
		switch k := sm.Key.(type) {
		case odp.Ethernet:
			err = setEthernetMasked(f, &k, ptr(sm.Mask.(odp.Ethernet)))
		case odp.IPv4:
			err = setIPv4Masked(f, h, &k, ptr(sm.Mask.(odp.IPv4)))
		case odp.IPv6:
			err = setIPv6Masked(f, h, &k, ptr(sm.Mask.(odp.IPv6)))
		case odp.TCP, odp.UDP, odp.SCTP:
			err = setPortsWith(f, h, sm.Key, sm.Mask)
		default:
			t.Fatalf("%s: no set operation for %T", text, k)
		}
		if err != nil {
			t.Fatalf("%s: %v", text, err)
		}
	}
	be16 := func(f []byte, off int) uint16 { return binary.BigEndian.Uint16(f[off:]) }

	f := testIPv4(rng, header.IPProtoTCP, 10, 0)
	set(f, "set(eth(src=00:00:00:00:00:0f/00:00:00:00:00:ff))")
	set(f, "set(ipv4(src=10.1.2.3,ttl=9))")
	set(f, "set(tcp(dst=8080))")
	if f[11] != 0x0f || [4]byte(f[26:30]) != [4]byte{10, 1, 2, 3} || f[22] != 9 || be16(f, 36) != 8080 {
		t.Errorf("eth src ends %#x, ipv4 src %v ttl %d, tcp dst %d; want 0x0f, 10.1.2.3, 9, 8080", f[11], f[26:30], f[22], be16(f, 36))
	}
	checkIPv4(t, f, 14)

	u := testIPv6(rng, header.IPProtoUDP, 10)
	set(u, "set(ipv6(hlimit=3,label=0x12345))")
	set(u, "set(udp(src=53))")
	if label := binary.BigEndian.Uint32(u[14:]) & 0xfffff; u[21] != 3 || label != 0x12345 || be16(u, 54) != 53 {
		t.Errorf("ipv6 hlimit %d label %#x, udp src %d; want 3, 0x12345, 53", u[21], label, be16(u, 54))
	}
	checkIPv6(t, u, 14, 54, header.IPProtoUDP)

	s := testIPv4(rng, header.IPProtoSCTP, 10, 0)
	set(s, "set(sctp(src=99))")
	if be16(s, 34) != 99 {
		t.Errorf("sctp src %d, want 99", be16(s, 34))
	}
	checkIPv4(t, s, 14)
}

func ptr[T any](v T) *T { return &v }

// setPortsWith calls the port set operation of key's type.
func setPortsWith(f []byte, h *pktHeaders, key, mask odp.KeyAttr) error {
	if k, ok := key.(odp.TCP); ok {
		return setTCPMasked(f, h, &k, ptr(mask.(odp.TCP)))
	}
	if k, ok := key.(odp.UDP); ok {
		return setUDPMasked(f, h, &k, ptr(mask.(odp.UDP)))
	}
	k := key.(odp.SCTP)
	return setSCTPMasked(f, h, &k, ptr(mask.(odp.SCTP)))
}
