package odp

import "strings"

// FormatKey formats a flow key, with its mask when mask is not nil, in
// the ovs-dpctl text syntax (Open vSwitch's odp_flow_format). With
// verbose false, attributes and fields that the mask wildcards entirely
// are left out, as ovs-dpctl dump-flows does without --more.
func FormatKey(key, mask FlowKey, verbose bool) string {
	var f strings.Builder
	formatKey(&f, key, mask, verbose)
	return f.String()
}

// formatKey writes key (and mask) to f. TODO(keys): Open vSwitch's
// special cases in odp_flow_format (wildcarded attributes omitted when not
// verbose, eth_type and packet_type rules, ...).
func formatKey(f *strings.Builder, key, mask FlowKey, verbose bool) {
	first := true
	for _, a := range key {
		var m KeyAttr
		if mask != nil {
			m = mask.Find(a.KeyType())
		}
		if !first {
			f.WriteByte(',')
		}
		first = false
		formatKeyAttr(f, a, m, verbose)
	}
}

// formatKeyAttr writes one attribute as "name(...)".
func formatKeyAttr(f *strings.Builder, a, mask KeyAttr, verbose bool) {
	f.WriteString(a.KeyType().String())
	f.WriteByte('(')
	a.format(f, mask, verbose)
	f.WriteByte(')')
}

// ParseKey parses an exact-match flow key ("in_port(1),eth(...),...").
// Masks in the text ("/0xff") are an error.
func ParseKey(s string) (FlowKey, error) {
	k, _, err := parseKey(newScanner(s), false)
	return k, err
}

// ParseMaskedKey parses a flow key with masks ("ipv4(src=10.0.0.0/255.0.0.0)")
// and returns the key and the mask. An attribute given without a mask
// matches exactly; an attribute not given is wildcarded.
func ParseMaskedKey(s string) (key, mask FlowKey, err error) {
	return parseKey(newScanner(s), true)
}

// parseKey parses a comma-separated list of key attributes up to the end
// of the input or an unbalanced ')'. TODO(keys): ufid:, reject masks when
// !masked, Open vSwitch's implicit attributes.
func parseKey(sc *scanner, masked bool) (key, mask FlowKey, err error) {
	for {
		sc.skipSpace()
		if sc.eof() || sc.peek() == ')' {
			return key, mask, nil
		}
		k, m, err := parseKeyAttr(sc)
		if err != nil {
			return nil, nil, err
		}
		key = append(key, k)
		mask = append(mask, m)
		sc.skipSpace()
		if !sc.accept(",") {
			if sc.eof() || sc.peek() == ')' {
				return key, mask, nil
			}
			return nil, nil, sc.errorf("expected ',' between key attributes")
		}
	}
}

// parseKeyAttr parses one "name(...)" key attribute with optional masks.
func parseKeyAttr(sc *scanner) (key, mask KeyAttr, err error) {
	start := sc.pos
	name := sc.ident()
	p, ok := keyParsers[name]
	if !ok {
		return nil, nil, sc.errorAt(start, "unknown key attribute %q", name)
	}
	if err := sc.expect("("); err != nil {
		return nil, nil, err
	}
	key, mask, err = p(sc)
	if err != nil {
		return nil, nil, err
	}
	if err := sc.expect(")"); err != nil {
		return nil, nil, err
	}
	return key, mask, nil
}
