package main

import (
	"fmt"
	"strings"
	"testing"
)

// fwdLine is one BenchmarkForwardVeth result line with the given
// delivered rates (Mpps) of xdp, ring, ovsxdp, ovs and bridge, and the
// arrived fraction of xdp.
func fwdLine(xdp, ring, ovsxdp, ovs, bridge, xdpArrived float64) string {
	m := map[string]float64{"xdp": xdp, "ring": ring, "ovsxdp": ovsxdp, "ovs": ovs, "bridge": bridge}
	line := "BenchmarkForwardVeth-2 \t1\t14000000000 ns/op"
	for _, f := range fwdForwarders {
		arr := 1.0
		if f.key == "xdp" {
			arr = xdpArrived
		}
		line += fmt.Sprintf("\t%g %s-Mpps\t%g %s-arrived\t%g %s-cpu-ns/pkt\t%g %s-cores", m[f.key], f.key, arr, f.key, 1000/m[f.key], f.key, 0.5, f.key)
	}
	line += fmt.Sprintf("\t%g xdp-vs-ovsxdp\t%g xdp-vs-bridge\t%g ring-vs-ovs\t%g ring-vs-bridge", xdp/ovsxdp, xdp/bridge, ring/ovs, ring/bridge)
	line += fmt.Sprintf("\t%g xdp-sender-cpu-ns/sent", 1100.0)
	return line + "\t0.01 xdp-rxdrop\t0 xdp-txdrop\n"
}

// TestForwardRows: each goal of the forwarding benchmark is judged on
// the runs' own ratios of the right pair of phases; the arrived goal
// in percent; the CPU row shows every forwarder; without the benchmark
// every row says why it is missing.
func TestForwardRows(t *testing.T) {
	r := newResults()
	text := "pkg: github.com/ovsdp/ovsdp/userdp\n"
	// Six runs: xdp beats ovsxdp (1.2×) and the bridge (about 1.0×,
	// straddling), ring is 1.4× ovs (below 1.5×), 99.5% arrive.
	for i := range 6 {
		d := 0.01 * float64(i-3)
		text += fwdLine(0.6+d, 0.42, 0.5, 0.3, 0.6-d, 0.995)
	}
	for _, x := range []float64{1.9, 1.85, 1.95} {
		text += fmt.Sprintf("BenchmarkForwardCores-2 \t1\t600000000 ns/op\t10 one-Mpps\t%g two-Mpps\t%g x-vs-one\t43 one-cpu-ns/pkt\t43.5 two-cpu-ns/pkt\t0.1 two-runq-cores\n", 10*x, x)
	}
	if err := r.addText("userdp", text, "fixture"); err != nil {
		t.Fatal(err)
	}
	rows := map[string]Row{}
	for _, row := range r.forwardRows() {
		rows[row.What] = row
	}
	check := func(what, met string, center float64, contains ...string) {
		t.Helper()
		row, ok := rows[what]
		if !ok {
			t.Fatalf("no row %q in %v", what, rows)
		}
		if row.Met != met || (center != 0 && (row.Ratio.Center < center*0.999 || row.Ratio.Center > center*1.001)) {
			t.Errorf("%s: met %q ratio %+v, want %q and %g", what, row.Met, row.Ratio, met, center)
		}
		for _, c := range contains {
			if !strings.Contains(row.Ours+" "+row.Baseline+" "+row.Note, c) {
				t.Errorf("%s: %+v lacks %q", what, row, c)
			}
		}
	}
	check("Forwarding over veth, 64-byte UDP, userdp AF_XDP ports (vs ovs-vswitchd 3.1, AF_XDP ports, same run)", metYes, 0, "0.5 Mpps", "xdp delivered 100%")
	// The bridge's whole path (1000/0.6 ns per frame, the median)
	// against the sender's 1100 ns per frame in the AF_XDP phase.
	check("Forwarding over veth, 64-byte UDP, userdp AF_XDP ports (vs Linux bridge)", metUnclear, 0.98361,
		"sender's CPU per frame it sent in the AF_XDP phase, 1.1 µs", "skb_pp_cow_data", "bounds AF_XDP at 1.50× the bridge")
	check("Forwarding over veth, 64-byte UDP, userdp ring ports (vs ovs-vswitchd 3.1, default ports, same run)", metNo, 1.4, "0.42 Mpps", "0.3 Mpps")
	check("Forwarding between two namespaces over veth, 64-byte UDP, userdp ring ports (vs Linux bridge)", metYes, 0.69426)
	check("Forwarding over veth, userdp AF_XDP ports: sent frames arriving", metYes, 99.5, "receive side 1.0%")
	// The percentage's plain mean is in percent too (it read 0.00%).
	if m := rows["Forwarding over veth, userdp AF_XDP ports: sent frames arriving"].Ratio.Mean; m < 99.49 || m > 99.51 {
		t.Errorf("arrived mean %g%%, want 99.5%%", m)
	}
	check("Forwarding over veth: CPU per delivered packet, by forwarder", metNone, 0, "ovs-vswitchd, AF_XDP ports 2 µs", "userdp, ring ports 2.38 µs", "Linux bridge")

	check("Forwarding on two cores: two in-memory ports, two receive goroutines (vs one)", metYes, 1.9, "19 Mpps", "10 Mpps", "43 ns", "43.5 ns")

	// Without the benchmark: not measured, saying why.
	for _, row := range newResults().forwardRows() {
		if row.Met != metNotRun || !strings.Contains(row.Note, "userdp was not run") {
			t.Errorf("no results: row %+v", row)
		}
	}
}
