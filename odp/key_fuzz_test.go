package odp

import (
	"bytes"
	"testing"
)

func keySeeds(f *testing.F, masked bool) {
	for _, tc := range keyTable {
		f.Add(tc.text)
	}
	if masked {
		for _, s := range []string{"tcp_flags(+syn-ack)", "ct_state(+new-est)", "in_port(1/0xff),eth(src=00:01:02:03:04:05/ff:ff:ff:ff:ff:f0)",
			"tunnel(tun_id=0x1/0xff,geneve({class=0,type=0,len=4,0xa/0xff}),flags(-df+csum+key))", "key99(0102/00ff)"} {
			f.Add(s)
		}
	}
}

// FuzzUnmarshalKey: decoding never panics, and what decodes re-encodes
// to bytes that decode to the same thing.
func FuzzUnmarshalKey(f *testing.F) {
	for _, tc := range keyTable {
		f.Add(tc.wire)
	}
	f.Add(nla(1, nla(1, nla(1))))
	f.Fuzz(func(t *testing.T, b []byte) {
		k, err := UnmarshalKey(b)
		if err != nil {
			return
		}
		b1, err := MarshalKey(k)
		if err != nil {
			t.Fatalf("re-encoding %x: %v", b, err)
		}
		k2, err := UnmarshalKey(b1)
		if err != nil {
			t.Fatalf("decoding our own %x: %v", b1, err)
		}
		b2, err := MarshalKey(k2)
		if err != nil || !bytes.Equal(b1, b2) {
			t.Fatalf("unstable: %x -> %x -> %x (%v)", b, b1, b2, err)
		}
		_ = FormatKey(k, nil, true)
		_ = FormatKey(k, k, false)
	})
}

// FuzzParseKey: parsing never panics, and what parses formats to text
// that parses and formats to the same text.
func FuzzParseKey(f *testing.F) {
	keySeeds(f, false)
	f.Fuzz(func(t *testing.T, s string) {
		k, err := ParseKey(s)
		if err != nil {
			return
		}
		s1 := FormatKey(k, nil, true)
		k2, err := ParseKey(s1)
		if err != nil {
			t.Fatalf("%q formats to %q, which does not parse: %v", s, s1, err)
		}
		if s2 := FormatKey(k2, nil, true); s2 != s1 {
			t.Fatalf("unstable: %q -> %q -> %q", s, s1, s2)
		}
	})
}

// FuzzParseMaskedKey: the same for masked keys (non-verbose, as
// parse-wc-keys prints them).
func FuzzParseMaskedKey(f *testing.F) {
	keySeeds(f, true)
	f.Fuzz(func(t *testing.T, s string) {
		k, m, err := ParseMaskedKey(s)
		if err != nil {
			return
		}
		s1 := FormatKey(k, m, false)
		k2, m2, err := ParseMaskedKey(s1)
		if err != nil {
			t.Fatalf("%q formats to %q, which does not parse: %v", s, s1, err)
		}
		if s2 := FormatKey(k2, m2, false); s2 != s1 {
			t.Fatalf("unstable: %q -> %q -> %q", s, s1, s2)
		}
	})
}
