//go:build integration && linux

package main

import (
	"strings"
	"testing"
)

// TestIntegrationRequiredKeys adds, for every attribute the kernel's
// match_validate requires, a flow that lacks it: dpctl completes the key
// with a wildcard and the kernel takes it (ovs-dpctl 3.1 sends it as
// written and gets EINVAL); the flow dumps back with the fields it was
// written with and nothing exact added. A flow the kernel still refuses
// is reported with odp's reason instead of "invalid argument".
func TestIntegrationRequiredKeys(t *testing.T) {
	requireKernel(t)
	ref, me := reference(), ours()
	dp := newDP(t, "p1,type=internal", "p2,type=internal")
	sdp := "system@" + dp
	for _, tc := range []struct{ key, dumped string }{
		{"in_port(1),eth(),eth_type(0x0806)", "eth_type(0x0806), packets"},
		{"in_port(1),eth(),eth_type(0x8035)", "eth_type(0x8035), packets"},
		{"in_port(1),eth(),eth_type(0x8847)", "eth_type(0x8847), packets"},
		{"in_port(1),eth(),eth_type(0x8848)", "eth_type(0x8848), packets"},
		{"in_port(1),eth(),eth_type(0x0800),ipv4(proto=1)", "ipv4(proto=1), packets"},
		{"in_port(1),eth(),eth_type(0x0800),ipv4(proto=6)", "ipv4(proto=6), packets"},
		{"in_port(1),eth(),eth_type(0x0800),ipv4(proto=17)", "ipv4(proto=17), packets"},
		{"in_port(1),eth(),eth_type(0x0800),ipv4(proto=132)", "ipv4(proto=132), packets"},
		{"in_port(2),eth(),eth_type(0x0800),ipv4(proto=17,frag=first)", "ipv4(proto=17,frag=first), packets"},
		{"in_port(1),eth(),eth_type(0x86dd),ipv6(proto=58)", "ipv6(proto=58), packets"},
		{"in_port(1),eth(),eth_type(0x86dd),ipv6(proto=6)", "ipv6(proto=6), packets"},
		{"in_port(1),eth(),eth_type(0x86dd),ipv6(proto=17)", "ipv6(proto=17), packets"},
		{"in_port(1),eth(),eth_type(0x86dd),ipv6(proto=132)", "ipv6(proto=132), packets"},
		{"in_port(2),eth(),eth_type(0x86dd),ipv6(proto=58),icmpv6(type=135)", "icmpv6(type=135), packets"},
		{"in_port(2),eth(),eth_type(0x86dd),ipv6(proto=58),icmpv6(type=136)", "icmpv6(type=136), packets"},
		{"in_port(2),eth(),eth_type(0x8100),vlan(vid=5,pcp=0),encap(eth_type(0x0800),ipv4(proto=1))", "encap(eth_type(0x0800),ipv4(proto=1)), packets"},
	} {
		if _, errs, err := ref.run("", "add-flow", sdp, tc.key, "2"); err == nil || !strings.Contains(errs, "Invalid argument") {
			t.Errorf("ovs-dpctl add-flow %s: %v %s (the test expects the kernel's EINVAL)", tc.key, err, errs)
		}
		if _, errs, err := me.run("", "add-flow", sdp, tc.key, "2"); err != nil {
			t.Errorf("dpctl add-flow %s: %v %s", tc.key, err, errs)
			continue
		}
		found := false
		for _, line := range strings.Split(me.must(t, "dump-flows", sdp), "\n") {
			if strings.HasPrefix(line, tc.key[:strings.Index(tc.key, ",")]) && strings.Contains(line, tc.dumped) {
				found = true
			}
		}
		if !found {
			t.Errorf("%s: no dumped flow ends its match with %q:\n%s", tc.key, tc.dumped, me.must(t, "dump-flows", sdp))
		}
		me.must(t, "del-flows", sdp)
	}

	// Still refused: an L4 mask without an exact IP protocol mask. The
	// error says why, in add-flow and in add-flows' batches.
	bad := "in_port(1),eth(),eth_type(0x0800),ipv4(proto=17/0xf0),udp(dst=53)"
	want := "the kernel rejects the flow (EINVAL): mask: unexpected mask attribute udp"
	if _, errs, err := me.run("", "add-flow", sdp, bad, "2"); err == nil || !strings.Contains(errs, want) {
		t.Errorf("add-flow %s: %v %q, want %q", bad, err, errs, want)
	}
	if _, errs, err := me.run(bad+" 2\n", "add-flows", sdp, "-"); err == nil || !strings.Contains(errs, want) {
		t.Errorf("add-flows %s: %v %q, want %q", bad, err, errs, want)
	}
}
