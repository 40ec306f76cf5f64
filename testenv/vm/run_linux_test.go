package vm

import (
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
