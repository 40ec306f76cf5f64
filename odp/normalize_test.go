package odp

import "testing"

func TestAddTCPFlags(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{
			"in_port(1),eth(),eth_type(0x0800),ipv4(proto=6,frag=no),tcp(dst=80)",
			"in_port(1),eth(),eth_type(0x0800),ipv4(proto=6,frag=no),tcp(dst=80),tcp_flags(0/0)",
		},
		{ // Already there: unchanged.
			"in_port(1),eth_type(0x0800),ipv4(proto=6,frag=no),tcp(dst=80),tcp_flags(+syn)",
			"in_port(1),eth_type(0x0800),ipv4(proto=6,frag=no),tcp(dst=80),tcp_flags(+syn)",
		},
		{ // Inside encap.
			"in_port(1),eth_type(0x8100),vlan(vid=5),encap(eth_type(0x0800),ipv4(proto=6,frag=no),tcp(dst=22))",
			"in_port(1),eth_type(0x8100),vlan(vid=5),encap(eth_type(0x0800),ipv4(proto=6,frag=no),tcp(dst=22),tcp_flags(0/0))",
		},
		{ // No TCP: unchanged.
			"in_port(1),eth_type(0x0800),ipv4(proto=17,frag=no),udp(dst=53)",
			"in_port(1),eth_type(0x0800),ipv4(proto=17,frag=no),udp(dst=53)",
		},
	} {
		k, m, err := ParseMaskedKey(tc.in)
		if err != nil {
			t.Fatalf("%s: %v", tc.in, err)
		}
		k, m = AddTCPFlags(k, m)
		if got := FormatKey(k, m, true); got != mustVerbose(t, tc.want) {
			t.Errorf("AddTCPFlags(%s)\n got %s\nwant %s", tc.in, got, mustVerbose(t, tc.want))
		}
	}
}

// mustVerbose parses a masked key and formats it verbosely.
func mustVerbose(t *testing.T, s string) string {
	t.Helper()
	k, m, err := ParseMaskedKey(s)
	if err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	return FormatKey(k, m, true)
}

func TestNormalizeActions(t *testing.T) {
	as, err := ParseActions("set(ipv4(src=35.8.2.41/255.255.255.0)),clone(set(eth(dst=10:11:12:13:14:15/ff:00:00:00:00:00)),1)")
	if err != nil {
		t.Fatal(err)
	}
	got := FormatActions(NormalizeActions(as))
	want := "set(ipv4(src=35.8.2.0/255.255.255.0)),clone(set(eth(dst=10:00:00:00:00:00/ff:00:00:00:00:00)),1)"
	if got != want {
		t.Errorf("NormalizeActions:\n got %s\nwant %s", got, want)
	}
	// The input is left as it was.
	if FormatActions(as) == want {
		t.Errorf("NormalizeActions modified its input")
	}
}
