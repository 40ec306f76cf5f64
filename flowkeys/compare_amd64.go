//go:build amd64 && !purego

package flowkeys

import "golang.org/x/sys/cpu"

// equalMaskedSSE2 is the comparator with 16-byte SSE2 operations (SSE2 is
// part of every amd64 CPU), two accumulators, and a word-sized tail.
// The comparators are in compare_amd64.s.
//
//go:noescape
func equalMaskedSSE2(a, b, m *uint64, n int) bool

// equalMaskedAVX2 is the comparator with 32-byte AVX2 operations, two
// accumulators, straight-line code for 16 words (128 bytes), 16- and
// 8-byte tails, and one VPTEST at the end. Only for CPUs with AVX2.
//
//go:noescape
func equalMaskedAVX2(a, b, m *uint64, n int) bool

// useAVX2 says whether equalMasked uses the AVX2 comparator (else the
// SSE2 one). It is set once at start-up, and read by equalMasked's
// assembly: a predictable branch and a tail jump cost less than a call
// through a function variable.
var useAVX2 = cpu.X86.HasAVX2

// equalMasked is equalMaskedAVX2 or equalMaskedSSE2, as useAVX2 says.
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
	return impls
}

// setUseAVX2 sets useAVX2, for tests: true only where the CPU has AVX2.
func setUseAVX2(on bool) { useAVX2 = on && cpu.X86.HasAVX2 }
