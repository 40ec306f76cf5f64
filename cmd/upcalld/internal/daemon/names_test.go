package daemon

import (
	"context"
	"fmt"
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
