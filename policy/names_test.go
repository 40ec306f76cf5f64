package policy

import (
	"slices"
	"strings"
	"testing"
)

func TestPortNames(t *testing.T) {
	const text = "priority=10,in_port=veth0,actions=output:veth1,output:3\n" +
		"priority=5,in_port=2,actions=output:gone0\n" +
		"priority=1,actions=normal\n"
	rs, err := ParseRules("names", strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	if got := rs.PortNames(); !slices.Equal(got, []string{"gone0", "veth0", "veth1"}) {
		t.Errorf("PortNames: %v", got)
	}
	// The names print back, and the text parses to the same rules.
	want := "priority=10,in_port=veth0,actions=output:veth1,output:3\n" +
		"priority=5,in_port=2,actions=output:gone0\n" +
		"priority=1,actions=normal\n"
	if rs.String() != want {
		t.Errorf("String:\n%s\nwant:\n%s", rs, want)
	}
	if rs2, err := ParseRules("again", strings.NewReader(rs.String())); err != nil || !rs2.Equal(rs) {
		t.Errorf("round trip: %v\n%s", err, rs2)
	}
	act := func(rs *RuleSet, in uint32) string {
		k := tcpKey()
		k.InPort = in
		d := rs.Decide(&k)
		return Translate(&d, &k, &Env{Ports: []uint32{1, 2, 3, 7, 8}}).String()
	}
	// Unresolved: in_port=veth0 matches no port, output:gone0 is skipped.
	if got := act(rs, 7); got != "1,2,3,8" {
		t.Errorf("unresolved, from 7: %s", got)
	}
	if got := act(rs, 2); got != "drop" {
		t.Errorf("unresolved output, from 2: %s", got)
	}
	res, missing := rs.Resolve(map[string]uint32{"veth0": 7, "veth1": 8, "other": 1})
	if !slices.Equal(missing, []string{"gone0"}) {
		t.Errorf("missing: %v", missing)
	}
	if got := act(res, 7); got != "8,3" {
		t.Errorf("resolved, from 7: %s", got)
	}
	if got := act(res, 1); got != "2,3,7,8" {
		t.Errorf("resolved, from 1: %s", got)
	}
	// Resolve copies: the parsed set still has the names unresolved.
	if got := act(rs, 7); got != "1,2,3,8" {
		t.Errorf("rs changed by Resolve: %s", got)
	}
	// A port that changes number: resolving again follows it.
	res2, missing := rs.Resolve(map[string]uint32{"veth0": 9, "veth1": 8, "gone0": 1})
	if len(missing) != 0 {
		t.Errorf("missing: %v", missing)
	}
	if got := act(res2, 7); got != "1,2,3,8" {
		t.Errorf("veth0 renumbered, from 7: %s", got)
	}
	if got := act(res2, 2); got != "1" {
		t.Errorf("gone0 back, from 2: %s", got)
	}
	// Without names, Resolve is the identity.
	plain := DefaultRules()
	if r, m := plain.Resolve(nil); r != plain || m != nil {
		t.Errorf("Resolve without names: %p %v", r, m)
	}
	// A match alone cannot name a port.
	if _, err := ParseMatch("in_port=veth0"); err == nil || !strings.Contains(err.Error(), "port names are resolved only in rules") {
		t.Errorf("ParseMatch(in_port=veth0): %v", err)
	}
}
