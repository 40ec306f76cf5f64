package vm

import (
	"bytes"
	"strings"
	"testing"
)

// FuzzMarkerFilter: whatever the chunking, the output is the stream up to
// the first marker (or the whole stream without one).
func FuzzMarkerFilter(f *testing.F) {
	f.Add([]byte("hello <<M>> rest"), uint8(3))
	f.Add([]byte("<<<<M<<M>>"), uint8(1))
	f.Add([]byte("no marker <<M"), uint8(5))
	f.Fuzz(func(t *testing.T, data []byte, step uint8) {
		const marker = "<<M>>"
		var out bytes.Buffer
		mf := newMarkerFilter(&out, marker, nil)
		s := int(step%16) + 1
		for rest := data; len(rest) > 0; {
			n := min(s, len(rest))
			mf.Write(rest[:n])
			rest = rest[n:]
		}
		mf.Flush()
		want := data
		if i := bytes.Index(data, []byte(marker)); i >= 0 {
			want = data[:i]
			if !mf.Seen() {
				t.Fatalf("marker in %q not seen", data)
			}
		} else if mf.Seen() {
			t.Fatalf("marker seen in %q", data)
		}
		if !bytes.Equal(out.Bytes(), want) {
			t.Fatalf("input %q step %d: got %q want %q", data, s, out.Bytes(), want)
		}
	})
}

// FuzzParseTimeout: no panic, and anything accepted is positive.
func FuzzParseTimeout(f *testing.F) {
	for _, s := range []string{"20m", "90", "0", "-1s", "1e9", "9999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseTimeout(s)
		if err == nil && d <= 0 {
			t.Fatalf("ParseTimeout(%q) = %v", s, d)
		}
	})
}

// FuzzShellQuote: the quoted word has no unquoted special characters: it
// is either all safe characters or a single-quoted string in which every
// quote is the '\” sequence.
func FuzzShellQuote(f *testing.F) {
	for _, s := range []string{"", "a b", "it's", "''", "$x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		q := shellQuote(s)
		if q == s {
			for _, r := range s {
				if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("@%+=:,./_-", r)) {
					t.Fatalf("unquoted %q", s)
				}
			}
			return
		}
		if len(q) < 2 || q[0] != '\'' || q[len(q)-1] != '\'' {
			t.Fatalf("shellQuote(%q) = %q", s, q)
		}
		inner := strings.ReplaceAll(q[1:len(q)-1], `'\''`, "")
		if strings.Contains(inner, "'") {
			t.Fatalf("shellQuote(%q) = %q has a bare quote", s, q)
		}
		if strings.ReplaceAll(q[1:len(q)-1], `'\''`, "'") != s {
			t.Fatalf("shellQuote(%q) = %q does not unquote back", s, q)
		}
	})
}
