package odp

import (
	"encoding/binary"
	"fmt"
)

// nlaHdrLen is the size of a netlink attribute header (struct nlattr).
const nlaHdrLen = 4

// maxAttrLen is the largest payload a netlink attribute can carry: nla_len
// is a 16-bit field that includes the header.
const maxAttrLen = 0xffff - nlaHdrLen

// nlaAlign rounds n up to the netlink attribute alignment (4 bytes).
func nlaAlign(n int) int { return (n + 3) &^ 3 }

// nlaNested is the NLA_F_NESTED flag; nlaTypeMask strips the flag bits.
const (
	nlaNested   = 1 << 15
	nlaTypeMask = 0x3fff
)

// rawAttr is one attribute found by attrWalker: its type (flags stripped),
// payload, and the byte offset of its header within the outermost buffer.
type rawAttr struct {
	Type   uint16
	Data   []byte
	Offset int
	Nested bool
}

// attrWalker iterates over a buffer of netlink attributes without
// allocating. base is the offset of buf within the outermost buffer, so
// that errors can name absolute offsets.
type attrWalker struct {
	buf  []byte
	base int
	pos  int
	err  error
}

func newAttrWalker(buf []byte, base int) attrWalker {
	return attrWalker{buf: buf, base: base}
}

// next returns the next attribute. It returns false at the end of the
// buffer or on a malformed attribute, in which case err reports it.
func (w *attrWalker) next(a *rawAttr) bool {
	if w.err != nil || w.pos >= len(w.buf) {
		return false
	}
	rest := len(w.buf) - w.pos
	off := w.base + w.pos
	if rest < nlaHdrLen {
		w.err = &DecodeError{Offset: off, Err: fmt.Errorf("%d trailing bytes, too short for an attribute header", rest)}
		return false
	}
	l := int(binary.NativeEndian.Uint16(w.buf[w.pos:]))
	t := binary.NativeEndian.Uint16(w.buf[w.pos+2:])
	if l < nlaHdrLen || l > rest {
		w.err = &DecodeError{Offset: off, Attr: fmt.Sprintf("type %d", t&nlaTypeMask),
			Err: fmt.Errorf("attribute length %d out of range [4, %d]", l, rest)}
		return false
	}
	a.Type = t & nlaTypeMask
	a.Nested = t&nlaNested != 0
	a.Data = w.buf[w.pos+nlaHdrLen : w.pos+l : w.pos+l]
	a.Offset = off
	w.pos += nlaAlign(l)
	if w.pos > len(w.buf) {
		// The last attribute may omit its padding.
		w.pos = len(w.buf)
	}
	return true
}

// appendAttr appends one attribute with the given payload.
func appendAttr(b []byte, typ uint16, payload []byte) []byte {
	b = appendAttrHeader(b, typ, len(payload))
	b = append(b, payload...)
	return padAttr(b)
}

// appendAttrHeader appends an attribute header for a payload of n bytes.
func appendAttrHeader(b []byte, typ uint16, n int) []byte {
	return binary.NativeEndian.AppendUint16(binary.NativeEndian.AppendUint16(b, uint16(nlaHdrLen+n)), typ)
}

// padAttr pads b to the attribute alignment.
func padAttr(b []byte) []byte {
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

// beginNested appends the header of a nested attribute whose length is not
// yet known and returns its start, for endNested.
func beginNested(b []byte, typ uint16) ([]byte, int) {
	start := len(b)
	return appendAttrHeader(b, typ, 0), start
}

// endNested fixes the length of the nested attribute started at start. It
// fails when the contents do not fit in a netlink attribute.
func endNested(b []byte, start int) ([]byte, error) {
	n := len(b) - start
	if n > 0xffff {
		return b, fmt.Errorf("nested attribute of %d bytes exceeds the netlink limit of 65535", n)
	}
	binary.NativeEndian.PutUint16(b[start:], uint16(n))
	return b, nil
}

// appendU8, appendU16, appendU32, appendU64 append attributes with a
// native-endian integer payload; appendBE16/32/64 with a big-endian one.
func appendU8(b []byte, typ uint16, v uint8) []byte { return appendAttr(b, typ, []byte{v}) }

func appendU16(b []byte, typ uint16, v uint16) []byte {
	b = appendAttrHeader(b, typ, 2)
	return padAttr(binary.NativeEndian.AppendUint16(b, v))
}

func appendU32(b []byte, typ uint16, v uint32) []byte {
	b = appendAttrHeader(b, typ, 4)
	return binary.NativeEndian.AppendUint32(b, v)
}

func appendU64(b []byte, typ uint16, v uint64) []byte {
	b = appendAttrHeader(b, typ, 8)
	return binary.NativeEndian.AppendUint64(b, v)
}

func appendBE16(b []byte, typ uint16, v uint16) []byte {
	b = appendAttrHeader(b, typ, 2)
	return padAttr(binary.BigEndian.AppendUint16(b, v))
}

func appendBE32(b []byte, typ uint16, v uint32) []byte {
	b = appendAttrHeader(b, typ, 4)
	return binary.BigEndian.AppendUint32(b, v)
}

func appendBE64(b []byte, typ uint16, v uint64) []byte {
	b = appendAttrHeader(b, typ, 8)
	return binary.BigEndian.AppendUint64(b, v)
}

// DecodeError reports a malformed netlink attribute: which attribute (a
// path such as "key.encap.ipv4" or "actions.clone.set"), the byte offset
// of its header in the decoded buffer, and what was wrong.
type DecodeError struct {
	Attr   string
	Offset int
	Err    error
}

// Error implements error.
func (e *DecodeError) Error() string {
	if e.Attr == "" {
		return fmt.Sprintf("odp: decode: offset %d: %v", e.Offset, e.Err)
	}
	return fmt.Sprintf("odp: decode %s at offset %d: %v", e.Attr, e.Offset, e.Err)
}

// Unwrap returns the underlying error.
func (e *DecodeError) Unwrap() error { return e.Err }

// wantLen checks that an attribute payload has exactly n bytes.
func wantLen(a *rawAttr, path string, n int) error {
	if len(a.Data) != n {
		return &DecodeError{Attr: path, Offset: a.Offset, Err: fmt.Errorf("payload is %d bytes, want %d", len(a.Data), n)}
	}
	return nil
}
