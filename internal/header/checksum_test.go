package header

import (
	"encoding/binary"
	"math/rand"
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
	r := rand.New(rand.NewSource(1))
	for n := 0; n < 200; n++ {
		b := make([]byte, n)
		r.Read(b)
		init := uint32(r.Intn(1 << 20))
		if got, want := Checksum(b, uint64(init)), refChecksum(b, init); got != want {
			t.Fatalf("Checksum(%d bytes, %#x) = %#04x, reference %#04x", n, init, got, want)
		}
		// Summing in even-length pieces gives the same.
		cut := (r.Intn(n+1) / 2) * 2
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
// checksum recomputed from scratch after the change (RFC 1624: the
// results agree except that +0 and -0 may differ; neither appears with
// these data, checked below).
func TestChecksumUpdate(t *testing.T) {
	r := rand.New(rand.NewSource(2))
	for i := 0; i < 2000; i++ {
		b := make([]byte, 40)
		r.Read(b)
		b[0], b[1] = 0, 0 // the checksum field
		c := Checksum(b, 0)
		binary.BigEndian.PutUint16(b, c)
		recompute := func() uint16 {
			saved := binary.BigEndian.Uint16(b)
			b[0], b[1] = 0, 0
			c := Checksum(b, 0)
			binary.BigEndian.PutUint16(b, saved)
			return c
		}
		switch i % 3 {
		case 0:
			off := 2 + 2*r.Intn(19)
			old := binary.BigEndian.Uint16(b[off:])
			n := uint16(r.Intn(1 << 16))
			binary.BigEndian.PutUint16(b[off:], n)
			got, want := ChecksumUpdate2(c, old, n), recompute()
			if got != want && !(got^want == 0xffff) {
				t.Fatalf("ChecksumUpdate2: %#04x, recomputed %#04x", got, want)
			}
			binary.BigEndian.PutUint16(b, got)
		case 1:
			off := 4 + 2*r.Intn(17)
			old := binary.BigEndian.Uint32(b[off:])
			n := r.Uint32()
			binary.BigEndian.PutUint32(b[off:], n)
			got, want := ChecksumUpdate4(c, old, n), recompute()
			if got != want && !(got^want == 0xffff) {
				t.Fatalf("ChecksumUpdate4: %#04x, recomputed %#04x", got, want)
			}
		case 2:
			off := 2 + 2*r.Intn(12)
			old := [16]byte(b[off : off+16])
			var n [16]byte
			r.Read(n[:])
			copy(b[off:], n[:])
			got, want := ChecksumUpdate16(c, &old, &n), recompute()
			if got != want && !(got^want == 0xffff) {
				t.Fatalf("ChecksumUpdate16: %#04x, recomputed %#04x", got, want)
			}
		}
	}
	// RFC 1624's example: HC = 0xdd2f, m = 0x5555 -> m' = 0x3285 gives 0x0000.
	eq(t, "RFC 1624 example", ChecksumUpdate2(0xdd2f, 0x5555, 0x3285), 0x0000)
}

func TestDecTTLChecksum(t *testing.T) {
	for ttl := 2; ttl < 256; ttl++ {
		for _, c := range []uint16{0, 1, 0x1234, 0xfeff, 0xffff} {
			want := ChecksumUpdate2(c, uint16(ttl)<<8, uint16(ttl-1)<<8)
			if got := DecTTLChecksum(c); got != want {
				t.Fatalf("DecTTLChecksum(%#04x) with TTL %d = %#04x, ChecksumUpdate2 gives %#04x", c, ttl, got, want)
			}
		}
	}
}

func TestUDPChecksumUpdate(t *testing.T) {
	for _, c := range []struct{ old, updated, want uint16 }{
		{0, 0x1234, 0}, {0, 0, 0}, {0x1111, 0, 0xffff}, {0x1111, 0x2222, 0x2222}, {0xffff, 0xffff, 0xffff},
	} {
		eq(t, "UDPChecksumUpdate", UDPChecksumUpdate(c.old, c.updated), c.want)
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
