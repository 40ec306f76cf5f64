package odp

import (
	"encoding/binary"
	"fmt"

	"github.com/ovsdp/ovsdp/internal/nlattr"
)

// nlaHdrLen is the size of a netlink attribute header (struct nlattr).
const nlaHdrLen = nlattr.HdrLen

// maxAttrLen is the largest payload a netlink attribute can carry: nla_len
// is a 16-bit field that includes the header.
const maxAttrLen = nlattr.MaxPayload

// nlaAlign rounds n up to the netlink attribute alignment (4 bytes).
func nlaAlign(n int) int { return nlattr.Align(n) }

// rawAttr is one attribute found by attrWalker: its type (flags stripped),
// payload, and the byte offset of its header within the outermost buffer.
type rawAttr = nlattr.Attr

// attrWalker iterates over a buffer of netlink attributes without
// allocating (the module's one walker, internal/nlattr), and turns a
// malformed framing into a DecodeError naming where it was.
type attrWalker struct{ nlattr.Walker }

// newAttrWalker walks buf, which begins at offset base of the outermost
// buffer, so that errors can name absolute offsets.
func newAttrWalker(buf []byte, base int) attrWalker {
	return attrWalker{nlattr.NewWalker(buf, base)}
}

// next returns the next attribute. It returns false at the end of the
// buffer or on a malformed attribute, which listErr and attrErr report.
func (w *attrWalker) next(a *rawAttr) bool { return w.Next(a) }

// listErr returns the walk's framing error as a *DecodeError charged to
// the list at path (the list is what is malformed), or nil.
func (w *attrWalker) listErr(path string) error {
	fe, ok := w.Err().(*nlattr.FramingError)
	if !ok {
		return nil
	}
	return &DecodeError{Attr: path, Offset: fe.Offset, Err: fe}
}

// attrErr is listErr naming the malformed attribute inside the list
// ("path.type N") when its header was complete enough to have a type.
func (w *attrWalker) attrErr(path string) error {
	fe, ok := w.Err().(*nlattr.FramingError)
	if !ok {
		return nil
	}
	if n := fe.Name(); n != "" {
		path += "." + n
	}
	return &DecodeError{Attr: path, Offset: fe.Offset, Err: fe}
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
// of its header in the decoded buffer, and what was wrong. It is the one
// decoding error of the module: package genl returns it too, for the
// kernel's messages, with What naming the message.
type DecodeError struct {
	// What is the kind of kernel message ("datapath", "vport", "flow",
	// "upcall", ...), empty for a bare key or action list; Offset then
	// counts from the start of the generic netlink payload, the struct
	// ovs_header included.
	What string
	// Attr names the attribute, or is empty when the message's framing
	// is what is wrong.
	Attr string
	// Offset is the byte offset of the attribute's header.
	Offset int
	// Err says what is wrong.
	Err error
}

// Error implements error.
func (e *DecodeError) Error() string {
	switch {
	case e.What != "" && e.Attr == "":
		return fmt.Sprintf("odp: malformed %s message at offset %d: %v", e.What, e.Offset, e.Err)
	case e.What != "":
		return fmt.Sprintf("odp: malformed %s message: %s at offset %d: %v", e.What, e.Attr, e.Offset, e.Err)
	case e.Attr == "":
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
