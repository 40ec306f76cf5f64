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

// TestActionIssueExample is the example of the issue: a partial ipv4 set
// becomes set_masked, and everything formats back as written.
func TestActionIssueExample(t *testing.T) {
	const s = "set(ipv4(ttl=63)),push_vlan(vid=10,pcp=0),2"
	as, err := ParseActions(s)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := as[0].(SetMasked); !ok {
		t.Errorf("set(ipv4(ttl=63)) parsed as %T, want SetMasked", as[0])
	}
	if out, err := RoundTripActions(s); err != nil || out != s {
		t.Errorf("round trip: %q, %v", out, err)
	}
	full := "set(ipv4(src=35.8.2.41,dst=172.16.0.20,proto=5,tos=0x80,ttl=128,frag=no))"
	as, err = ParseActions(full)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := as[0].(Set); !ok {
		t.Errorf("fully exact ipv4 set parsed as %T, want Set", as[0])
	}
}
