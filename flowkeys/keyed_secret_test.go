package flowkeys

import "testing"

// stretchedHasher is NewKeyedHasherFromSecret without its shortcut for
// a full-length secret: every secret goes through the SplitMix64
// stretching loop.
func stretchedHasher(secret []byte) *KeyedHasher {
	h := &KeyedHasher{}
	stretchSecret(h, secret)
	return h
}

// TestKeyedHasherFromSecretShortcut: NewKeyedHasherFromSecret, which
// skips the stretching for a secret of 8*(KeyWords+1) bytes or more (as
// NewKeyedHasher's), gives the hasher the stretching would, for secrets
// shorter than, as long as and longer than that.
func TestKeyedHasherFromSecretShortcut(t *testing.T) {
	full := 8 * (KeyWords + 1)
	b := make([]byte, full+9)
	for i := range b {
		b[i] = byte(i*7 + 3)
	}
	for _, n := range []int{0, 1, 8, full - 9, full - 1, full, full + 1, full + 9} {
		if got, want := NewKeyedHasherFromSecret(b[:n]), stretchedHasher(b[:n]); *got != *want {
			t.Errorf("%d-byte secret: hasher %v, want %v", n, got, want)
		}
	}
}
