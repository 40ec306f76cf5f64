package odp

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// conformanceDir finds ../shared/conformance beside the module root.
func conformanceActionsDir(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, "..", "shared", "conformance")
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found above the package directory")
		}
		dir = parent
	}
}

// TestConformanceActions runs Open vSwitch's own action round-trip
// vectors (odp-actions.txt) through parse → encode → decode → format; each
// must come back exactly as written.
func TestConformanceActions(t *testing.T) {
	path := filepath.Join(conformanceActionsDir(t), "odp-actions.txt")
	f, err := os.Open(path)
	if err != nil {
		msg := "conformance vectors missing: " + path + " (Open vSwitch's tests/odp.at vectors, see shared/conformance/README.md): " + err.Error()
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Log(msg)
		t.Fail()
		return
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	pass, total, lineNo := 0, 0, 0
	for sc.Scan() {
		lineNo++
		line := sc.Text()
		if isCommentLine(line) {
			out, err := RoundTripActions(line)
			if err != nil || out != line {
				t.Errorf("line %d: comment/blank line not echoed: %q -> %q, %v", lineNo, line, out, err)
			}
			continue
		}
		total++
		out, err := RoundTripActions(line)
		switch {
		case err != nil:
			t.Errorf("line %d: %s\n  error: %v", lineNo, line, err)
		case out != line:
			t.Errorf("line %d mismatch:\n  want %s\n  got  %s\n  diff at column %d", lineNo, line, out, firstDiff(line, out)+1)
		default:
			pass++
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if total == 0 {
		t.Fatal("no vectors in " + path)
	}
	t.Logf("odp-actions.txt: %d/%d pass", pass, total)
}

// firstDiff is the index of the first differing byte of a and b.
func firstDiff(a, b string) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

var _ = strings.TrimSpace
