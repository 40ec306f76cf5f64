package actsupport

import (
	"strings"
	"testing"
)

// TestCases parses cases.txt and refuses malformed lines, naming them.
func TestCases(t *testing.T) {
	cs, err := Cases()
	if err != nil || len(cs) < 30 {
		t.Fatalf("Cases: %d cases, %v", len(cs), err)
	}
	for _, c := range cs {
		if _, err := c.Flow(); err != nil {
			t.Error(err)
		}
	}
	saved := casesText
	defer func() { casesText = saved }()
	for _, bad := range []string{"output | ip | 2 | accepted", "output | ipx | 2 | accepted | accepted", "outpt | ip | 2 | accepted | accepted", "output | ip | 2 | yes | accepted"} {
		casesText = "# c\n" + bad + "\n"
		if _, err := Cases(); err == nil || !strings.Contains(err.Error(), "cases.txt:2") {
			t.Errorf("%q: %v, want an error naming line 2", bad, err)
		}
	}
}
