package odp

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"sync"
)

// KeyAttr is one OVS_KEY_ATTR_* attribute of a flow key or of a flow mask.
// A mask attribute has the same Go type as the key attribute it masks; a
// one bit in a mask field means the bit must match.
//
// The concrete types are defined in this package (InPort, Ethernet,
// IPv4, Encap, Tunnel, UnknownKey, ...); each has its kernel wire layout
// and its Open vSwitch text form.
type KeyAttr interface {
	// KeyType is the attribute's OVS_KEY_ATTR_* type.
	KeyType() KeyType

	// appendPayload appends the attribute's payload (without the netlink
	// header) in the kernel's wire format.
	appendPayload(b []byte) ([]byte, error)

	// format writes the text between the attribute name's parentheses.
	// mask is nil for an exact match, or a KeyAttr of the same type.
	// verbose is Open vSwitch's verbose flag: print fields whose mask is
	// zero too.
	format(f *textBuf, mask KeyAttr, verbose bool)
}

// FlowKey is a flow key or a flow mask: OVS_KEY_ATTR_* attributes in
// attribute order (the order matters for the text form, which follows
// it).
type FlowKey []KeyAttr

// Find returns the first attribute of type t at the top level, or nil.
func (k FlowKey) Find(t KeyType) KeyAttr {
	for _, a := range k {
		if a.KeyType() == t {
			return a
		}
	}
	return nil
}

// String formats the key as an exact match (Open vSwitch's
// odp_flow_key_format).
func (k FlowKey) String() string { return FormatKey(k, nil, true) }

// keyDecoder decodes the payload of one key attribute. path names the
// attribute for errors ("key.ipv4"); depth counts encap nesting.
type keyDecoder func(a *rawAttr, path string, depth int) (KeyAttr, error)

// keyParser parses the text between the parentheses of one key attribute
// (the scanner is positioned just after "name("; the parser must not
// consume the closing parenthesis). It returns the value and the mask
// (exact where the text gives no "/mask").
type keyParser func(sc *scanner) (key, mask KeyAttr, err error)

// keyDecoders and keyParsers are filled by the files that define each
// attribute type (their init functions).
var (
	keyDecoders = map[KeyType]keyDecoder{}
	keyParsers  = map[string]keyParser{}
)

// keyTabLen bounds the key types kept in keyTab (the kernel's are < 64).
const keyTabLen = 64

// keyTab holds keyDecoders and keyTypeNames as arrays indexed by type, so
// that decoding and formatting a key does no map lookup per attribute.
// They are copied from the maps on first use, after every init function
// has filled them.
var keyTab struct {
	once sync.Once
	dec  [keyTabLen]keyDecoder
	name [keyTabLen]string
	// keyPath[t] is "key." + the name of t: the path of a top-level
	// attribute of UnmarshalKey (keys and masks alike), built once
	// instead of per decoded attribute.
	keyPath [keyTabLen]string
}

// keyTables returns keyTab, built.
func keyTables() *[keyTabLen]keyDecoder {
	keyTab.once.Do(func() {
		for t, d := range keyDecoders {
			if int(t) < keyTabLen {
				keyTab.dec[t] = d
			}
		}
		for t, n := range keyTypeNames {
			if int(t) < keyTabLen {
				keyTab.name[t] = n
			}
		}
		for t := range keyTab.keyPath {
			n := keyTab.name[t]
			if n == "" {
				n = "key" + strconv.Itoa(t) // as KeyType.String (which would wait on this Once)
			}
			keyTab.keyPath[t] = "key." + n
		}
	})
	return &keyTab.dec
}

// maxEncapDepth bounds nested encap() attributes, as Open vSwitch does
// when parsing (it rejects 33 nested encaps).
const maxEncapDepth = 32

// MarshalKey encodes a flow key or mask as a sequence of netlink
// attributes (the payload of OVS_FLOW_ATTR_KEY or OVS_FLOW_ATTR_MASK).
func MarshalKey(k FlowKey) ([]byte, error) {
	// Most keys fit in 256 bytes: one allocation instead of a growing buffer.
	b, err := appendKey(make([]byte, 0, 256), k)
	if err != nil {
		return nil, err
	}
	if len(b) > maxAttrLen {
		return nil, fmt.Errorf("odp: key of %d bytes exceeds the netlink attribute limit of %d", len(b), maxAttrLen)
	}
	return b, nil
}

// AppendKey appends the encoding of k (what MarshalKey returns) to b,
// reusing b's capacity, and returns the extended slice; it fails as
// MarshalKey does, returning b unchanged.
func AppendKey(b []byte, k FlowKey) ([]byte, error) {
	start := len(b)
	b, err := appendKey(b, k)
	if err != nil {
		return b[:start], err
	}
	if n := len(b) - start; n > maxAttrLen {
		return b[:start], fmt.Errorf("odp: key of %d bytes exceeds the netlink attribute limit of %d", n, maxAttrLen)
	}
	return b, nil
}

// appendKey appends every attribute of k.
func appendKey(b []byte, k FlowKey) ([]byte, error) {
	var err error
	for _, a := range k {
		if b, err = appendKeyAttr(b, a); err != nil {
			return b, err
		}
	}
	return b, nil
}

// appendKeyAttr appends one key attribute, header included.
func appendKeyAttr(b []byte, a KeyAttr) ([]byte, error) {
	start := len(b)
	b = appendAttrHeader(b, uint16(a.KeyType()), 0)
	b, err := a.appendPayload(b)
	if err != nil {
		return b, fmt.Errorf("odp: encode %s: %w", a.KeyType(), err)
	}
	n := len(b) - start
	if n > 0xffff {
		return b, fmt.Errorf("odp: encode %s: %d bytes exceed the netlink attribute limit", a.KeyType(), n)
	}
	binary.NativeEndian.PutUint16(b[start:], uint16(n))
	return padAttr(b), nil
}

// UnmarshalKey decodes a sequence of OVS_KEY_ATTR_* attributes. Attribute
// types this package does not know are kept as UnknownKey.
func UnmarshalKey(b []byte) (FlowKey, error) {
	return decodeKey(b, 0, "key", 0)
}

// decodeKey decodes the attributes in b, which starts at byte offset base
// of the outermost buffer.
func decodeKey(b []byte, base int, path string, depth int) (FlowKey, error) {
	// Size the key once: count the attributes first (the walk is cheap,
	// growing the slice attribute by attribute is not).
	n := 0
	w := newAttrWalker(b, base)
	for range w.All() {
		n++
	}
	k := make(FlowKey, 0, n)
	w = newAttrWalker(b, base)
	for a := range w.All() {
		ka, err := decodeKeyAttr(a, path, depth)
		if err != nil {
			return nil, err
		}
		k = append(k, ka)
	}
	if err := w.attrErr(path); err != nil {
		return nil, err
	}
	return k, nil
}

// decodeKeyAttr decodes one key attribute.
func decodeKeyAttr(a *rawAttr, path string, depth int) (KeyAttr, error) {
	t := KeyType(a.Type)
	var dec keyDecoder
	if int(t) < keyTabLen {
		dec = keyTables()[t]
	} else {
		dec = keyDecoders[t]
	}
	if dec != nil {
		if path == "key" && int(t) < keyTabLen {
			return dec(a, keyTab.keyPath[t], depth)
		}
		return dec(a, path+"."+t.String(), depth)
	}
	return UnknownKey{Type: t, Data: append([]byte(nil), a.Data...)}, nil
}

// UnknownKey is a key attribute whose type this package does not know. It
// is kept as raw bytes and formatted as "keyN(HEX)", so nothing a newer
// kernel sends is dropped.
type UnknownKey struct {
	Type KeyType
	Data []byte
}

// KeyType implements KeyAttr.
func (u UnknownKey) KeyType() KeyType { return u.Type }

func (u UnknownKey) appendPayload(b []byte) ([]byte, error) { return append(b, u.Data...), nil }

// format writes the payload as hex, and the mask's whenever a mask is
// given: Open vSwitch never treats a mask of an attribute it does not know
// as exact.
func (u UnknownKey) format(f *textBuf, mask KeyAttr, verbose bool) {
	writeHex(f, u.Data)
	if m, ok := mask.(UnknownKey); ok {
		f.WriteByte('/')
		writeHex(f, m.Data)
	}
}

// writeHex writes b as lowercase hex digits.
func writeHex(f *textBuf, b []byte) {
	const digits = "0123456789abcdef"
	for _, c := range b {
		f.WriteByte(digits[c>>4])
		f.WriteByte(digits[c&15])
	}
}

// allOnes reports whether every byte of b is 0xff.
func allOnes(b []byte) bool {
	for _, c := range b {
		if c != 0xff {
			return false
		}
	}
	return true
}

// allZero reports whether every byte of b is zero.
func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}
