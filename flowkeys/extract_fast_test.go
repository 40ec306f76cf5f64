package flowkeys_test

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/ovsdp/ovsdp/flowkeys"
	"github.com/ovsdp/ovsdp/flowkeys/flowkeystest"
	"github.com/ovsdp/ovsdp/internal/header"
)

// checkHashed checks that ExtractPortHashed gives, for packet p on port
// inPort, the key, network offset and error of ExtractPortL3 and the
// hash HashMicroflow computes from that key, starting from a key whose
// words before the Geneve options are garbage (it must not depend on
// their old contents; like ExtractPort it expects a key without
// options), without reading beyond len(p) or writing to p.
func checkHashed(t *testing.T, p []byte, inPort uint32, h *flowkeys.KeyedHasher) {
	t.Helper()
	d := bytes.Clone(p)
	d = d[:len(d):len(d)]
	var want, got flowkeys.Key
	for i := range got.Words()[:flowkeys.KeyHeadWords] {
		got.Words()[i] = 0x5555555555555555
	}
	wl3, werr := flowkeys.ExtractPortL3(d, inPort, &want)
	l3, hash, err := flowkeys.ExtractPortHashed(d, inPort, &got, h)
	if err != werr {
		t.Fatalf("%x: error %v, ExtractPortL3's %v", p, err, werr)
	}
	if !bytes.Equal(d, p) {
		t.Fatalf("%x: the packet was modified", p)
	}
	if err != nil {
		return
	}
	if l3 != wl3 {
		t.Fatalf("%x: network offset %d, ExtractPortL3's %d", p, l3, wl3)
	}
	if got != want {
		t.Fatalf("%x: key\n%+v\nExtractPortL3's\n%+v", p, got, want)
	}
	if wh := flowkeys.HashMicroflow(&want, h); hash != wh {
		t.Fatalf("%x: hash %#x, HashMicroflow's %#x", p, hash, wh)
	}
}

// TestExtractPortHashed checks ExtractPortHashed against ExtractPortL3
// and HashMicroflow on the corpus and on UDP and TCP frames (the ones
// its straight-line path takes) changed byte by byte and cut at every
// length: each byte its conditions read set to the values that take or
// leave the path, and to random ones.
func TestExtractPortHashed(t *testing.T) {
	h := flowkeys.NewKeyedHasherFromSecret([]byte("extract-hashed"))
	for _, c := range flowkeystest.Corpus() {
		checkHashed(t, c.Data, c.InPort, h)
	}
	ip := func(proto uint8, df bool, payload []byte) []byte {
		return flowkeystest.IPv4(flowkeystest.IPv4Opts{Proto: proto, TTL: 64, TOS: 0x2e, DF: df}, payload)
	}
	frames := [][]byte{
		append(flowkeystest.Eth(header.EtherTypeIPv4), ip(header.IPProtoUDP, false, flowkeystest.UDP(1000, 53, []byte("xyz")))...),
		append(flowkeystest.Eth(header.EtherTypeIPv4), ip(header.IPProtoUDP, false, flowkeystest.UDP(1000, 53, nil))...),
		append(flowkeystest.Eth(header.EtherTypeIPv4), ip(header.IPProtoTCP, false, flowkeystest.TCP(40000, 80, 0x012, 0))...),
		append(flowkeystest.Eth(header.EtherTypeIPv4), ip(header.IPProtoTCP, true, append(flowkeystest.TCP(40000, 80, 0xfff, 7), 1, 2, 3))...),
	}
	values := []byte{0, 1, 4, 5, 6, 8, 0x11, 0x1f, 0x20, 0x3f, 0x40, 0x45, 0x46, 0x4f, 0x50, 0x55, 0x60, 0x80, 0x84, 0xaa, 0xf0, 0xff}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, f := range frames {
		for n := 0; n <= len(f); n++ {
			checkHashed(t, f[:n], 3, h)
		}
		for i := range f {
			m := bytes.Clone(f)
			for _, v := range values {
				m[i] = v
				checkHashed(t, m, 7, h)
			}
			for range 8 {
				m[i] = byte(rng.Uint32())
				checkHashed(t, m, rng.Uint32(), h)
			}
		}
	}
}

// FuzzExtractPortHashed checks ExtractPortHashed against ExtractPortL3
// and HashMicroflow on any input.
func FuzzExtractPortHashed(f *testing.F) {
	for _, p := range flowkeystest.Corpus() {
		f.Add(p.Data, p.InPort)
	}
	h := flowkeys.NewKeyedHasherFromSecret([]byte("fuzz-extract-hashed"))
	f.Fuzz(func(t *testing.T, data []byte, inPort uint32) {
		checkHashed(t, data, inPort, h)
	})
}

// checkHashedOver checks ExtractPortHashedOver for packet b extracted
// after packet a on the same key: a from a garbage key (zeroed false),
// which must give ExtractPortHashed's results; then b with zeroed set
// when a's extraction reported straight (a's key, but for the fields
// the straight-line path writes, is what it leaves), which must give
// ExtractPortL3's key, offset and error and HashMicroflow's hash for b,
// and report straight exactly when ExtractPortHashed's straight-line
// path takes b.
func checkHashedOver(t *testing.T, a, b []byte, inPort uint32, h *flowkeys.KeyedHasher) {
	t.Helper()
	var got, want flowkeys.Key
	for i := range got.Words()[:flowkeys.KeyHeadWords] {
		got.Words()[i] = 0x5555555555555555
	}
	_, _, straight, err := flowkeys.ExtractPortHashedOver(a, inPort, &got, h, false)
	zeroed := straight && err == nil
	if zeroed {
		// Only fields the straight-line path writes may change.
		got.IPTTL--
		got.TpSrc++
	}
	wl3, werr := flowkeys.ExtractPortL3(b, inPort+1, &want)
	l3, hash, straight, err := flowkeys.ExtractPortHashedOver(b, inPort+1, &got, h, zeroed)
	if err != werr {
		t.Fatalf("%x after %x: error %v, ExtractPortL3's %v", b, a, err, werr)
	}
	if err != nil {
		return
	}
	if l3 != wl3 || got != want {
		t.Fatalf("%x after %x (zeroed %v): offset %d, key\n%+v\nExtractPortL3's %d,\n%+v", b, a, zeroed, l3, got, wl3, want)
	}
	if wh := flowkeys.HashMicroflow(&want, h); hash != wh {
		t.Fatalf("%x after %x: hash %#x, HashMicroflow's %#x", b, a, hash, wh)
	}
	// straight must not be claimed for a frame the general extraction
	// took: a key it wrote may have other fields set. Extracting an
	// untagged UDP frame over it with zeroed set tells.
	if straight {
		u := append(flowkeystest.Eth(header.EtherTypeIPv4), flowkeystest.IPv4(flowkeystest.IPv4Opts{Proto: header.IPProtoUDP, TTL: 9}, flowkeystest.UDP(1, 2, nil))...)
		flowkeys.ExtractPortL3(u, inPort, &want)
		flowkeys.ExtractPortHashedOver(u, inPort, &got, h, true)
		if got != want {
			t.Fatalf("%x reported straight, but a straight-line key over its key is\n%+v\nnot\n%+v", b, got, want)
		}
	}
}

// TestExtractPortHashedOver checks ExtractPortHashedOver over the keys
// of the corpus's frames and the straight-line frames of
// TestExtractPortHashed, in every order of two, cut and changed.
func TestExtractPortHashedOver(t *testing.T) {
	h := flowkeys.NewKeyedHasherFromSecret([]byte("extract-hashed-over"))
	var frames [][]byte
	for _, c := range flowkeystest.Corpus() {
		frames = append(frames, c.Data)
	}
	ip := func(proto uint8, payload []byte) []byte {
		return flowkeystest.IPv4(flowkeystest.IPv4Opts{Proto: proto, TTL: 64, TOS: 0x2e}, payload)
	}
	straight := [][]byte{
		append(flowkeystest.Eth(header.EtherTypeIPv4), ip(header.IPProtoUDP, flowkeystest.UDP(1000, 53, []byte("xyz")))...),
		append(flowkeystest.Eth(header.EtherTypeIPv4), ip(header.IPProtoTCP, flowkeystest.TCP(40000, 80, 0x012, 0))...),
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for _, f := range straight {
		frames = append(frames, f, f[:len(f)-1])
		for range 32 {
			m := bytes.Clone(f)
			m[rng.IntN(len(m))] = byte(rng.Uint32())
			frames = append(frames, m)
		}
	}
	n := 0
	for _, a := range frames {
		for _, b := range frames {
			checkHashedOver(t, a, b, 5, h)
			n++
		}
	}
	t.Logf("%d pairs", n)
}

// FuzzExtractPortHashedOver checks ExtractPortHashedOver on any two
// inputs, one extracted over the other's key.
func FuzzExtractPortHashedOver(f *testing.F) {
	c := flowkeystest.Corpus()
	for i, p := range c {
		f.Add(p.Data, c[(i+1)%len(c)].Data, p.InPort)
	}
	h := flowkeys.NewKeyedHasherFromSecret([]byte("fuzz-extract-hashed-over"))
	f.Fuzz(func(t *testing.T, a, b []byte, inPort uint32) {
		checkHashedOver(t, a, b, inPort, h)
	})
}

func TestExtractPortHashedAllocs(t *testing.T) {
	h := flowkeys.NewKeyedHasher()
	var k flowkeys.Key
	for _, c := range flowkeystest.Corpus() {
		if a := testing.AllocsPerRun(100, func() { _, _, _ = flowkeys.ExtractPortHashed(c.Data, 1, &k, h) }); a != 0 {
			t.Errorf("%s: %.1f allocations", c.Name, a)
		}
	}
}
