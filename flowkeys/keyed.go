package flowkeys

import (
	crand "crypto/rand"
	"encoding/binary"
	"math/bits"
)

// KeyedHasher hashes keys with a secret of its own, so that nobody who
// does not know the secret can choose keys that collide. Give every hash
// table its own KeyedHasher (NewKeyedHasher); see the comment at the top
// of hash.go for why a table fed by the network must not use Hash.
//
// The hash is NH (the universal hash of UMAC): each 64-bit word w_i is
// split into 32-bit halves which are added to secret halves and
// multiplied, and the 64-bit products are summed; a final 64-bit mixer
// (the murmur3 finaliser) spreads the sum over the 32 result bits. Two
// distinct keys of the same range collide in the NH sum with probability
// at most 2^-32 over the choice of secret.
type KeyedHasher struct {
	secret [KeyWords]uint64
	final  uint64
}

// NewKeyedHasher returns a KeyedHasher with a secret from crypto/rand.
func NewKeyedHasher() *KeyedHasher {
	var b [8 * (KeyWords + 1)]byte
	if _, err := crand.Read(b[:]); err != nil {
		// crypto/rand.Read does not fail on supported platforms
		// (it panics itself if the OS source breaks).
		panic("flowkeys: crypto/rand: " + err.Error())
	}
	return NewKeyedHasherFromSecret(b[:])
}

// NewKeyedHasherFromSecret returns a KeyedHasher whose secret is derived
// from secret (for reproducible tests; use NewKeyedHasher otherwise).
// Secrets shorter than 8*(KeyWords+1) bytes are stretched with a
// SplitMix64 sequence seeded by them.
func NewKeyedHasherFromSecret(secret []byte) *KeyedHasher {
	h := &KeyedHasher{}
	if len(secret) >= 8*(KeyWords+1) {
		// Every word comes from the secret: the stretching sequence
		// is not needed (NewKeyedHasher's case, once per cache).
		for i := range h.secret {
			h.secret[i] = binary.LittleEndian.Uint64(secret[8*i:])
		}
		h.final = binary.LittleEndian.Uint64(secret[8*KeyWords:])
		return h
	}
	stretchSecret(h, secret)
	return h
}

// stretchSecret sets h's words from secret, each word the secret does
// not fill taken from a SplitMix64 sequence seeded by the whole secret.
// For a secret of 8*(KeyWords+1) bytes or more it gives what
// NewKeyedHasherFromSecret's shortcut gives (the sequence is then
// computed and unused).
func stretchSecret(h *KeyedHasher, secret []byte) {
	var s uint64
	for i, c := range secret {
		s ^= uint64(c) << (8 * (i % 8))
		if i%8 == 7 {
			s = splitmix(&s)
		}
	}
	for i := range h.secret {
		if 8*i+8 <= len(secret) {
			h.secret[i] = binary.LittleEndian.Uint64(secret[8*i:])
		} else {
			h.secret[i] = splitmix(&s)
		}
	}
	if 8*KeyWords+8 <= len(secret) {
		h.final = binary.LittleEndian.Uint64(secret[8*KeyWords:])
	} else {
		h.final = splitmix(&s)
	}
}

func splitmix(s *uint64) uint64 {
	*s += 0x9e3779b97f4a7c15
	z := *s
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// Hash returns the keyed hash of the words of k in r, with seed mixed in
// (a table may pass its own seed, or 0). It panics if r is not Valid.
func (h *KeyedHasher) Hash(k *Key, r Range, seed uint32) uint32 {
	return HashKeyed(k, r, h, seed)
}

// HashKeyed returns the keyed hash of the words of k in r under h's
// secret. This is the hash a flow table should use.
func HashKeyed(k *Key, r Range, h *KeyedHasher, seed uint32) uint32 {
	if !r.Valid() {
		panic("flowkeys: HashKeyed of an invalid range")
	}
	w := k.Words()
	s := &h.secret
	// Four independent sums keep four multiplies in flight; the fixed
	// arrays and the checked range let the compiler drop bounds checks.
	var sum0, sum1, sum2, sum3 uint64
	i, end := uint(r.Start), uint(r.End)
	for ; i+4 <= end && i+3 < KeyWords; i += 4 {
		sum0 += nh(w[i], s[i])
		sum1 += nh(w[i+1], s[i+1])
		sum2 += nh(w[i+2], s[i+2])
		sum3 += nh(w[i+3], s[i+3])
	}
	for ; i < end && i < KeyWords; i++ {
		sum0 += nh(w[i], s[i])
	}
	return finish((sum0 + sum1 + sum2 + sum3) ^ h.final ^ uint64(seed)<<32 ^ uint64(r.Start)<<8 ^ uint64(r.End))
}

// HashKeyedMasked returns HashKeyed of k's words in r masked with mask's
// (k AND mask), without writing the masked words anywhere: a megaflow
// table hashes every packet under each mask it tries, and this reads the
// key and the mask once instead of storing a masked copy and reading it
// back. It panics if r is not Valid.
func HashKeyedMasked(k, mask *Key, r Range, h *KeyedHasher, seed uint32) uint32 {
	if !r.Valid() {
		panic("flowkeys: HashKeyedMasked of an invalid range")
	}
	w, m := k.Words(), mask.Words()
	s := &h.secret
	var sum0, sum1, sum2, sum3 uint64
	i, end := uint(r.Start), uint(r.End)
	for ; i+4 <= end && i+3 < KeyWords; i += 4 {
		sum0 += nh(w[i]&m[i], s[i])
		sum1 += nh(w[i+1]&m[i+1], s[i+1])
		sum2 += nh(w[i+2]&m[i+2], s[i+2])
		sum3 += nh(w[i+3]&m[i+3], s[i+3])
	}
	for ; i < end && i < KeyWords; i++ {
		sum0 += nh(w[i]&m[i], s[i])
	}
	return finish((sum0 + sum1 + sum2 + sum3) ^ h.final ^ uint64(seed)<<32 ^ uint64(r.Start)<<8 ^ uint64(r.End))
}

// nh is one NH term: the two 32-bit halves of w, each added to the
// matching half of the secret word modulo 2^32, multiplied to 64 bits.
func nh(w, s uint64) uint64 {
	lo := uint32(w) + uint32(s)
	hi := uint32(w>>32) + uint32(s>>32)
	return uint64(lo) * uint64(hi)
}

// HashMicroflow returns a keyed hash, under h's secret, of the fields
// that tell one microflow of packets from another: the input port and
// recirculation ID, the Ethernet addresses, type and outer VLAN TCI, the
// IP protocol, the IPv4 (or ARP) addresses, the IPv6 addresses of an
// IPv6 packet, and the L4 ports. It plays the part of the kernel's
// skb_get_hash (or a NIC's RSS hash) in front of the mask cache: a
// datapath's exact-match cache indexes by it and validates every hit
// against the flow's masked key, so fields left out (the packet
// metadata other than the port, TTL, TCP flags, ND and MPLS fields, ...)
// only let packets share a cache set, never a wrong match.
//
// It reads each field at its own width, the width key extraction writes
// it with, so it never waits for several narrow stores to be merged into
// one wide load. The fields make 5 words (9 for IPv6), arranged as the
// bytes of an untagged IPv4 frame lie (the Ethernet addresses as in its
// first 12 bytes, the L4 ports in wire order), so that ExtractPortHashed
// loads them from the packet whole; they are hashed as NH over
// pairs of 64-bit words: each pair is added to secret words modulo 2^64
// and multiplied to 128 bits (one multiply per two words, where
// HashKeyed's 32-bit NH needs one per word); the products' low and high
// halves are summed separately, and the two sums are folded and mixed
// by HashKeyed's finaliser. As with NH, nobody who does not know the
// secret can choose microflows that collide more often than any two do
// (about 2^-32 in the result).
func HashMicroflow(k *Key, h *KeyedHasher) uint32 {
	s := &h.secret
	le := binary.LittleEndian
	w0 := uint64(k.InPort) | uint64(k.RecircID)<<32
	w1 := uint64(bits.ReverseBytes16(k.TpSrc)) | uint64(bits.ReverseBytes16(k.TpDst))<<16 | uint64(k.EthType)<<32 | uint64(k.VLANTCI)<<48
	w2 := uint64(le.Uint32(k.IPv4Src[:])) | uint64(le.Uint32(k.IPv4Dst[:]))<<32
	w3 := uint64(le.Uint32(k.EthDst[:4])) | uint64(le.Uint16(k.EthDst[4:]))<<32 | uint64(le.Uint16(k.EthSrc[:2]))<<48
	w4 := uint64(le.Uint32(k.EthSrc[2:])) | uint64(k.IPProto)<<32
	lo, hi := microflowSums(w0, w1, w2, w3, w4, h)
	if k.EthType == EthTypeIPv6 {
		hi3, lo3 := bits.Mul64(le.Uint64(k.IPv6Src[:8])+s[6], le.Uint64(k.IPv6Src[8:])+s[7])
		hi4, lo4 := bits.Mul64(le.Uint64(k.IPv6Dst[:8])+s[8], le.Uint64(k.IPv6Dst[8:])+s[9])
		lo, hi = lo+lo3+lo4, hi+hi3+hi4
	}
	return finish(lo ^ hi ^ h.final)
}

// microflowSums is HashMicroflow's NH over its first five words (the
// fields of every packet), as the low and high sums of the products;
// ExtractPortHashed computes the same words from the packet.
func microflowSums(w0, w1, w2, w3, w4 uint64, h *KeyedHasher) (lo, hi uint64) {
	s := &h.secret
	hi0, lo0 := bits.Mul64(w0+s[0], w1+s[1])
	hi1, lo1 := bits.Mul64(w2+s[2], w3+s[3])
	hi2, lo2 := bits.Mul64(w4+s[4], s[5])
	return lo0 + lo1 + lo2, hi0 + hi1 + hi2
}

// finish is the keyed hashes' final mixer: it spreads an NH sum over
// the 32 result bits.
func finish(x uint64) uint32 { return uint32(Mix64(x)) }

// Mix64 is the murmur3 64-bit finaliser (xor-shift-multiply): a
// bijection of the 64-bit values whose every output bit depends on
// every input bit.
func Mix64(x uint64) uint64 {
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return x
}
