package policy

import (
	"slices"
	"sort"
)

// NoPort is the port number that an unresolved port name stands for: no
// packet comes in on it (datapath port numbers have 16 bits), so a rule
// with in_port=NAME of no port never matches, and output:NAME of no port
// is skipped.
const NoPort = ^uint32(0)

// isPortName reports whether a port value is a name: it starts with a
// letter and has only letters, digits and "_-.@:" (anything that starts
// with a digit is a number, or an error).
func isPortName(s string) bool {
	if s == "" || !(s[0] >= 'a' && s[0] <= 'z' || s[0] >= 'A' && s[0] <= 'Z') {
		return false
	}
	for i := range len(s) {
		c := s[i]
		if !isNameChar(c) && c != '-' && c != '.' && c != '@' && c != ':' {
			return false
		}
	}
	return true
}

// PortNames returns the port names the rules use (in_port=NAME,
// output:NAME), sorted, without repeats.
func (rs *RuleSet) PortNames() []string {
	var names []string
	for i := range rs.Rules {
		r := &rs.Rules[i]
		if r.InPortName != "" {
			names = append(names, r.InPortName)
		}
		for _, a := range r.Actions {
			if a.PortName != "" {
				names = append(names, a.PortName)
			}
		}
	}
	for _, g := range rs.groups {
		for _, b := range g.Buckets {
			if b.WatchPortName != "" {
				names = append(names, b.WatchPortName)
			}
			for _, a := range b.Actions {
				if a.PortName != "" {
					names = append(names, a.PortName)
				}
			}
		}
	}
	sort.Strings(names)
	return slices.Compact(names)
}

// Resolve returns the rule set with its port names given the numbers of
// ports (by name), and the names that are not in ports (in_port of such a
// name matches nothing, output to it is skipped, until a later Resolve
// finds it). rs itself is not modified; without names it is returned as
// it is.
func (rs *RuleSet) Resolve(ports map[string]uint32) (*RuleSet, []string) {
	names := rs.PortNames()
	if len(names) == 0 {
		return rs, nil
	}
	var missing []string
	for _, n := range names {
		if _, ok := ports[n]; !ok {
			missing = append(missing, n)
		}
	}
	num := func(name string) uint32 {
		if n, ok := ports[name]; ok {
			return n
		}
		return NoPort
	}
	rules := slices.Clone(rs.Rules)
	for i := range rules {
		r := &rules[i]
		if r.InPortName != "" {
			r.Match.Value.InPort = num(r.InPortName)
		}
		if slices.ContainsFunc(r.Actions, func(a Action) bool { return a.PortName != "" }) {
			r.Actions = slices.Clone(r.Actions)
			for j := range r.Actions {
				if a := &r.Actions[j]; a.PortName != "" {
					a.Port = num(a.PortName)
				}
			}
		}
	}
	out := NewRuleSet(rs.Name, rules)
	out.groups = make([]*Group, len(rs.groups))
	for i, g := range rs.groups {
		ng := *g
		ng.Buckets = slices.Clone(g.Buckets)
		for j := range ng.Buckets {
			b := &ng.Buckets[j]
			if b.WatchPortName != "" {
				b.WatchPort = num(b.WatchPortName)
			}
			b.Actions = slices.Clone(b.Actions)
			for k := range b.Actions {
				if a := &b.Actions[k]; a.PortName != "" {
					a.Port = num(a.PortName)
				}
			}
		}
		out.groups[i] = &ng
	}
	return out, missing
}
