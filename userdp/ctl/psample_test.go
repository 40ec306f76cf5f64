package ctl_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/ovsdp/ovsdp/odp"
	"github.com/ovsdp/ovsdp/userdp/ctl"
)

// TestPsampleEvents streams a datapath's psample events over the control
// socket: the event of a packet executed with psample arrives whole, and
// the channel closes once the context is done.
func TestPsampleEvents(t *testing.T) {
	dp, c := serve(t)
	var _ odp.Psampler = c
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	evs, err := c.PsampleEvents(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pkt := make([]byte, 60)
	pkt[12], pkt[13] = 0x08, 0x00
	acts, err := odp.ParseActions("psample(group=3,cookie=0xa1b2)")
	if err != nil {
		t.Fatal(err)
	}
	// The server subscribes before it answers, so this one is seen.
	if err := dp.Execute(context.Background(), &odp.Packet{Data: pkt, Key: odp.FlowKey{odp.InPort(2)}, Actions: acts}); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-evs:
		if ev.Group != 3 || !bytes.Equal(ev.Cookie, []byte{0xa1, 0xb2}) || ev.InPort != 2 || !bytes.Equal(ev.Data, pkt) || ev.Rate != 0xffffffff {
			t.Errorf("event %+v", ev)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no psample event over the control socket")
	}
	cancel()
	select {
	case _, ok := <-evs:
		if ok {
			t.Error("an event after the context was done")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the channel stayed open after the context was done")
	}
	// Another client still works.
	c2, err := ctl.Dial("ctltest")
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if _, err := c2.Ports(context.Background()); err != nil {
		t.Errorf("Ports after a stream: %v", err)
	}
}
