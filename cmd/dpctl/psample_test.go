package main

import (
	"context"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"github.com/ovsdp/ovsdp/odp"
)

// TestPsampleEvents runs psample-events on a userspace datapath while
// packets are executed through a psample action: its lines are
// ovs-dpctl.py's (group, rate, cookie, data).
func TestPsampleEvents(t *testing.T) {
	h := newHarness(t)
	dp := h.hostDP("br0")
	done := make(chan result, 1)
	go func() { done <- h.run("", "psample-events", "--count", "2") }()
	pkt := make([]byte, 20)
	pkt[12], pkt[13] = 0x08, 0x06
	acts, err := odp.ParseActions("psample(group=3,cookie=0xa1b2)")
	if err != nil {
		t.Fatal(err)
	}
	var r result
	deadline := time.After(10 * time.Second)
loop:
	for {
		if err := dp.Execute(context.Background(), &odp.Packet{Data: pkt, Key: odp.FlowKey{odp.InPort(1)}, Actions: acts}); err != nil {
			t.Fatal(err)
		}
		select {
		case r = <-done:
			break loop
		case <-time.After(20 * time.Millisecond):
		case <-deadline:
			t.Fatal("psample-events printed no 2 samples in 10 s")
		}
	}
	want := "group:3,rate:4294967295,cookie:a1b2 data:" + hex.EncodeToString(pkt) + "\n"
	if r.code != 0 || r.stdout != want+want {
		t.Errorf("psample-events: exit %d, stdout %q, stderr %q; want two lines %q", r.code, r.stdout, r.stderr, want)
	}
	if got := formatPsample(&odp.PsampleEvent{Group: 1, Rate: 5}); got != "group:1,rate:5" {
		t.Errorf("formatPsample without cookie and data: %q", got)
	}
}

// TestPsampleEventsKernelRefused: a kernel datapath has no psample events
// here, and the error says why.
func TestPsampleEventsKernelRefused(t *testing.T) {
	if !strings.Contains(psampleKernelErr("system", "dp0").Error(), "OVS_ACTION_ATTR_PSAMPLE came with Linux 6.11") {
		t.Error("the system@ error does not say that Linux 6.1 has no psample action")
	}
}
