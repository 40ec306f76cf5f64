package policy

import (
	"encoding/binary"
	"math/bits"
	"unsafe"

	"github.com/ovsdp/ovsdp/flowkeys"
)

// fieldID names a flowkeys.Key field that rules match on. The order of
// the constants is the fixed order in which Decide consults a rule's
// fields (see the package documentation): metadata and the fields the
// datapath always matches exactly first, so that prerequisites are
// consulted before the fields that depend on them.
type fieldID uint8

const (
	fInPort fieldID = iota
	fCTState
	fCTZone
	fCTMark
	fDlType
	fNwProto
	fDlSrc
	fDlDst
	fVLAN
	fNwSrc
	fNwDst
	fIPv6Src
	fIPv6Dst
	fNwTOS
	fNwTTL
	fTpSrc
	fTpDst
	fNwFrag // never matched by a rule; added to masks with L4 fields
	numFields
)

// fieldInfo describes where a field lives in a flowkeys.Key.
type fieldInfo struct {
	off, size int
	// numeric fields are stored in host order (binary.NativeEndian);
	// the others (addresses) are byte arrays in wire order.
	numeric bool
	// exact fields are always masked whole when consulted: the kernel
	// forces an exact mask on in_port and the Ethernet type, and masks on
	// L4 attributes need an exact IP protocol.
	exact bool
	// l4 fields are absent in later fragments: consulting one adds the
	// fragment type to the mask.
	l4 bool
}

var kz flowkeys.Key

var fields = [numFields]fieldInfo{
	fInPort:  {off: int(unsafe.Offsetof(kz.InPort)), size: 4, numeric: true, exact: true},
	fCTState: {off: int(unsafe.Offsetof(kz.CTState)), size: 1, numeric: true},
	fCTZone:  {off: int(unsafe.Offsetof(kz.CTZone)), size: 2, numeric: true},
	fCTMark:  {off: int(unsafe.Offsetof(kz.CTMark)), size: 4, numeric: true},
	fDlType:  {off: int(unsafe.Offsetof(kz.EthType)), size: 2, numeric: true, exact: true},
	fNwProto: {off: int(unsafe.Offsetof(kz.IPProto)), size: 1, numeric: true, exact: true},
	fDlSrc:   {off: int(unsafe.Offsetof(kz.EthSrc)), size: 6},
	fDlDst:   {off: int(unsafe.Offsetof(kz.EthDst)), size: 6},
	fVLAN:    {off: int(unsafe.Offsetof(kz.VLANTCI)), size: 2, numeric: true},
	fNwSrc:   {off: int(unsafe.Offsetof(kz.IPv4Src)), size: 4},
	fNwDst:   {off: int(unsafe.Offsetof(kz.IPv4Dst)), size: 4},
	fIPv6Src: {off: int(unsafe.Offsetof(kz.IPv6Src)), size: 16},
	fIPv6Dst: {off: int(unsafe.Offsetof(kz.IPv6Dst)), size: 16},
	fNwTOS:   {off: int(unsafe.Offsetof(kz.IPTOS)), size: 1, numeric: true},
	fNwTTL:   {off: int(unsafe.Offsetof(kz.IPTTL)), size: 1, numeric: true},
	fTpSrc:   {off: int(unsafe.Offsetof(kz.TpSrc)), size: 2, numeric: true, l4: true},
	fTpDst:   {off: int(unsafe.Offsetof(kz.TpDst)), size: 2, numeric: true, l4: true},
	fNwFrag:  {off: int(unsafe.Offsetof(kz.IPFrag)), size: 1, numeric: true, exact: true},
}

// be is a field value in big-endian (most significant byte first) form,
// left-aligned: numeric fields are converted from host order, addresses
// copied. Bit i of the field is bit 7-i%8 of byte i/8.
type be [16]byte

// get returns field f of k in big-endian form.
func get(k *flowkeys.Key, f fieldID) be {
	fi := &fields[f]
	b := k.Bytes()[fi.off : fi.off+fi.size]
	var v be
	if !fi.numeric {
		copy(v[:], b)
		return v
	}
	switch fi.size {
	case 1:
		v[0] = b[0]
	case 2:
		binary.BigEndian.PutUint16(v[:], binary.NativeEndian.Uint16(b))
	case 4:
		binary.BigEndian.PutUint32(v[:], binary.NativeEndian.Uint32(b))
	}
	return v
}

// put stores v (big-endian form) as field f of k.
func put(k *flowkeys.Key, f fieldID, v be) {
	fi := &fields[f]
	b := k.Bytes()[fi.off : fi.off+fi.size]
	if !fi.numeric {
		copy(b, v[:fi.size])
		return
	}
	switch fi.size {
	case 1:
		b[0] = v[0]
	case 2:
		binary.NativeEndian.PutUint16(b, binary.BigEndian.Uint16(v[:]))
	case 4:
		binary.NativeEndian.PutUint32(b, binary.BigEndian.Uint32(v[:]))
	}
}

// orField ORs m (big-endian form) into field f of k.
func orField(k *flowkeys.Key, f fieldID, m be) {
	v := get(k, f)
	for i := range fields[f].size {
		v[i] |= m[i]
	}
	put(k, f, v)
}

// fullMask is the all-ones mask of field f.
func fullMask(f fieldID) be {
	var m be
	for i := range fields[f].size {
		m[i] = 0xff
	}
	return m
}

// isZero reports whether the first n bytes of v are zero.
func (v *be) isZero(n int) bool {
	for i := range n {
		if v[i] != 0 {
			return false
		}
	}
	return true
}

// failBits returns the bits of rule mask rm that prove that packet value
// pv differs from rule value rv: rm's bits from the field's most
// significant bit down to and including the most significant bit where
// pv and rv differ under rm. Any packet that agrees with pv on those bits
// differs from rv on that bit too, so it fails the same check. For
// prefix (CIDR) masks this is the prefix cut just below the first
// differing bit, the same shape Open vSwitch's prefix tries produce. The
// second result is false when pv matches rv under rm.
func failBits(pv, rv, rm be, n int) (be, bool) {
	var out be
	for i := range n {
		d := (pv[i] ^ rv[i]) & rm[i]
		if d == 0 {
			out[i] = rm[i]
			continue
		}
		top := uint(bits.Len8(d) - 1)
		out[i] = rm[i] &^ (1<<top - 1)
		return out, true
	}
	return out, false
}
