package main

import (
	"strings"
	"testing"
)

// TestVsOVSSatRows: the saturation rows pair upcalld's i-th run with
// ovs-vswitchd's i-th (the per-round ratios' median, not the medians'
// ratio), judge the setup rate ≥ 1.0× without failing it for loss, list
// where undelivered frames went, and judge megaflows per flow delivered
// ≤ 1.0×; a missing step says why.
func TestVsOVSSatRows(t *testing.T) {
	line := func(name string, metrics string) string {
		return "BenchmarkIntegrationVsOVSSat/" + name + "-2 \t 1\t 100 ns/op\t" + metrics
	}
	// Three rounds: upcalld's rates 30k, 20k, 60k against OVS's 20k, 40k,
	// 30k. Per round 1.5, 0.5, 2 (median 1.5); the medians' ratio would
	// be 30k/30k = 1.
	var lines []string
	for _, round := range []struct{ ours, ovs string }{{"30000", "20000"}, {"20000", "40000"}, {"60000", "30000"}} {
		lines = append(lines, "pkg: github.com/ovsdp/ovsdp/cmd/upcalld/internal/daemon",
			line("netdev/macs/upcalld", round.ours+" setup/s\t6000 delivered\t4000 undelivered\t1000 lost\t3000 shed\t0 socket-drops\t6003 megaflows\t100000 offered/s\t97000 sent/s\t1e7 p50-ns\t3e7 p99-ns\t2e6 handler-p50-ns\t2e7 handler-p99-ns"),
			line("netdev/macs/ovs", round.ovs+" setup/s\t3000 delivered\t7000 undelivered\t0 lost\t7000 socket-drops\t3004 megaflows\t3100 megaflows-max\t100000 offered/s\t99000 sent/s\t9e6 p50-ns\t4e7 p99-ns"),
			"PASS")
	}
	host := strings.Join(lines, "\n") + "\n"
	dir := hostFixture(t, "host\tok\t\nvssat@host\tok\t\nvssat@vm\tfail\texit 2\n", map[string]string{"vssat@host.txt": host})
	get := loadRowGetter(t, dir)
	s := get("Flow setup rate at saturation, new source MACs, learning switch / NORMAL, userspace datapath (host)")
	if s.Ratio.Center != 1.5 || s.Ratio.N != 3 || s.Met == metNo || s.Met == metNotRun || !s.MedianMeets {
		t.Errorf("setup row ratio %+v met %q", s.Ratio, s.Met)
	}
	for _, want := range []string{"30 kflows/s", "4000 undelivered", "1000 lost (datapath upcall queue)", "3000 shed (handlers overloaded)", "handler 2 ms / 20 ms", "6003 megaflows"} {
		if !strings.Contains(s.Ours, want) {
			t.Errorf("setup row Ours %q lacks %q", s.Ours, want)
		}
	}
	if !strings.Contains(s.Baseline, "7000 socket drops") || strings.Contains(s.Baseline, "lost") || strings.Contains(s.Baseline, "handler") {
		t.Errorf("setup row Baseline %q", s.Baseline)
	}
	if !strings.Contains(s.Note, "100 kframes/s offered") || !strings.Contains(s.Note, "97 kframes/s to upcalld") || !strings.Contains(s.Note, "3 round(s)") {
		t.Errorf("setup row Note %q", s.Note)
	}
	// 6003/6000 against 3004/3000, every round.
	m := get("Megaflows installed at saturation, new source MACs, learning switch / NORMAL, userspace datapath (host)")
	if !m.AtMost || m.Ratio.Center < 0.9991 || m.Ratio.Center > 0.9993 || m.Ours != "6003 megaflows for 6000 flows delivered" ||
		!strings.HasPrefix(m.Baseline, "3004 megaflows for 3000 flows delivered (3100 at most during the run") {
		t.Errorf("megaflow row %+v", m)
	}
	if v := get("Flow setup rate at saturation, new UDP 5-tuples, one exact rule each, kernel datapath (VM)"); v.Met != metNotRun || !strings.Contains(v.Note, "step vssat@vm fail: exit 2") {
		t.Errorf("vm row %+v", v)
	}
}
