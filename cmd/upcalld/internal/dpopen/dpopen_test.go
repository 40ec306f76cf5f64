package dpopen

import (
	"strings"
	"testing"
)

func TestParseSpec(t *testing.T) {
	for _, c := range []struct {
		in, want, err string
	}{
		{"system@br0", "system@br0", ""},
		{"netdev@x", "netdev@x", ""},
		{"br1", "system@br1", ""},
		{"dummy@br0", "", `unknown type "dummy"`},
		{"netdev@", "", "invalid name"},
		{"netdev@a/b", "", "invalid name"},
		{"netdev@0123456789abcdef", "", "invalid name"},
		{"system@a@b", "", "invalid name"},
	} {
		s, err := ParseSpec(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("ParseSpec(%q) = %v, %v; want error with %q", c.in, s, err, c.err)
			}
			continue
		}
		if err != nil || s.String() != c.want {
			t.Errorf("ParseSpec(%q) = %v, %v; want %s", c.in, s, err, c.want)
		}
	}
}

func FuzzParseSpec(f *testing.F) {
	for _, s := range []string{"system@br0", "netdev@x", "br1", "@", "netdev@a b", "system@\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sp, err := ParseSpec(s)
		if err != nil {
			return
		}
		// A parsed spec prints back to a spec that parses to itself.
		sp2, err := ParseSpec(sp.String())
		if err != nil || sp2 != sp {
			t.Fatalf("%q: %v → %q → %v, %v", s, sp, sp.String(), sp2, err)
		}
		if sp.Name == "" || len(sp.Name) > 15 || strings.ContainsAny(sp.Name, "/@ \t\n\x00") {
			t.Fatalf("%q: bad name %q accepted", s, sp.Name)
		}
	})
}
