package flowkeys

import (
	"errors"
	"fmt"
	"math/bits"
)

// CRCCollisions returns n distinct keys that all have the same plain
// CRC32C over the words of r, whatever the seed: HashCRC32C(&keys[i], r,
// seed) is the same for every i and every seed. This is the attack that
// makes Hash unfit for tables fed by the network (see hash.go).
//
// The keys are base with some of the bits that free sets flipped (free
// nil means every bit in r may change; pass a mask key to keep the
// attack inside the fields a flow table hashes). keys[0] is base itself.
//
// How: for messages of equal length, crc(seed, a^b) = crc(seed, a) ^
// crc(0, b), so flipping a set of bits whose own CRC is zero leaves every
// hash unchanged. The CRCs of single-bit flips are vectors in GF(2)^32;
// Gaussian elimination over the first 32+log2(n)+1 free bits finds a
// basis of flip sets with zero CRC, and the keys are base XOR the
// combinations of that basis given by the binary digits of 0..n-1.
func CRCCollisions(base, free *Key, r Range, n int) ([]Key, error) {
	if !r.Valid() || r.Len() == 0 {
		return nil, fmt.Errorf("flowkeys: CRCCollisions: invalid or empty range %v", r)
	}
	if n < 1 {
		return nil, fmt.Errorf("flowkeys: CRCCollisions: n = %d, want at least 1", n)
	}
	need := bits.Len(uint(n - 1)) // basis vectors needed
	const maxPos = 128
	want := 32 + need + 1
	if want > maxPos {
		return nil, fmt.Errorf("flowkeys: CRCCollisions: n = %d is too large", n)
	}
	type pos struct{ word, bit int }
	var positions []pos
	for w := r.Start; w < r.End && len(positions) < want; w++ {
		fw := ^uint64(0)
		if free != nil {
			fw = free.Words()[w]
		}
		for b := 0; b < 64 && len(positions) < want; b++ {
			if fw>>b&1 != 0 {
				positions = append(positions, pos{w, b})
			}
		}
	}
	// Eliminate: each row is a CRC value and the set of positions
	// (as a 128-bit set) whose flips XOR to it.
	type row struct {
		crc  uint32
		comb [2]uint64
	}
	var pivots [32]*row
	var null []row
	var k Key
	for i, p := range positions {
		k = Key{}
		k.Words()[p.word] = 1 << p.bit
		cur := row{crc: crcWordsGeneric(0, &k.Words()[r.Start], r.Len())}
		cur.comb[i/64] |= 1 << (i % 64)
		for cur.crc != 0 {
			top := 31 - bits.LeadingZeros32(cur.crc)
			if pivots[top] == nil {
				pv := cur
				pivots[top] = &pv
				break
			}
			cur.crc ^= pivots[top].crc
			cur.comb[0] ^= pivots[top].comb[0]
			cur.comb[1] ^= pivots[top].comb[1]
		}
		if cur.crc == 0 {
			null = append(null, cur)
		}
	}
	if len(null) < need {
		return nil, errors.New("flowkeys: CRCCollisions: not enough free bits in the range for that many keys")
	}
	// Turn each basis vector into a word-level XOR pattern.
	deltas := make([]Key, need)
	for j := 0; j < need; j++ {
		for i, p := range positions {
			if null[j].comb[i/64]>>(i%64)&1 != 0 {
				deltas[j].Words()[p.word] ^= 1 << p.bit
			}
		}
	}
	keys := make([]Key, n)
	for i := range keys {
		keys[i] = *base
		w := keys[i].Words()
		for j := 0; j < need; j++ {
			if i>>j&1 != 0 {
				d := deltas[j].Words()
				for x := r.Start; x < r.End; x++ {
					w[x] ^= d[x]
				}
			}
		}
	}
	return keys, nil
}
