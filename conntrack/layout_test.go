package conntrack

import (
	"testing"
	"unsafe"
)

// TestConnLayout checks the layout the lookup relies on (see conn): a
// connection is 256 bytes, a size class whose objects are 256-byte
// aligned, and both entries and the fields a lookup reads lie in its
// first 128 bytes, one aligned pair of cache lines.
func TestConnLayout(t *testing.T) {
	var c conn
	if n := unsafe.Sizeof(c); n != 256 {
		t.Errorf("conn is %d bytes, want 256", n)
	}
	for _, f := range []struct {
		name     string
		off, end uintptr
	}{
		{"e0", unsafe.Offsetof(c.e0), unsafe.Offsetof(c.e0) + unsafe.Sizeof(c.e0)},
		{"e1", unsafe.Offsetof(c.e1), unsafe.Offsetof(c.e1) + unsafe.Sizeof(c.e1)},
		{"status", unsafe.Offsetof(c.status), unsafe.Offsetof(c.status) + unsafe.Sizeof(c.status)},
		{"dead", unsafe.Offsetof(c.dead), unsafe.Offsetof(c.dead) + unsafe.Sizeof(c.dead)},
		{"expires", unsafe.Offsetof(c.expires), unsafe.Offsetof(c.expires) + unsafe.Sizeof(c.expires)},
	} {
		if f.end > 128 {
			t.Errorf("conn.%s at bytes %d-%d, outside the first 128", f.name, f.off, f.end-1)
		}
	}
	for _, f := range []struct {
		name     string
		off, end uintptr
	}{
		{"labels", unsafe.Offsetof(c.labels), unsafe.Offsetof(c.labels) + unsafe.Sizeof(c.labels)},
		{"mark", unsafe.Offsetof(c.mark), unsafe.Offsetof(c.mark) + unsafe.Sizeof(c.mark)},
	} {
		if f.off < 128 || f.end > 192 {
			t.Errorf("conn.%s at bytes %d-%d, outside the third line (128-191)", f.name, f.off, f.end-1)
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

// TestEntryDir: an entry's direction is which of its connection's
// entries it is.
func TestEntryDir(t *testing.T) {
	c := &conn{}
	c.e0.c, c.e1.c = c, c
	if c.e0.dir() != dirOrig || c.e1.dir() != dirReply {
		t.Fatalf("directions %d %d", c.e0.dir(), c.e1.dir())
	}
}
