//go:build amd64 && !purego

package flowkeys

// equalMaskedSSE2 is the comparator with 16-byte SSE2 operations (SSE2 is
// part of every amd64 CPU), two accumulators, and a word-sized tail.
//
//go:noescape
func equalMaskedSSE2(a, b, m *uint64, n int) bool

func equalMasked(a, b, m *uint64, n int) bool { return equalMaskedSSE2(a, b, m, n) }
