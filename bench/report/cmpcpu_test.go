package main

import (
	"fmt"
	"strings"
	"testing"
)

// TestEqualMaskedCPURows: BenchmarkEqualMaskedCPU's rows show the
// thread-CPU-time ratio against bytes.Equal, judge the aligned one on
// its ≥ 1× goal and the others for information, and say how they were
// measured; a row whose benchmark did not run (no AVX2 on the CPU, say)
// says so.
func TestEqualMaskedCPURows(t *testing.T) {
	var out strings.Builder
	line := func(name string, ours, base, x float64) {
		fmt.Fprintf(&out, `{"Action":"output","Package":"github.com/ovsdp/ovsdp/flowkeys","Output":"%s-2 \t 1000 \t %g ns/op \t %g baseline-ns/op \t %g x-vs-baseline \t %g median-chunk-x\n"}`+"\n", name, ours, base, x, x)
	}
	for _, x := range []float64{1.04, 1.06, 1.05, 1.07, 1.05, 1.08} {
		line("BenchmarkEqualMaskedCPU/aligned/dispatch/ours", 3, 3*x, x)
		line("BenchmarkEqualMaskedCPU/off8/dispatch/ours", 3.6, 3.6*x*0.8, x*0.8)
	}
	dir := writeFixture(t, map[string]string{"host.json": out.String(), "steps.txt": "host\tok\t\n", "machine.txt": "CPU: x\n"})
	md, _, _ := runReport(t, dir)
	lines := strings.Split(md, "\n")
	// rowOf is the row's table line and its numbered note.
	rowOf := func(what string) string {
		for _, l := range lines {
			if strings.Contains(l, "| "+what+" |") {
				num := strings.TrimSpace(strings.Split(l, "|")[1])
				for _, n := range lines {
					if strings.HasPrefix(n, num+". ") {
						return l + " " + n
					}
				}
				t.Errorf("row %q has no note %s.", what, num)
				return l
			}
		}
		t.Errorf("no row %q in\n%s", what, md)
		return ""
	}
	for what, want := range map[string][]string{
		cmpCPURow + ", 64-byte-aligned keys":                  {"1.06× [1.04, 1.08]", "≥ 1×", "✅ yes", "thread's CPU clock", "400 chunks alternating", "6 run(s)"},
		cmpCPURow + ", keys 8 bytes past 64-byte boundaries":  {"0.84× [0.83, 0.86]", "thread's CPU clock"},
		cmpCPURow + ", AVX2 comparator, 64-byte-aligned keys": {"BenchmarkEqualMaskedCPU/aligned/avx2/ours"},
	} {
		row := rowOf(what)
		for _, w := range want {
			if !strings.Contains(row, w) {
				t.Errorf("row %q lacks %q", row, w)
			}
		}
	}
}
