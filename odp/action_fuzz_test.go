package odp

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// actionSeedLines returns our own and (when present) Open vSwitch's action
// text vectors, as fuzz seeds.
func actionSeedLines(f *testing.F) []string {
	var lines []string
	for _, v := range actionVectors {
		lines = append(lines, v.text)
	}
	for _, p := range []string{"testdata/actions/roundtrip.txt", filepath.Join("..", "..", "shared", "conformance", "odp-actions.txt")} {
		fh, err := os.Open(p)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(fh)
		for sc.Scan() {
			if !isCommentLine(sc.Text()) {
				lines = append(lines, sc.Text())
			}
		}
		fh.Close()
	}
	return lines
}

// FuzzUnmarshalActions: decoding never panics; whatever decodes encodes,
// and decoding that again gives the same actions (same bytes, same text).
func FuzzUnmarshalActions(f *testing.F) {
	for _, l := range actionSeedLines(f) {
		if as, err := ParseActions(l); err == nil {
			if b, err := MarshalActions(as); err == nil {
				f.Add(b)
			}
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		as, err := UnmarshalActions(b)
		if err != nil {
			return
		}
		text := FormatActions(as)
		enc, err := MarshalActions(as)
		if err != nil {
			t.Fatalf("decoded %s but cannot encode it: %v", text, err)
		}
		as2, err := UnmarshalActions(enc)
		if err != nil {
			t.Fatalf("re-encoded %s does not decode: %v (%x)", text, err, enc)
		}
		enc2, err := MarshalActions(as2)
		if err != nil {
			t.Fatalf("second encode: %v", err)
		}
		if !bytes.Equal(enc, enc2) {
			t.Fatalf("encode not stable:\n %x\n %x", enc, enc2)
		}
		if t2 := FormatActions(as2); t2 != text {
			t.Fatalf("text not stable:\n %s\n %s", text, t2)
		}
	})
}

// FuzzParseActions: parsing never panics; whatever parses formats to text
// that parses again to the same text, and encodes and decodes to it too.
func FuzzParseActions(f *testing.F) {
	for _, l := range actionSeedLines(f) {
		f.Add(l)
	}
	f.Fuzz(func(t *testing.T, s string) {
		as, err := ParseActions(s)
		if err != nil {
			return
		}
		text := FormatActions(as)
		as2, err := ParseActions(text)
		if err != nil {
			t.Fatalf("%q formats as %q, which does not parse: %v", s, text, err)
		}
		text2 := FormatActions(as2)
		if text2 != text {
			t.Fatalf("%q: text not stable:\n %s\n %s", s, text, text2)
		}
		b, err := MarshalActions(as2)
		if err != nil {
			return // e.g. a set of a key whose value cannot be encoded
		}
		as3, err := UnmarshalActions(b)
		if err != nil {
			t.Fatalf("%s encodes to %x, which does not decode: %v", text, b, err)
		}
		if t3 := FormatActions(as3); t3 != text {
			t.Fatalf("%s: through netlink it becomes %s", text, t3)
		}
	})
}
