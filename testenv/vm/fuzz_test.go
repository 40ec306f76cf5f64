package vm

import (
	"bytes"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
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

// FuzzParseTimeout: no panic; anything accepted is positive and is the
// number of seconds, or the Go duration, that the string says; an integer
// number of seconds that fits is accepted. The overflow it found
// (issue 21) is kept in testdata/fuzz/FuzzParseTimeout.
func FuzzParseTimeout(f *testing.F) {
	for _, s := range []string{"20m", "90", "0", "-1s", "1e9", "9999999999999999999", "9227000000", "2562048h"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseTimeout(s)
		n, nerr := strconv.ParseInt(s, 10, 64)
		if nerr == nil && n > 0 && n <= maxTimeoutSeconds && err != nil {
			t.Fatalf("ParseTimeout(%q) refused %d seconds: %v", s, n, err)
		}
		if _, perr := time.ParseDuration(s); perr == nil {
			if _, ok := durationSyntax(s); !ok {
				t.Fatalf("durationSyntax(%q) refuses what time.ParseDuration accepts", s)
			}
		}
		if err != nil {
			if strings.Contains(err.Error(), "too large") && !isSeconds(s) && approxNanoseconds(t, s) < 9.2e18 {
				t.Fatalf("ParseTimeout(%q) calls %g ns too large: %v", s, approxNanoseconds(t, s), err)
			}
			return
		}
		if d <= 0 {
			t.Fatalf("ParseTimeout(%q) = %v", s, d)
		}
		if nerr == nil {
			if d != time.Duration(n)*time.Second || d/time.Second != time.Duration(n) {
				t.Fatalf("ParseTimeout(%q) = %v, want %d seconds", s, d, n)
			}
		} else if want, perr := time.ParseDuration(s); perr != nil || d != want {
			t.Fatalf("ParseTimeout(%q) = %v, time.ParseDuration says %v, %v", s, d, want, perr)
		}
	})
}

// approxNanoseconds is the value of a well-formed Go duration in
// nanoseconds, computed in floating point so that it does not overflow.
func approxNanoseconds(t *testing.T, s string) float64 {
	unit := map[string]float64{"ns": 1, "us": 1e3, "\u00b5s": 1e3, "\u03bcs": 1e3, "ms": 1e6, "s": 1e9, "m": 60e9, "h": 3600e9}
	sum := 0.0
	for _, m := range durationPart.FindAllStringSubmatch(strings.TrimLeft(s, "+-"), -1) {
		v, err := strconv.ParseFloat(m[1], 64)
		if err != nil || unit[m[2]] == 0 {
			t.Fatalf("%q: part %q: not a well-formed duration (%v)", s, m[0], err)
		}
		sum += v * unit[m[2]]
	}
	return sum
}

var durationPart = regexp.MustCompile(`([0-9]*\.?[0-9]*)([^0-9.]+)`)

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
