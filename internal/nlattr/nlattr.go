// Package nlattr walks netlink attributes (struct nlattr) without
// allocating. It is the one attribute walker of the module: odp's
// attribute codec and its kernel-rule key validation, and genl's message
// decoders, all iterate with a Walker.
//
// A Walker can be used two ways. Strictly, as a decoder does: iterate
// with All (or Next), then Err tells whether the buffer ended
// cleanly or where its framing was malformed (the last attribute may omit
// its padding). Or as the kernel's nla_for_each_attr does: iterate, then
// look at Rem, the bytes the loop did not consume, which is negative when
// the last attribute lacks its padding and positive when the walk stopped
// at an attribute that does not fit.
package nlattr

import (
	"encoding/binary"
	"fmt"
	"iter"
	"strconv"
)

// HdrLen is the size of an attribute header (struct nlattr).
const HdrLen = 4

// MaxPayload is the largest payload an attribute can carry: nla_len is a
// 16-bit field that counts the header.
const MaxPayload = 0xffff - HdrLen

// FlagNested is NLA_F_NESTED; TypeMask strips NLA_F_NESTED and
// NLA_F_NET_BYTEORDER from nla_type.
const (
	FlagNested = 1 << 15
	TypeMask   = 0x3fff
)

// Align rounds n up to the attribute alignment (NLA_ALIGNTO, 4 bytes).
func Align(n int) int { return (n + 3) &^ 3 }

// Attr is one attribute found by a Walker.
type Attr struct {
	// Type is nla_type with the flag bits stripped.
	Type uint16
	// Nested reports whether NLA_F_NESTED was set.
	Nested bool
	// Data is the payload (capacity limited to it): it points into the
	// walked buffer.
	Data []byte
	// Offset is the byte offset of the attribute's header within the
	// outermost buffer (the walk's base plus its position).
	Offset int
}

// Walker iterates over a buffer of attributes. The zero value walks an
// empty buffer; use NewWalker.
type Walker struct {
	buf  []byte
	base int
	pos  int
	bad  bool
	// What was wrong when bad: the header's offset, its type (when the
	// header was complete), its nla_len and the bytes left.
	badType       int
	badLen, avail int
}

// NewWalker returns a Walker over buf, which begins at byte offset base of
// the outermost buffer, so that offsets (Attr.Offset, errors) are
// absolute.
func NewWalker(buf []byte, base int) Walker { return Walker{buf: buf, base: base} }

// All iterates over the attributes from the walk's position on, in
// order: for a := range w.All() { ... }. It ends at the end of the buffer
// and at the first attribute whose framing is malformed (a header cut
// short, nla_len below 4 or past the end of the buffer); Err then reports
// it. Leaving the loop early leaves the walk after the attribute last
// yielded. The loop compiles to about what a hand-written one does, which
// matters on the upcall path.
func (w *Walker) All() iter.Seq[*Attr] {
	return func(yield func(*Attr) bool) {
		if w.bad {
			return
		}
		// Work on locals, stored back only when the loop ends.
		buf, base, p := w.buf, w.base, w.pos
		var a Attr
		for p+HdrLen <= len(buf) {
			h := buf[p : p+HdrLen : p+HdrLen]
			l := int(binary.NativeEndian.Uint16(h))
			if l < HdrLen || l > len(buf)-p {
				break
			}
			t := binary.NativeEndian.Uint16(h[2:])
			a.Type, a.Nested = t&TypeMask, t&FlagNested != 0
			a.Data, a.Offset = buf[p+HdrLen:p+l:p+l], base+p
			p += Align(l)
			if !yield(&a) {
				w.pos = p
				return
			}
		}
		w.pos = p
		w.stop()
	}
}

// Next stores the next attribute in a and reports whether there was
// one: All one step at a time, for the callers that pull.
func (w *Walker) Next(a *Attr) bool {
	for x := range w.All() {
		*a = *x
		return true
	}
	return false
}

// stop ends the walk at w.pos: cleanly at (or past) the end of the
// buffer, or recording what is malformed there.
func (w *Walker) stop() {
	rest := len(w.buf) - w.pos
	if w.bad || rest <= 0 {
		return
	}
	w.bad, w.avail, w.badType = true, rest, -1
	if rest >= HdrLen {
		w.badType = int(binary.NativeEndian.Uint16(w.buf[w.pos+2:]) & TypeMask)
		w.badLen = int(binary.NativeEndian.Uint16(w.buf[w.pos:]))
	}
}

// Rem is what the kernel's nla_for_each_attr leaves in rem: the bytes of
// the buffer after the attributes walked so far, negative when the last
// one lacks its padding.
func (w *Walker) Rem() int { return len(w.buf) - w.pos }

// Err returns nil when the walk ended cleanly (or has not ended), and a
// *FramingError when Next stopped at a malformed attribute.
func (w *Walker) Err() error {
	if !w.bad {
		return nil
	}
	return &FramingError{Offset: w.base + w.pos, Type: w.badType, Len: w.badLen, Avail: w.avail}
}

// FramingError is a malformed attribute header: one cut short, or one
// whose nla_len is below the header's size or runs past the buffer.
type FramingError struct {
	// Offset is the header's offset in the outermost buffer.
	Offset int
	// Type is the attribute's type (flags stripped), or -1 when fewer
	// than 4 bytes were left for the header.
	Type int
	// Len is the header's nla_len (when Type >= 0).
	Len int
	// Avail is how many bytes were left in the buffer at Offset.
	Avail int
}

// Name names the malformed attribute, "type N", or is empty when its
// header was cut short.
func (e *FramingError) Name() string {
	if e.Type < 0 {
		return ""
	}
	return "type " + strconv.Itoa(e.Type)
}

// Error implements error. It states neither the offset nor the type: the
// error that wraps it (odp.DecodeError) names both.
func (e *FramingError) Error() string {
	if e.Type < 0 {
		return fmt.Sprintf("%d trailing bytes, too short for an attribute header", e.Avail)
	}
	return fmt.Sprintf("attribute length %d out of range [4, %d]", e.Len, e.Avail)
}
