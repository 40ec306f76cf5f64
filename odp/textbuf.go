package odp

import (
	"strconv"
	"strings"
)

// textBuf accumulates the text form of keys and actions. Besides the text
// it carries the formatting options that some attributes need: port
// names for in_port and output actions.
type textBuf struct {
	strings.Builder
	// portName, when set, names datapath ports (ovs-dpctl --names).
	portName func(uint32) (string, bool)
	// scratch holds a mask attribute's payload while formatKey checks
	// it (64 bytes hold every fixed-size attribute).
	scratch [64]byte
}

// writePort writes a datapath port number, or its name when names are
// on and the port has one (Open vSwitch's odp_portno_name_format).
func (f *textBuf) writePort(n uint32) {
	if f.portName != nil {
		if name, ok := f.portName(n); ok {
			f.WriteString(name)
			return
		}
	}
	f.WriteString(strconv.FormatUint(uint64(n), 10))
}

// FormatOptions select optional parts of the text form.
type FormatOptions struct {
	// Verbose prints attributes and fields that the mask wildcards too
	// (ovs-dpctl -m).
	Verbose bool
	// PortName, when not nil, returns the name of a datapath port; keys
	// and actions then show names instead of port numbers where it has
	// one (ovs-dpctl --names).
	PortName func(uint32) (string, bool)
}

// FormatKeyWith is FormatKey with options.
func FormatKeyWith(key, mask FlowKey, opts FormatOptions) string {
	f := textBuf{portName: opts.PortName}
	f.Grow(32 * len(key)) // about a key's text, without regrowing
	formatKey(&f, key, mask, opts.Verbose)
	return f.String()
}

// FormatActionsWith is FormatActions with options.
func FormatActionsWith(as Actions, opts FormatOptions) string {
	f := textBuf{portName: opts.PortName}
	formatActions(&f, as)
	return f.String()
}
