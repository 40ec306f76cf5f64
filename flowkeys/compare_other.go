//go:build !amd64 || purego

package flowkeys

func equalMasked(a, b, m *uint64, n int) bool { return equalMaskedGeneric(a, b, m, n) }

func equalMaskedRange(a, b, m *Key, r Range) bool { return equalMaskedRangeGeneric(a, b, m, r) }

// equalMaskedImpls lists the comparators of this build, by name, for the
// tests that check them against each other and a reference.
func equalMaskedImpls() map[string]func(a, b, m *uint64, n int) bool {
	return map[string]func(a, b, m *uint64, n int) bool{"generic": equalMaskedGeneric}
}

// cmpImpl and cmpImpls exist for the tests: this build has one
// comparator, the generic one, and no dispatch.
var cmpImpl uint8

func cmpImpls() map[string]uint8 { return map[string]uint8{"generic": 0} }
