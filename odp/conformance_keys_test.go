package odp

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// conformanceDir finds ../shared/conformance beside the module root (the
// directory holding go.mod).
func conformanceDir(t *testing.T) string {
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
			t.Fatal("no go.mod above the package directory")
		}
		dir = parent
	}
}

// readVectors reads a conformance file, or reports that it is missing
// (and fails under CI=true).
func readVectors(t *testing.T, name string) []string {
	t.Helper()
	path := filepath.Join(conformanceDir(t), name)
	f, err := os.Open(path)
	if err != nil {
		msg := "conformance vectors " + path + " are missing (they are Open vSwitch's tests/odp.at vectors, kept beside the repository in ../shared/conformance): " + err.Error()
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Log(msg)
		return nil
	}
	defer f.Close()
	var lines []string
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 1<<20), 1<<20)
	for s.Scan() {
		lines = append(lines, s.Text())
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	return lines
}

func runKeyConformance(t *testing.T, name string, masked bool) {
	lines := readVectors(t, name)
	if lines == nil {
		return
	}
	total, pass := 0, 0
	var diffs []string
	for i, line := range lines {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		total++
		got, err := RoundTripKey(line, masked)
		if err == nil && got == line {
			pass++
			continue
		}
		if len(diffs) < 5 {
			if err != nil {
				diffs = append(diffs, "line "+strconv.Itoa(i+1)+": error: "+err.Error()+"\n   in:   "+line)
			} else {
				diffs = append(diffs, "line "+strconv.Itoa(i+1)+":\n   in:   "+line+"\n   out:  "+got)
			}
		}
	}
	t.Logf("%s: %d/%d vectors pass", name, pass, total)
	if pass != total {
		t.Errorf("%s: %d of %d vectors fail; first differences:\n%s", name, total-pass, total, strings.Join(diffs, "\n"))
	}
	if total == 0 {
		t.Errorf("%s: no vectors", name)
	}
}

func TestConformanceKeys(t *testing.T)   { runKeyConformance(t, "odp-keys.txt", false) }
func TestConformanceWCKeys(t *testing.T) { runKeyConformance(t, "odp-wc-keys.txt", true) }
