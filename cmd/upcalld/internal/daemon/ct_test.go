package daemon

import (
	"context"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ovsdp/ovsdp/odp"
)

// ctFirewall is contrib/firewall/firewall.rules with the port inside
// (which may open connections; the others may not) named inside.
func ctFirewall(t testing.TB, inside string) string {
	b, err := os.ReadFile("../../../../contrib/firewall/firewall.rules")
	if err != nil {
		t.Fatal(err)
	}
	return strings.ReplaceAll(string(b), "fw-inside", inside)
}

// recircFlows returns the flows that match a recirc_id other than 0.
func recircFlows(fs []string) []string {
	var out []string
	for _, f := range fs {
		if !strings.HasPrefix(f, "recirc_id(0),") {
			out = append(out, f)
		}
	}
	return out
}

// TestCTFirewall runs the stateful firewall through the daemon on a
// userspace datapath with its connection tracker: the megaflows of each
// pass, the recirculation IDs (allocated, reused, freed with their flows
// by revalidation), and a packet back from recirculation with an ID the
// daemon does not know.
func TestCTFirewall(t *testing.T) {
	h := newHarness(t, 2, Config{Rules: mustRules(t, ctFirewall(t, "1"))})
	h.start()
	a, b := macN(1), macN(2)
	req := udpFrame(a, b, ip4(10, 0, 0, 1), ip4(10, 0, 0, 2), 1000, 2000, 0)
	rep := udpFrame(b, a, ip4(10, 0, 0, 2), ip4(10, 0, 0, 1), 2000, 1000, 0)
	opened := udpFrame(b, a, ip4(10, 0, 0, 2), ip4(10, 0, 0, 1), 3000, 4000, 0)

	h.send(1, req)
	h.expect(2, req)
	h.send(2, rep)
	h.expect(1, rep)
	h.send(2, opened)
	h.expectNone(1, 200e6)

	fs := h.flows()
	want := []string{
		// Table 0 reads only the Ethernet type (and recirc_id).
		"recirc_id(0),in_port(1),eth(),eth_type(0x0800) actions:ct,recirc(0x1)",
		"recirc_id(0),in_port(2),eth(),eth_type(0x0800) actions:ct,recirc(0x1)",
	}
	got := fs[:0:0]
	for _, f := range fs {
		if strings.HasPrefix(f, "recirc_id(0),") {
			got = append(got, f)
		}
	}
	checkFlows(t, got, want...)
	rf := recircFlows(fs)
	// Table 1: new from 1 commits (+new+trk read); an established
	// reply from 2 goes on (the first rule failed on in_port, so only
	// the second's +est+trk is read) to table 2's learning switch; a new
	// connection from 2 is dropped by the catch-all (the second rule
	// failed on est). Table 2's flows read what normal reads.
	wantRecirc := map[string]bool{
		"recirc_id(0x1),in_port(1),ct_state(+new+trk),eth(),eth_type(0x0800) actions:ct(commit),recirc(0x2)":                       true,
		"recirc_id(0x1),in_port(2),ct_state(+est+trk),eth(src=02:00:00:00:00:02,dst=02:00:00:00:00:01),eth_type(0x0800) actions:1": true,
		"recirc_id(0x1),in_port(2),ct_state(-est+trk),eth() actions:drop":                                                          true,
		"recirc_id(0x2),in_port(1),eth(src=02:00:00:00:00:01,dst=02:00:00:00:00:02) actions:2":                                     true,
	}
	for _, f := range rf {
		delete(wantRecirc, f)
	}
	for f := range wantRecirc {
		t.Errorf("missing flow %s; have:\n%s", f, strings.Join(fs, "\n"))
	}
	// The two IDs are reused by every flow that recirculates: 1 by the
	// two table-0 flows, 2 by the commit.
	if n := h.d.recirc.Refs(1); n != 2 {
		t.Errorf("recirc 1 has %d references, want 2", n)
	}
	if n := h.d.recirc.Refs(2); n != 1 {
		t.Errorf("recirc 2 has %d references, want 1", n)
	}
	if got := h.counter("upcalld_recirc_ids"); got != 2 {
		t.Errorf("upcalld_recirc_ids %v, want 2", got)
	}

	// A miss with a recirc_id the daemon does not know is dropped and
	// counted.
	up := missFrom(t, a, b)
	for i, a := range up.Key {
		if _, ok := a.(odp.RecircID); ok {
			up.Key[i] = odp.RecircID(77)
		}
	}
	if err := h.d.HandleUpcall(context.Background(), &up); err == nil || !strings.Contains(err.Error(), "recirc_id 0x4d") {
		t.Errorf("unknown recirc_id: %v", err)
	}
	if got := h.counter("upcalld_megaflows_refused_total", "reason=recirc"); got != 1 {
		t.Errorf("refused for recirc: %v, want 1", got)
	}

	// Without ct in the rules, revalidation rewrites the table-0 flows;
	// the IDs lose their references, survive one more pass (a grace
	// period for packets in flight), are freed by the next, and the
	// flows that match them go with them.
	if err := h.d.ReloadRules("plain.rules", strings.NewReader("ip,in_port=1,actions=output:2\nip,in_port=2,actions=output:1\n")); err != nil {
		t.Fatal(err)
	}
	h.revalidate()
	if n := h.d.recirc.Refs(1) + h.d.recirc.Refs(2); n != 0 {
		t.Errorf("after the reload the IDs have %d references", n)
	}
	h.revalidate()
	if h.d.recirc.Len() != 0 {
		t.Errorf("%d recirculation IDs still live after two passes", h.d.recirc.Len())
	}
	h.revalidate()
	if rf := recircFlows(h.flows()); len(rf) != 0 {
		t.Errorf("flows of freed IDs left:\n%s", strings.Join(rf, "\n"))
	}
	// And a new connection from port 2 now passes.
	h.drain()
	h.send(2, opened)
	h.expect(1, opened)
}

// firewallConnected starts a daemon with cfg and contrib's firewall
// (port 1 inside) on two memory ports, and sends one UDP datagram from a
// on port 1 to b on port 2, which installs its three flows (two passes
// of recirculation).
func firewallConnected(t *testing.T, cfg Config) (h *harness, a, b mac) {
	t.Helper()
	cfg.Rules = mustRules(t, ctFirewall(t, "1"))
	h = newHarness(t, 2, cfg)
	h.start()
	a, b = macN(1), macN(2)
	req := udpFrame(a, b, ip4(10, 0, 0, 1), ip4(10, 0, 0, 2), 1000, 2000, 0)
	h.send(1, req)
	h.expect(2, req)
	h.waitFlows(3)
	return h, a, b
}

// TestCTRecircFreedWithIdleFlows: when the flows that recirculate expire
// (idle), their IDs lose their references and are freed, and the flows
// matching the freed IDs are deleted; a new connection then gets a new
// ID, never a freed one.
func TestCTRecircFreedWithIdleFlows(t *testing.T) {
	var now atomic.Uint64
	now.Store(1000)
	h, a, b := firewallConnected(t, Config{IdleTimeout: time.Second, MonoMillis: now.Load})
	if h.d.recirc.Refs(1) != 1 || h.d.recirc.Refs(2) != 1 {
		t.Fatalf("references: %d, %d; want 1, 1", h.d.recirc.Refs(1), h.d.recirc.Refs(2))
	}
	// Every flow idle: all deleted, the IDs unreferenced.
	now.Add(5000)
	h.revalidate()
	if n := len(h.flows()); n != 0 {
		t.Fatalf("%d flows left after they all went idle", n)
	}
	if h.d.recirc.Refs(1)+h.d.recirc.Refs(2) != 0 {
		t.Errorf("references left: %d, %d", h.d.recirc.Refs(1), h.d.recirc.Refs(2))
	}
	h.revalidate() // the grace pass ends
	if n := h.d.recirc.Len(); n != 0 {
		t.Errorf("%d IDs live after their flows expired", n)
	}
	// A new connection: new IDs.
	req2 := udpFrame(a, b, ip4(10, 0, 0, 1), ip4(10, 0, 0, 2), 1001, 2000, 0)
	h.send(1, req2)
	h.expect(2, req2)
	fs := h.waitFlows(3)
	for _, f := range fs {
		if strings.Contains(f, "recirc(0x1)") || strings.Contains(f, "recirc(0x2)") || strings.HasPrefix(f, "recirc_id(0x1)") || strings.HasPrefix(f, "recirc_id(0x2)") {
			t.Errorf("a freed ID handed out again: %s", f)
		}
	}
}

// TestCTRestartAdopts: a restarted daemon finds flows that recirculate
// to an earlier daemon's IDs. It hands out IDs above them (never one of
// theirs), rewrites the adopted first-pass flows to its own IDs at its
// first pass, deletes the flows matching the earlier IDs, and the
// firewall goes on working.
func TestCTRestartAdopts(t *testing.T) {
	rules := ctFirewall(t, "1")
	h, a, b := firewallConnected(t, Config{})
	h.stop()

	d2, err := New(Config{Datapath: h.dp, Rules: mustRules(t, rules), Handlers: 1, RevalidateInterval: time.Hour, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	h.d = d2
	h.start()
	if id := d2.recirc.RecircID("probe", 9); id <= 2 {
		t.Errorf("the restarted daemon handed out %d, an ID of the adopted flows", id)
	}
	h.revalidate()
	for _, f := range h.flows() {
		if strings.HasPrefix(f, "recirc_id(0x1)") || strings.HasPrefix(f, "recirc_id(0x2)") || strings.Contains(f, "recirc(0x1)") || strings.Contains(f, "recirc(0x2)") {
			t.Errorf("a flow of the earlier daemon's IDs left: %s", f)
		}
	}
	// A new connection from port 1 passes, one from port 2 does not.
	h.drain()
	req2 := udpFrame(a, b, ip4(10, 0, 0, 1), ip4(10, 0, 0, 2), 1001, 2000, 0)
	h.send(1, req2)
	h.expect(2, req2)
	opened := udpFrame(b, a, ip4(10, 0, 0, 2), ip4(10, 0, 0, 1), 3000, 4000, 0)
	h.send(2, opened)
	h.expectNone(1, 200*time.Millisecond)
}
