package main

import (
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/ovsdp/ovsdp/userdp"
)

const (
	traceUDPFlow = "in_port(1),eth(),eth_type(0x0800),ipv4(dst=10.0.0.2,proto=17,frag=no),udp(dst=53)"
	traceUDPActs = "set(ipv4(ttl=9)),push_vlan(vid=10,pcp=0),2,pop_vlan,3"
	traceUDPPkt  = "in_port(1),eth(src=00:00:00:00:00:01,dst=00:00:00:00:00:02),eth_type(0x0800),ipv4(src=10.0.0.1,dst=10.0.0.2,proto=17,tos=0,ttl=64,frag=no),udp(src=1000,dst=53)"
)

// TestGoldenTrace covers trace on netdev@: a hit with outputs to two
// ports, the same packet in hex, a drop, a miss, and the argument errors.
func TestGoldenTrace(t *testing.T) {
	h := newHarness(t)
	h.hostDP("br0")
	h.addMemPorts("br0", "p1", "p2", "p3")
	h.mustRun("", "add-flow", traceUDPFlow, traceUDPActs)
	h.mustRun("", "add-flow", "in_port(1),eth(),eth_type(0x86dd),ipv6(proto=58,frag=no)", "drop")
	h.mustRun("", "add-flow", "in_port(2),eth(),eth_type(0x0806),arp(op=1)", "1,recirc(0x3)")
	h.mustRun("", "add-flow", "recirc_id(0x3),in_port(2),eth(),eth_type(0x0806),arp()", "3")
	r := h.mustRun("", "trace", traceUDPPkt)
	if !strings.Contains(r.stdout, "output to port 2 (p2)") || !strings.Contains(r.stdout, "output to port 3 (p3)") {
		t.Errorf("trace: no outputs to p2 and p3:\n%s", r.stdout)
	}
	var j traceResult
	if err := unmarshalTrace(h.mustRun("", "-f", "json", "trace", traceUDPPkt).stdout, &j); err != nil {
		t.Fatal(err)
	}
	// The same packet in hex, coming in on p1.
	r2 := h.mustRun("", "trace", "--in-port", "p1", j.Packet)
	if r2.stdout != r.stdout {
		t.Errorf("trace of the hex packet differs:\n%s\nwant\n%s", r2.stdout, r.stdout)
	}
	h.mustRun("", "trace", "in_port(1),eth(src=00:00:00:00:00:01,dst=00:00:00:00:00:02),eth_type(0x86dd),ipv6(src=::1,dst=::2,label=0,proto=58,tclass=0,hlimit=64,frag=no),icmpv6(type=128,code=0)")
	h.mustRun("", "trace", "in_port(2),eth(src=00:00:00:00:00:01,dst=ff:ff:ff:ff:ff:ff),eth_type(0x0806),arp(sip=10.0.0.1,tip=10.0.0.2,op=1,sha=00:00:00:00:00:01,tha=00:00:00:00:00:00)")
	h.mustRun("", "trace", "in_port(1),eth(src=00:00:00:00:00:01,dst=00:00:00:00:00:02),eth_type(0x0800),ipv4(src=10.0.0.1,dst=10.0.0.2,proto=17,tos=0,ttl=64,frag=no),udp(src=1000,dst=54)")
	h.mustFail("needs --in-port", "", "trace", j.Packet)
	h.mustFail("needs in_port(N)", "", "trace", "eth(src=00:00:00:00:00:01,dst=00:00:00:00:00:02),eth_type(0x0800),ipv4(src=10.0.0.1,dst=10.0.0.2,proto=17,tos=0,ttl=64,frag=no),udp(src=1,dst=2)")
	h.mustFail("shorter than an Ethernet header", "", "trace", "--in-port", "1", "00112233")
	h.mustFail("odd length", "", "trace", "--in-port", "1", "0011223344556677889900112233445")
	h.mustFail("no port has this name", "", "trace", "--in-port", "nope", j.Packet)
	h.mustFail("parsing the packet as a flow", "", "trace", "in_port(1),bogus")
	h.check("trace")
}

// TestTraceMatchesDatapath checks trace's prediction against what the
// userspace datapath then does with the packet: the packet is sent into
// p1 and the frames that come out of p2 and p3 are the ones trace
// printed.
func TestTraceMatchesDatapath(t *testing.T) {
	h := newHarness(t)
	dp := h.hostDP("br0")
	h.addMemPorts("br0", "p1", "p2", "p3")
	h.mustRun("", "add-flow", traceUDPFlow, traceUDPActs)
	var j traceResult
	if err := unmarshalTrace(h.mustRun("", "-f", "json", "trace", traceUDPPkt).stdout, &j); err != nil {
		t.Fatal(err)
	}
	if j.Miss || len(j.Outputs) != 2 {
		t.Fatalf("trace: %+v, want two outputs", j)
	}
	pkt, _ := hex.DecodeString(j.Packet)
	if _, err := dp.MemoryPeer("p1").WriteBatch([][]byte{pkt}); err != nil {
		t.Fatal(err)
	}
	for _, o := range j.Outputs {
		got := readPeer(t, dp.MemoryPeer(o.Name))
		if hex.EncodeToString(got) != o.Packet {
			t.Errorf("port %s: the datapath sent\n%x\ntrace predicted\n%s", o.Name, got, o.Packet)
		}
	}
}

// readPeer reads one frame from a memory port's peer, failing after 5 s.
func readPeer(t *testing.T, p *userdp.MemPort) []byte {
	t.Helper()
	type res struct {
		b   []byte
		err error
	}
	ch := make(chan res, 1)
	go func() {
		bufs, sizes := [][]byte{make([]byte, 4096)}, []int{0}
		n, err := p.ReadBatch(bufs, sizes, 0)
		if err == nil && n == 0 {
			err = errNothingRead
		}
		if err != nil {
			ch <- res{err: err}
			return
		}
		ch <- res{b: bufs[0][:sizes[0]]}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			t.Fatal(r.err)
		}
		return r.b
	case <-time.After(5 * time.Second):
		t.Fatalf("nothing came out of %s within 5 s", p.Name())
		return nil
	}
}

var errNothingRead = errorString("read no frame")

type errorString string

func (e errorString) Error() string { return string(e) }

// unmarshalTrace decodes trace's JSON as the harness normalized it.
func unmarshalTrace(s string, j *traceResult) error {
	return json.Unmarshal([]byte(strings.ReplaceAll(s, `"Used":T`, `"Used":0`)), j)
}
