package main

import (
	"strings"
	"testing"
)

// TestVsOVSRows: the setup-rate rows are upcalld's rate over
// ovs-vswitchd's, judged ≥ 1.0× and failed by any loss of upcalld's; the
// megaflow rows are judged ≤ 1.0×; a missing run says why.
func TestVsOVSRows(t *testing.T) {
	line := func(name string, metrics string) string {
		return "BenchmarkIntegrationVsOVS/" + name + "-2 \t 1\t 100 ns/op\t" + metrics
	}
	vm := strings.Join([]string{
		"pkg: github.com/ovsdp/ovsdp/cmd/upcalld/internal/daemon",
		line("system/macs/upcalld", "361 delivered\t330 setup/s\t640 shed\t639 undelivered\t0 lost\t364 megaflows\t1000 offered/s\t1e8 p50-ns\t6e8 p99-ns\t9e7 handler-p50-ns\t4e8 handler-p99-ns"),
		line("system/macs/ovs", "1000 delivered\t660 setup/s\t0 undelivered\t0 lost\t1004 megaflows\t1000 offered/s\t2e8 p50-ns\t4e8 p99-ns"),
		line("system/pipeline/upcalld", "990 setup/s\t0 shed\t0 undelivered\t0 lost\t2 megaflows\t1000 offered/s\t1e7 p50-ns\t1e8 p99-ns"),
		line("system/pipeline/ovs", "900 setup/s\t0 undelivered\t0 lost\t3 megaflows\t1000 offered/s\t1e7 p50-ns\t5e7 p99-ns"),
		"",
	}, "\n")
	dir := hostFixture(t, "host\tok\t\nvsovs@vm\tok\t\nvsovs@host\tfail\texit 1\n", map[string]string{"vsovs@vm.txt": vm})
	get := loadRowGetter(t, dir)
	macs := get("Flow setup rate, new source MACs, learning switch / NORMAL, kernel datapath (VM)")
	if macs.Ratio.Center != 0.5 || macs.Met != metNo || !strings.Contains(macs.Ours, "640 shed") || !strings.Contains(macs.Ours, "handler 90 ms / 400 ms") ||
		!strings.Contains(macs.Baseline, "660 flows/s") || !strings.Contains(macs.Note, "1000 frames/s offered") {
		t.Errorf("macs setup row %+v", macs)
	}
	// Faster and lossless, but one run: no interval, so unclear.
	if p := get("Flow setup rate, VLAN classify + forward pipeline, new MACs and ports, kernel datapath (VM)"); p.Ratio.Center != 1.1 || p.Met != metUnclear || !p.MedianMeets {
		t.Errorf("pipeline setup row %+v", p)
	}
	// Per flow delivered: 364/361 against 1004/1000.
	if m := get("Megaflows installed, new source MACs, learning switch / NORMAL, kernel datapath (VM)"); m.Ours != "364 megaflows for 361 flows delivered" ||
		m.Baseline != "1004 megaflows for 1000 flows delivered" || !m.AtMost || m.Ratio.Center < 1.0042 || m.Ratio.Center > 1.0044 {
		t.Errorf("macs megaflow row %+v", m)
	}
	if m := get("Megaflows installed, VLAN classify + forward pipeline, new MACs and ports, kernel datapath (VM)"); m.Ratio.Center != 2.0/3 || !m.MedianMeets {
		t.Errorf("pipeline megaflow row %+v", m)
	}
	if h := get("Flow setup rate, new UDP 5-tuples, one exact rule each, userspace datapath (host)"); h.Met != metNotRun || !strings.Contains(h.Note, "step vsovs@host fail: exit 1") {
		t.Errorf("host row %+v", h)
	}
}
