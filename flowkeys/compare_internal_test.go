package flowkeys

import (
	"math/rand"
	"sort"
	"testing"
)

// refEqualMaskedBytes is the reference: byte at a time over the words
// [s, e) of the keys' memory.
func refEqualMaskedBytes(a, b, m *Key, s, e int) bool {
	x, y, z := a.Bytes(), b.Bytes(), m.Bytes()
	for i := 8 * s; i < 8*e; i++ {
		if (x[i]^y[i])&z[i] != 0 {
			return false
		}
	}
	return true
}

type comparator struct {
	name string
	f    func(a, b, m *uint64, n int) bool
}

// comparators returns every comparator this CPU can run, and the
// dispatching equalMasked under each setting it has, sorted by name.
func comparators(t testing.TB) []comparator {
	var cs []comparator
	for name, f := range equalMaskedImpls() {
		cs = append(cs, comparator{name, f})
	}
	cs = append(cs, comparator{"equalMasked", equalMasked})
	sort.Slice(cs, func(i, j int) bool { return cs[i].name < cs[j].name })
	names := make([]string, len(cs))
	for i, c := range cs {
		names[i] = c.name
	}
	t.Logf("comparators tested on this CPU: %v", names)
	return cs
}

// TestComparatorsExhaustive checks every comparator over every range of
// words (so every length 0-40, whatever its remainder modulo 4 words, at
// every offset) against the byte reference: equal keys, and one bit
// flipped in each word inside the range and next to it, with the mask's
// bit set and clear.
func TestComparatorsExhaustive(t *testing.T) {
	rng := rand.New(rand.NewSource(11))
	var a, m Key
	for j := range a.Words() {
		a.Words()[j] = rng.Uint64()
		m.Words()[j] = rng.Uint64() | 1<<(j%64)
	}
	cases := 0
	var trues, falses int
	for _, c := range comparators(t) {
		for s := 0; s < KeyWords; s++ {
			for e := s; e <= KeyWords; e++ {
				check := func(b *Key, what string) {
					want := refEqualMaskedBytes(&a, b, &m, s, e)
					got := c.f(&a.Words()[s], &b.Words()[s], &m.Words()[s], e-s)
					if got != want {
						t.Fatalf("%s over words %d-%d, %s: got %v, want %v", c.name, s, e, what, got, want)
					}
					cases++
					if want {
						trues++
					} else {
						falses++
					}
				}
				b := a
				check(&b, "equal keys")
				for w := max(0, s-1); w <= e && w < KeyWords; w++ {
					bit := uint64(1) << (w % 64)
					b = a
					b.Words()[w] ^= bit // the mask has this bit
					check(&b, "a masked bit differs")
					b = a
					b.Words()[w] ^= ^m.Words()[w] // every bit outside the mask
					check(&b, "only unmasked bits differ")
				}
			}
		}
	}
	t.Logf("%d cases: %d equal, %d not", cases, trues, falses)
	if falses == 0 || trues == 0 {
		t.Errorf("degenerate cases: %d equal, %d not", trues, falses)
	}
}

// TestComparatorsRandom checks the comparators against each other and
// the byte reference on random keys, masks and ranges.
func TestComparatorsRandom(t *testing.T) {
	rng := rand.New(rand.NewSource(12))
	cs := comparators(t)
	var a, b, m Key
	for i := 0; i < 20000; i++ {
		for j := range a.Words() {
			a.Words()[j] = rng.Uint64()
			m.Words()[j] = rng.Uint64() & rng.Uint64()
		}
		b = a
		for k := rng.Intn(3); k > 0; k-- {
			b.Words()[rng.Intn(KeyWords)] ^= 1 << rng.Intn(64)
		}
		s := rng.Intn(KeyWords)
		e := s + rng.Intn(KeyWords-s+1)
		want := refEqualMaskedBytes(&a, &b, &m, s, e)
		for _, c := range cs {
			if got := c.f(&a.Words()[s], &b.Words()[s], &m.Words()[s], e-s); got != want {
				t.Fatalf("%s over words %d-%d = %v, reference %v", c.name, s, e, got, want)
			}
		}
	}
}

// TestEqualMaskedEveryImpl runs the exported EqualMasked with each
// setting of the dispatch this CPU allows, over every range: equal keys,
// a word at each end and in the middle differing in one bit, and (with
// a random mask, different in every word) each of its 64 bits in turn,
// which must count only where the mask has it.
func TestEqualMaskedEveryImpl(t *testing.T) {
	orig := cmpImpl
	defer func() { cmpImpl = orig }()
	rng := rand.New(rand.NewSource(13))
	var a, m, rm Key
	for j := range a.Words() {
		a.Words()[j] = rng.Uint64()
		m.Words()[j] = ^uint64(0)
		rm.Words()[j] = rng.Uint64()
	}
	for name, impl := range cmpImpls() {
		cmpImpl = impl
		for s := 0; s <= KeyWords; s++ {
			for e := s; e <= KeyWords; e++ {
				b := a
				if !EqualMasked(&a, &b, &m, Range{s, e}) {
					t.Fatalf("%s: EqualMasked(equal keys, %d-%d) = false", name, s, e)
				}
				if e > s {
					for _, w := range []int{s, (s + e) / 2, e - 1} {
						b = a
						b.Words()[w] ^= 1 << 63
						if EqualMasked(&a, &b, &m, Range{s, e}) {
							t.Fatalf("%s: EqualMasked(word %d differs, %d-%d) = true", name, w, s, e)
						}
					}
				}
				if e > s {
					for _, w := range []int{s, (s + e) / 2, e - 1} {
						for bit := range 64 {
							b = a
							b.Words()[w] ^= 1 << bit
							want := rm.Words()[w]&(1<<bit) == 0
							if got := EqualMasked(&a, &b, &rm, Range{s, e}); got != want {
								t.Fatalf("%s: EqualMasked(word %d differs in bit %d, mask %#x, %d-%d) = %v", name, w, bit, rm.Words()[w], s, e, got)
							}
						}
					}
				}
				r := Range{s, e}
				var sink bool
				if n := testing.AllocsPerRun(3, func() { sink = EqualMasked(&a, &b, &m, r) }); n != 0 {
					t.Fatalf("%s: EqualMasked over %v allocates %v times", name, r, n)
				}
				_ = sink
			}
		}
	}
}

func TestEqualMaskedInvalidRangePanics(t *testing.T) {
	var k Key
	for _, r := range []Range{{-1, 2}, {3, 2}, {0, KeyWords + 1}, {KeyWords + 1, KeyWords + 1}, {-2, -2}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("EqualMasked over %v did not panic", r)
				}
			}()
			EqualMasked(&k, &k, &k, r)
		}()
	}
}

// BenchmarkEqualMaskedImpl measures each comparator this CPU can run on
// equal keys over 16 words (128 bytes), the range of the goal.
func BenchmarkEqualMaskedImpl(b *testing.B) {
	var x, m Key
	for j := range x.Words() {
		x.Words()[j] = uint64(j) * 0x9e3779b97f4a7c15
		m.Words()[j] = ^uint64(0)
	}
	y := x
	for _, c := range comparators(b) {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			var ok bool
			for i := 0; i < b.N; i++ {
				ok = c.f(&x.Words()[8], &y.Words()[8], &m.Words()[8], 16)
			}
			if !ok {
				b.Fatal("equal keys compared unequal")
			}
		})
	}
}

// FuzzEqualMasked runs EqualMasked under each setting of the dispatch on
// keys, a mask and a range made from the input, against the byte
// reference: the input's first two bytes choose the range, the rest
// fills a, then the bits where b differs from a, then the mask
// (repeated as needed, so short inputs give patterned keys).
func FuzzEqualMasked(f *testing.F) {
	f.Add([]byte{8, 24, 1, 2, 3, 0, 0, 0, 0xff})
	f.Add([]byte{0, 72, 0xaa})
	f.Add([]byte{40, 41, 0, 0x80, 0x80})
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) < 3 {
			return
		}
		s := int(in[0]) % (KeyWords + 1)
		e := s + int(in[1])%(KeyWords-s+1)
		data := in[2:]
		var a, b, m Key
		ab, bb, mb := a.Bytes(), b.Bytes(), m.Bytes()
		for i := range ab {
			ab[i] = data[i%len(data)]
			// Few differing bits: a byte of the input selects one bit
			// at every 97th position, and the mask is dense.
			if i%97 == int(data[(i+1)%len(data)])%97 {
				bb[i] = ab[i] ^ 1<<(data[(i+2)%len(data)]%8)
			} else {
				bb[i] = ab[i]
			}
			mb[i] = data[(i+3)%len(data)] | data[(i+5)%len(data)]
		}
		want := refEqualMaskedBytes(&a, &b, &m, s, e)
		orig := cmpImpl
		defer func() { cmpImpl = orig }()
		for name, impl := range cmpImpls() {
			cmpImpl = impl
			if got := EqualMasked(&a, &b, &m, Range{s, e}); got != want {
				t.Fatalf("%s: EqualMasked over words %d-%d = %v, reference %v", name, s, e, got, want)
			}
		}
		for name, c := range equalMaskedImpls() {
			if got := c(&a.Words()[min(s, KeyWords-1)], &b.Words()[min(s, KeyWords-1)], &m.Words()[min(s, KeyWords-1)], e-s); got != want {
				t.Fatalf("%s over words %d-%d = %v, reference %v", name, s, e, got, want)
			}
		}
	})
}
