//go:build !amd64 || purego

package flowkeys

func equalMasked(a, b, m *uint64, n int) bool { return equalMaskedGeneric(a, b, m, n) }

func equalMaskedRange(a, b, m *Key, r Range) bool { return equalMaskedRangeGeneric(a, b, m, r) }

// equalMaskedImpls lists the comparators of this build, by name, for the
// tests that check them against each other and a reference.
func equalMaskedImpls() map[string]func(a, b, m *uint64, n int) bool {
	return map[string]func(a, b, m *uint64, n int) bool{"generic": equalMaskedGeneric}
}

// useAVX2 and setUseAVX2 exist for the tests: this build has no AVX2
// comparator, so useAVX2 stays false.
var useAVX2 = false

func setUseAVX2(bool) {}
