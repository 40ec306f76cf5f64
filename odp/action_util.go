package odp

import (
	"encoding/binary"
	"fmt"
	"strconv"
)

// Helpers for the action codec and the action text syntax. They only add
// to scan.go and nlattr.go, whose scanners (addresses, hex, C integers)
// keys and actions share.

// actNumber consumes the longest run of characters that can form a C
// integer literal (digits, hex letters, 'x'/'X') and returns it with its
// start offset. It does not consume a sign.
func (sc *scanner) actNumberToken() (string, int) {
	start := sc.pos
	for sc.pos < len(sc.s) {
		c := sc.s[sc.pos]
		if c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' || c == 'x' || c == 'X' {
			sc.pos++
			continue
		}
		break
	}
	return sc.s[start:sc.pos], start
}

// actUint parses an unsigned integer as C's strtoul with base 0 would
// (decimal, 0x hex, leading-0 octal) that fits in bits bits. what names
// the value in errors.
func (sc *scanner) actUint(bits int, what string) (uint64, error) {
	tok, start := sc.actNumberToken()
	if tok == "" {
		return 0, sc.errorAt(start, "expected a number for %s", what)
	}
	v, err := actParseUint(tok, bits)
	if err != nil {
		return 0, sc.errorAt(start, "bad %s %q: %v", what, tok, err)
	}
	return v, nil
}

// actUintBase parses an unsigned integer in the given base (16 accepts an
// optional 0x prefix; 10 is plain decimal).
func (sc *scanner) actUintBase(bits, base int, what string) (uint64, error) {
	tok, start := sc.actNumberToken()
	t := tok
	if base == 16 && len(t) > 2 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X') {
		t = t[2:]
	}
	if t == "" {
		return 0, sc.errorAt(start, "expected a number for %s", what)
	}
	v, err := strconv.ParseUint(t, base, bits)
	if err != nil {
		return 0, sc.errorAt(start, "bad %s %q: want a %d-bit base-%d number", what, tok, bits, base)
	}
	return v, nil
}

// actParseUint parses a C integer literal (base 0 of strtoul, without
// Go's 0b/0o/underscore extensions).
func actParseUint(tok string, bits int) (uint64, error) {
	base := 10
	t := tok
	switch {
	case len(t) > 2 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X'):
		base, t = 16, t[2:]
	case len(t) > 1 && t[0] == '0':
		base, t = 8, t[1:]
	}
	v, err := strconv.ParseUint(t, base, bits)
	if err != nil {
		if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
			return 0, fmt.Errorf("out of range for %d bits", bits)
		}
		return 0, fmt.Errorf("not a number")
	}
	return v, nil
}

// actExpect consumes lit or fails saying what it was parsing.
func (sc *scanner) actExpect(lit, ctx string) error {
	if sc.accept(lit) {
		return nil
	}
	return sc.errorf("expected %q in %s", lit, ctx)
}

// actWord consumes a run of characters other than the delimiters in stop.
func (sc *scanner) actWord(stop string) (string, int) {
	start := sc.pos
	return sc.token(stop), start
}

// actDecodeErr builds a DecodeError for attribute a.
func actDecodeErr(a *rawAttr, path string, format string, args ...any) error {
	return &DecodeError{Attr: path, Offset: a.Offset, Err: fmt.Errorf(format, args...)}
}

// actNested walks the attributes nested in a, calling fn for each with its
// path. Duplicate attribute types are rejected, as the kernel does.
func actNested(a *rawAttr, path string, names map[uint16]string, fn func(n *rawAttr, p string) error) error {
	w := newAttrWalker(a.Data, a.Offset+nlaHdrLen)
	var n rawAttr
	var seen uint64
	for w.next(&n) {
		name, ok := names[n.Type]
		if !ok {
			name = "attr" + strconv.Itoa(int(n.Type))
		}
		p := path + "." + name
		if n.Type < 64 {
			if seen&(1<<n.Type) != 0 {
				return actDecodeErr(&n, p, "duplicate attribute")
			}
			seen |= 1 << n.Type
		}
		if err := fn(&n, p); err != nil {
			return err
		}
	}
	return w.listErr(path)
}

// actU32 decodes a 4-byte native-endian payload.
func actU32(a *rawAttr, path string) (uint32, error) {
	if err := wantLen(a, path, 4); err != nil {
		return 0, err
	}
	return binary.NativeEndian.Uint32(a.Data), nil
}

// actU16 decodes a 2-byte native-endian payload.
func actU16(a *rawAttr, path string) (uint16, error) {
	if err := wantLen(a, path, 2); err != nil {
		return 0, err
	}
	return binary.NativeEndian.Uint16(a.Data), nil
}

// actFlag checks that a flag attribute has no payload.
func actFlag(a *rawAttr, path string) error { return wantLen(a, path, 0) }

// actAppendNestedActions appends a nested attribute holding an action list.
func actAppendNestedActions(b []byte, typ uint16, as Actions) ([]byte, error) {
	b, start := beginNested(b, typ)
	b, err := appendActions(b, as)
	if err != nil {
		return b, err
	}
	return endNested(b, start)
}

// actDecodeNestedActions decodes the action list nested in a.
func actDecodeNestedActions(a *rawAttr, path string, depth int) (Actions, error) {
	return decodeActions(a.Data, a.Offset+nlaHdrLen, path, depth+1)
}

// actEncodedLen is the size of one action's attribute, header and padding
// included, or an error if it cannot be encoded.
func actEncodedLen(a Action) (int, error) {
	b, err := appendAction(nil, a)
	return len(b), err
}

// cAltHex formats v as C's printf "%#x": "0x..." but plain "0" for zero.
func cAltHex(v uint64) string {
	if v == 0 {
		return "0"
	}
	return "0x" + strconv.FormatUint(v, 16)
}
