package conntrack

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
	"time"

	"github.com/ovsdp/ovsdp/internal/header"
	"github.com/ovsdp/ovsdp/internal/header/headertest"
)

// FuzzDefrag drives the reassembler with two kinds of input. The first
// byte picks the kind. Raw: every chunk is an arbitrary IPv4 or IPv6
// packet given as a fragment (with clock steps); nothing may panic,
// every error must be one of Gather's, the fragments held must stay
// within the limits, and a completed datagram must be consistent and
// fragment again without error. Split: the input cuts a known datagram
// into pieces (multiples of 8 but the last) given in an order it picks,
// possibly with duplicates of earlier pieces; it must come out whole,
// exactly, and fragment again into the same pieces.
func FuzzDefrag(f *testing.F) {
	f.Add([]byte{0, 0x45, 0, 0, 0x30, 0, 1, 0x20, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2})
	f.Add([]byte{1, 0, 3, 5, 1, 2, 9, 0})
	f.Add([]byte{1, 0x80, 7, 1, 1, 0, 2, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		clk := &fakeClock{}
		clk.t.Store(1)
		if data[0]&1 == 0 {
			fuzzRaw(t, NewDefrag(DefragConfig{MaxFrags: 16, MaxBytes: 16 << 10}, clk.now), clk, data[1:])
		} else {
			fuzzSplit(t, NewDefrag(DefragConfig{}, clk.now), data[1:])
		}
	})
}

func fuzzRaw(t *testing.T, d *Defrag, clk *fakeClock, data []byte) {
	var r Reassembled
	var fr Fragmenter
	for len(data) >= 3 {
		ctl, n := data[0], int(binary.BigEndian.Uint16(data[1:])%2048)
		data = data[3:]
		n = min(n, len(data))
		pkt := data[:n]
		data = data[n:]
		if ctl&0x40 != 0 {
			clk.advance(time.Duration(ctl&0x3f) * time.Second)
		}
		v6 := ctl&0x80 != 0
		v, err := d.Gather(pkt, 0, v6, uint16(ctl&1), &r)
		switch v {
		case FragDone:
			if err != nil {
				t.Fatalf("done with an error: %v", err)
			}
			checkReassembled(t, &r, v6)
			if err := fr.Fragment(r.Frame, r.L3, &r.Frag, 65535, ctl&2 != 0, func([]byte) {}); err != nil && !errors.Is(err, ErrFragInvalid) && !errors.Is(err, ErrFragMTU) {
				t.Fatalf("Fragment: %v", err)
			}
		case FragHeld:
			if err != nil && !errors.Is(err, ErrFragDup) {
				t.Fatalf("held: %v", err)
			}
		case FragPass, FragDropped:
			if err == nil {
				t.Fatalf("verdict %d without a reason", v)
			}
			for _, e := range []error{ErrFragInvalid, ErrFragOverlap, ErrFragNoRoom, ErrFragTooSmall} {
				if errors.Is(err, e) {
					err = nil
				}
			}
			if err != nil {
				t.Fatalf("verdict %d: unexpected error %v", v, err)
			}
		}
		if n, b := d.Held(); n < 0 || b < 0 || n > 16 || b > 16<<10+0xffff {
			t.Fatalf("holding %d fragments, %d bytes", n, b)
		}
	}
}

func checkReassembled(t *testing.T, r *Reassembled, v6 bool) {
	ip := r.Frame[r.L3:]
	if v6 {
		if len(ip) < 40 || int(binary.BigEndian.Uint16(ip[4:]))+40 != len(ip) {
			t.Fatalf("reassembled IPv6 of %d bytes says %d", len(ip), binary.BigEndian.Uint16(ip[4:]))
		}
		return
	}
	if len(ip) < 20 || int(binary.BigEndian.Uint16(ip[2:])) != len(ip) || header.Checksum(ip[:int(ip[0]&15)*4], 0) != 0 {
		t.Fatalf("reassembled IPv4 inconsistent: % x", ip[:min(len(ip), 20)])
	}
}

func fuzzSplit(t *testing.T, d *Defrag, data []byte) {
	if len(data) < 1 {
		return
	}
	v6 := data[0]&0x80 != 0
	total := 8 * (1 + int(data[0]&0x7f)) // data bytes, UDP header included
	data = data[1:]
	var ps []headertest.Piece
	for off := 0; off < total; {
		n := total - off
		if len(data) > 0 {
			n = min(n, 8*(1+int(data[0]%16)))
			data = data[1:]
		}
		ps = append(ps, headertest.Piece{Off: off, Len: n})
		off += n
	}
	if len(ps) < 2 {
		return
	}
	var whole []byte
	var frags [][]byte
	if v6 {
		whole = datagram6(total - 8)
		frags = wrap(true, headertest.Fragment6(whole, 7, ps...))
	} else {
		whole = datagram4(total-8, 7)
		frags = wrap(false, headertest.Fragment4(whole, ps...))
	}
	// The order: a permutation from the input, with duplicates of
	// pieces already given inserted where the input says.
	order := make([]int, len(frags))
	for i := range order {
		order[i] = i
	}
	for i := len(order) - 1; i > 0 && len(data) > 0; i-- {
		j := int(data[0]) % (i + 1)
		data = data[1:]
		order[i], order[j] = order[j], order[i]
	}
	var seq []int
	for i, o := range order {
		seq = append(seq, o)
		if i < len(order)-1 && len(data) > 0 && data[0]&1 != 0 {
			seq = append(seq, order[int(data[0]>>1)%(i+1)])
		}
		if len(data) > 0 {
			data = data[1:]
		}
	}
	var r Reassembled
	for i, o := range seq {
		v, err := d.Gather(frags[o], 14, v6, 0, &r)
		want := FragHeld
		if i == len(seq)-1 {
			want = FragDone
		}
		if v != want {
			t.Fatalf("pieces %v, order %v: fragment %d (piece %d): verdict %d (%v), want %d", ps, seq, i, o, v, err, want)
		}
	}
	wantFrame := eth4(whole)
	if v6 {
		wantFrame = eth6(whole)
	}
	if !bytes.Equal(r.Frame, wantFrame) {
		t.Fatalf("pieces %v, order %v: reassembled\n%x\nwant\n%x", ps, seq, r.Frame, wantFrame)
	}
	var fr Fragmenter
	i := 0
	err := fr.Fragment(r.Frame, r.L3, &r.Frag, 65535, false, func(b []byte) {
		if i >= len(frags) || !bytes.Equal(b, frags[i]) {
			t.Fatalf("pieces %v: refragment %d differs", ps, i)
		}
		i++
	})
	if err != nil || i != len(frags) {
		t.Fatalf("pieces %v: refragmented into %d, %v", ps, i, err)
	}
}
