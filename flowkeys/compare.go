package flowkeys

import "unsafe"

// EqualMasked reports whether a and b agree on every bit that mask sets,
// within the words of r. It looks at every word of r (no early exit: after
// a hash hit the keys are almost always equal, and a branch per word
// costs more than it saves). It panics if r is not Valid.
func EqualMasked(a, b, mask *Key, r Range) bool {
	// Small enough to be inlined: the caller calls the comparator
	// directly, one call per comparison.
	_ = keyWordIndex[r.Start:r.End] // panics if r is not Valid
	return equalMaskedRange(a, b, mask, r)
}

// keyWordIndex has one (empty) element per word of a Key: slicing it with
// a Range checks that the Range is Valid, more cheaply (for inlining)
// than comparisons and a panic.
var keyWordIndex [KeyWords]struct{}

// equalMaskedRangeGeneric is equalMaskedRange in Go: r is Valid.
func equalMaskedRangeGeneric(a, b, mask *Key, r Range) bool {
	if r.Start >= r.End {
		return true
	}
	off := 8 * uintptr(r.Start)
	// In bounds: 0 <= r.Start < r.End <= KeyWords.
	return equalMasked((*uint64)(unsafe.Add(unsafe.Pointer(a), off)),
		(*uint64)(unsafe.Add(unsafe.Pointer(b), off)),
		(*uint64)(unsafe.Add(unsafe.Pointer(mask), off)), r.End-r.Start)
}

// equalMaskedGeneric is the portable comparator over n words.
func equalMaskedGeneric(a, b, m *uint64, n int) bool {
	x := wordsAt(a, n)
	y := wordsAt(b, n)
	z := wordsAt(m, n)
	var acc0, acc1, acc2, acc3 uint64
	for len(x) >= 4 && len(y) >= 4 && len(z) >= 4 {
		acc0 |= (x[0] ^ y[0]) & z[0]
		acc1 |= (x[1] ^ y[1]) & z[1]
		acc2 |= (x[2] ^ y[2]) & z[2]
		acc3 |= (x[3] ^ y[3]) & z[3]
		x, y, z = x[4:], y[4:], z[4:]
	}
	for len(x) > 0 && len(y) > 0 && len(z) > 0 {
		acc0 |= (x[0] ^ y[0]) & z[0]
		x, y, z = x[1:], y[1:], z[1:]
	}
	return acc0|acc1|acc2|acc3 == 0
}

// ApplyMask sets the words of dst in r to those of src ANDed with mask,
// and leaves dst's other words unchanged. dst may be src or mask. It
// panics if r is not Valid.
func ApplyMask(dst, src, mask *Key, r Range) {
	d := dst.Words()[r.Start:r.End]
	s := src.Words()[r.Start:r.End]
	m := mask.Words()[r.Start:r.End]
	s = s[:len(d)]
	m = m[:len(d)]
	for i := range d {
		d[i] = s[i] & m[i]
	}
}
