//go:build armbe || arm64be || m68k || mips || mips64 || mips64p32 || ppc || ppc64 || s390 || s390x || shbe || sparc || sparc64

package conntrack

import "encoding/binary"

// v4Word is the 8-byte word, in this (big-endian) machine's byte order,
// whose bytes are a and four zeros: an IPv4 address's first half of a
// Tuple address (executeKeyFast).
func v4Word(a [4]byte) uint64 { return uint64(binary.BigEndian.Uint32(a[:])) << 32 }
