//go:build integration && linux

package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/ovsdp/ovsdp/internal/buildinfo"
	"github.com/ovsdp/ovsdp/testenv"
)

// TestIntegrationCompat checks ovs-dpctl's remaining options and commands
// against the kernel and, where both tools have them, against
// ovs-dpctl 3.1.
func TestIntegrationCompat(t *testing.T) {
	requireKernel(t)
	ref, me := reference(), ours()
	veth := testenv.NewVeth(t, nil, testenv.NewNetns(t))
	dp := newDP(t, "p1,type=internal", veth.Name)
	sdp := "system@" + dp
	me.must(t, "add-flow", sdp, "in_port(1),eth(),eth_type(0x0806),arp()", "2")

	// -V: the build and the datapath's negotiated features.
	v := me.must(t, "-V")
	if first := "dpctl " + buildinfo.Get().String() + "\n"; !strings.HasPrefix(v, first) {
		t.Errorf("-V does not start with %q:\n%s", first, v)
	}
	for _, want := range []string{"kernel datapath families: ", "ovs_datapath(v2)", "ovs_flow(v1)", sdp + ": user features unaligned,"} {
		if !strings.Contains(v, want) {
			t.Errorf("-V lacks %q:\n%s", want, v)
		}
	}

	// -v: the netlink exchange at debug level on standard error.
	out, errs, err := me.run("", "-v", "show", sdp)
	if err != nil || !strings.Contains(out, "p1") {
		t.Fatalf("-v show: %v %s", err, errs)
	}
	for _, want := range []string{`level=DEBUG msg="netlink request" op="ovs_datapath get`, `msg="netlink reply"`, `op="ovs_vport dump`} {
		if !strings.Contains(errs, want) {
			t.Errorf("-v show: the log lacks %q:\n%s", want, errs)
		}
	}

	// --read-only: the same refusal as ovs-dpctl's.
	for _, args := range [][]string{{"del-dp", sdp}, {"del-flows", sdp}, {"add-if", sdp, "p9,type=internal"}} {
		_, refErr, rerr := ref.run("", append([]string{"--read-only"}, args...)...)
		_, ourErr, oerr := me.run("", append([]string{"--read-only"}, args...)...)
		if rerr == nil || oerr == nil {
			t.Fatalf("--read-only %v: ovs-dpctl %v, dpctl %v: want both to fail", args, rerr, oerr)
		}
		if strings.TrimPrefix(refErr, "ovs-dpctl: ") != strings.TrimPrefix(ourErr, "dpctl: ") {
			t.Errorf("--read-only %v: ovs-dpctl %q, dpctl %q", args, refErr, ourErr)
		}
	}
	if got := me.must(t, "dump-flows", sdp); !strings.Contains(got, "actions:2") {
		t.Errorf("the flow is gone after --read-only commands: %q", got)
	}

	// dump-flows type= and pmd=: kernel flows are ovs and non-offloaded,
	// and belong to no PMD thread (ovs-dpctl prints none for pmd=N too).
	for _, sel := range []string{"type=ovs", "type=all", "type=non-offloaded"} {
		if got := me.must(t, "dump-flows", sdp, sel); !strings.Contains(got, "actions:2") {
			t.Errorf("dump-flows %s: %q", sel, got)
		}
	}
	for _, sel := range []string{"type=offloaded", "type=tc", "pmd=3", "pmd=-1"} {
		if got := me.must(t, "dump-flows", sdp, sel); got != "" {
			t.Errorf("dump-flows %s: %q, want nothing", sel, got)
		}
	}
	if got := ref.must(t, "dump-flows", sdp, "pmd=3"); got != "" {
		t.Errorf("ovs-dpctl dump-flows pmd=3: %q (the test's premise is wrong)", got)
	}

	if got := me.must(t, "offload-stats-show", sdp); got != "HW Offload stats:\n" {
		t.Errorf("offload-stats-show: %q", got)
	}

	// normalize-actions and parse-actions print what ovs-dpctl prints
	// (ovs-dpctl runs normalize-actions' groups together on one line).
	key := "in_port(1),eth(src=00:00:00:00:00:01,dst=00:00:00:00:00:02),eth_type(0x8100),vlan(vid=5,pcp=1),encap(eth_type(0x0800),ipv4(src=1.1.1.1,dst=2.2.2.2,proto=17,tos=0,ttl=64,frag=no),udp(src=1,dst=2))"
	for _, acts := range []string{"pop_vlan,5,4,push_vlan(vid=7,pcp=2),push_vlan(vid=3,pcp=0),p,set(ipv4(ttl=3)),1", "3,2,1,pop_vlan,2,1", "push_vlan(vid=9,pcp=0),2,1,pop_vlan,pop_vlan,4"} {
		want := ref.must(t, "normalize-actions", key, acts, "p=3")
		got := me.must(t, "normalize-actions", key, acts, "p=3")
		first, rest, _ := strings.Cut(got, "\n")
		if joined := first + "\n" + strings.ReplaceAll(rest, "\n", ""); joined != want {
			t.Errorf("normalize-actions %s:\novs-dpctl: %q\ndpctl:     %q", acts, want, got)
		}
	}
	lists := []string{"1,2", "set(ipv4(src=1.1.1.1,dst=2.2.2.2,tos=0,ttl=3,frag=no)),push_vlan(vid=10,pcp=3),3", "userspace(pid=7,userdata(01020304)),trunc(100),sample(sample=50.0%,actions(1))"}
	if want, got := ref.must(t, append([]string{"parse-actions"}, lists...)...), me.must(t, append([]string{"parse-actions"}, lists...)...); got != want {
		t.Errorf("parse-actions:\novs-dpctl: %q\ndpctl:     %q", want, got)
	}

	// del-if -d removes the port and deletes the veth; without -d the
	// device stays.
	me.must(t, "del-if", "-d", sdp, veth.Name)
	if _, err := os.Stat("/sys/class/net/" + veth.Name); !os.IsNotExist(err) {
		t.Errorf("del-if -d: /sys/class/net/%s still there (%v)", veth.Name, err)
	}
	if got := me.must(t, "show", sdp); strings.Contains(got, veth.Name) {
		t.Errorf("del-if -d left the port:\n%s", got)
	}
	me.must(t, "del-if", "-d", sdp, "p1") // an internal port's device goes with it

	// add-dp -V VERSION:FEATURES creates with those features instead of
	// negotiating them.
	for _, tc := range []struct{ spec, want string }{
		{"2:per-vport", "user features unaligned,vport-pids (upcalls per-vport)"},
		{"per-cpu", "user features unaligned,dispatch-upcall-per-cpu (upcalls per-cpu)"},
	} {
		name := fmt.Sprintf("dpf%06d", rand.IntN(1000000))
		me.must(t, "add-dp", "-V", tc.spec, "system@"+name)
		t.Cleanup(func() { me.run("", "del-dp", "system@"+name) })
		if v := me.must(t, "-V"); !strings.Contains(v, "system@"+name+": "+tc.want) {
			t.Errorf("add-dp -V %s: -V says\n%s\nwant %q", tc.spec, v, tc.want)
		}
		me.must(t, "del-dp", "system@"+name)
	}
}
