package header

import (
	"encoding/binary"
	"testing"
)

// FuzzL2 checks L2 on any frame: no panic, the network header offset
// within the frame (or at 14 for a frame too short), at most two tags,
// and an EtherType that is one (>= 0x600) or EtherType8022.
func FuzzL2(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 0x81, 0x00, 0, 5, 0x08, 0x00})
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 0, 40, 0xaa, 0xaa, 3, 0, 0, 0, 0x86, 0xdd})
	f.Fuzz(func(t *testing.T, frame []byte) {
		off, et, tags := L2(frame)
		if len(frame) < EthernetMinimumSize {
			if off != EthernetMinimumSize || et != 0 || tags != 0 {
				t.Fatalf("short frame: %d, %#x, %d", off, et, tags)
			}
			return
		}
		if off > len(frame) || off < EthernetMinimumSize || tags > 2 {
			t.Fatalf("L2 = %d, %#x, %d for %d bytes", off, et, tags, len(frame))
		}
		if et < EtherTypeMin && et != EtherType8022 {
			t.Fatalf("EtherType %#x", et)
		}
		if want := 14 + 4*tags; off != want && off != want+LLCSNAPSize {
			t.Fatalf("offset %d with %d tags", off, tags)
		}
	})
}

// FuzzIPv6ExtWalk checks the walk on any packet after an IPv6 header:
// no panic, an upper-layer offset inside the packet, past the fixed
// header and in step with the length rules, and a later fragment
// without one.
func FuzzIPv6ExtWalk(f *testing.F) {
	f.Add(ipv6With(IPProtoHopByHop, ext(IPProtoRouting, 0), []byte{IPProtoFragment, 0, 0, 0, 1, 2, 3, 4}, frag(IPProtoTCP, 0, true)))
	f.Add(ipv6With(IPProtoAuth, []byte{IPProtoDestOpts, 0, 0, 0, 0, 0, 0, 0}, ext(IPProtoUDP, 0)))
	f.Fuzz(func(t *testing.T, p []byte) {
		if len(p) < IPv6MinimumSize {
			return
		}
		w := IPv6ExtWalk(p, 0)
		if !w.OK {
			return
		}
		if w.FragmentOffset != 0 {
			if w.Offset != 0 || !w.Fragment || (IsIPv6ExtHdr(w.Next) && w.Next != IPProtoNoNext) {
				t.Fatalf("later fragment: %+v", w)
			}
			return
		}
		if w.Offset < IPv6MinimumSize || w.Offset > len(p) {
			t.Fatalf("offset %d of %d bytes: %+v", w.Offset, len(p), w)
		}
		if w.Offset%4 != 0 || (IsIPv6ExtHdr(w.Next) && w.Next != IPProtoNoNext) {
			t.Fatalf("walk stopped at %d on next header %d: %+v", w.Offset, w.Next, w)
		}
	})
}

// FuzzChecksum checks, on any data, Checksum against RFC 1071's
// reference, summing in pieces, and each incremental update against the
// checksum recomputed after the change.
func FuzzChecksum(f *testing.F) {
	f.Add([]byte{0x45, 0, 0, 0x73, 0, 0, 0x40, 0, 0x40, 0x11, 0, 0, 0xc0, 0xa8, 0, 1, 0xc0, 0xa8, 0, 0xc7}, uint16(0x1234), uint32(0xdeadbeef))
	f.Fuzz(func(t *testing.T, b []byte, v16 uint16, v32 uint32) {
		if got, want := Checksum(b, 0), refChecksum(b, 0); got != want {
			t.Fatalf("Checksum %#04x, reference %#04x", got, want)
		}
		if len(b) < 8 {
			return
		}
		b = b[:len(b)&^1]
		b[0], b[1] = 0, 0
		c := Checksum(b, 0)
		binary.BigEndian.PutUint16(b, c)
		if Checksum(b, 0) != 0 {
			t.Fatalf("a buffer with its checksum in place sums to %#04x", Checksum(b, 0))
		}
		same := func(what string, got uint16) {
			t.Helper()
			want := refChecksum(append([]byte{0, 0}, b[2:]...), 0)
			if got != want && got^want != 0xffff { // +0 and -0
				t.Fatalf("%s: %#04x, recomputed %#04x", what, got, want)
			}
		}
		old16 := binary.BigEndian.Uint16(b[2:])
		binary.BigEndian.PutUint16(b[2:], v16)
		c = ChecksumUpdate2(c, old16, v16)
		same("ChecksumUpdate2", c)
		old32 := binary.BigEndian.Uint32(b[4:])
		binary.BigEndian.PutUint32(b[4:], v32)
		same("ChecksumUpdate4", ChecksumUpdate4(c, old32, v32))
	})
}
