package daemon

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ovsdp/ovsdp/odp"
	"github.com/ovsdp/ovsdp/policy"
	"github.com/ovsdp/ovsdp/testenv"
)

// TestNamespaceVLAN is scenarioVLAN on the userspace datapath (as root;
// TestIntegrationVLAN runs it on the kernel's, in the VM).
func TestNamespaceVLAN(t *testing.T) { scenarioVLAN(t, openUserdp) }

// scenarioVLAN: two switches (two datapaths, a daemon each) joined by a
// trunk, a veth pair whose ends are ports of both. Each switch has a
// host in VLAN 10 and one in VLAN 20, all four in one IP subnet:
//
//	a10 (access 10) ─┐                      ┌─ b10 (native-untagged 10)
//	                 X ── trunk 10,20 ──── Y
//	a20 (access 20) ─┘                      └─ b20 (access 20)
//
// (b10 trunks only its native VLAN: with no trunks it would carry every
// VLAN, 20 tagged, as in Open vSwitch.)
//
// The hosts of one VLAN reach each other across the trunk (it carries
// both VLANs, tagged: the flows out of it push the tag, those into it
// match it); no frame of a host reaches a host of the other VLAN, on
// the same switch or across the trunk.
func scenarioVLAN(t *testing.T, open func(t testing.TB) odp.Datapath) {
	testenv.RequireRoot(t)
	const a10, a20, b10, b20 = 0, 1, 2, 3
	hosts, veths := newHosts(t, 4, hostIP)
	trunk := testenv.NewVeth(t, nil, nil)
	for _, n := range []string{trunk.Name, trunk.PeerName} {
		if err := disableOffloads(n); err != nil {
			t.Fatal(err)
		}
	}
	specs := func(args ...string) ([]string, map[string]policy.PortVLAN) {
		ps, err := policy.ParsePortSpecs(args)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		vlans := map[string]policy.PortVLAN{}
		for _, p := range ps {
			names = append(names, p.Name)
			vlans[p.Name] = p.VLAN
		}
		return names, vlans
	}
	type sw struct {
		dp    odp.Datapath
		d     *Daemon
		trunk string
	}
	start := func(trunkName string, args ...string) sw {
		names, vlans := specs(args...)
		dp := open(t)
		d, _ := startDaemon(t, Config{Datapath: dp, Ports: names, PortVLANs: vlans})
		return sw{dp: dp, d: d, trunk: trunkName}
	}
	x := start(trunk.Name, veths[a10].PeerName+",vlan=10", veths[a20].PeerName+",vlan=20", trunk.Name+",trunks=10,20")
	y := start(trunk.PeerName, veths[b10].PeerName+",vlan_mode=native-untagged,tag=10,trunks=10", veths[b20].PeerName+",tag=20", trunk.PeerName+",trunks=10,20")

	// Each VLAN's hosts reach each other across the trunk.
	for _, pr := range [][2]int{{a10, b10}, {b10, a10}, {a20, b20}, {b20, a20}} {
		if err := hosts[pr[0]].Ping(hostIP(pr[1]), 10*time.Second); err != nil {
			t.Fatalf("ping from host %d to %s in the same VLAN: %v", pr[0], hostIP(pr[1]), err)
		}
	}
	// Nothing crosses between the VLANs: the pings fail, and the hosts of
	// the other VLAN never see a frame from the sender.
	caps := make([]*testenv.Capture, 4)
	for i := range hosts {
		caps[i] = hosts[i].Capture(t, veths[i].Name)
	}
	for _, pr := range [][2]int{{a10, a20}, {a10, b20}, {b10, b20}, {b10, a20}, {a20, b10}, {b20, a10}} {
		if err := hosts[pr[0]].Ping(hostIP(pr[1]), 1500*time.Millisecond); err == nil {
			t.Errorf("host %d reached %s in the other VLAN", pr[0], hostIP(pr[1]))
		}
	}
	vlanOf := func(i int) int { return map[int]int{a10: 10, b10: 10, a20: 20, b20: 20}[i] }
	for i, c := range caps {
		for {
			f, err := c.Next(100 * time.Millisecond)
			if err != nil {
				break
			}
			if f.Outgoing || len(f.Data) < 14 {
				continue
			}
			for j := range hosts {
				if vlanOf(j) != vlanOf(i) && bytes.Equal(f.Data[6:12], hosts[j].MAC(t, veths[j].Name)) {
					t.Errorf("host %d (VLAN %d) received a frame from host %d (VLAN %d): % x", i, vlanOf(i), j, vlanOf(j), f.Data[:min(len(f.Data), 32)])
				}
			}
		}
	}

	// The trunk carries both VLANs tagged: on each switch, flows into the
	// trunk push VLAN 10 and VLAN 20 tags, and flows from it match them.
	for _, s := range []sw{x, y} {
		s.d.RevalidateNow(context.Background())
		flows := dumpFlows(t, s.dp)
		ports, err := s.dp.Ports(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		var tp uint32
		for _, p := range ports {
			if p.Name == s.trunk {
				tp = p.Number
			}
		}
		for _, vid := range []int{10, 20} {
			push := fmt.Sprintf("push_vlan(vid=%d,pcp=0),", vid)
			in := fmt.Sprintf("in_port(%d),", tp)
			match := fmt.Sprintf("vlan(vid=%d", vid)
			var pushed, matched bool
			for _, f := range flows {
				_, acts, _ := strings.Cut(f, " actions:")
				if i := strings.Index(acts, push); i >= 0 && strings.HasPrefix(acts[i+len(push):]+",", fmt.Sprintf("%d,", tp)) {
					pushed = true
				}
				if strings.Contains(f, in) && strings.Contains(f, match) {
					matched = true
				}
			}
			if !pushed || !matched {
				t.Errorf("%s: trunk port %d: a flow pushing VLAN %d to it: %v; a flow from it matching VLAN %d: %v; flows:\n%s",
					s.dp.Name(), tp, vid, pushed, vid, matched, strings.Join(flows, "\n"))
			}
		}
	}
}
