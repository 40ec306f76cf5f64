// Package dpopen opens the datapath that upcalld drives: a kernel
// datapath (system@NAME, package genl), created or adopted, or a
// userspace one (netdev@NAME, package userdp) hosted in the process and
// served on its control socket for dpctl. It is the only part of upcalld
// that knows which datapath it drives; everything else sees
// odp.Datapath.
package dpopen

import (
	"fmt"
	"strings"
)

// Spec is a parsed "TYPE@NAME".
type Spec struct {
	Type string // "system" or "netdev"
	Name string
}

// String returns "TYPE@NAME".
func (s Spec) String() string { return s.Type + "@" + s.Name }

// ParseSpec parses "system@NAME" or "netdev@NAME" (a bare NAME means
// system@NAME, as in ovs-dpctl).
func ParseSpec(s string) (Spec, error) {
	typ, name, ok := strings.Cut(s, "@")
	if !ok {
		typ, name = "system", s
	}
	if typ != "system" && typ != "netdev" {
		return Spec{}, fmt.Errorf("datapath %q: unknown type %q (want system or netdev)", s, typ)
	}
	if name == "" || len(name) > 15 || strings.ContainsAny(name, "/ \t\n\x00@") {
		return Spec{}, fmt.Errorf("datapath %q: invalid name (1 to 15 characters, no '/', '@' or blanks)", s)
	}
	return Spec{Type: typ, Name: name}, nil
}
