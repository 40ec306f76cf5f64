package odp

import (
	"bytes"
	"encoding/binary"
	"fmt"
)

// Set overwrites packet fields with a key attribute's value
// (OVS_ACTION_ATTR_SET: exactly one nested OVS_KEY_ATTR_*). The kernel
// accepts SET for skb_priority, skb_mark, eth, tunnel (the nested
// OVS_TUNNEL_KEY_ATTR_* form), ipv4, ipv6, tcp, udp, sctp, mpls and nsh;
// it turns every one but tunnel into a masked set with an all-ones mask.
//
// Text: "set(KEY)" with the key attribute printed in full (Open vSwitch's
// verbose key format). ParseActions gives a Set when the text's mask is
// all ones (and always for tunnel, which the kernel cannot set masked),
// else a SetMasked.
type Set struct {
	// Key is the attribute whose value is written.
	Key KeyAttr
}

// ActionType implements Action.
func (Set) ActionType() ActionType { return ActionSet }

func (s Set) appendPayload(b []byte) ([]byte, error) {
	if s.Key == nil {
		return b, fmt.Errorf("set without a key attribute")
	}
	return appendKeyAttr(b, s.Key)
}

func (s Set) format(f *textBuf) {
	f.WriteString("set(")
	if s.Key != nil {
		formatKeyAttr(f, s.Key, nil, true)
	}
	f.WriteByte(')')
}

// SetMasked overwrites the packet bits selected by a mask
// (OVS_ACTION_ATTR_SET_MASKED: one nested OVS_KEY_ATTR_* whose payload is
// the value followed by the mask, both of the attribute's size; for the
// nested nsh attribute, each nested attribute carries value then mask).
// The kernel rejects a value with a bit set where the mask is zero, and
// masked tunnel sets; Open vSwitch's parser keeps such values as written
// (and so does ParseActions), so call Normalize before installing a flow
// built from text that may have them.
//
// Text: "set(KEY)" with only the masked fields printed and "/mask" where a
// field is partly masked (Open vSwitch's non-verbose masked key format).
type SetMasked struct {
	// Key is the value, Mask the mask: the same attribute type.
	Key, Mask KeyAttr
}

// ActionType implements Action.
func (SetMasked) ActionType() ActionType { return ActionSetMasked }

func (s SetMasked) appendPayload(b []byte) ([]byte, error) {
	if s.Key == nil || s.Mask == nil {
		return b, fmt.Errorf("set_masked needs a key and a mask")
	}
	if s.Key.KeyType() != s.Mask.KeyType() {
		return b, fmt.Errorf("set_masked key %s and mask %s differ in type", s.Key.KeyType(), s.Mask.KeyType())
	}
	if t := s.Key.KeyType(); t != KeyNSH && t != KeyTunnel && len(b)%4 == 0 {
		// The value and the mask, encoded in place after the header
		// (flat payloads: the nested ones, tunnel and NSH, pad their
		// attributes from where they start, so they are encoded apart
		// as before).
		start := len(b)
		b = appendAttrHeader(b, uint16(s.Key.KeyType()), 0)
		vb, err := s.Key.appendPayload(b)
		if err != nil {
			return b[:start], fmt.Errorf("set_masked %s: %w", s.Key.KeyType(), err)
		}
		kn := len(vb) - len(b)
		mb, err := s.Mask.appendPayload(vb)
		if err != nil {
			return b[:start], fmt.Errorf("set_masked %s mask: %w", s.Key.KeyType(), err)
		}
		if mn := len(mb) - len(vb); kn != mn {
			return b[:start], fmt.Errorf("set_masked %s: value of %d bytes, mask of %d", s.Key.KeyType(), kn, mn)
		}
		if n := len(mb) - start - nlaHdrLen; n > maxAttrLen {
			return b[:start], fmt.Errorf("set_masked %s: %d bytes exceed the netlink attribute limit", s.Key.KeyType(), n)
		}
		binary.NativeEndian.PutUint16(mb[start:], uint16(len(mb)-start))
		return padAttr(mb), nil
	}
	kp, err := s.Key.appendPayload(nil)
	if err != nil {
		return b, fmt.Errorf("set_masked %s: %w", s.Key.KeyType(), err)
	}
	mp, err := s.Mask.appendPayload(nil)
	if err != nil {
		return b, fmt.Errorf("set_masked %s mask: %w", s.Key.KeyType(), err)
	}
	var payload []byte
	if s.Key.KeyType() == KeyNSH {
		payload, err = actInterleaveNested(kp, mp)
		if err != nil {
			return b, fmt.Errorf("set_masked nsh: %w", err)
		}
	} else {
		if len(kp) != len(mp) {
			return b, fmt.Errorf("set_masked %s: value of %d bytes, mask of %d", s.Key.KeyType(), len(kp), len(mp))
		}
		payload = append(kp, mp...)
	}
	if len(payload) > maxAttrLen {
		return b, fmt.Errorf("set_masked %s: %d bytes exceed the netlink attribute limit", s.Key.KeyType(), len(payload))
	}
	return appendAttr(b, uint16(s.Key.KeyType()), payload), nil
}

func (s SetMasked) format(f *textBuf) {
	f.WriteString("set(")
	if s.Key != nil {
		formatKeyAttr(f, s.Key, s.Mask, false)
	}
	f.WriteByte(')')
}

// Normalize returns s with the value's bits cleared where the mask is
// zero, as the kernel requires. It returns s unchanged if the attributes
// cannot be encoded or decoded.
func (s SetMasked) Normalize() SetMasked {
	if s.Key == nil || s.Mask == nil || s.Key.KeyType() == KeyNSH {
		return s
	}
	kp, err1 := s.Key.appendPayload(nil)
	mp, err2 := s.Mask.appendPayload(nil)
	if err1 != nil || err2 != nil || len(kp) != len(mp) {
		return s
	}
	for i := range kp {
		kp[i] &= mp[i]
	}
	k, err := decodeKeyAttr(&rawAttr{Type: uint16(s.Key.KeyType()), Data: kp}, "set_masked", 0)
	if err != nil {
		return s
	}
	return SetMasked{Key: k, Mask: s.Mask}
}

// actInterleaveNested merges two nested attribute lists into one whose
// attributes carry value then mask. Every mask attribute needs one of
// the same type and size in the value, in the same order, except that a
// value may lack an attribute the mask has: it is then zero there (Open
// vSwitch always writes nsh's md1 mask, and md1 in the value only for
// MD type 1, so a partial set(nsh(spi=..)) has no md1 value).
func actInterleaveNested(kp, mp []byte) ([]byte, error) {
	var vals [8]rawAttr
	nv := 0
	kw := newAttrWalker(kp, 0)
	for nv < len(vals) && kw.next(&vals[nv]) {
		nv++
	}
	if err := kw.attrErr("value"); err != nil {
		return nil, err
	}
	var extra rawAttr
	if nv == len(vals) && kw.next(&extra) {
		return nil, fmt.Errorf("value has more than %d nested attributes", len(vals))
	}
	var out []byte
	used := 0
	mw := newAttrWalker(mp, 0)
	for ma := range mw.All() {
		var data []byte
		if used < nv && vals[used].Type == ma.Type {
			if len(vals[used].Data) != len(ma.Data) {
				return nil, fmt.Errorf("value attribute %d (%d bytes) and mask attribute %d (%d bytes) differ", vals[used].Type, len(vals[used].Data), ma.Type, len(ma.Data))
			}
			data = vals[used].Data
			used++
		}
		out = appendAttrHeader(out, ma.Type, 2*len(ma.Data))
		if data != nil {
			out = append(out, data...)
		} else {
			out = append(out, make([]byte, len(ma.Data))...)
		}
		out = append(out, ma.Data...)
		out = padAttr(out)
	}
	if err := mw.attrErr("mask"); err != nil {
		return nil, err
	}
	if used < nv {
		return nil, fmt.Errorf("value attribute %d has no mask attribute", vals[used].Type)
	}
	return out, nil
}

// actSingleKeyAttr returns the one key attribute nested in a SET or
// SET_MASKED action; anything after it (beyond padding) is an error, as
// in the kernel.
func actSingleKeyAttr(a *rawAttr, path string) (rawAttr, error) {
	w := newAttrWalker(a.Data, a.Offset+nlaHdrLen)
	var k rawAttr
	if !w.next(&k) {
		if err := w.listErr(path); err != nil {
			return k, err
		}
		return k, actDecodeErr(a, path, "no key attribute")
	}
	var extra rawAttr
	if w.next(&extra) || w.Err() != nil {
		return k, actDecodeErr(a, path, "more than one key attribute (%d bytes after the first)", len(a.Data)-nlaAlign(nlaHdrLen+len(k.Data)))
	}
	return k, nil
}

func decodeSet(a *rawAttr, path string, _ int) (Action, error) {
	k, err := actSingleKeyAttr(a, path)
	if err != nil {
		return nil, err
	}
	ka, err := decodeKeyAttr(&k, path, 0)
	if err != nil {
		return nil, err
	}
	return Set{Key: ka}, nil
}

func decodeSetMasked(a *rawAttr, path string, _ int) (Action, error) {
	k, err := actSingleKeyAttr(a, path)
	if err != nil {
		return nil, err
	}
	p := path + "." + KeyType(k.Type).String()
	var kd, md []byte
	if KeyType(k.Type) == KeyNSH {
		w := newAttrWalker(k.Data, k.Offset+nlaHdrLen)
		for n := range w.All() {
			if len(n.Data)%2 != 0 {
				return nil, actDecodeErr(n, p, "value||mask payload of odd length %d", len(n.Data))
			}
			h := len(n.Data) / 2
			kd = appendAttr(kd, n.Type, n.Data[:h])
			md = appendAttr(md, n.Type, n.Data[h:])
		}
		if err := w.listErr(p); err != nil {
			return nil, err
		}
	} else {
		if len(k.Data)%2 != 0 {
			return nil, actDecodeErr(&k, p, "value||mask payload of odd length %d", len(k.Data))
		}
		h := len(k.Data) / 2
		kd, md = k.Data[:h:h], k.Data[h:]
	}
	key, err := decodeKeyAttr(&rawAttr{Type: k.Type, Data: kd, Offset: k.Offset}, path, 0)
	if err != nil {
		return nil, err
	}
	mask, err := decodeKeyAttr(&rawAttr{Type: k.Type, Data: md, Offset: k.Offset}, path+"(mask)", 0)
	if err != nil {
		return nil, err
	}
	return SetMasked{Key: key, Mask: mask}, nil
}

// actMaskIsExact applies Open vSwitch's rule for "set(...)" text: the set
// stays a plain SET when the mask's payload is as long as the value's and
// all ones. For the nested nsh attribute, every nested payload must be
// all ones.
func actMaskIsExact(key, mask KeyAttr) (bool, error) {
	kp, err := key.appendPayload(nil)
	if err != nil {
		return false, err
	}
	mp, err := mask.appendPayload(nil)
	if err != nil {
		return false, err
	}
	if key.KeyType() == KeyNSH {
		w := newAttrWalker(mp, 0)
		for n := range w.All() {
			if !allOnes(n.Data) {
				return false, nil
			}
		}
		return w.Err() == nil, nil
	}
	if len(kp) != len(mp) {
		return true, nil
	}
	return allOnes(mp), nil
}

func parseSet(sc *scanner, _ int) (Action, error) {
	if err := sc.actExpect("(", "set"); err != nil {
		return nil, err
	}
	start := sc.pos
	key, mask, err := parseKeyAttr(sc)
	if err != nil {
		return nil, err
	}
	if err := sc.actExpect(")", "set (one key attribute)"); err != nil {
		return nil, err
	}
	if key.KeyType() == KeyTunnel || mask == nil {
		return Set{Key: key}, nil
	}
	exact, err := actMaskIsExact(key, mask)
	if err != nil {
		return nil, sc.errorAt(start, "%v", err)
	}
	if exact {
		return Set{Key: key}, nil
	}
	return SetMasked{Key: key, Mask: mask}, nil
}

func init() {
	actionDecoders[ActionSet] = decodeSet
	actionDecoders[ActionSetMasked] = decodeSetMasked
	actionParsers["set"] = parseSet
}

// keyAttrEqual reports whether two key attributes encode to the same
// bytes (used by tests).
func keyAttrEqual(a, b KeyAttr) bool {
	if a == nil || b == nil {
		return a == b
	}
	x, err1 := appendKeyAttr(nil, a)
	y, err2 := appendKeyAttr(nil, b)
	return err1 == nil && err2 == nil && bytes.Equal(x, y)
}
