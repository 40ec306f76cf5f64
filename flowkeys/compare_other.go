//go:build !amd64 || purego

package flowkeys

func equalMasked(a, b, m *uint64, n int) bool { return equalMaskedGeneric(a, b, m, n) }
