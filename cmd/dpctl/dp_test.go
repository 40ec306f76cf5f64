package main

import "testing"

// TestParseDPName checks dpctl's TYPE@NAME parsing, which is
// internal/dpname's: since dpctl and upcalld share it, dpctl refuses the
// names upcalld refused ('@', newline, NUL in the name), which it used to
// accept.
func TestParseDPName(t *testing.T) {
	for in, want := range map[string]string{"br0": "system@br0", "system@br0": "system@br0", "netdev@x": "netdev@x"} {
		d, err := parseDPName(in)
		if err != nil || d.String() != want {
			t.Errorf("parseDPName(%q) = %v, %v; want %s", in, d, err, want)
		}
	}
	for in, want := range map[string]string{
		"dummy@x":    `"dummy@x": unknown datapath type "dummy" (want system or netdev)`,
		"netdev@":    `"netdev@": empty datapath name`,
		"system@a@b": `"system@a@b": invalid datapath name (at most 15 characters, no '/', '@', blanks or NUL)`,
		"netdev@a\n": `"netdev@a\n": invalid datapath name (at most 15 characters, no '/', '@', blanks or NUL)`,
		"a\x00":      `"a\x00": invalid datapath name (at most 15 characters, no '/', '@', blanks or NUL)`,
	} {
		d, err := parseDPName(in)
		if err == nil || err.Error() != want {
			t.Errorf("parseDPName(%q) = %v, %v; want error %s", in, d, err, want)
		}
	}
}
