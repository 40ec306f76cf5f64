//go:build integration

package main

import (
	"os"
	"strings"
	"testing"
)

// TestIntegrationGeneveOptsNetdevMatchesKernel: the same flows on Geneve
// option bytes, put by dpctl on a kernel datapath and on a userspace
// one, dump alike (dump-flows, -m), and as ovs-dpctl prints the kernel's;
// get-flow reads each back with its options.
func TestIntegrationGeneveOptsNetdevMatchesKernel(t *testing.T) {
	me, sdp, ndp := flowsOnBoth(t, "gnvd", geneveFlows)
	// The empty geneve() dumps without it, as the kernel puts no
	// options for a key without any.
	for _, args := range [][]string{nil, {"-m"}} {
		got := strings.Join(sortedLines(me.must(t, append(append([]string{"dump-flows"}, args...), ndp)...)), "\n")
		if strings.Count(got, "\n")+1 != len(geneveFlows) || strings.Count(got, "geneve(") != len(geneveFlows)-1 {
			t.Errorf("dump-flows %v: want %d flows, all but the empty geneve()'s with geneve(...):\n%s", args, len(geneveFlows), got)
		}
	}
	for _, dp := range []string{sdp, ndp} {
		out := me.must(t, "get-flow", dp, geneveUFID)
		if !strings.Contains(out, "geneve({class=0x102,type=0x80,len=4,0xa1b2c3d4})") {
			t.Errorf("get-flow %s: %q lacks the options", dp, out)
		}
	}
}

// TestIntegrationERSPANNetdevMatchesKernel: the same for flows on ERSPAN
// metadata whose actions set ERSPAN metadata: Linux 6.1 and userdp
// accept them and dump them (keys, masks and actions) alike, and as
// ovs-dpctl prints the kernel's.
func TestIntegrationERSPANNetdevMatchesKernel(t *testing.T) {
	me, sdp, ndp := flowsOnBoth(t, "ersd", erspanFlows)
	for _, dp := range []string{sdp, ndp} {
		if out := me.must(t, "dump-flows", dp); strings.Count(out, "erspan(") != len(erspanFlows)+2 {
			t.Errorf("dump-flows %s: want %d erspan() (keys and set(tunnel)):\n%s", dp, len(erspanFlows)+2, out)
		}
		out := me.must(t, "get-flow", dp, erspanUFID)
		if !strings.Contains(out, "erspan(ver=1,idx=0x7") {
			t.Errorf("get-flow %s: %q lacks the options", dp, out)
		}
	}
}

// flowsOnBoth puts flows with dpctl on a new kernel datapath (sdp) and a
// new userspace one, netdev@NAME (ndp), and checks that dump-flows (and
// -m) print the same on both and that ovs-dpctl prints the kernel's
// flows as dpctl does.
func flowsOnBoth(t *testing.T, name string, flows [][2]string) (me tool, sdp, ndp string) {
	t.Helper()
	requireKernel(t)
	ref := reference()
	sdp = "system@" + newDP(t, "p1,type=internal", "p2,type=internal")

	dir, err := os.MkdirTemp("", "dpctl") // short: socket paths are limited to 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	t.Setenv("OVSDP_RUNDIR", dir)
	(&harness{t: t}).hostDP(name)
	ndp = "netdev@" + name
	me = ours() // after OVSDP_RUNDIR: it names the control sockets' directory
	me.must(t, "add-if", ndp, "p1,type=memory", "p2,type=memory")

	for _, dp := range []string{sdp, ndp} {
		for _, f := range flows {
			me.must(t, "add-flow", dp, f[0], f[1])
		}
	}
	for _, args := range [][]string{nil, {"-m"}} {
		want := sortedLines(me.must(t, append(append([]string{"dump-flows"}, args...), sdp)...))
		got := sortedLines(me.must(t, append(append([]string{"dump-flows"}, args...), ndp)...))
		if strings.Join(want, "\n") != strings.Join(got, "\n") {
			t.Errorf("dump-flows %v differs:\nsystem@ (kernel):\n%s\nnetdev@ (userdp):\n%s", args, strings.Join(want, "\n"), strings.Join(got, "\n"))
		}
		if args == nil {
			t.Logf("dump-flows on both datapaths:\n%s", strings.Join(got, "\n"))
		}
	}
	// ovs-dpctl reads the kernel's flows as dpctl prints them.
	if want, got := sortedLines(ref.must(t, "dump-flows", sdp)), sortedLines(me.must(t, "dump-flows", sdp)); strings.Join(want, "\n") != strings.Join(got, "\n") {
		t.Errorf("dump-flows of system@ differs:\novs-dpctl:\n%s\ndpctl:\n%s", strings.Join(want, "\n"), strings.Join(got, "\n"))
	}
	return me, sdp, ndp
}
