package header

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"
)

// refChecksum is RFC 1071's algorithm as written there: 16-bit words
// added into 32 bits, carries folded at the end, complemented.
func refChecksum(b []byte, init uint32) uint16 {
	s := init
	for len(b) >= 2 {
		s += uint32(b[0])<<8 | uint32(b[1])
		b = b[2:]
	}
	if len(b) == 1 {
		s += uint32(b[0]) << 8
	}
	for s>>16 != 0 {
		s = s&0xffff + s>>16
	}
	return ^uint16(s)
}

func TestChecksumRFC1071Example(t *testing.T) {
	// RFC 1071 section 3: the words 0001 f203 f4f5 f6f7 sum to ddf2
	// (folded), so the checksum is 220d.
	b := []byte{0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7}
	eq(t, "Fold(Sum)", Fold(Sum(b, 0)), 0xddf2)
	eq(t, "Checksum", Checksum(b, 0), 0x220d)
	eq(t, "Checksum of nothing", Checksum(nil, 0), 0xffff)
	eq(t, "odd length", Checksum([]byte{0x12}, 0), ^uint16(0x1200))
}

func TestChecksumMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	for n := 0; n < 200; n++ {
		b := make([]byte, n)
		for j := range b {
			b[j] = byte(r.Uint32())
		}
		init := uint32(r.IntN(1 << 20))
		if got, want := Checksum(b, uint64(init)), refChecksum(b, init); got != want {
			t.Fatalf("Checksum(%d bytes, %#x) = %#04x, reference %#04x", n, init, got, want)
		}
		// Summing in even-length pieces gives the same.
		cut := (r.IntN(n+1) / 2) * 2
		if got, want := ^Fold(Sum(b[cut:], Sum(b[:cut], uint64(init)))), refChecksum(b, init); got != want {
			t.Fatalf("pieces at %d of %d: %#04x, want %#04x", cut, n, got, want)
		}
	}
	// All ones: a sum that needs every fold.
	b := make([]byte, 1<<16)
	for i := range b {
		b[i] = 0xff
	}
	eq(t, "Checksum of 64 KiB of 0xff", Checksum(b, 0xffffffff), refChecksum(b, 0xffff)) // 0xffffffff folds to 0xffff
}

// TestChecksumUpdate checks every incremental update against the
// checksum recomputed from scratch after the change (moved from userdp,
// where the functions were CsumReplace2/4/16).
func TestChecksumUpdate(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 2000; i++ {
		n := 2 * (2 + rng.IntN(40))
		b := make([]byte, n)
		for j := range b {
			b[j] = byte(rng.Uint32())
		}
		c := refChecksum(b, 0)
		off := 2 * rng.IntN(n/2-1)
		switch i % 3 {
		case 0:
			old := binary.BigEndian.Uint16(b[off:])
			nw := uint16(rng.Uint32())
			binary.BigEndian.PutUint16(b[off:], nw)
			if got, want := ChecksumUpdate2(c, old, nw), refChecksum(b, 0); got != want {
				t.Fatalf("ChecksumUpdate2 %#x -> %#x: got %#04x, recomputed %#04x", old, nw, got, want)
			}
		case 1:
			old := binary.BigEndian.Uint32(b[off:])
			nw := rng.Uint32()
			binary.BigEndian.PutUint32(b[off:], nw)
			if got, want := ChecksumUpdate4(c, old, nw), refChecksum(b, 0); got != want {
				t.Fatalf("ChecksumUpdate4 %#x -> %#x: got %#04x, recomputed %#04x", old, nw, got, want)
			}
		case 2:
			if n < 18 {
				continue
			}
			off = 2 * rng.IntN((n-16)/2+1)
			var old, nw [16]byte
			copy(old[:], b[off:])
			for j := range nw {
				nw[j] = byte(rng.Uint32())
			}
			copy(b[off:], nw[:])
			if got, want := ChecksumUpdate16(c, &old, &nw), refChecksum(b, 0); got != want {
				t.Fatalf("ChecksumUpdate16: got %#04x, recomputed %#04x", got, want)
			}
		}
		// The full computation agrees with the reference too.
		if got, want := Checksum(b, 0), refChecksum(b, 0); got != want {
			t.Fatalf("Csum(Sum) = %#04x, reference %#04x (len %d)", got, want, n)
		}
	}
	// Odd length.
	b := []byte{1, 2, 3, 4, 5}
	if got, want := Checksum(b, 0), refChecksum(b, 0); got != want {
		t.Fatalf("odd length: %#04x, reference %#04x", got, want)
	}
}

func TestUDPChecksumUpdate(t *testing.T) {
	if got := UDPChecksumUpdate(0, 0x1234); got != 0 {
		t.Errorf("zero (no) checksum became %#x", got)
	}
	if got := UDPChecksumUpdate(0x1111, 0); got != 0xffff {
		t.Errorf("computed 0 stored as %#x, want 0xffff", got)
	}
	if got := UDPChecksumUpdate(0x1111, 0x2222); got != 0x2222 {
		t.Errorf("got %#x, want 0x2222", got)
	}
}

// TestChecksumUpdateRFC1624 is RFC 1624's example: HC = 0xdd2f, m =
// 0x5555 changing to m' = 0x3285 gives 0x0000 (equation 3; equation 2
// would give the 0xffff of one's complement "-0").
func TestChecksumUpdateRFC1624(t *testing.T) {
	eq(t, "ChecksumUpdate2", ChecksumUpdate2(0xdd2f, 0x5555, 0x3285), 0x0000)
}

// TestChecksumUpdateBytes checks the byte-range update against the
// checksum recomputed after the change.
func TestChecksumUpdateBytes(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 500; i++ {
		b := make([]byte, 2*(4+rng.IntN(30)))
		for j := range b {
			b[j] = byte(rng.Uint32())
		}
		c := refChecksum(b, 0)
		off := 2 * rng.IntN(len(b)/2-1)
		n := 2 * (1 + rng.IntN((len(b)-off)/2))
		old := append([]byte(nil), b[off:off+n]...)
		for j := off; j < off+n; j++ {
			b[j] = byte(rng.Uint32())
		}
		if got, want := ChecksumUpdateBytes(c, old, b[off:off+n]), refChecksum(b, 0); got != want {
			t.Fatalf("ChecksumUpdateBytes over %d bytes at %d: %#04x, recomputed %#04x", n, off, got, want)
		}
	}
}

func TestDecTTLChecksum(t *testing.T) {
	for c := 0; c < 1<<16; c++ {
		if got, want := DecTTLChecksum(uint16(c)), ChecksumUpdate2(uint16(c), 64<<8, 63<<8); got != want {
			t.Fatalf("DecTTLChecksum(%#04x) = %#04x, ChecksumUpdate2 gives %#04x", c, got, want)
		}
	}
	for ttl := 2; ttl < 256; ttl++ {
		for _, c := range []uint16{0, 1, 0x0100, 0x1234, 0xfeff, 0xff00, 0xffff} {
			want := ChecksumUpdate2(c, uint16(ttl)<<8, uint16(ttl-1)<<8)
			if got := DecTTLChecksum(c); got != want {
				t.Fatalf("DecTTLChecksum(%#04x) with TTL %d = %#04x, ChecksumUpdate2 gives %#04x", c, ttl, got, want)
			}
		}
	}
}

// TestChecksumNoAllocs pins that the checksum functions and accessors
// allocate nothing (they sit on the datapath's per-packet path).
func TestChecksumNoAllocs(t *testing.T) {
	b := make([]byte, 1500)
	var a, c [16]byte
	var sink uint64
	n := testing.AllocsPerRun(100, func() {
		ip := IPv4(b)
		sink += uint64(Checksum(b, 0)) + uint64(ip.CalculateChecksum()) + uint64(ChecksumUpdate16(1, &a, &c))
		sink += uint64(SCTP(b).CalculateChecksum()) + uint64(ip.TTL())
		sink += uint64(IPv6ExtWalk(b, 0).Offset)
	})
	if n != 0 {
		t.Errorf("%v allocations per run, want 0", n)
	}
	_ = sink
}
