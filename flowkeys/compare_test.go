package flowkeys_test

import (
	"math/rand"
	"testing"

	"github.com/ovsdp/ovsdp/flowkeys"
)

func refEqualMasked(a, b, m *flowkeys.Key, r flowkeys.Range) bool {
	x, y, z := a.Bytes(), b.Bytes(), m.Bytes()
	for i := 8 * r.Start; i < 8*r.End; i++ {
		if (x[i]^y[i])&z[i] != 0 {
			return false
		}
	}
	return true
}

func TestEqualMasked(t *testing.T) {
	rng := rand.New(rand.NewSource(6))
	var eq, ne int
	for i := 0; i < 20000; i++ {
		a := randKey(rng)
		m := randKey(rng)
		r := randRange(rng)
		b := a
		// Differ in 0..2 random bits, often outside the mask.
		for j := rng.Intn(3); j > 0; j-- {
			b.Words()[rng.Intn(flowkeys.KeyWords)] ^= 1 << rng.Intn(64)
		}
		if rng.Intn(4) == 0 {
			m = flowkeys.Key{}
			m.Words()[rng.Intn(flowkeys.KeyWords)] = 1 << rng.Intn(64)
		}
		want := refEqualMasked(&a, &b, &m, r)
		if got := flowkeys.EqualMasked(&a, &b, &m, r); got != want {
			t.Fatalf("EqualMasked over %v = %v, want %v", r, got, want)
		}
		if want {
			eq++
		} else {
			ne++
		}
	}
	if eq < 1000 || ne < 1000 {
		t.Errorf("test cases unbalanced: %d equal, %d not", eq, ne)
	}
}

func TestApplyMask(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	for i := 0; i < 2000; i++ {
		s, m, d := randKey(rng), randKey(rng), randKey(rng)
		orig := d
		r := randRange(rng)
		flowkeys.ApplyMask(&d, &s, &m, r)
		for w := 0; w < flowkeys.KeyWords; w++ {
			want := orig.Words()[w]
			if w >= r.Start && w < r.End {
				want = s.Words()[w] & m.Words()[w]
			}
			if d.Words()[w] != want {
				t.Fatalf("ApplyMask over %v: word %d = %#x, want %#x", r, w, d.Words()[w], want)
			}
		}
	}
}
