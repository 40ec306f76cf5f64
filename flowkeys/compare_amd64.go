//go:build amd64 && !purego

package flowkeys

import "golang.org/x/sys/cpu"

// equalMaskedSSE2 is the comparator with 16-byte SSE2 operations (SSE2 is
// part of every amd64 CPU), two accumulators, and a word-sized tail.
// The comparators are in compare_amd64.s.
//
//go:noescape
func equalMaskedSSE2(a, b, m *uint64, n int) bool

// equalMaskedAVX2 is the comparator with 32-byte AVX2 operations: up to
// 16 words (128 bytes) in straight-line code of two or four chunks that
// start at the first word and end at the last (overlapping), a loop of
// 64 bytes above that, and one VPTEST at the end. Only for CPUs with
// AVX2.
//
//go:noescape
func equalMaskedAVX2(a, b, m *uint64, n int) bool

// equalMaskedAVX512 is the comparator with 64-byte AVX-512 operations:
// up to 8 words one load under a mask register, 9-16 words two
// overlapping chunks, a loop of 64 bytes above that; VPTESTMQ applies
// the mask and KORTESTW tests the result once. Only for CPUs with
// AVX-512F (cpu.X86.HasAVX512F, which also checks that the OS saves the
// ZMM state).
//
//go:noescape
func equalMaskedAVX512(a, b, m *uint64, n int) bool

// The comparators equalMasked can dispatch to (the values of cmpImpl;
// compare_amd64.s defines the same numbers).
const (
	cmpSSE2   = 0
	cmpAVX2   = 1
	cmpAVX512 = 2
)

// cmpImpl says which comparator equalMasked uses: the widest this CPU
// has. It is set once at start-up, and read by equalMasked's assembly:
// a predictable branch and a direct call cost less than a call through
// a function variable.
var cmpImpl = bestCmpImpl()

// bestCmpImpl returns the widest comparator the CPU runs.
func bestCmpImpl() uint8 {
	switch {
	case cpu.X86.HasAVX512F:
		return cmpAVX512
	case cpu.X86.HasAVX2:
		return cmpAVX2
	}
	return cmpSSE2
}

// equalMasked is the comparator cmpImpl chooses.
//
//go:noescape
func equalMasked(a, b, m *uint64, n int) bool

// equalMaskedRange is EqualMasked for a Valid r, in assembly so that
// EqualMasked can be inlined and its caller calls the comparator
// directly.
//
//go:noescape
func equalMaskedRange(a, b, m *Key, r Range) bool

// equalMaskedImpls lists the comparators this CPU can run, by name, for
// the tests that check them against each other and a reference.
func equalMaskedImpls() map[string]func(a, b, m *uint64, n int) bool {
	impls := map[string]func(a, b, m *uint64, n int) bool{
		"generic": equalMaskedGeneric,
		"sse2":    equalMaskedSSE2,
	}
	if cpu.X86.HasAVX2 {
		impls["avx2"] = equalMaskedAVX2
	}
	if cpu.X86.HasAVX512F {
		impls["avx512"] = equalMaskedAVX512
	}
	return impls
}

// cmpImpls lists the settings of cmpImpl this CPU allows, by name, for
// the tests that run the dispatch under each.
func cmpImpls() map[string]uint8 {
	s := map[string]uint8{"sse2": cmpSSE2}
	if cpu.X86.HasAVX2 {
		s["avx2"] = cmpAVX2
	}
	if cpu.X86.HasAVX512F {
		s["avx512"] = cmpAVX512
	}
	return s
}
