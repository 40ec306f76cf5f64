//go:build integration && linux

package main

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/ovsdp/ovsdp/testenv"
)

// TestIntegrationTrace cross-checks trace on a kernel datapath: the
// packet trace built is sent into the datapath's first port (from a
// namespace), and what the kernel sends out of the second port is the
// packet trace predicted. A packet no flow matches is a miss.
func TestIntegrationTrace(t *testing.T) {
	requireKernel(t)
	me := ours()
	ns1, ns2 := testenv.NewNetns(t), testenv.NewNetns(t)
	va, vb := testenv.NewVeth(t, nil, ns1), testenv.NewVeth(t, nil, ns2)
	dp := newDP(t, va.Name, vb.Name)
	sdp := "system@" + dp
	for _, f := range [][2]string{
		{"in_port(1),eth(),eth_type(0x0800),ipv4(dst=10.0.0.2,proto=17,frag=no),udp(dst=53)", "set(ipv4(ttl=9)),set(eth(src=00:00:00:00:00:09,dst=00:00:00:00:00:0a)),2"},
		{"in_port(1),eth(),eth_type(0x0800),ipv4(dst=10.0.0.3,proto=6,frag=no),tcp(dst=80)", "set(tcp(dst=8080)),2"},
	} {
		me.must(t, "add-flow", sdp, f[0], f[1])
	}
	capture := ns2.Capture(t, vb.PeerName)
	for _, pkt := range []string{
		"in_port(1),eth(src=00:00:00:00:00:01,dst=00:00:00:00:00:02),eth_type(0x0800),ipv4(src=10.0.0.1,dst=10.0.0.2,proto=17,tos=0,ttl=64,frag=no),udp(src=1000,dst=53)",
		"in_port(1),eth(src=00:00:00:00:00:01,dst=00:00:00:00:00:02),eth_type(0x0800),ipv4(src=10.0.0.1,dst=10.0.0.3,proto=6,tos=0,ttl=64,frag=no),tcp(src=1000,dst=80),tcp_flags(syn)",
	} {
		var r traceResult
		out := me.must(t, "-f", "json", "trace", sdp, pkt)
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("trace %s: %v\n%s", pkt, err, out)
		}
		if r.Miss || len(r.Outputs) != 1 || r.Outputs[0].Port != 2 {
			t.Fatalf("trace %s: %s", pkt, out)
		}
		in, _ := hex.DecodeString(r.Packet)
		want, _ := hex.DecodeString(r.Outputs[0].Packet)
		ns1.SendFrame(t, va.PeerName, in)
		got, err := capture.WaitFor(10*time.Second, func(f testenv.Frame) bool { return !f.Outgoing && bytes.Equal(f.Data, want) })
		if err != nil {
			t.Errorf("trace %s predicted\n%x\nbut the kernel did not send it out of port 2 within 10 s: %v", pkt, want, err)
		} else if !bytes.Equal(got.Data, want) {
			t.Errorf("got %x", got.Data)
		}
	}
	// The text form, and a miss.
	if out := me.must(t, "trace", sdp, "in_port(1),eth(src=00:00:00:00:00:01,dst=00:00:00:00:00:02),eth_type(0x0800),ipv4(src=10.0.0.1,dst=10.0.0.2,proto=17,tos=0,ttl=64,frag=no),udp(src=1000,dst=53)"); !strings.Contains(out, "output to port 2 ("+vb.Name+")") {
		t.Errorf("trace text:\n%s", out)
	}
	if out := me.must(t, "trace", sdp, "in_port(1),eth(src=00:00:00:00:00:01,dst=00:00:00:00:00:02),eth_type(0x0800),ipv4(src=10.0.0.1,dst=10.0.0.2,proto=17,tos=0,ttl=64,frag=no),udp(src=1000,dst=54)"); !strings.Contains(out, "miss: would go to upcall") {
		t.Errorf("trace of a miss:\n%s", out)
	}
}
