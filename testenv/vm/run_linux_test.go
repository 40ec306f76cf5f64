package vm

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestParseStatus: the guest's exit status is 0 to 255 (what a shell's $?
// can be); anything else is an error, not a status that os.Exit would
// truncate to its low 8 bits (256 → 0).
func TestParseStatus(t *testing.T) {
	for in, want := range map[string]int{"0\n": 0, "1": 1, " 255 \n": 255} {
		if got, err := parseStatus([]byte(in)); err != nil || got != want {
			t.Errorf("parseStatus(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "\n", "256", "-1", "+1", "9223372036854775808", "1 2", "x"} {
		if got, err := parseStatus([]byte(bad)); err == nil || !strings.Contains(err.Error(), "0 to 255") {
			t.Errorf("parseStatus(%q) = %d, %v; want an error naming 0 to 255", bad, got, err)
		}
	}
}

// TestDiagnosticsKeepsFailureStart: a kernel failure report whose stack
// trace is longer than the console tail keeps its first lines (the
// reason) in front of the tail; a console without one is the tail only.
func TestDiagnosticsKeepsFailureStart(t *testing.T) {
	dir := t.TempDir()
	var con strings.Builder
	con.WriteString("[    1.0] booting\n[    5.2] sysrq: Trigger a crash\n[    5.2] Kernel panic - not syncing: sysrq triggered crash\n")
	for i := range 60 {
		fmt.Fprintf(&con, "[    5.2]  ? frame_%d+0x10/0x20\n", i)
	}
	path := filepath.Join(dir, "console")
	if err := os.WriteFile(path, []byte(con.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	d := diagnostics(path, filepath.Join(dir, "none"), 40)
	if !strings.Contains(d, "sysrq: Trigger a crash") || !strings.Contains(d, "Kernel panic") || !strings.Contains(d, "frame_59") {
		t.Fatalf("diagnostics lost the failure's start or the tail:\n%s", d)
	}
	if strings.Contains(d, "frame_10+") || strings.Contains(d, "booting") {
		t.Errorf("diagnostics kept more than the report's first lines and the tail:\n%s", d)
	}
	if err := os.WriteFile(path, []byte("a\nb\nc\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if d := diagnostics(path, filepath.Join(dir, "none"), 40); strings.Contains(d, "failure report") {
		t.Errorf("a console without a failure got a failure excerpt:\n%s", d)
	}
}
