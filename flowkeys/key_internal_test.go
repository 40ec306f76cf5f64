package flowkeys

import (
	"math/rand"
	"testing"
	"unsafe"
)

func TestKeyLayout(t *testing.T) {
	var k Key
	offsets := []struct {
		name string
		got  uintptr
		want uintptr
	}{
		{"TunID", unsafe.Offsetof(k.TunID), 0},
		{"TunProto", unsafe.Offsetof(k.TunProto), 60},
		{"InPort", unsafe.Offsetof(k.InPort), 64},
		{"CTMark", unsafe.Offsetof(k.CTMark), 88},
		{"MacProto", unsafe.Offsetof(k.MacProto), 92},
		{"EthSrc", unsafe.Offsetof(k.EthSrc), 96},
		{"EthType", unsafe.Offsetof(k.EthType), 108},
		{"IPProto", unsafe.Offsetof(k.IPProto), 118},
		{"TpSrc", unsafe.Offsetof(k.TpSrc), 122},
		{"TCPFlags", unsafe.Offsetof(k.TCPFlags), 126},
		{"IPv4Src", unsafe.Offsetof(k.IPv4Src), 128},
		{"IPv6Src", unsafe.Offsetof(k.IPv6Src), 136},
		{"IPv6Label", unsafe.Offsetof(k.IPv6Label), 168},
		{"NDTarget", unsafe.Offsetof(k.NDTarget), 176},
		{"ARPTHA", unsafe.Offsetof(k.ARPTHA), 210},
		{"MPLSLSE", unsafe.Offsetof(k.MPLSLSE), 216},
		{"NSHContext", unsafe.Offsetof(k.NSHContext), 240},
		{"CTLabels", unsafe.Offsetof(k.CTLabels), 256},
		{"CTOrigTpDst", unsafe.Offsetof(k.CTOrigTpDst), 314},
	}
	for _, o := range offsets {
		if o.got != o.want {
			t.Errorf("offset of %s = %d, want %d", o.name, o.got, o.want)
		}
	}
	if unsafe.Sizeof(k) != KeyBytes {
		t.Errorf("Sizeof(Key) = %d, want %d", unsafe.Sizeof(k), KeyBytes)
	}
}

func TestMaskRange(t *testing.T) {
	var m Key
	if r := m.Range(); r != (Range{}) {
		t.Errorf("zero mask range = %v", r)
	}
	m.InPort = ^uint32(0)
	m.EthType = 0xffff
	m.IPProto = 0xff
	m.IPv4Src = [4]byte{255, 255, 255, 255}
	m.IPv4Dst = [4]byte{255, 255, 255, 0}
	m.TpSrc, m.TpDst = 0xffff, 0xffff
	if r, want := m.Range(), (Range{8, 17}); r != want {
		t.Errorf("IPv4 5-tuple mask range = %v, want %v", r, want)
	}
	m.TunID = 1
	m.CTOrigTpDst = 1
	if r, want := m.Range(), (Range{0, KeyHeadWords}); r != want {
		t.Errorf("mask range without options = %v, want %v", r, want)
	}
	// A mask on 4 bytes of Geneve options (and so on their length, in
	// word 7) reaches the first option word only.
	m.TunOptsLen = 0xff
	m.TunOpts[3] = 0xff
	if r, want := m.Range(), (Range{0, KeyHeadWords + 1}); r != want {
		t.Errorf("mask range with 4 option bytes = %v, want %v", r, want)
	}
	m.TunOpts[TunOptsMax-1] = 1
	if r, want := m.Range(), (Range{0, KeyWords}); r != want {
		t.Errorf("full mask range = %v, want %v", r, want)
	}
	if !FullRange.Valid() || (Range{3, 2}).Valid() || (Range{0, KeyWords + 1}).Valid() || (Range{-1, 2}).Valid() {
		t.Error("Range.Valid is wrong")
	}
}

func TestCRCHardwareMatchesGeneric(t *testing.T) {
	if !crcHardware {
		t.Logf("no CRC instruction on this CPU: crcWords is the generic one")
	}
	rng := rand.New(rand.NewSource(1))
	var k Key
	for i := 0; i < 2000; i++ {
		for j := range k.Words() {
			k.Words()[j] = rng.Uint64()
		}
		s := rng.Intn(KeyWords)
		e := s + 1 + rng.Intn(KeyWords-s)
		seed := rng.Uint32()
		if got, want := crcWords(seed, &k.Words()[s], e-s), crcWordsGeneric(seed, &k.Words()[s], e-s); got != want {
			t.Fatalf("crcWords(%#x, words %d-%d) = %#x, generic %#x", seed, s, e, got, want)
		}
	}
}

func TestEqualMaskedAsmMatchesGeneric(t *testing.T) {
	rng := rand.New(rand.NewSource(8))
	var a, b, m Key
	for i := 0; i < 20000; i++ {
		for j := range a.Words() {
			a.Words()[j] = rng.Uint64()
			m.Words()[j] = rng.Uint64()
		}
		b = a
		if rng.Intn(2) == 0 {
			b.Words()[rng.Intn(KeyWords)] ^= 1 << rng.Intn(64)
		}
		s := rng.Intn(KeyWords)
		e := s + 1 + rng.Intn(KeyWords-s)
		got := equalMasked(&a.Words()[s], &b.Words()[s], &m.Words()[s], e-s)
		want := equalMaskedGeneric(&a.Words()[s], &b.Words()[s], &m.Words()[s], e-s)
		if got != want {
			t.Fatalf("words %d-%d: equalMasked = %v, generic %v", s, e, got, want)
		}
	}
}
