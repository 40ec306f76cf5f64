package odp

import (
	"bufio"
	"os"
	"strings"
	"testing"
)

// TestOwnKeyVectors runs testdata/keys/*.txt: the forms the Open vSwitch
// vectors lack (every attribute, ipv6_exthdrs, keyN, masked tcp_flags).
func TestOwnKeyVectors(t *testing.T) {
	for name, masked := range map[string]bool{"exact.txt": false, "masked.txt": true} {
		f, err := os.Open("testdata/keys/" + name)
		if err != nil {
			t.Fatal(err)
		}
		s := bufio.NewScanner(f)
		n := 0
		for s.Scan() {
			line := s.Text()
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			n++
			got, err := RoundTripKey(line, masked)
			if err != nil || got != line {
				t.Errorf("%s: %q\n got %q, %v", name, line, got, err)
			}
		}
		f.Close()
		if n == 0 {
			t.Errorf("%s: no vectors", name)
		}
	}
}
