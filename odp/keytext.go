package odp

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
)

// FormatKey formats a flow key, with its mask when mask is not empty, in
// the ovs-dpctl text syntax, as Open vSwitch's odp_flow_format does.
//
// With a mask, an attribute the mask does not mention, or whose mask is
// all zeros, is wildcarded: it is left out unless verbose (nested
// attributes — encap, tunnel, nsh — are always shown; a wildcarded eth()
// is shown as "eth()" unless a packet_type precedes it). Within an
// attribute, fields whose mask is zero are left out unless verbose, and
// partial masks are shown as "/MASK".
//
// ovs-dpctl's exact-match form (odp_flow_key_format, "dpctl parse-keys")
// is FormatKey(key, nil, true); dump-flows without --more is
// FormatKey(key, mask, false).
func FormatKey(key, mask FlowKey, verbose bool) string {
	var f textBuf
	formatKey(&f, key, mask, verbose)
	return f.String()
}

// formatKey writes key (and mask) to f, following odp_flow_format.
func formatKey(f *textBuf, key, mask FlowKey, verbose bool) {
	hasMask := len(mask) > 0
	first := true
	hasEthtype, hasPacketType := false, false
	for _, a := range key {
		t := a.KeyType()
		var ma KeyAttr
		if hasMask {
			ma = mask.Find(t)
		}
		switch t {
		case KeyEthertype:
			hasEthtype = true
		case KeyPacketType:
			hasPacketType = true
		}
		nested := t == KeyEncap || t == KeyTunnel || t == KeyNSH
		wildcard := hasMask && (ma == nil || maskIsConstBuf(ma, 0, f.scratch[:0]))
		switch {
		case verbose || !wildcard || nested:
			if wildcard && ma == nil {
				ma = zeroMask(a)
			}
			if !first {
				f.WriteByte(',')
			}
			first = false
			formatKeyAttr(f, a, ma, verbose)
		case t == KeyEthernet && !hasPacketType:
			if !first {
				f.WriteByte(',')
			}
			first = false
			f.WriteString("eth()")
		case t == KeyPacketType && wildcard:
			hasPacketType = false
		}
	}
	if !hasEthtype && hasMask {
		if m, ok := mask.Find(KeyEthertype).(Ethertype); ok {
			f.WriteString(",eth_type(0/0x" + hex04(uint16(m)) + ")")
		}
	}
}

// formatKeyAttr writes one attribute as "name(...)". mask is nil for an
// exact match, else a KeyAttr of the same type.
func formatKeyAttr(f *textBuf, a, mask KeyAttr, verbose bool) {
	f.WriteString(a.KeyType().String())
	f.WriteByte('(')
	if mask != nil && reflect.TypeOf(mask) != reflect.TypeOf(a) {
		mask = nil
	}
	a.format(f, mask, verbose)
	f.WriteByte(')')
}

// zeroMask returns an all-wildcard mask for a (Open vSwitch's
// generate_all_wildcard_mask): the zero value of a's type, with the same
// shape for variable-length and nested attributes.
func zeroMask(a KeyAttr) KeyAttr {
	switch v := a.(type) {
	case Encap:
		m := make(FlowKey, len(v.Key))
		for i, c := range v.Key {
			m[i] = zeroMask(c)
		}
		return Encap{Key: m}
	case MPLS:
		return make(MPLS, len(v))
	case UnknownKey:
		return UnknownKey{Type: v.Type, Data: make([]byte, len(v.Data))}
	}
	return reflect.Zero(reflect.TypeOf(a)).Interface().(KeyAttr)
}

// maskIsConst reports whether every significant bit of mask m is c (0 or
// 0xff), as Open vSwitch's odp_mask_is_constant__: padding and unused
// bits do not count; encap, nested and unknown attributes are never
// constant.
func maskIsConst(m KeyAttr, c byte) bool { return maskIsConstBuf(m, c, nil) }

// maskIsConstBuf is maskIsConst encoding m's payload into buf (a
// formatter's scratch space, so that formatting a key does not allocate
// per attribute).
func maskIsConstBuf(m KeyAttr, c byte, buf []byte) bool {
	switch v := m.(type) {
	case Encap, Tunnel, NSH, UnknownKey:
		return false
	case TCPFlags:
		return uint16(v)&0x0fff == uint16(c)<<8&0x0f00|uint16(c)
	case IPv6:
		return v.Label&0xfffff == uint32(c)*0x1010101&0xfffff &&
			v.Proto == c && v.TClass == c && v.HLimit == c && v.Frag == c &&
			allByte(v.Src[:], c) && allByte(v.Dst[:], c)
	}
	p, err := m.appendPayload(buf)
	if err != nil {
		return false
	}
	switch m.(type) {
	case ARP:
		p = p[:22]
	case CTTupleIPv4:
		p = p[:13]
	case CTTupleIPv6:
		p = p[:37]
	}
	return allByte(p, c)
}

func allByte(b []byte, c byte) bool {
	for _, x := range b {
		if x != c {
			return false
		}
	}
	return true
}

// keyAttrIsExact reports whether mask matches every significant bit of
// its attribute (Open vSwitch's odp_mask_is_exact): a set(...) action
// can then be used instead of set_masked. Padding and unused bits (the
// top 4 bits of tcp_flags, the top 12 of the IPv6 label) do not count. It
// is false for encap, tunnel, nsh and unknown attributes, whose masks are
// not a flat byte string; set(tunnel(...)) is always unmasked.
func keyAttrIsExact(mask KeyAttr) bool { return mask != nil && maskIsConst(mask, 0xff) }

// keyPayload returns the wire payload of a key attribute (no header).
func keyPayload(a KeyAttr) ([]byte, error) { return a.appendPayload(nil) }

// appendMaskedPayload appends the payload of key followed by the payload
// of mask, as OVS_ACTION_ATTR_SET_MASKED carries them. The kernel
// requires both to have the same length; a mismatch is an error.
func appendMaskedPayload(b []byte, key, mask KeyAttr) ([]byte, error) {
	if key.KeyType() != mask.KeyType() {
		return b, fmt.Errorf("mask type %s differs from key type %s", mask.KeyType(), key.KeyType())
	}
	start := len(b)
	b, err := key.appendPayload(b)
	if err != nil {
		return b, err
	}
	n := len(b) - start
	b, err = mask.appendPayload(b)
	if err != nil {
		return b, err
	}
	if m := len(b) - start - n; m != n {
		return b, fmt.Errorf("%s mask is %d bytes, key is %d", key.KeyType(), m, n)
	}
	return b, nil
}

// ParseKey parses an exact-match flow key ("in_port(1),eth(...),...") as
// Open vSwitch's odp_flow_from_string does without a mask. Attributes may
// be separated by commas or blanks; a leading "ufid:UUID" is skipped.
// Masks in the text ("/0xff") are an error.
func ParseKey(s string) (FlowKey, error) {
	sc := newScanner(s)
	sc.noMask = true
	k, _, err := parseTopKey(sc)
	return k, err
}

// ParseMaskedKey parses a flow key with masks ("ipv4(src=10.0.0.0/255.0.0.0)")
// and returns the key and the mask, attribute for attribute. A field given
// without a mask matches exactly; a field not given is wildcarded (its
// mask is zero); an attribute not given is absent from both.
func ParseMaskedKey(s string) (key, mask FlowKey, err error) {
	return parseTopKey(newScanner(s))
}

// ParseMaskedKeyWith is ParseMaskedKey that also accepts port names in
// in_port(NAME), resolved by portNumber (ovs-dpctl does this for flows
// given on its command line).
func ParseMaskedKeyWith(s string, portNumber func(string) (uint32, bool)) (key, mask FlowKey, err error) {
	sc := newScanner(s)
	sc.portNumber = portNumber
	return parseTopKey(sc)
}

// parseTopKey parses a whole key and checks its encoded size.
func parseTopKey(sc *scanner) (key, mask FlowKey, err error) {
	key, mask, err = parseKeyList(sc)
	if err != nil {
		return nil, nil, err
	}
	if !sc.eof() {
		return nil, nil, sc.errorf("unexpected %q after the key", sc.peek())
	}
	for _, k := range []FlowKey{key, mask} {
		b, err := appendKey(nil, k)
		if err != nil {
			return nil, nil, &SyntaxError{Input: sc.s, Offset: len(sc.s), Msg: err.Error()}
		}
		if len(b) > maxAttrLen {
			return nil, nil, &SyntaxError{Input: sc.s, Offset: len(sc.s),
				Msg: fmt.Sprintf("key of %d bytes exceeds the netlink attribute limit of %d", len(b), maxAttrLen)}
		}
	}
	return key, mask, nil
}

// keyDelims are the separators Open vSwitch skips between attributes.
const keyDelims = ", \t\r\n"

// parseKeyList parses attributes up to the end of the input or an
// unbalanced ')' (not consumed). At the top level a "ufid:UUID" may
// precede any attribute and is skipped.
func parseKeyList(sc *scanner) (key, mask FlowKey, err error) {
	key, mask = FlowKey{}, FlowKey{}
	for {
		for !sc.eof() && strings.IndexByte(keyDelims, sc.peek()) >= 0 {
			sc.pos++
		}
		if sc.eof() || sc.peek() == ')' {
			return key, mask, nil
		}
		if sc.depth == 0 && strings.HasPrefix(sc.rest(), "ufid:") {
			start := sc.pos
			end := min(len(sc.s), sc.pos+5+36)
			if _, err := ParseUFID(sc.s[sc.pos:end]); err != nil {
				return nil, nil, sc.errorAt(start, "bad UFID: want ufid:xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx")
			}
			sc.pos = end
			sc.accept(" ")
			continue
		}
		k, m, err := parseKeyAttr(sc)
		if err != nil {
			return nil, nil, err
		}
		key = append(key, k)
		mask = append(mask, m)
	}
}

// parseKeyAttr parses one "name(...)" key attribute with optional masks.
// The mask is exact (all ones) for every field given without "/mask" and
// zero for the fields not given.
func parseKeyAttr(sc *scanner) (key, mask KeyAttr, err error) {
	start := sc.pos
	name := sc.ident()
	p, ok := keyParsers[name]
	if !ok {
		t, generic := genericKeyName(name)
		if !generic {
			if name == "" {
				return nil, nil, sc.errorAt(start, "expected a key attribute name")
			}
			return nil, nil, sc.errorAt(start, "unknown key attribute %q", name)
		}
		p = func(sc *scanner) (KeyAttr, KeyAttr, error) { return parseGenericKey(sc, t) }
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

// genericKeyName recognizes "keyN" and the names of attribute types that
// are only ever shown as hex ("unspec", "tunnel_info").
func genericKeyName(name string) (KeyType, bool) {
	switch name {
	case "unspec":
		return KeyUnspec, true
	case "tunnel_info":
		return KeyTunnelInfo, true
	}
	if d, ok := strings.CutPrefix(name, "key"); ok && d != "" {
		n, err := strconv.ParseUint(d, 10, 14)
		if err == nil {
			return KeyType(n), true
		}
	}
	return 0, false
}

// parseGenericKey parses "HEX[/HEX]" (the keyN(...) form) and decodes the
// bytes as attribute type t, so that key32(0100) becomes
// ipv6_exthdrs(0x1) and types we do not know stay UnknownKey.
func parseGenericKey(sc *scanner, t KeyType) (KeyAttr, KeyAttr, error) {
	start := sc.pos
	data, err := sc.hexBytes(t.String())
	if err != nil {
		return nil, nil, err
	}
	mdata := make([]byte, len(data))
	for i := range mdata {
		mdata[i] = 0xff
	}
	mstart := sc.pos
	if has, err := sc.maskSep(); err != nil {
		return nil, nil, err
	} else if has {
		mstart = sc.pos
		if mdata, err = sc.hexBytes(t.String() + " mask"); err != nil {
			return nil, nil, err
		}
		if len(mdata) != len(data) {
			return nil, nil, sc.errorAt(mstart, "mask is %d bytes, value is %d", len(mdata), len(data))
		}
	}
	dec := func(b []byte, at int) (KeyAttr, error) {
		ra := rawAttr{Type: uint16(t), Data: b}
		a, err := decodeKeyAttr(&ra, "key", sc.depth)
		if err != nil {
			return nil, sc.errorAt(at, "bad %s payload: %v", t, err)
		}
		return a, nil
	}
	k, err := dec(data, start)
	if err != nil {
		return nil, nil, err
	}
	m, err := dec(mdata, mstart)
	if err != nil {
		return nil, nil, err
	}
	return k, m, nil
}
