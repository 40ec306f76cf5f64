package odp_test

import (
	"strings"
	"testing"

	"github.com/ovsdp/ovsdp/odp"
)

// TestAddRequiredKeys checks, for every attribute match_validate
// requires, that the validator (the kernel's rules) rejects the key
// without it, naming the reason, and accepts it once AddRequiredKeys
// added the attribute as a wildcard.
func TestAddRequiredKeys(t *testing.T) {
	for _, tc := range []struct {
		key, reason, added string
	}{
		{"in_port(1),eth(),eth_type(0x0806)", "the kernel requires arp() when eth_type(0x0806)", "arp("},
		{"in_port(1),eth(),eth_type(0x8035)", "the kernel requires arp() when eth_type(0x8035)", "arp("},
		{"in_port(1),eth(),eth_type(0x8847)", "the kernel requires mpls() when eth_type(0x8847)", "mpls("},
		{"in_port(1),eth(),eth_type(0x8848)", "the kernel requires mpls() when eth_type(0x8848)", "mpls("},
		{"in_port(1),eth(),eth_type(0x0800)", "the kernel requires ipv4() when eth_type(0x0800)", "ipv4("},
		{"in_port(1),eth(),eth_type(0x86dd)", "the kernel requires ipv6() when eth_type(0x86dd)", "ipv6("},
		{"in_port(1),eth(),eth_type(0x0800),ipv4(proto=1)", "the kernel requires icmp() when ipv4 proto=1", "icmp("},
		{"in_port(1),eth(),eth_type(0x0800),ipv4(proto=6)", "the kernel requires tcp() when ipv4 proto=6", "tcp_flags("},
		{"in_port(1),eth(),eth_type(0x0800),ipv4(proto=17)", "the kernel requires udp() when ipv4 proto=17", "udp("},
		{"in_port(1),eth(),eth_type(0x0800),ipv4(proto=132)", "the kernel requires sctp() when ipv4 proto=132", "sctp("},
		{"in_port(1),eth(),eth_type(0x0800),ipv4(proto=17,frag=first)", "the kernel requires udp() when ipv4 proto=17 (a first fragment too)", "udp("},
		{"in_port(1),eth(),eth_type(0x86dd),ipv6(proto=58)", "the kernel requires icmpv6() when ipv6 proto=58", "icmpv6("},
		{"in_port(1),eth(),eth_type(0x86dd),ipv6(proto=6)", "the kernel requires tcp() when ipv6 proto=6", "tcp("},
		{"in_port(1),eth(),eth_type(0x86dd),ipv6(proto=17)", "the kernel requires udp() when ipv6 proto=17", "udp("},
		{"in_port(1),eth(),eth_type(0x86dd),ipv6(proto=132)", "the kernel requires sctp() when ipv6 proto=132", "sctp("},
		{"in_port(1),eth(),eth_type(0x86dd),ipv6(proto=58),icmpv6(type=135)", "the kernel requires nd() when icmpv6 type=135", "nd("},
		{"in_port(1),eth(),eth_type(0x86dd),ipv6(proto=58),icmpv6(type=136)", "the kernel requires nd() when icmpv6 type=136", "nd("},
		{"in_port(1),eth(),eth_type(0x86dd),ipv6(proto=58)/ipv6(proto=0)", "", ""},
		{"in_port(1),eth(),eth_type(0x8100),vlan(vid=5,pcp=0),encap(eth_type(0x0800),ipv4(proto=1))", "the kernel requires icmp() when ipv4 proto=1", "icmp("},
		{"in_port(1),eth(),eth_type(0x8100),vlan(vid=5,pcp=0),encap(eth_type(0x86dd))", "the kernel requires ipv6() when eth_type(0x86dd)", "ipv6("},
		{"in_port(1),eth(),eth_type(0x88a8),vlan(vid=5,pcp=0),encap(eth_type(0x8100),vlan(vid=6,pcp=0),encap(eth_type(0x0800),ipv4(proto=1)))", "the kernel requires icmp() when ipv4 proto=1", "icmp("},
	} {
		if tc.reason == "" {
			continue
		}
		key, mask, err := odp.ParseMaskedKey(tc.key)
		if err != nil {
			t.Fatalf("%s: %v", tc.key, err)
		}
		before := odp.FormatKey(key, mask, true)
		if _, _, err := odp.ToFlowKeys(key, mask); err == nil || !strings.Contains(err.Error(), tc.reason) {
			t.Errorf("%s: validator says %v, want %q", tc.key, err, tc.reason)
		}
		k2, m2 := odp.AddRequiredKeys(key, mask)
		if odp.FormatKey(key, mask, true) != before {
			t.Errorf("%s: AddRequiredKeys modified its input", tc.key)
		}
		if _, _, err := odp.ToFlowKeys(k2, m2); err != nil {
			t.Errorf("%s: completed to %s, still rejected: %v", tc.key, odp.FormatKey(k2, m2, true), err)
		}
		// What was added is a wildcard: the flow matches what it matched.
		got := odp.FormatKey(k2, m2, false)
		want := odp.FormatKey(key, mask, false)
		if got != want {
			t.Errorf("%s: completed flow prints %s, want %s (only wildcards added)", tc.key, got, want)
		}
		if v := odp.FormatKey(k2, m2, true); !strings.Contains(v, tc.added) {
			t.Errorf("%s: completed flow %s lacks %s", tc.key, v, tc.added)
		}
	}
	// A later fragment needs no L4 attribute, and a key that has them
	// is returned as it was.
	for _, s := range []string{
		"in_port(1),eth(),eth_type(0x0800),ipv4(proto=17,frag=later)",
		"in_port(1),eth(),eth_type(0x0800),ipv4(proto=1),icmp(type=8)",
		"in_port(1),eth()",
	} {
		key, mask, err := odp.ParseMaskedKey(s)
		if err != nil {
			t.Fatal(err)
		}
		k2, m2 := odp.AddRequiredKeys(key, mask)
		if a, b := odp.FormatKey(k2, m2, true), odp.FormatKey(key, mask, true); a != b {
			t.Errorf("%s: changed to %s", s, a)
		}
	}
}
