package odp

import "testing"

// The conversions of an upcall's key and of a flow put's key and mask
// run on every miss: their scratch (parser, encoded attributes, keys) is
// pooled, so that they allocate nothing.
func TestKeyConversionsAllocateNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts under the race detector: its sync.Pool drops items at random")
	}
	key, mask, err := ParseMaskedKey("recirc_id(0),in_port(1),tunnel(tun_id=0x5,src=10.0.0.1,dst=10.0.0.2,ttl=64,flags(key)),eth(src=02:00:00:00:00:01/ff:ff:ff:ff:ff:ff,dst=02:00:00:00:00:02/00:00:00:00:00:00),eth_type(0x0800),ipv4(src=10.1.0.1/255.255.255.255,dst=10.1.0.2/0.0.0.0,proto=17/0xff,tos=0/0,ttl=64/0,frag=no),udp(src=1/0xffff,dst=9/0)")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := ToFlowKeys(key, mask); err != nil {
		t.Fatal(err)
	}
	if _, err := ToFlowKeysExact(key); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(100, func() { _, _, _ = ToFlowKeys(key, mask) }); n != 0 {
		t.Errorf("ToFlowKeys allocates %v times", n)
	}
	if n := testing.AllocsPerRun(100, func() { _, _, _ = ToFlowKeys(key, nil) }); n != 0 {
		t.Errorf("ToFlowKeys without mask allocates %v times", n)
	}
	if n := testing.AllocsPerRun(100, func() { _, _ = ToFlowKeysExact(key) }); n != 0 {
		t.Errorf("ToFlowKeysExact allocates %v times", n)
	}
}

// A pooled scratch carries nothing from one conversion to the next: a
// key without a tunnel converts the same after one with a tunnel and a
// mask, and after one that failed half way.
func TestKeyConversionsShareNoState(t *testing.T) {
	plain, err := ParseKey("in_port(2),eth(src=02:00:00:00:00:03,dst=02:00:00:00:00:04),eth_type(0x0806),arp(sip=10.0.0.3,tip=10.0.0.4,op=1,sha=02:00:00:00:00:03,tha=00:00:00:00:00:00)")
	if err != nil {
		t.Fatal(err)
	}
	tunKey, tunMask, err := ParseMaskedKey("in_port(1),tunnel(tun_id=0x5,src=10.0.0.1,dst=10.0.0.2,ttl=64,flags(key)),eth(src=02:00:00:00:00:01,dst=02:00:00:00:00:02),eth_type(0x0800),ipv4(src=10.1.0.1,dst=10.1.0.2,proto=17,tos=0,ttl=64,frag=no),udp(src=1,dst=9)")
	if err != nil {
		t.Fatal(err)
	}
	bad := FlowKey{InPort(1), InPort(2)} // duplicate attribute
	wantK, wantM, err := ToFlowKeys(plain, nil)
	if err != nil {
		t.Fatal(err)
	}
	wantX, err := ToFlowKeysExact(plain)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 20; i++ {
		_, _, _ = ToFlowKeys(tunKey, tunMask)
		_, _ = ToFlowKeysExact(tunKey)
		if _, _, err := ToFlowKeys(bad, nil); err == nil {
			t.Fatal("duplicate in_port accepted")
		}
		if _, err := ToFlowKeysExact(bad); err == nil {
			t.Fatal("duplicate in_port accepted (exact)")
		}
		k, m, err := ToFlowKeys(plain, nil)
		if err != nil || k != wantK || m != wantM {
			t.Fatalf("round %d: ToFlowKeys(plain) = %v, err %v; differs from the first conversion", i, k != wantK || m != wantM, err)
		}
		x, err := ToFlowKeysExact(plain)
		if err != nil || x != wantX {
			t.Fatalf("round %d: ToFlowKeysExact(plain) differs from the first conversion (err %v)", i, err)
		}
	}
}
