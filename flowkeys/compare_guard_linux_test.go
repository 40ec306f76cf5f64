package flowkeys

import (
	"syscall"
	"testing"
	"unsafe"
)

// guarded maps three pages and makes the first and the last
// inaccessible, so that a read just before or just after the middle
// page faults.
func guarded(t *testing.T) []byte {
	t.Helper()
	ps := syscall.Getpagesize()
	mem, err := syscall.Mmap(-1, 0, 3*ps, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		t.Fatalf("mmap: %v", err)
	}
	t.Cleanup(func() { syscall.Munmap(mem) })
	for _, p := range [][]byte{mem[:ps], mem[2*ps:]} {
		if err := syscall.Mprotect(p, syscall.PROT_NONE); err != nil {
			t.Fatalf("mprotect: %v", err)
		}
	}
	return mem[ps : 2*ps]
}

// TestComparatorsReadOnlyTheRange puts the words of every length 0-40
// against an inaccessible page, after the range and before it, and runs
// every comparator on them: one that read a byte outside the range (a
// full-width load past the end, say) would crash the test. Equal words
// and one differing word at each end are checked.
func TestComparatorsReadOnlyTheRange(t *testing.T) {
	pa, pb, pm := guarded(t), guarded(t), guarded(t)
	for i := range pa {
		pa[i], pb[i], pm[i] = byte(i*7), byte(i*7), 0xff
	}
	words := func(p []byte, off int) *uint64 {
		return (*uint64)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(p)), off))
	}
	for _, c := range comparators(t) {
		for n := 0; n <= KeyWords; n++ {
			for _, off := range []int{len(pa) - 8*n, 0} { // ends at the guard page; starts at it
				a, b, m := words(pa, off), words(pb, off), words(pm, off)
				if !c.f(a, b, m, n) {
					t.Fatalf("%s: %d equal words at offset %d compared unequal", c.name, n, off)
				}
				if n == 0 {
					continue
				}
				for _, w := range []int{off, off + 8*n - 1} {
					pb[w] ^= 0x10
					got := c.f(a, b, m, n)
					pb[w] ^= 0x10
					if got {
						t.Fatalf("%s: %d words at offset %d differing at byte %d compared equal", c.name, n, off, w-off)
					}
				}
			}
		}
	}
}

// TestEqualMaskedReadsOnlyTheRange is TestComparatorsReadOnlyTheRange
// for EqualMasked under each setting of the dispatch, whose assembly
// compares short ranges in line (overlapping chunks from the range's
// first word and to its last): for every Range, the keys are placed so
// that the range ends at an inaccessible page, and so that it starts at
// one (the rest of each Key lies in the inaccessible page and must not
// be read). Equal words, and one differing byte at each end, are
// checked.
func TestEqualMaskedReadsOnlyTheRange(t *testing.T) {
	orig := cmpImpl
	defer func() { cmpImpl = orig }()
	pa, pb, pm := guarded(t), guarded(t), guarded(t)
	for i := range pa {
		pa[i], pb[i], pm[i] = byte(i*5), byte(i*5), 0xff
	}
	keyAt := func(p []byte, off int) *Key {
		return (*Key)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(p)), off))
	}
	cases := 0
	for name, impl := range cmpImpls() {
		cmpImpl = impl
		for s := 0; s <= KeyWords; s++ {
			for e := s; e <= KeyWords; e++ {
				r := Range{s, e}
				// The key's base such that the range ends at the page's
				// end, then such that it starts at the page's start.
				for _, base := range []int{len(pa) - 8*e, -8 * s} {
					a, b, m := keyAt(pa, base), keyAt(pb, base), keyAt(pm, base)
					if !EqualMasked(a, b, m, r) {
						t.Fatalf("%s: equal words %v (key at %d) compared unequal", name, r, base)
					}
					cases++
					if e == s {
						continue
					}
					for _, w := range []int{base + 8*s, base + 8*e - 1} {
						pb[w] ^= 0x20
						got := EqualMasked(a, b, m, r)
						pb[w] ^= 0x20
						if got {
							t.Fatalf("%s: words %v (key at %d) differing at byte %d compared equal", name, r, base, w)
						}
					}
				}
			}
		}
	}
	t.Logf("%d placements", cases)
}
