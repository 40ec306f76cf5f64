// Package dpname parses the datapath names that dpctl and upcalld take:
// "TYPE@NAME", or a bare NAME meaning system@NAME, as in ovs-dpctl. It is
// the one place that says which names are valid.
package dpname

import (
	"fmt"
	"strings"
)

// The datapath types.
const (
	System = "system" // the kernel's datapath (package genl)
	Netdev = "netdev" // the userspace datapath (package userdp)
)

// Types lists the datapath types, in the order dpctl dump-dps shows them.
var Types = []string{System, Netdev}

// MaxLen is the longest datapath name in bytes: the kernel names the
// datapath's local port after it, and an interface name has at most
// IFNAMSIZ-1 bytes.
const MaxLen = 15

// forbidden are the bytes a name cannot hold: '/' (it names files, such
// as the userspace datapath's control socket), '@' (it separates the
// type), blanks and NUL.
const forbidden = "/@ \t\n\x00"

// Problem says what is wrong with a refused name.
type Problem uint8

// Problems of a refused name.
const (
	UnknownType Problem = iota + 1 // TYPE is neither system nor netdev
	EmptyName                      // NAME is empty
	InvalidName                    // NAME is too long or holds a forbidden byte
)

// Error is a refused "TYPE@NAME".
type Error struct {
	Input   string  // the string given to Parse
	Type    string  // its TYPE part
	Problem Problem // what is wrong
}

// Error says what is wrong with e.Input, in dpctl's words.
func (e *Error) Error() string {
	switch e.Problem {
	case UnknownType:
		return fmt.Sprintf("%q: unknown datapath type %q (want system or netdev)", e.Input, e.Type)
	case EmptyName:
		return fmt.Sprintf("%q: empty datapath name", e.Input)
	default:
		return fmt.Sprintf("%q: invalid datapath name (at most %d characters, no '/', '@', blanks or NUL)", e.Input, MaxLen)
	}
}

// Parse splits s, "TYPE@NAME" or a bare NAME (system@NAME), into its
// type and name. It refuses, with an *Error, a type other than system or
// netdev (checked first), an empty name, and a name longer than MaxLen
// bytes or holding '/', '@', a blank (space, tab, newline) or NUL.
func Parse(s string) (typ, name string, err error) {
	typ, name, ok := strings.Cut(s, "@")
	if !ok {
		typ, name = System, s
	}
	switch {
	case typ != System && typ != Netdev:
		return "", "", &Error{Input: s, Type: typ, Problem: UnknownType}
	case name == "":
		return "", "", &Error{Input: s, Type: typ, Problem: EmptyName}
	case !ValidName(name):
		return "", "", &Error{Input: s, Type: typ, Problem: InvalidName}
	}
	return typ, name, nil
}

// ValidName reports whether name can name a datapath: 1 to MaxLen bytes,
// without '/', '@', a blank (space, tab, newline) or NUL.
func ValidName(name string) bool {
	return name != "" && len(name) <= MaxLen && !strings.ContainsAny(name, forbidden)
}
