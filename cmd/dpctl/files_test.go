package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A line over 1 MiB in a flows file is reported with its number and
// skipped; the lines after it are still read, in add-flows, mod-flows and
// del-flows alike, from a file or from standard input.
func TestFlowsFileLongLine(t *testing.T) {
	h := newHarness(t)
	h.hostDP("br0")
	h.addMemPorts("br0", "p1", "p2")
	flow := func(i string) string {
		return "in_port(1),eth(),eth_type(0x0800),ipv4(dst=10.0.0." + i + ",frag=no)"
	}
	long := flow("9") + " " + strings.Repeat("2,", 600<<10) + "2"
	file := flow("1") + " 2\n" + long + "\n" + flow("2") + " 2\n" + long + "\n" + flow("3") + " 2"
	path := filepath.Join(os.Getenv("OVSDP_RUNDIR"), "long.txt")
	if err := os.WriteFile(path, []byte(file), 0o644); err != nil {
		t.Fatal(err)
	}
	r := h.run("", "add-flows", path)
	for _, want := range []string{"$RUNDIR/long.txt:2: line longer than 1 MiB", "$RUNDIR/long.txt:4: line longer than 1 MiB", "2 of the lines of $RUNDIR/long.txt failed"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("add-flows: stderr %q does not contain %q", r.stderr, want)
		}
	}
	if r.code == 0 {
		t.Errorf("add-flows with too long lines: exit 0")
	}
	if out := h.mustRun("", "dump-flows").stdout; strings.Count(out, "\n") != 3 {
		t.Errorf("after add-flows, want the 3 short lines' flows:\n%s", out)
	}

	mod := strings.ReplaceAll(file, " 2\n", " 1\n")
	r = h.run(mod, "mod-flows", "-")
	if !strings.Contains(r.stderr, "-:2: line longer than 1 MiB") || !strings.Contains(r.stderr, "-:4: line longer than 1 MiB") {
		t.Errorf("mod-flows: stderr %q", r.stderr)
	}
	if out := h.mustRun("", "dump-flows").stdout; strings.Count(out, "actions:1") != 2 {
		t.Errorf("after mod-flows, want 2 flows sending to 1:\n%s", out)
	}

	del := flow("1") + "\n" + strings.Repeat("x", 2<<20) + "\n" + flow("2") + "\n"
	r = h.run(del, "del-flows", "netdev@br0", "-")
	if !strings.Contains(r.stderr, "-:2: line longer than 1 MiB") || r.code == 0 {
		t.Errorf("del-flows: exit %d, stderr %q", r.code, r.stderr)
	}
	if out := h.mustRun("", "dump-flows").stdout; strings.Count(out, "\n") != 1 || !strings.Contains(out, "10.0.0.3") {
		t.Errorf("after del-flows, want only the third flow:\n%s", out)
	}
}

// lineReader: lines up to the limit (with or without a final newline,
// with CRLF), longer ones skipped with their length.
func TestLineReader(t *testing.T) {
	in := "abc\r\n" + strings.Repeat("y", 10) + "\n" + strings.Repeat("z", 11) + "\nlast"
	lr := newLineReader(strings.NewReader(in), 10)
	type line struct {
		s       string
		skipped int
	}
	var got []line
	for {
		s, n, err := lr.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, line{s, n})
	}
	want := []line{{"abc", 0}, {strings.Repeat("y", 10), 0}, {"", 12}, {"last", 0}}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("line %d: %+v, want %+v", i+1, got[i], want[i])
		}
	}
}
