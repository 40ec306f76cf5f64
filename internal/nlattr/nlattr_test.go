package nlattr

import (
	"encoding/binary"
	"errors"
	"strconv"
	"testing"
)

// attr builds one attribute of type t with payload p, padded unless
// unpadded.
func attr(t uint16, p []byte, unpadded bool) []byte {
	b := binary.NativeEndian.AppendUint16(nil, uint16(HdrLen+len(p)))
	b = binary.NativeEndian.AppendUint16(b, t)
	b = append(b, p...)
	for !unpadded && len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

func cat(bs ...[]byte) []byte {
	var out []byte
	for _, b := range bs {
		out = append(out, b...)
	}
	return out
}

type seen struct {
	typ    uint16
	nested bool
	data   string
	off    int
}

// walk walks b with All, and again with Next, and fails unless both
// see the same.
func walk(t *testing.T, b []byte, base int) ([]seen, *Walker) {
	w := NewWalker(b, base)
	var out []seen
	for a := range w.All() {
		out = append(out, seen{a.Type, a.Nested, string(a.Data), a.Offset})
	}
	p := NewWalker(b, base)
	var a Attr
	for i := 0; p.Next(&a); i++ {
		if i >= len(out) || out[i] != (seen{a.Type, a.Nested, string(a.Data), a.Offset}) {
			t.Errorf("Next's attribute %d %+v differs from All's %+v", i, a, out)
		}
	}
	if p.Rem() != w.Rem() || (p.Err() == nil) != (w.Err() == nil) {
		t.Errorf("Next ends with Rem %d, Err %v; All with %d, %v", p.Rem(), p.Err(), w.Rem(), w.Err())
	}
	return out, &w
}

func TestWalker(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []byte
		want []seen
		rem  int
		err  string // in Err(), "" for none
		typ  int    // FramingError.Type
		off  int    // FramingError.Offset
	}{
		{name: "empty", in: nil},
		{name: "two", in: cat(attr(1, []byte("ab"), false), attr(2|FlagNested, []byte("cdef"), false)),
			want: []seen{{1, false, "ab", 100}, {2, true, "cdef", 108}}},
		{name: "byte-order flag stripped", in: attr(3|1<<14, nil, false), want: []seen{{3, false, "", 100}}},
		{name: "last unpadded", in: cat(attr(1, nil, false), attr(2, []byte("x"), true)),
			want: []seen{{1, false, "", 100}, {2, false, "x", 104}}, rem: -3},
		{name: "trailing bytes", in: cat(attr(1, nil, false), []byte{1, 2}),
			want: []seen{{1, false, "", 100}}, rem: 2, err: "2 trailing bytes, too short for an attribute header", typ: -1, off: 104},
		{name: "length past end", in: cat(attr(1, nil, false), []byte{40, 0, 7, 0, 0}),
			want: []seen{{1, false, "", 100}}, rem: 5, err: "attribute length 40 out of range [4, 5]", typ: 7, off: 104},
		{name: "length below header", in: []byte{3, 0, 9, 0}, rem: 4, err: "attribute length 3 out of range [4, 4]", typ: 9, off: 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, w := walk(t, tc.in, 100)
			if len(got) != len(tc.want) {
				t.Fatalf("walked %+v, want %+v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("attribute %d = %+v, want %+v", i, got[i], tc.want[i])
				}
			}
			if w.Rem() != tc.rem {
				t.Errorf("Rem() = %d, want %d", w.Rem(), tc.rem)
			}
			err := w.Err()
			if tc.err == "" {
				if err != nil {
					t.Errorf("Err() = %v, want nil", err)
				}
				return
			}
			var fe *FramingError
			if !errors.As(err, &fe) {
				t.Fatalf("Err() = %v, want a *FramingError", err)
			}
			if err.Error() != tc.err || fe.Type != tc.typ || fe.Offset != tc.off {
				t.Errorf("Err() = %q (type %d, offset %d), want %q (type %d, offset %d)", err, fe.Type, fe.Offset, tc.err, tc.typ, tc.off)
			}
			wantName := ""
			if tc.typ >= 0 {
				wantName = "type " + strconv.Itoa(tc.typ)
			}
			if fe.Name() != wantName {
				t.Errorf("Name() = %q, want %q", fe.Name(), wantName)
			}
			// A stopped walker stays stopped.
			var a Attr
			if w.Next(&a) {
				t.Error("Next after a framing error returned true")
			}
			for range w.All() {
				t.Error("All after a framing error yielded")
			}
		})
	}
}

// TestWalkerBreak: leaving All's loop early leaves the walk after the
// attribute last yielded, so that it can go on from there.
func TestWalkerBreak(t *testing.T) {
	b := cat(attr(1, nil, false), attr(2, nil, false), attr(3, nil, false))
	w := NewWalker(b, 0)
	for a := range w.All() {
		if a.Type == 2 {
			break
		}
	}
	var a Attr
	if !w.Next(&a) || a.Type != 3 || w.Next(&a) || w.Err() != nil || w.Rem() != 0 {
		t.Errorf("after breaking at type 2: next is %+v, Err %v, Rem %d; want type 3 then a clean end", a, w.Err(), w.Rem())
	}
}

// TestWalkerAllocs: walking, the kernel-style remainder included,
// allocates nothing; only building the error of a failed walk does.
func TestWalkerAllocs(t *testing.T) {
	b := cat(attr(1, []byte("abcd"), false), attr(2, []byte("x"), false), attr(3, nil, false))
	n := 0
	allocs := testing.AllocsPerRun(1000, func() {
		w := NewWalker(b, 4)
		for a := range w.All() {
			n += len(a.Data)
		}
		var a Attr
		for p := NewWalker(b, 4); p.Next(&a); {
			n += len(a.Data)
		}
		if w.Err() != nil || w.Rem() != 0 {
			t.Fatal("walk failed")
		}
	})
	if allocs != 0 {
		t.Errorf("a walk allocates %.1f times, want 0", allocs)
	}
}

func TestAlign(t *testing.T) {
	for n, want := range map[int]int{0: 0, 1: 4, 4: 4, 5: 8, 7: 8, 8: 8} {
		if got := Align(n); got != want {
			t.Errorf("Align(%d) = %d, want %d", n, got, want)
		}
	}
}
