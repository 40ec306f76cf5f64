package daemon

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ovsdp/ovsdp/odp"
	"github.com/ovsdp/ovsdp/userdp"
)

// TestRulesPortNames: in_port=NAME and output:NAME are resolved when the
// daemon starts and again when the ports change: a port added later
// starts to receive, and its flows are re-decided.
func TestRulesPortNames(t *testing.T) {
	h := newHarness(t, 3, Config{Rules: mustRules(t, "priority=10,in_port=m1,actions=output:m3\n"+
		"priority=10,in_port=m2,actions=output:late\n"+
		"priority=1,actions=drop\n")})
	h.start()
	a, b := macN(1), macN(2)
	f1 := udpFrame(a, b, ip4(10, 0, 0, 1), ip4(10, 0, 0, 2), 1000, 2000, 0)
	h.send(1, f1)
	h.expect(3, f1)
	h.expectNone(2, 50*time.Millisecond)
	f2 := udpFrame(b, a, ip4(10, 0, 0, 2), ip4(10, 0, 0, 1), 2000, 1000, 0)
	h.send(2, f2) // "late" is no port yet: output:late is skipped
	checkFlows(t, h.waitFlows(2),
		"recirc_id(0),in_port(1),eth() actions:3",
		"recirc_id(0),in_port(2),eth() actions:drop")

	// The port appears; the next pass resolves the name and modifies the
	// flow that dropped.
	p, err := h.dp.AddPort(context.Background(), odp.PortSpec{Name: "late", Type: userdp.PortMemory})
	if err != nil {
		t.Fatal(err)
	}
	peer := h.dp.MemoryPeer("late")
	h.revalidate()
	checkFlows(t, h.flows(),
		"recirc_id(0),in_port(1),eth() actions:3",
		fmt.Sprintf("recirc_id(0),in_port(2),eth() actions:%d", p.Number))
	h.send(2, f2)
	got := make(chan error, 1)
	go func() {
		bufs, sizes := [][]byte{make([]byte, 2048)}, []int{0}
		_, err := peer.ReadBatch(bufs, sizes, 0)
		got <- err
	}()
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("reading the new port %d: %v", p.Number, err)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("nothing on the new port %d within 5s", p.Number)
	}
}

// TestPipelineOnDatapath: a three-table pipeline (classify by input
// port into a VLAN, an ACL, forwarding) with port names, on the
// userspace datapath: the frames come out as the tables decided, and a
// dropped one installs a drop megaflow.
func TestPipelineOnDatapath(t *testing.T) {
	h := newHarness(t, 3, Config{Rules: mustRules(t, ""+
		"table=0,priority=10,in_port=m1,actions=mod_vlan_vid:10,goto_table:1\n"+
		"table=0,priority=0,actions=goto_table:1\n"+
		"table=1,priority=10,dl_vlan=10,udp,tp_dst=53,actions=drop\n"+
		"table=1,priority=0,actions=resubmit(,2)\n"+
		"table=2,actions=output:m3\n")})
	h.start()
	a, b := macN(1), macN(2)
	f := udpFrame(a, b, ip4(10, 0, 0, 1), ip4(10, 0, 0, 2), 1000, 2000, 0)
	// From m1: tagged with VLAN 10, out of m3.
	tagged := append(append(append([]byte{}, f[:12]...), 0x81, 0x00, 0x00, 10), f[12:]...)
	h.send(1, f)
	h.expect(3, tagged)
	// From m2: untagged, out of m3.
	h.send(2, f)
	h.expect(3, f)
	// DNS from m1 is dropped by the ACL in table 1 (after table 0 tagged
	// it); from m2 it passes.
	dns := udpFrame(a, b, ip4(10, 0, 0, 1), ip4(10, 0, 0, 2), 1000, 53, 0)
	h.send(1, dns)
	h.expectNone(3, 100*time.Millisecond)
	h.send(2, dns)
	h.expect(3, dns)
	flows := h.waitFlows(3)
	t.Logf("flows:\n%s", strings.Join(flows, "\n"))
	drops := 0
	for _, fl := range flows {
		if strings.HasSuffix(fl, " actions:drop") {
			drops++
			if !strings.Contains(fl, "in_port(1)") || !strings.Contains(fl, "udp(dst=53)") {
				t.Errorf("drop flow %s: want in_port(1) and udp(dst=53)", fl)
			}
		}
	}
	if drops != 1 {
		t.Errorf("%d drop flows, want 1", drops)
	}
}
