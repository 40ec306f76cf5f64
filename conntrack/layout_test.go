package conntrack

import (
	"testing"
	"unsafe"
)

// TestConnLayout checks the layout the lookup relies on (see conn): a
// connection is 256 bytes, a size class whose objects are 256-byte
// aligned; the original direction's entry and every field a lookup
// reads or writes after the entry's compare lie in its first cache line
// (bytes 0-63), the reply direction's entry one line in (connLine, which
// entry.conn subtracts) with the chain links, mark and labels in the
// third line.
func TestConnLayout(t *testing.T) {
	var c conn
	if n := unsafe.Sizeof(c); n != 256 {
		t.Errorf("conn is %d bytes, want 256", n)
	}
	if off := unsafe.Offsetof(c.e1); off != connLine {
		t.Errorf("conn.e1 at byte %d, want connLine (%d)", off, connLine)
	}
	type field struct {
		name     string
		off, end uintptr
	}
	for _, l := range []struct {
		line   uintptr
		fields []field
	}{
		{0, []field{
			{"e0", unsafe.Offsetof(c.e0), unsafe.Offsetof(c.e0) + unsafe.Sizeof(c.e0)},
			{"status", unsafe.Offsetof(c.status), unsafe.Offsetof(c.status) + unsafe.Sizeof(c.status)},
			{"expires", unsafe.Offsetof(c.expires), unsafe.Offsetof(c.expires) + unsafe.Sizeof(c.expires)},
			{"stream", unsafe.Offsetof(c.stream), unsafe.Offsetof(c.stream) + unsafe.Sizeof(c.stream)},
		}},
		{1, []field{
			{"e1", unsafe.Offsetof(c.e1), unsafe.Offsetof(c.e1) + unsafe.Sizeof(c.e1)},
			{"next", unsafe.Offsetof(c.next), unsafe.Offsetof(c.next) + unsafe.Sizeof(c.next)},
		}},
		{2, []field{
			{"labels", unsafe.Offsetof(c.labels), unsafe.Offsetof(c.labels) + unsafe.Sizeof(c.labels)},
			{"mark", unsafe.Offsetof(c.mark), unsafe.Offsetof(c.mark) + unsafe.Sizeof(c.mark)},
		}},
	} {
		for _, f := range l.fields {
			if f.off < 64*l.line || f.end > 64*(l.line+1) {
				t.Errorf("conn.%s at bytes %d-%d, outside line %d (%d-%d)", f.name, f.off, f.end-1, l.line, 64*l.line, 64*l.line+63)
			}
		}
	}
	// The allocator's size class for 256 bytes is 256 and its objects
	// start on 256-byte boundaries: check a few.
	for i := range layoutSink {
		layoutSink[i] = new(conn) // on the heap, as the tracker's
		if p := uintptr(unsafe.Pointer(layoutSink[i])); p%128 != 0 {
			t.Fatalf("a conn at %#x is not 128-byte aligned", p)
		}
	}
}

var layoutSink [64]*conn

// TestEntryConn: an entry's direction is which of its connection's
// entries it is, and its connection is found from it.
func TestEntryConn(t *testing.T) {
	tr, _ := newTestTracker(t, Config{})
	p := &Packet{Tuple: connTuple(1), Len: 64}
	var s State
	if err := tr.Execute(p, &Action{Commit: true}, &s); err != nil || s.c == nil {
		t.Fatalf("commit: %v", err)
	}
	c := s.c
	if c.e0.dir() != dirOrig || c.e1.dir() != dirReply {
		t.Fatalf("directions %d %d", c.e0.dir(), c.e1.dir())
	}
	if c.e0.conn() != c || c.e1.conn() != c {
		t.Fatalf("connections %p %p, want %p", c.e0.conn(), c.e1.conn(), c)
	}
	if c.e0.next() != &c.next[0] || c.e1.next() != &c.next[1] {
		t.Fatalf("chain links %p %p, want %p %p", c.e0.next(), c.e1.next(), &c.next[0], &c.next[1])
	}
}

// TestLookupLines: an original-direction hit reads the bucket's line
// and its connection's first line only; a reply-direction hit the
// bucket's, the connection's second line (its entry) and first.
func TestLookupLines(t *testing.T) {
	tr, _ := newTestTracker(t, Config{MaxConns: 4096})
	fill(t, tr, 1) // alone in the table: no other entry's tag can match
	tp := connTuple(0)
	var s State
	if err := tr.Execute(&Packet{Tuple: tp, Len: 64}, &Action{}, &s); err != nil || s.c == nil {
		t.Fatalf("lookup: %v", err)
	}
	c := s.c
	line := func(p unsafe.Pointer) uintptr { return uintptr(p) &^ 63 }
	bucketLine := func(tp *Tuple) uintptr {
		return line(unsafe.Pointer(&tr.tab.buckets[tr.tab.seed.hash(tp, 0)&tr.tab.mask]))
	}
	reply := rev(t, tp)
	for _, tc := range []struct {
		name string
		tp   *Tuple
		want []uintptr
	}{
		{"original", &tp, []uintptr{bucketLine(&tp), line(unsafe.Pointer(c))}},
		{"reply", &reply, []uintptr{bucketLine(&reply), line(unsafe.Pointer(&c.e1)), line(unsafe.Pointer(c))}},
	} {
		got := map[uintptr]bool{}
		tr.tab.lookupLines(tc.tp, 0, func(l uintptr) { got[l] = true })
		want := map[uintptr]bool{}
		for _, l := range tc.want {
			want[l] = true
		}
		if len(got) != len(want) {
			t.Errorf("%s: %d lines read, want %d", tc.name, len(got), len(want))
		}
		for l := range want {
			if !got[l] {
				t.Errorf("%s: line %#x not among those read (%v)", tc.name, l, got)
			}
		}
	}
}
