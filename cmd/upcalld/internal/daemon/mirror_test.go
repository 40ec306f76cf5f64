package daemon

import (
	"testing"
	"time"

	"github.com/ovsdp/ovsdp/policy"
)

// TestMirrorOnDatapath: with --mirror m1:m4 the learning switch's
// traffic from and to m1 is copied to m4, which normal otherwise leaves
// out; and the megaflows carry the copy.
func TestMirrorOnDatapath(t *testing.T) {
	spec, err := policy.ParseMirror("m1:m4")
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, 4, Config{Mirrors: []policy.MirrorSpec{spec}})
	h.start()
	a, b := macN(1), macN(2)
	ab := udpFrame(a, b, ip4(10, 0, 0, 1), ip4(10, 0, 0, 2), 1000, 2000, 0)
	ba := udpFrame(b, a, ip4(10, 0, 0, 2), ip4(10, 0, 0, 1), 2000, 1000, 0)

	h.send(1, ab) // received on m1: copied; flooded to 2 and 3, not to the mirror's port
	h.expect(4, ab)
	h.expect(2, ab)
	h.expect(3, ab)
	checkFlows(t, h.waitFlows(1), ethFlow(1, a, b, "4,2,3"))
	h.send(2, ba) // sent to m1: copied after the output
	h.expect(1, ba)
	h.expect(4, ba)
	h.send(3, ba) // b moves to m3; still sent to m1
	h.expect(1, ba)
	h.expect(4, ba)
	h.revalidate()
	checkFlows(t, h.flows(), ethFlow(1, a, b, "4,3"), ethFlow(2, b, a, "1,4"), ethFlow(3, b, a, "1,4"))
	// Nothing is learned from, or forwarded out of, the mirror's port.
	h.drain()
	h.send(4, udpFrame(macN(9), a, ip4(10, 0, 0, 9), ip4(10, 0, 0, 1), 1, 2, 0))
	h.expectNone(1, 30*time.Millisecond)
	if h.d.Status().MACs != 2 {
		t.Errorf("mac entries: %d, want 2 (nothing learned on the mirror's port)", h.d.Status().MACs)
	}
}
