package userdp

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/ovsdp/ovsdp/odp"
)

// TestPsample checks that a psample action delivers the packet to every
// subscriber with its group, cookie, rate (the enclosing sample's
// probability, all ones outside one) and in_port, cut by a trunc before
// it, and that the packet goes on.
func TestPsample(t *testing.T) {
	h := newHarness(t, 2)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ev1, _ := h.dp.PsampleEvents(ctx)
	ev2, _ := h.dp.PsampleEvents(ctx)
	f := udpFrame(1, 2, 1000)
	next := func(ch <-chan odp.PsampleEvent) odp.PsampleEvent {
		t.Helper()
		select {
		case ev := <-ch:
			return ev
		case <-time.After(5 * time.Second):
			t.Fatal("no psample event")
		}
		return odp.PsampleEvent{}
	}
	h.mustExecute(f, "psample(group=7,cookie=0x0102),2")
	h.expectFrame(2, f)
	for _, ch := range []<-chan odp.PsampleEvent{ev1, ev2} {
		ev := next(ch)
		if ev.Group != 7 || !bytes.Equal(ev.Cookie, []byte{1, 2}) || ev.Rate != 0xffffffff || ev.InPort != 1 || !bytes.Equal(ev.Data, f) || ev.OrigSize != uint32(len(f)) {
			t.Errorf("event %+v", ev)
		}
	}
	// Inside sample(100%): the rate is its probability; trunc cuts the data.
	h.mustExecute(f, "sample(sample=100.0%,actions(trunc(20),psample(group=9))),2")
	h.expectFrame(2, f)
	ev := next(ev1)
	if ev.Group != 9 || ev.Cookie != nil || ev.Rate != 0xffffffff || !bytes.Equal(ev.Data, f[:20]) || ev.OrigSize != uint32(len(f)) {
		t.Errorf("sampled event %+v", ev)
	}
	next(ev2)
	h.mustExecute(f, "sample(sample=50.0%,actions(psample(group=9)))")
	// A sampled 50% packet may not come; run until one does.
	for i := 0; ; i++ {
		select {
		case ev := <-ev1:
			if ev.Rate != 0x80000000 {
				t.Errorf("rate %#x, want 50%% (0x80000000, the action's probability)", ev.Rate)
			}
			cancel()
			// The channel is closed once ctx is done.
			for range ev1 {
			}
			return
		case <-time.After(20 * time.Millisecond):
			if i > 200 {
				t.Fatal("no sampled event in 200 tries at 50%")
			}
			h.mustExecute(f, "sample(sample=50.0%,actions(psample(group=9)))")
		}
	}
}
