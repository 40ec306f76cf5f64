// Package dpopen opens the datapath that upcalld drives: a kernel
// datapath (system@NAME, package genl), created or adopted, or a
// userspace one (netdev@NAME, package userdp) hosted in the process and
// served on its control socket for dpctl. It is the only part of upcalld
// that knows which datapath it drives; everything else sees
// odp.Datapath.
package dpopen

import (
	"errors"
	"fmt"

	"github.com/ovsdp/ovsdp/internal/dpname"
)

// Spec is a parsed "TYPE@NAME".
type Spec struct {
	Type string // "system" or "netdev"
	Name string
}

// String returns "TYPE@NAME".
func (s Spec) String() string { return s.Type + "@" + s.Name }

// ParseSpec parses "system@NAME" or "netdev@NAME" (a bare NAME means
// system@NAME, as in ovs-dpctl), with dpname.Parse's rules.
func ParseSpec(s string) (Spec, error) {
	typ, name, err := dpname.Parse(s)
	var e *dpname.Error
	switch {
	case err == nil:
		return Spec{Type: typ, Name: name}, nil
	case errors.As(err, &e) && e.Problem == dpname.UnknownType:
		return Spec{}, fmt.Errorf("datapath %q: unknown type %q (want system or netdev)", s, e.Type)
	default:
		return Spec{}, fmt.Errorf("datapath %q: invalid name (1 to %d characters, no '/', '@', blanks or NUL)", s, dpname.MaxLen)
	}
}
