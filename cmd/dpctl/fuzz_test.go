package main

import (
	"strings"
	"testing"
)

// FuzzArgParsers feeds the argument parsers dpctl adds to ovs-dpctl's
// syntax: no panic, and an accepted value is consistent.
func FuzzArgParsers(f *testing.F) {
	for _, s := range []string{"zone=1,limit=5", "zone=65535,limit=0", "zone=,limit=1", "zone=1,2,3", "rate=1000,burst=100", "kbps,rate=1", "in_port=p1,tcp", "tcp,in_port=1", "p1,type=memory,port_no=9,mtu=9000"} {
		f.Add(s)
	}
	ports := func(name string) (uint32, bool) { return 7, name == "p1" }
	f.Fuzz(func(t *testing.T, s string) {
		if zl, err := parseZoneLimit(s); err == nil && (zl.Zone < 0 || zl.Zone > 65535) {
			t.Errorf("parseZoneLimit(%q) = zone %d", s, zl.Zone)
		}
		if zs, err := parseZoneList(s); err == nil && len(zs) == 0 {
			t.Errorf("parseZoneList(%q): no zones and no error", s)
		}
		if m, err := parseMeterSpec(1, strings.Fields(s)); err == nil && len(m.Bands) == 0 {
			t.Errorf("parseMeterSpec(%q): no bands and no error", s)
		}
		if out, err := resolvePortNames(s, ports); err == nil && !strings.Contains(s, "in_port=") && out != s {
			t.Errorf("resolvePortNames(%q) = %q, changed text without in_port", s, out)
		}
		_, _ = newFlowFilter(s, ports)
		_, _ = parseIfaceArg(s)
		_, _, _ = parseFlowLine(fileAdd, s)
	})
}
