package odp

import (
	"bufio"
	"os"
	"testing"
)

// TestActionOwnVectors runs testdata/actions/roundtrip.txt through the same
// round trip as the conformance vectors.
func TestActionOwnVectors(t *testing.T) {
	f, err := os.Open("testdata/actions/roundtrip.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		line := sc.Text()
		out, err := RoundTripActions(line)
		if err != nil {
			t.Errorf("%s: %v", line, err)
			continue
		}
		if out != line {
			t.Errorf("round trip changed the line\n  in  %s\n  out %s", line, out)
		}
		if !isCommentLine(line) {
			n++
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if n < 50 {
		t.Fatalf("only %d vectors read", n)
	}
	t.Logf("%d own action vectors", n)
}
