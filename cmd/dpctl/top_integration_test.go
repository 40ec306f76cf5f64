//go:build integration && linux

package main

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/ovsdp/ovsdp/testenv"
)

// TestIntegrationTop runs top --once on a kernel datapath while frames
// from a namespace go through one of its flows: that flow's aggregate
// has a rate, the idle one none.
func TestIntegrationTop(t *testing.T) {
	requireKernel(t)
	me := ours()
	ns := testenv.NewNetns(t)
	va, vb := testenv.NewVeth(t, nil, ns), testenv.NewVeth(t, nil, nil)
	dp := newDP(t, va.Name, vb.Name)
	sdp := "system@" + dp
	me.must(t, "add-flow", sdp, "in_port(1),eth(),eth_type(0x0800),ipv4(proto=17,frag=no),udp(dst=53)", "2")
	me.must(t, "add-flow", sdp, "in_port(2),eth(),eth_type(0x0806),arp()", "1")
	frame := []byte("\x02\x00\x00\x00\x00\x02\x02\x00\x00\x00\x00\x01\x08\x00" +
		"\x45\x00\x00\x1c\x00\x00\x00\x00\x40\x11\x66\xcf\x0a\x00\x00\x01\x0a\x00\x00\x02\x03\xe8\x00\x35\x00\x08\x00\x00" +
		"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00")
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if err := ns.SendFrames(va.PeerName, frame, frame, frame, frame); err != nil {
				t.Error(err)
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	out := me.must(t, "-f", "json", "top", "--once", "--interval", "2s", "--by", "in_port,tp_dst", sdp)
	close(stop)
	<-done
	var rows []topRow
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(rows) != 2 || rows[0].Key != "in_port="+va.Name+",tp_dst=53" || rows[0].PacketsPer <= 0 || rows[0].BytesPer < 60*rows[0].PacketsPer-1 {
		t.Errorf("top: %s", out)
	}
	if len(rows) == 2 && (rows[1].Key != "in_port="+vb.Name+",tp_dst=*" || rows[1].PacketsPer != 0) {
		t.Errorf("idle row: %+v", rows[1])
	}
}
