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

func TestExtractPortHashedAllocs(t *testing.T) {
	h := flowkeys.NewKeyedHasher()
	var k flowkeys.Key
	for _, c := range flowkeystest.Corpus() {
		if a := testing.AllocsPerRun(100, func() { _, _, _ = flowkeys.ExtractPortHashed(c.Data, 1, &k, h) }); a != 0 {
			t.Errorf("%s: %.1f allocations", c.Name, a)
		}
	}
}
