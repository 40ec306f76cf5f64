package flowkeys_test

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/ovsdp/ovsdp/flowkeys"
)

// TestMetadataOfRoundTrip: the metadata Extract is given is what
// MetadataOf reads back from the key, every field of it (the conntrack
// original tuple included), so that a packet extracted again keeps it.
func TestMetadataOfRoundTrip(t *testing.T) {
	md := flowkeys.Metadata{InPort: 3, Priority: 4, SkbMark: 5, RecircID: 6, DPHash: 7,
		Tunnel: flowkeys.Tunnel{Proto: flowkeys.TunProtoIPv4, ID: 8, IPv4Src: [4]byte{1, 2, 3, 4}, TTL: 9, TpDst: 6081,
			Opts: []byte{0x01, 0x02, 0x80, 0x01, 0xde, 0xad, 0xbe, 0xef}},
		CTState: 0x21, CTOrigProto: 17, CTZone: 10, CTMark: 11, CTLabels: [16]byte{12},
		CTOrigIPv4Src: [4]byte{10, 0, 0, 1}, CTOrigIPv4Dst: [4]byte{10, 0, 0, 2}, CTOrigIPv6Src: [16]byte{13},
		CTOrigIPv6Dst: [16]byte{14}, CTOrigTpSrc: 15, CTOrigTpDst: 16}
	frame := make([]byte, 60)
	frame[12], frame[13] = 0x88, 0xb5 // an EtherType with nothing after it to parse
	var k flowkeys.Key
	if err := flowkeys.Extract(frame, &md, &k); err != nil {
		t.Fatal(err)
	}
	if got := flowkeys.MetadataOf(&k); !reflect.DeepEqual(got, md) {
		t.Fatalf("MetadataOf\n got %+v\nwant %+v", got, md)
	}
}

// geneveFrame is an Ethernet frame with an EtherType that has nothing
// after it to parse.
func geneveFrame() []byte {
	frame := make([]byte, 60)
	frame[12], frame[13] = 0x88, 0xb5
	return frame
}

// TestExtractTunOpts: Extract copies the tunnel's Geneve options into
// the key; a key reused for a packet with fewer options, or with none
// (Extract, ExtractPort), keeps no byte of the old ones, so that it
// equals a fresh key word for word; and extracting a key again with its
// own metadata (MetadataOf, whose options alias the key) keeps them.
func TestExtractTunOpts(t *testing.T) {
	long := bytes.Repeat([]byte{0xa5}, flowkeys.TunOptsMax)
	tun := func(opts []byte) *flowkeys.Metadata {
		return &flowkeys.Metadata{InPort: 2, Tunnel: flowkeys.Tunnel{Proto: flowkeys.TunProtoIPv4, ID: 5,
			IPv4Dst: [4]byte{10, 0, 0, 1}, TTL: 64, Opts: opts}}
	}
	for _, c := range []struct {
		name string
		next func(*flowkeys.Key) error
		opts []byte
	}{
		{"fewer options", func(k *flowkeys.Key) error { return flowkeys.Extract(geneveFrame(), tun(long[:8]), k) }, long[:8]},
		{"tunnel without options", func(k *flowkeys.Key) error { return flowkeys.Extract(geneveFrame(), tun(nil), k) }, nil},
		{"no tunnel", func(k *flowkeys.Key) error { return flowkeys.Extract(geneveFrame(), &flowkeys.Metadata{InPort: 2}, k) }, nil},
		{"nil metadata", func(k *flowkeys.Key) error { return flowkeys.Extract(geneveFrame(), nil, k) }, nil},
		{"SetTunOpts(nil), ExtractPort", func(k *flowkeys.Key) error {
			k.SetTunOpts(nil)
			return flowkeys.ExtractPort(geneveFrame(), 2, k)
		}, nil},
		{"again with its own metadata", func(k *flowkeys.Key) error {
			md := flowkeys.MetadataOf(k)
			return flowkeys.Extract(geneveFrame(), &md, k)
		}, long},
	} {
		t.Run(c.name, func(t *testing.T) {
			var k flowkeys.Key
			if err := flowkeys.Extract(geneveFrame(), tun(long), &k); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(k.TunOptsBytes(), long) || k.TunOptsLen != flowkeys.TunOptsMax {
				t.Fatalf("options %x (len %d), want %x", k.TunOptsBytes(), k.TunOptsLen, long)
			}
			if err := c.next(&k); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(k.TunOptsBytes(), c.opts) {
				t.Errorf("options %x, want %x", k.TunOptsBytes(), c.opts)
			}
			for i, b := range k.TunOpts[len(c.opts):] {
				if b != 0 {
					t.Fatalf("option byte %d after the %d of the key is %#x, want 0", len(c.opts)+i, len(c.opts), b)
				}
			}
		})
	}
}

// TestExtractPortStaleOpts: ExtractPort, which does not look for
// options, given a key that has some, zeroes their length and leaves
// their bytes; a mask on options (whose length it matches exactly)
// then still tells the key from one with those options, and a flow
// for no options matches it (the bytes past the length are masked out).
func TestExtractPortStaleOpts(t *testing.T) {
	opts := []byte{0x01, 0x02, 0x80, 0x01, 0xde, 0xad, 0xbe, 0xef}
	var k, withOpts, without flowkeys.Key
	md := &flowkeys.Metadata{InPort: 2, Tunnel: flowkeys.Tunnel{Proto: flowkeys.TunProtoIPv4, TTL: 1, Opts: opts}}
	if err := flowkeys.Extract(geneveFrame(), md, &k); err != nil {
		t.Fatal(err)
	}
	withOpts = k
	if err := flowkeys.ExtractPort(geneveFrame(), 2, &k); err != nil {
		t.Fatal(err)
	}
	if err := flowkeys.ExtractPort(geneveFrame(), 2, &without); err != nil {
		t.Fatal(err)
	}
	if k.TunOptsLen != 0 || k.TunOptsBytes() != nil {
		t.Fatalf("after ExtractPort: TunOptsLen %d", k.TunOptsLen)
	}
	var m flowkeys.Key
	m.InPort, m.TunOptsLen = 0xffff, 0xff
	for i := range opts {
		m.TunOpts[i] = 0xff
	}
	if flowkeys.EqualMasked(&k, &withOpts, &m, m.Range()) {
		t.Error("a key without options matches a flow with them")
	}
	// A flow that matches "no options" has a mask on their length
	// only (a mask's options are as long as its key's).
	var m0 flowkeys.Key
	m0.InPort, m0.TunOptsLen = 0xffff, 0xff
	if !flowkeys.EqualMasked(&k, &without, &m0, m0.Range()) {
		t.Error("a key whose old option bytes stayed does not match a flow without options")
	}
}

// TestSetTunOpts: SetTunOpts cuts options longer than TunOptsMax and
// zeroes what a longer earlier value left.
func TestSetTunOpts(t *testing.T) {
	var k flowkeys.Key
	k.SetTunOpts(bytes.Repeat([]byte{1}, flowkeys.TunOptsMax+8))
	if k.TunOptsLen != flowkeys.TunOptsMax {
		t.Fatalf("TunOptsLen %d, want %d", k.TunOptsLen, flowkeys.TunOptsMax)
	}
	k.SetTunOpts([]byte{9, 9, 9, 9})
	want := flowkeys.Key{TunOptsLen: 4}
	copy(want.TunOpts[:], []byte{9, 9, 9, 9})
	if k != want {
		t.Fatalf("after a shorter SetTunOpts: options %x", k.TunOpts)
	}
	k.SetTunOpts(nil)
	if !k.IsZero() || k.TunOptsBytes() != nil {
		t.Fatalf("after SetTunOpts(nil): options %x (len %d)", k.TunOpts, k.TunOptsLen)
	}
}
