package daemon

import (
	"strings"
	"sync"
	"testing"
)

// TestGroupFastFailoverAndSelect: a fast_failover group follows its
// watch ports' liveness (revalidation re-decides the flow when a port
// goes down and back up), and a select group spreads connections over
// its buckets with one megaflow per 5-tuple.
func TestGroupFastFailoverAndSelect(t *testing.T) {
	var mu sync.Mutex
	down := map[string]bool{}
	rules := mustRules(t, `group_id=1,type=fast_failover,bucket=watch_port:m2,actions=output:m2,bucket=watch_port:m3,actions=output:m3
group_id=2,type=select,bucket=output:2,bucket=output:3
udp,tp_dst=2000,actions=group:1
udp,tp_dst=3000,actions=group:2
`)
	h := newHarness(t, 3, Config{Rules: rules, PortUp: func(name string) bool {
		mu.Lock()
		defer mu.Unlock()
		return !down[name]
	}})
	h.start()
	a, b := macN(1), macN(2)
	ff := udpFrame(a, b, ip4(10, 0, 0, 1), ip4(10, 0, 0, 2), 1000, 2000, 0)
	h.send(1, ff)
	h.expect(2, ff)
	// setDown sets m2's liveness, runs a pass and sends the frame again.
	setDown := func(d bool) {
		mu.Lock()
		down["m2"] = d
		mu.Unlock()
		h.revalidate()
		h.drain()
		h.send(1, ff)
	}
	// m2 goes down: the next pass moves the flow to m3.
	setDown(true)
	h.expect(3, ff)
	h.expectNone(2, 100e6)
	if fs := h.flows(); len(fs) != 1 || !strings.HasSuffix(fs[0], " actions:3") {
		t.Errorf("flows after m2 went down:\n%s", strings.Join(fs, "\n"))
	}
	setDown(false)
	h.expect(2, ff)

	// select: 40 connections, each its own megaflow (the 5-tuple exact),
	// both buckets used, and a connection's packets keep their bucket.
	for sport := uint16(1); sport <= 40; sport++ {
		h.send(1, udpFrame(a, b, ip4(10, 0, 0, 1), ip4(10, 0, 0, 2), sport, 3000, 0))
	}
	fs := h.waitFlows(41)
	to := map[string]int{}
	for _, f := range fs {
		if !strings.Contains(f, "dst=3000") {
			continue
		}
		if !strings.Contains(f, "ipv4(src=10.0.0.1,dst=10.0.0.2,proto=17,frag=no),udp(src=") {
			t.Errorf("select flow without the exact 5-tuple: %s", f)
		}
		_, acts, _ := strings.Cut(f, " actions:")
		to[acts]++
	}
	if to["2"] < 5 || to["3"] < 5 || to["2"]+to["3"] != 40 {
		t.Errorf("select spread over 40 connections: %v", to)
	}
}
