package dpname

import (
	"errors"
	"testing"
)

func TestParse(t *testing.T) {
	for _, c := range []struct {
		in             string
		typ, name      string  // when accepted
		problem        Problem // when refused
		wantErrMessage string  // when refused, if not ""
	}{
		// Accepted.
		{in: "system@br0", typ: "system", name: "br0"},
		{in: "netdev@x", typ: "netdev", name: "x"},
		{in: "br1", typ: "system", name: "br1"},
		{in: "netdev@0123456789abcde", typ: "netdev", name: "0123456789abcde"}, // 15 bytes
		{in: "system@a.b-c_d:e", typ: "system", name: "a.b-c_d:e"},
		{in: "ovs-système", typ: "system", name: "ovs-système"}, // 12 bytes
		// Refused: the type.
		{in: "dummy@br0", problem: UnknownType, wantErrMessage: `"dummy@br0": unknown datapath type "dummy" (want system or netdev)`},
		{in: "@br0", problem: UnknownType},
		{in: "@", problem: UnknownType},
		{in: "System@br0", problem: UnknownType},
		{in: "dummy@", problem: UnknownType}, // the type is checked first
		// Refused: the name.
		{in: "", problem: EmptyName},
		{in: "netdev@", problem: EmptyName, wantErrMessage: `"netdev@": empty datapath name`},
		{in: "system@", problem: EmptyName},
		{in: "netdev@0123456789abcdef", problem: InvalidName}, // 16 bytes
		{in: "0123456789abcdef", problem: InvalidName},
		{in: "ovs-systèmes-xy", problem: InvalidName}, // 15 runes, 16 bytes
		{in: "netdev@a/b", problem: InvalidName, wantErrMessage: `"netdev@a/b": invalid datapath name (at most 15 characters, no '/', '@', blanks or NUL)`},
		{in: "system@a@b", problem: InvalidName},
		{in: "netdev@a b", problem: InvalidName},
		{in: "netdev@a\tb", problem: InvalidName},
		{in: "netdev@a\n", problem: InvalidName},
		{in: "system@\x00", problem: InvalidName},
		{in: "a b", problem: InvalidName},
	} {
		typ, name, err := Parse(c.in)
		if c.problem == 0 {
			if err != nil || typ != c.typ || name != c.name {
				t.Errorf("Parse(%q) = %q, %q, %v; want %q, %q", c.in, typ, name, err, c.typ, c.name)
			}
			continue
		}
		var e *Error
		if !errors.As(err, &e) || e.Problem != c.problem || e.Input != c.in {
			t.Errorf("Parse(%q) = %q, %q, %v; want an *Error with problem %d", c.in, typ, name, err, c.problem)
			continue
		}
		if typ != "" || name != "" {
			t.Errorf("Parse(%q) refused but returned %q, %q", c.in, typ, name)
		}
		if c.wantErrMessage != "" && err.Error() != c.wantErrMessage {
			t.Errorf("Parse(%q): error %q, want %q", c.in, err, c.wantErrMessage)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"system@br0", "netdev@x", "br1", "@", "netdev@a b", "system@\x00", "a@b@c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		typ, name, err := Parse(s)
		if err != nil {
			return
		}
		// An accepted name prints back to itself.
		typ2, name2, err := Parse(typ + "@" + name)
		if err != nil || typ2 != typ || name2 != name {
			t.Fatalf("%q: %q@%q parses to %q, %q, %v", s, typ, name, typ2, name2, err)
		}
	})
}
