package flowkeys

// EqualMasked reports whether a and b agree on every bit that mask sets,
// within the words of r. It looks at every word of r (no early exit: after
// a hash hit the keys are almost always equal, and a branch per word
// costs more than it saves). It panics if r is not Valid.
func EqualMasked(a, b, mask *Key, r Range) bool {
	x := a.Words()[r.Start:r.End]
	y := b.Words()[r.Start:r.End]
	m := mask.Words()[r.Start:r.End]
	y = y[:len(x)]
	m = m[:len(x)]
	var acc0, acc1, acc2, acc3 uint64
	i := 0
	for ; i+4 <= len(x); i += 4 {
		acc0 |= (x[i] ^ y[i]) & m[i]
		acc1 |= (x[i+1] ^ y[i+1]) & m[i+1]
		acc2 |= (x[i+2] ^ y[i+2]) & m[i+2]
		acc3 |= (x[i+3] ^ y[i+3]) & m[i+3]
	}
	for ; i < len(x); i++ {
		acc0 |= (x[i] ^ y[i]) & m[i]
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
