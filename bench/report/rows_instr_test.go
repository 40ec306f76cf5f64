package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestInstructionsRow(t *testing.T) {
	const both = "/tmp/x/userdp.test: 559 instructions/packet (single run, N=300000); 489.4 instructions/packet (differential, GOGC=off, (I(700000)-I(100000))/600000) (comparator avx2; valgrind CPU Intel(R) Core(TM) i7-4910MQ CPU @ 2.90GHz)\n"
	for _, c := range []struct {
		name, text string
		met        string
		ours       []string
	}{
		{"both figures, goal missed", both, metNo, []string{"559 instructions/packet (single run, N=300000)", "differential 489.4"}},
		{"single run only, goal met", "/tmp/x/userdp.test: 480 instructions/packet (single run, N=300000) (comparator avx2; valgrind CPU X)\n", metYes, []string{"480 instructions/packet"}},
		{"exactly the goal", strings.Replace(both, ": 559 ", ": 500 ", 1), metYes, []string{"500 instructions/packet"}},
		{"with the old pattern's figure, judged on the new one", strings.Replace(both, "N=300000); ", "N=300000); 541 instructions/packet (single run, old pattern BenchmarkPipeline/^cache$, which also ran BenchmarkPipelineCT and BenchmarkPipelineCTConns once); ", 1), metNo, []string{"559 instructions/packet (single run, N=300000)", "old pattern 541", "differential 489.4"}},
		{"old pattern over the goal, new one under", "/tmp/x/userdp.test: 488 instructions/packet (single run, N=300000); 541 instructions/packet (single run, old pattern BenchmarkPipeline/^cache$, which also ran BenchmarkPipelineCT and BenchmarkPipelineCTConns once); 480.1 instructions/packet (differential, GOGC=off, (I(700000)-I(100000))/600000) (comparator avx2; valgrind CPU X)\n", metYes, []string{"488 instructions/packet (single run", "old pattern 541", "differential 480.1"}},
		{"no result line", "pipeline-instructions: valgrind is not installed\n", metNotRun, nil},
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "userdp@instructions.txt"), []byte(c.text), 0o644); err != nil {
			t.Fatal(err)
		}
		r, err := Load(dir)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if len(r.Malformed) != 0 {
			t.Errorf("%s: malformed lines %+v", c.name, r.Malformed)
		}
		row := r.instructionsRow()
		if row.Met != c.met {
			t.Errorf("%s: verdict %q, want %q (row %+v)", c.name, row.Met, c.met, row)
		}
		for _, s := range c.ours {
			if !strings.Contains(row.Ours, s) {
				t.Errorf("%s: %q does not say %q", c.name, row.Ours, s)
			}
		}
		if strings.Contains(row.Ours, "old pattern") && !strings.Contains(row.Note, "method corrected") {
			t.Errorf("%s: the note does not say the method changed: %q", c.name, row.Note)
		}
		if c.met != metNotRun && !strings.Contains(row.Note, "single run") {
			t.Errorf("%s: the note does not say which figure is judged: %q", c.name, row.Note)
		}
	}
	if row := newResults().instructionsRow(); row.Met != metNotRun || !strings.Contains(row.Note, "not run") {
		t.Errorf("without the script's output: %+v", row)
	}
}
