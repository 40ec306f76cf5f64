package flowkeys

import (
	"fmt"
	"hash/crc32"
	"math/bits"
	"os"
	"unsafe"
)

// Which function should a hash table use?
//
// Hash is the flow hash of the kernel's CRC patch: CRC32C over the mask's
// words, computed with the CPU's CRC instruction where there is one. It
// is fast, but CRC is linear over GF(2): anyone who can choose packet
// fields can build any number of keys with the same CRC whatever the
// seed (CRCCollisions does exactly that), and a table indexed by Hash
// then degenerates into one long chain. The kernel reverted its CRC flow
// hash for this reason.
//
// A table whose keys come from the network must therefore use a
// KeyedHasher (HashKeyed): an NH universal hash with a random secret of
// its own per table, followed by a 64-bit finaliser. Without the secret,
// no choice of keys makes them collide more often than chance (NH's
// collision probability for two distinct keys is at most 2^-32 per word
// pair), and it costs about the same as Hash. Use Hash only where the
// keys are not attacker-controlled, or to compare with the kernel.

// HashImplCRC32C and HashImplJHash2 name the implementations that Hash
// can use (see SetHashImpl).
const (
	HashImplCRC32C = "crc32c"
	HashImplJHash2 = "jhash2"
)

// HashEnv is the environment variable that, when set at start-up,
// chooses Hash's implementation ("crc32c" or "jhash2").
const HashEnv = "OVSDP_HASH"

var (
	hashFunc = hashJHash2
	hashName = HashImplJHash2
	// crcWords computes a plain CRC32C (no inversions) over n words;
	// set by the architecture's init to the hardware version.
	crcWords = crcWordsGeneric
	// crcHardware says whether crcWords uses a CPU instruction.
	crcHardware bool
)

func init() {
	initCRC()
	if crcHardware {
		hashFunc, hashName = hashCRC, HashImplCRC32C
	}
	if v := os.Getenv(HashEnv); v != "" {
		if err := SetHashImpl(v); err != nil {
			// An unusable setting must not go unnoticed, but a
			// library must not exit either: keep the default and
			// say so on standard error.
			fmt.Fprintf(os.Stderr, "flowkeys: %s=%q ignored: %v\n", HashEnv, v, err)
		}
	}
}

// SetHashImpl chooses the implementation of Hash: "crc32c" (hardware
// CRC32C where the CPU has it, a table-driven one otherwise) or "jhash2"
// (the kernel's jhash2 over 32-bit words). It is meant for start-up,
// tests and benchmarks: it must not be called while other goroutines
// hash, and hash values differ between implementations.
func SetHashImpl(name string) error {
	switch name {
	case HashImplCRC32C:
		hashFunc, hashName = hashCRC, name
	case HashImplJHash2:
		hashFunc, hashName = hashJHash2, name
	default:
		return fmt.Errorf("flowkeys: unknown hash implementation %q (want %q or %q)", name, HashImplCRC32C, HashImplJHash2)
	}
	return nil
}

// HashImpl returns the name of Hash's current implementation, and
// whether CRC32C is computed by a CPU instruction on this machine.
func HashImpl() (name string, hardwareCRC bool) { return hashName, crcHardware }

// Hash returns the flow hash of the words of k in r, with seed. With the
// "crc32c" implementation this is the plain CRC32C (Castagnoli, no pre-
// or post-inversion) of the words' memory with the seed as the initial
// value; with "jhash2" it is jhash2 of the words as 32-bit words. Hash
// is linear and therefore attackable: see the comment at the top of this
// file before using it in a hash table. It panics if r is not Valid.
func Hash(k *Key, r Range, seed uint32) uint32 {
	return hashFunc(k, r, seed)
}

func hashCRC(k *Key, r Range, seed uint32) uint32 {
	w := k.Words()[r.Start:r.End]
	if len(w) == 0 {
		return seed
	}
	return crcWords(seed, &w[0], len(w))
}

// HashCRC32C is Hash with the "crc32c" implementation, whatever
// SetHashImpl chose.
func HashCRC32C(k *Key, r Range, seed uint32) uint32 { return hashCRC(k, r, seed) }

// HashJHash2 is Hash with the "jhash2" implementation, whatever
// SetHashImpl chose.
func HashJHash2(k *Key, r Range, seed uint32) uint32 { return hashJHash2(k, r, seed) }

func hashJHash2(k *Key, r Range, seed uint32) uint32 {
	w := k.Words()[r.Start:r.End]
	if len(w) == 0 {
		return JHash2(nil, seed)
	}
	u := unsafe.Slice((*uint32)(unsafe.Pointer(&w[0])), 2*len(w))
	return JHash2(u, seed)
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// crcWordsGeneric is the portable plain CRC32C. hash/crc32 applies the
// usual pre- and post-inversion, which the two complements undo.
func crcWordsGeneric(crc uint32, p *uint64, n int) uint32 {
	b := unsafe.Slice((*byte)(unsafe.Pointer(p)), 8*n)
	return ^crc32.Update(^crc, castagnoli, b)
}

// JHash2 is the Linux kernel's jhash2: Bob Jenkins' lookup3 hashword()
// over 32-bit words with initial value seed.
func JHash2(k []uint32, seed uint32) uint32 {
	a := 0xdeadbeef + uint32(len(k))<<2 + seed
	b, c := a, a
	for len(k) > 3 {
		a += k[0]
		b += k[1]
		c += k[2]
		// __jhash_mix
		a -= c
		a ^= bits.RotateLeft32(c, 4)
		c += b
		b -= a
		b ^= bits.RotateLeft32(a, 6)
		a += c
		c -= b
		c ^= bits.RotateLeft32(b, 8)
		b += a
		a -= c
		a ^= bits.RotateLeft32(c, 16)
		c += b
		b -= a
		b ^= bits.RotateLeft32(a, 19)
		a += c
		c -= b
		c ^= bits.RotateLeft32(b, 4)
		b += a
		k = k[3:]
	}
	switch len(k) {
	case 3:
		c += k[2]
		fallthrough
	case 2:
		b += k[1]
		fallthrough
	case 1:
		a += k[0]
		// __jhash_final
		c ^= b
		c -= bits.RotateLeft32(b, 14)
		a ^= c
		a -= bits.RotateLeft32(c, 11)
		b ^= a
		b -= bits.RotateLeft32(a, 25)
		c ^= b
		c -= bits.RotateLeft32(b, 16)
		a ^= c
		a -= bits.RotateLeft32(c, 4)
		b ^= a
		b -= bits.RotateLeft32(a, 14)
		c ^= b
		c -= bits.RotateLeft32(b, 24)
	}
	return c
}
