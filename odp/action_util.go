package odp

import (
	"encoding/binary"
	"fmt"
	"strconv"
)

// Helpers for the action codec and the action text syntax. They only add
// to scan.go and nlattr.go, whose scanners (addresses, hex, C integers)
// keys and actions share.

// actUint parses an unsigned integer as C's strtoul with base 0 would
// (decimal, 0x hex, leading-0 octal) that fits in bits bits: scanInt, as
// Open vSwitch's "%i" reads the numbers of its actions. what names the
// value in errors.
func (sc *scanner) actUint(bits int, what string) (uint64, error) {
	return sc.scanInt(bits, 0, what)
}

// actUintBase parses an unsigned integer in the given base ("%x" when
// 16, which accepts an optional 0x prefix; "%u" when 10).
func (sc *scanner) actUintBase(bits, base int, what string) (uint64, error) {
	return sc.scanInt(bits, base, what)
}

// actExpect consumes lit or fails saying what it was parsing.
func (sc *scanner) actExpect(lit, ctx string) error {
	if sc.accept(lit) {
		return nil
	}
	return sc.errorf("expected %q in %s", lit, ctx)
}

// actDecodeErr builds a DecodeError for attribute a.
func actDecodeErr(a *rawAttr, path string, format string, args ...any) error {
	return &DecodeError{Attr: path, Offset: a.Offset, Err: fmt.Errorf(format, args...)}
}

// actNested walks the attributes nested in a, calling fn for each with its
// path. Duplicate attribute types are rejected, as the kernel does.
func actNested(a *rawAttr, path string, names map[uint16]string, fn func(n *rawAttr, p string) error) error {
	w := newAttrWalker(a.Data, a.Offset+nlaHdrLen)
	var seen uint64
	for n := range w.All() {
		name, ok := names[n.Type]
		if !ok {
			name = "attr" + strconv.Itoa(int(n.Type))
		}
		p := path + "." + name
		if n.Type < 64 {
			if seen&(1<<n.Type) != 0 {
				return actDecodeErr(n, p, "duplicate attribute")
			}
			seen |= 1 << n.Type
		}
		if err := fn(n, p); err != nil {
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
