package odp

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// setMaskedActions are set_masked actions of flat attributes, as the
// handler's translations emit them.
func setMaskedActions(t *testing.T) Actions {
	t.Helper()
	acts, err := ParseActions("set(ipv4(src=10.0.0.1/255.255.255.0,ttl=63/0xff)),set(eth(src=02:00:00:00:00:01,dst=02:00:00:00:00:02/ff:ff:ff:00:00:00)),set(udp(src=53/0xffff)),1")
	if err != nil {
		t.Fatal(err)
	}
	var n int
	for _, a := range acts {
		if _, ok := a.(SetMasked); ok {
			n++
		}
	}
	if n != 3 {
		t.Fatalf("parsed %d set_masked actions of 3: %v", n, acts)
	}
	return acts
}

// TestSetMaskedInPlace: a set_masked action encoded in place (an aligned
// buffer) is the same bytes as one encoded apart (a buffer that starts
// unaligned takes the old path), and decodes back to itself.
func TestSetMaskedInPlace(t *testing.T) {
	acts := setMaskedActions(t)
	for _, a := range acts {
		inPlace, err := AppendActions(make([]byte, 4, 64), Actions{a})
		if err != nil {
			t.Fatal(err)
		}
		apart, err := AppendActions(make([]byte, 1, 64), Actions{a})
		if err != nil {
			t.Fatal(err)
		}
		// The unaligned start shifts the outer attribute's padding (and
		// so its length), not the set_masked attribute inside it.
		inner := func(b []byte) []byte { return b[4 : 4+int(binary.NativeEndian.Uint16(b[4:]))] }
		if !bytes.Equal(inner(inPlace[4:]), inner(apart[1:])) {
			t.Errorf("%v: in place % x, apart % x", a, inPlace[4:], apart[1:])
		}
		back, err := UnmarshalActions(inPlace[4:])
		if err != nil {
			t.Fatalf("%v: %v", a, err)
		}
		if FormatActions(back) != FormatActions(Actions{a}) {
			t.Errorf("decoded %s, want %s", FormatActions(back), FormatActions(Actions{a}))
		}
	}
}

// TestSetMaskedEncodeAllocs: encoding set_masked actions into a buffer
// with the room allocates nothing (it took three allocations each: the
// value's payload, the mask's, and their concatenation).
func TestSetMaskedEncodeAllocs(t *testing.T) {
	acts := setMaskedActions(t)
	buf := make([]byte, 0, 512)
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := AppendActions(buf[:0], acts); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("AppendActions of %d actions allocates %v times, want 0", len(acts), allocs)
	}
}
