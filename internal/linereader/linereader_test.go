package linereader

import (
	"errors"
	"io"
	"strings"
	"testing"
)

type line struct {
	s    string
	n    int
	long bool
}

func readAll(t *testing.T, r *Reader) []line {
	t.Helper()
	var got []line
	for {
		b, n, long, err := r.Next()
		if err == io.EOF {
			return got
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, line{string(b), n, long})
	}
}

// TestNext: lines up to max bytes come whole (CRLF or LF endings), longer ones (with or
// without a newline, longer than the bufio buffer too) are skipped with
// their length, and the line after a long one is read in step.
func TestNext(t *testing.T) {
	big := strings.Repeat("x", 200*1024)
	in := "abc\r\n" + strings.Repeat("y", 10) + "\n" + strings.Repeat("z", 11) + "\n" + big + "\n\nlast" + "\n" + strings.Repeat("w", 11)
	got := readAll(t, New(strings.NewReader(in), 10))
	want := []line{{"abc", 5, false}, {strings.Repeat("y", 10), 11, false}, {"", 12, true},
		{"", len(big) + 1, true}, {"", 1, false}, {"last", 5, false}, {"", 11, true}}
	if len(got) != len(want) {
		t.Fatalf("got %d lines %v, want %d", len(got), got, len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("line %d: %+v, want %+v", i+1, got[i], want[i])
		}
	}
}

// TestBeforeRead: BeforeRead runs before every read, and its error ends
// Next.
func TestBeforeRead(t *testing.T) {
	r := New(strings.NewReader("a\nb\n"), 10)
	calls := 0
	stop := errors.New("stop")
	r.BeforeRead = func() error {
		calls++
		if calls == 2 {
			return stop
		}
		return nil
	}
	if b, _, _, err := r.Next(); err != nil || string(b) != "a" {
		t.Fatalf("first line %q, %v", b, err)
	}
	if _, _, _, err := r.Next(); !errors.Is(err, stop) {
		t.Fatalf("second Next: %v, want BeforeRead's error", err)
	}
}

// FuzzNext: the lines account for every input byte, none is longer than
// max, and a line that is not long is the input's line without its ending.
func FuzzNext(f *testing.F) {
	f.Add([]byte("abc\r\nyyyyyyyyyy\nzzzzzzzzzzz\nlast"), 10)
	f.Add([]byte("\n\n\r\n"), 0)
	f.Fuzz(func(t *testing.T, in []byte, max int) {
		if max < 0 || max > 1<<20 {
			return
		}
		r := New(strings.NewReader(string(in)), max)
		total := 0
		for {
			b, n, long, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(b) > max || (long && b != nil) {
				t.Fatalf("line %q (long %v) over max %d", b, long, max)
			}
			raw := strings.TrimSuffix(strings.TrimSuffix(string(in[total:total+n]), "\n"), "\r")
			if !long && raw != string(b) {
				t.Fatalf("line %q, input line %q", b, raw)
			}
			total += n
		}
		if total != len(in) {
			t.Fatalf("lines took %d bytes of %d", total, len(in))
		}
	})
}
