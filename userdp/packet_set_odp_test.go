package userdp

import (
	"encoding/binary"
	"testing"

	"github.com/ovsdp/ovsdp/odp"
)

// TestSetMaskedTakesODPKeys: the masked set operations take the key and
// mask of a parsed odp.SetMasked as they are (odp.Ethernet, odp.IPv4,
// odp.IPv6, odp.TCP, odp.UDP, odp.SCTP), with no copy into types of
// their own; each rewrites exactly the masked bits and keeps the
// checksums right.
func TestSetMaskedTakesODPKeys(t *testing.T) {
	rng := newRand(t)
	parse := func(text string) (key, mask odp.KeyAttr) {
		t.Helper()
		acts, err := odp.ParseActions(text)
		if err != nil {
			t.Fatalf("%s: %v", text, err)
		}
		sm, ok := acts[0].(odp.SetMasked)
		if !ok {
			t.Fatalf("%s parsed to %T, not a SetMasked", text, acts[0])
		}
		return sm.Key, sm.Mask
	}

	f := testIPv4(rng, ProtoTCP, 10, 0)
	k, m := parse("set(eth(src=00:00:00:00:00:0f/00:00:00:00:00:ff))")
	ek, em := k.(odp.Ethernet), m.(odp.Ethernet)
	if err := SetEthernetMasked(f, &ek, &em); err != nil {
		t.Fatal(err)
	}
	if f[11] != 0x0f {
		t.Errorf("eth src last byte %#x, want 0x0f", f[11])
	}

	k, m = parse("set(ipv4(src=10.1.2.3,ttl=9))")
	ik, im := k.(odp.IPv4), m.(odp.IPv4)
	if err := SetIPv4Masked(f, mustParse(t, f), &ik, &im); err != nil {
		t.Fatal(err)
	}
	if got := [4]byte(f[26:30]); got != [4]byte{10, 1, 2, 3} || f[22] != 9 {
		t.Errorf("ipv4 src %v ttl %d, want 10.1.2.3 and 9", got, f[22])
	}
	checkIPv4(t, f, 14)

	k, m = parse("set(tcp(dst=8080))")
	tk, tm := k.(odp.TCP), m.(odp.TCP)
	if err := SetTCPMasked(f, mustParse(t, f), &tk, &tm); err != nil {
		t.Fatal(err)
	}
	if got := binary.BigEndian.Uint16(f[36:]); got != 8080 {
		t.Errorf("tcp dst %d, want 8080", got)
	}
	checkIPv4(t, f, 14)

	u := testIPv6(rng, ProtoUDP, 10)
	k, m = parse("set(ipv6(hlimit=3,label=0x12345))")
	sk, sm := k.(odp.IPv6), m.(odp.IPv6)
	if err := SetIPv6Masked(u, mustParse(t, u), &sk, &sm); err != nil {
		t.Fatal(err)
	}
	if u[21] != 3 || binary.BigEndian.Uint32(u[14:])&0xfffff != 0x12345 {
		t.Errorf("ipv6 hlimit %d label %#x, want 3 and 0x12345", u[21], binary.BigEndian.Uint32(u[14:])&0xfffff)
	}
	k, m = parse("set(udp(src=53))")
	uk, um := k.(odp.UDP), m.(odp.UDP)
	if err := SetUDPMasked(u, mustParse(t, u), &uk, &um); err != nil {
		t.Fatal(err)
	}
	if got := binary.BigEndian.Uint16(u[54:]); got != 53 {
		t.Errorf("udp src %d, want 53", got)
	}
	checkIPv6(t, u, 14, 54, ProtoUDP)

	s := testIPv4(rng, ProtoSCTP, 10, 0)
	k, m = parse("set(sctp(src=99))")
	ck, cm := k.(odp.SCTP), m.(odp.SCTP)
	if err := SetSCTPMasked(s, mustParse(t, s), &ck, &cm); err != nil {
		t.Fatal(err)
	}
	if got := binary.BigEndian.Uint16(s[34:]); got != 99 {
		t.Errorf("sctp src %d, want 99", got)
	}
	checkIPv4(t, s, 14)
}
