// Package actsupport is the table (cases.txt) of what each datapath
// answers to every action type of package odp: for each, a sample flow (a
// masked key and its actions, in dpctl's text) and the answer of Linux 6.1's
// openvswitch module and of the userspace datapath (package userdp) when
// the flow is put. userdp's unit tests check its column, the VM's kernel
// tests (crosscheck) the kernel's, so that a flow the kernel accepts and
// userdp refuses is always one of the documented refusals (Reason).
package actsupport

import (
	_ "embed"
	"errors"
	"fmt"
	"strings"
	"syscall"

	"github.com/ovsdp/ovsdp/odp"
)

// Answer is what a datapath says to a flow put.
type Answer int

// The answers.
const (
	// Accepted: the flow is installed.
	Accepted Answer = iota
	// Invalid: EINVAL, as the kernel's validation gives it.
	Invalid
	// Unsupported: odp.ErrUnsupported (userdp only): the action has no
	// meaning or no implementation here, documented in Reason.
	Unsupported
)

// String names the answer.
func (a Answer) String() string {
	switch a {
	case Accepted:
		return "accepted"
	case Invalid:
		return "EINVAL"
	case Unsupported:
		return "unsupported"
	}
	return "answer?"
}

// Case is one sample flow and the answers to it.
type Case struct {
	// Type is the action type the case is about.
	Type odp.ActionType
	// Key and Actions are the flow, as dpctl add-flow takes them.
	Key, Actions string
	// Kernel and Userdp are the answers of Linux 6.1 and userdp.
	Kernel, Userdp Answer
	// Reason says why the two answers differ, when they do.
	Reason string
}

// The keys of the cases, by their names in cases.txt.
var keys = map[string]string{
	"ip":   "in_port(1),eth(),eth_type(0x0800),ipv4(proto=17,frag=no),udp()",
	"l3":   "in_port(1),eth_type(0x0800),ipv4(proto=17,frag=no),udp()",
	"mpls": "in_port(1),eth(),eth_type(0x8847),mpls(label=5,tc=0,ttl=64,bos=1)",
	"nsh":  "in_port(1),eth(),eth_type(0x894f),nsh(np=1)",
}

//go:embed cases.txt
var casesText string

// Cases returns the cases of cases.txt: at least one for every action
// type odp knows (the tests check that), or an error naming the line
// that is malformed.
func Cases() ([]Case, error) {
	types := map[string]odp.ActionType{}
	for t := odp.ActionType(0); t < 64; t++ {
		types[t.String()] = t
	}
	answers := map[string]Answer{"accepted": Accepted, "EINVAL": Invalid, "unsupported": Unsupported}
	var cs []Case
	for i, line := range strings.Split(casesText, "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Split(line, " | ")
		if len(f) != 5 && len(f) != 6 {
			return nil, fmt.Errorf("actsupport: cases.txt:%d: %d fields, want 5 or 6", i+1, len(f))
		}
		c := Case{Actions: f[2]}
		var ok [4]bool
		c.Type, ok[0] = types[f[0]]
		c.Key, ok[1] = keys[f[1]]
		c.Kernel, ok[2] = answers[f[3]]
		c.Userdp, ok[3] = answers[f[4]]
		for j, o := range ok {
			if !o {
				return nil, fmt.Errorf("actsupport: cases.txt:%d: unknown %s %q", i+1, [...]string{"action type", "key", "kernel answer", "userdp answer"}[j], f[[...]int{0, 1, 3, 4}[j]])
			}
		}
		if len(f) == 6 {
			c.Reason = f[5]
		}
		cs = append(cs, c)
	}
	return cs, nil
}

// Flow parses the case's key, mask and actions.
func (c *Case) Flow() (*odp.Flow, error) {
	key, mask, err := odp.ParseMaskedKey(c.Key)
	if err != nil {
		return nil, fmt.Errorf("actsupport: key %s: %w", c.Key, err)
	}
	acts, err := odp.ParseActions(c.Actions)
	if err != nil {
		return nil, fmt.Errorf("actsupport: actions %s: %w", c.Actions, err)
	}
	return &odp.Flow{Key: key, Mask: mask, Actions: acts}, nil
}

// AnswerOf is the answer a put's error gives; ok is false for an error
// that is none of them.
func AnswerOf(err error) (a Answer, ok bool) {
	switch {
	case err == nil:
		return Accepted, true
	case errors.Is(err, syscall.EINVAL):
		return Invalid, true
	case errors.Is(err, odp.ErrUnsupported):
		return Unsupported, true
	}
	return 0, false
}
