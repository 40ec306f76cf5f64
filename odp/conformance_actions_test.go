package odp

import "testing"

// TestConformanceActions runs Open vSwitch's own action round-trip
// vectors (odp-actions.txt) through parse → encode → decode → format; each
// must come back exactly as written, and comments and blank lines are
// echoed.
func TestConformanceActions(t *testing.T) {
	lines := readVectors(t, "odp-actions.txt")
	if lines == nil {
		return
	}
	pass, total := 0, 0
	for i, line := range lines {
		lineNo := i + 1
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
	if total == 0 {
		t.Fatal("no vectors in odp-actions.txt")
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
