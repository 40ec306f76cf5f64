package testenv

import (
	"strconv"
	"testing"
)

// FuzzOwnerPID: no panic; anything accepted re-formats to the same name.
func FuzzOwnerPID(f *testing.F) {
	for _, s := range []string{"ovsdp-abc-1", "ovsdp-", "ovsdp--", "ovsdp-zzzzzzzzzzzz-1", "eth0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		pid, ok := ownerPID(s)
		if !ok {
			return
		}
		if pid <= 0 {
			t.Fatalf("ownerPID(%q) = %d", s, pid)
		}
		rest := s[len(NamePrefix):]
		p := rest[:len(strconv.FormatInt(int64(pid), 36))]
		if v, err := strconv.ParseInt(p, 36, 64); err != nil || int(v) != pid {
			t.Logf("non-canonical pid text %q in %q", p, s)
		}
	})
}
