package conntrack

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"slices"
	"testing"
	"time"

	"github.com/ovsdp/ovsdp/internal/header"
	"github.com/ovsdp/ovsdp/internal/header/headertest"
)

var (
	fragSrcMAC = headertest.MAC("02:00:00:00:00:01")
	fragDstMAC = headertest.MAC("02:00:00:00:00:02")
)

// datagram4 is a whole IPv4 UDP datagram with n bytes of payload.
func datagram4(n int, id uint16) []byte {
	pl := make([]byte, n)
	for i := range pl {
		pl[i] = byte(i * 7)
	}
	return headertest.IPv4(headertest.IPv4Hdr{Src: headertest.IP4("10.0.0.1"), Dst: headertest.IP4("10.0.0.2"), Proto: header.IPProtoUDP, TTL: 64, ID: id},
		headertest.UDP(4000, 53, pl))
}

// datagram6 is a whole IPv6 UDP datagram with n bytes of payload.
func datagram6(n int) []byte {
	pl := make([]byte, n)
	for i := range pl {
		pl[i] = byte(i * 5)
	}
	return headertest.IPv6(headertest.IP6("fd00::1"), headertest.IP6("fd00::2"), header.IPProtoUDP, 64, 0, 0, headertest.UDP(4000, 53, pl))
}

func eth4(ip []byte) []byte { return headertest.Eth(fragDstMAC, fragSrcMAC, header.EtherTypeIPv4, ip) }
func eth6(ip []byte) []byte { return headertest.Eth(fragDstMAC, fragSrcMAC, header.EtherTypeIPv6, ip) }

type fragTest struct {
	t   *testing.T
	d   *Defrag
	clk *fakeClock
}

func newFragTest(t *testing.T, cfg DefragConfig) *fragTest {
	clk := &fakeClock{}
	clk.t.Store(int64(time.Hour))
	return &fragTest{t: t, d: NewDefrag(cfg, clk.now), clk: clk}
}

// gather gives the frames in order; all but the last must be held, the
// last must give want. It returns the last Reassembled.
func (ft *fragTest) gather(v6 bool, zone uint16, want FragVerdict, frames ...[]byte) *Reassembled {
	ft.t.Helper()
	var r Reassembled
	for i, f := range frames {
		v, err := ft.d.Gather(f, 14, v6, zone, &r)
		w := FragHeld
		if i == len(frames)-1 {
			w = want
		}
		if v != w {
			ft.t.Fatalf("fragment %d of %d: verdict %d (%v), want %d", i, len(frames), v, err, w)
		}
	}
	return &r
}

// expect gives one frame (with the zone 0) and fails unless Gather
// answers want with an error that is wantErr.
func (ft *fragTest) expect(frame []byte, v6 bool, want FragVerdict, wantErr error) {
	ft.t.Helper()
	var r Reassembled
	if v, err := ft.d.Gather(frame, 14, v6, 0, &r); v != want || !errors.Is(err, wantErr) {
		ft.t.Fatalf("verdict %d (%v), want %d (%v)", v, err, want, wantErr)
	}
}

func wrap(v6 bool, ips [][]byte) [][]byte {
	out := make([][]byte, len(ips))
	for i, ip := range ips {
		if v6 {
			out[i] = eth6(ip)
		} else {
			out[i] = eth4(ip)
		}
	}
	return out
}

func sizesOf(ps []headertest.Piece) []uint16 {
	var s []uint16
	for _, p := range ps {
		s = append(s, uint16(p.Len))
	}
	return s
}

// TestDefragOrders reassembles v4 and v6 datagrams from fragments given
// in order, reversed and shuffled: the result is the original datagram
// with the offset-0 fragment's Ethernet header, its MRU the largest
// fragment and its sizes the fragments' in offset order.
func TestDefragOrders(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for _, v6 := range []bool{false, true} {
		for _, order := range []string{"in-order", "reversed", "shuffled", "last-first"} {
			t.Run(fmt.Sprintf("v6=%v/%s", v6, order), func(t *testing.T) {
				ft := newFragTest(t, DefragConfig{})
				var whole []byte
				var frags [][]byte
				ps := headertest.Pieces(4008, 1480)
				mru := 20 + 1480
				if v6 {
					whole = datagram6(4000)
					ps = headertest.Pieces(4008, 1448)
					frags = wrap(true, headertest.Fragment6(whole, 0x1234, ps...))
					mru = 40 + 8 + 1448
				} else {
					whole = datagram4(4000, 77)
					frags = wrap(false, headertest.Fragment4(whole, ps...))
				}
				idx := []int{0, 1, 2}
				switch order {
				case "reversed":
					idx = []int{2, 1, 0}
				case "shuffled":
					rng.Shuffle(len(idx), func(i, j int) { idx[i], idx[j] = idx[j], idx[i] })
				case "last-first":
					idx = []int{2, 0, 1}
				}
				var in [][]byte
				for _, i := range idx {
					in = append(in, frags[i])
				}
				r := ft.gather(v6, 0, FragDone, in...)
				want := eth4(whole)
				if v6 {
					want = eth6(whole)
				}
				if !bytes.Equal(r.Frame, want) {
					t.Fatalf("reassembled\n%x\nwant\n%x", r.Frame, want)
				}
				if r.L3 != 14 || int(r.Frag.MRU) != mru || r.Frag.V6 != v6 || !slices.Equal(r.Frag.Sizes, sizesOf(ps)) {
					t.Fatalf("L3 %d, info %+v; want MRU %d, sizes %v", r.L3, r.Frag, mru, sizesOf(ps))
				}
				if n, b := ft.d.Held(); n != 0 || b != 0 {
					t.Fatalf("%d fragments, %d bytes still held", n, b)
				}
				st := ft.d.Stats(v6)
				if st.Accepted != 3 || st.Completed != 3 {
					t.Fatalf("stats %+v", st)
				}
			})
		}
	}
}

// TestDefragDuplicateAndOverlap: a fragment within a run of fragments
// already received is a duplicate (dropped, the datagram still
// completes); one that overlaps partly drops the whole queue, for both
// families, as inet_frag_queue_insert.
func TestDefragDuplicateAndOverlap(t *testing.T) {
	for _, v6 := range []bool{false, true} {
		t.Run(fmt.Sprintf("v6=%v", v6), func(t *testing.T) {
			cut := func(ps ...headertest.Piece) [][]byte {
				if v6 {
					return wrap(true, headertest.Fragment6(datagram6(2392), 9, ps...))
				}
				return wrap(false, headertest.Fragment4(datagram4(2392, 9), ps...))
			}
			// 2400 bytes of data: 0-800, 800-1600, 1600-2400.
			f := cut(headertest.Piece{Off: 0, Len: 800}, headertest.Piece{Off: 800, Len: 800}, headertest.Piece{Off: 1600, Len: 800},
				headertest.Piece{Off: 400, Len: 800},    // within the run 0-1600: a duplicate
				headertest.Piece{Off: 1200, Len: 800},   // beyond the tail at 1600 from inside it: an overlap
				headertest.Piece{Off: 1600, Len: 400},   // a later run 1600-2400 holds it: a duplicate
				headertest.Piece{Off: 0, Len: 1600 + 8}) // spans two runs: an overlap

			ft := newFragTest(t, DefragConfig{})
			ft.gather(v6, 0, FragHeld, f[0], f[1])
			ft.expect(f[3], v6, FragHeld, ErrFragDup)
			ft.gather(v6, 0, FragDone, f[2])
			if st := ft.d.Stats(v6); st.Overlap != 1 || st.Completed != 3 {
				t.Fatalf("stats %+v", st)
			}

			ft = newFragTest(t, DefragConfig{})
			ft.gather(v6, 0, FragHeld, f[0], f[1])
			ft.expect(f[4], v6, FragDropped, ErrFragOverlap)
			if n, _ := ft.d.Held(); n != 0 {
				t.Fatalf("%d fragments held after an overlap", n)
			}
			if st := ft.d.Stats(v6); st.Overlap != 1 || st.Purged != 2 {
				t.Fatalf("stats %+v", st)
			}
			// The rest starts a new queue that never completes.
			ft.gather(v6, 0, FragHeld, f[2], f[1])

			// Out of order: runs 1600-2400 and 0-800; 1600-2000 lies in
			// the first (a duplicate), 0-1608 crosses into 800-1600's gap
			// and the run at 1600 (an overlap).
			ft = newFragTest(t, DefragConfig{})
			ft.gather(v6, 0, FragHeld, f[2], f[0])
			ft.expect(f[5], v6, FragHeld, ErrFragDup)
			ft.expect(f[6], v6, FragDropped, ErrFragOverlap)
		})
	}
}

// TestDefragTimeoutAndLimits: a queue expires FragTimeout after its
// first fragment (its fragments counted as expired); fragments beyond
// the maximum count or bytes are refused; zones and IDs keep queues
// apart.
func TestDefragTimeoutAndLimits(t *testing.T) {
	f := wrap(false, headertest.Fragment4(datagram4(2392, 5), headertest.Pieces(2400, 800)...))
	ft := newFragTest(t, DefragConfig{})
	ft.gather(false, 0, FragHeld, f[0])
	ft.clk.advance(FragTimeout - time.Second)
	ft.gather(false, 0, FragHeld, f[1])
	ft.clk.advance(time.Second)
	ft.d.Expire()
	if n, b := ft.d.Held(); n != 0 || b != 0 {
		t.Fatalf("held %d fragments, %d bytes after the timeout", n, b)
	}
	if st := ft.d.Stats(false); st.Expired != 2 {
		t.Fatalf("stats %+v", st)
	}
	ft.gather(false, 0, FragHeld, f[2]) // a new queue, incomplete

	// Zones are separate queues: zone 1's fragments do not complete
	// zone 0's datagram.
	ft = newFragTest(t, DefragConfig{})
	ft.gather(false, 0, FragHeld, f[0], f[1])
	ft.gather(false, 1, FragHeld, f[2])
	ft.gather(false, 0, FragDone, f[2])
	if q := ft.d.Queues(); len(q) != 1 || q[0].Zone != 1 || q[0].Frags != 1 || !q[0].Last || q[0].First {
		t.Fatalf("queues %+v", q)
	}

	ft = newFragTest(t, DefragConfig{})
	if err := ft.d.SetMaxFrags(2); err != nil {
		t.Fatal(err)
	}
	ft.gather(false, 0, FragHeld, f[0], f[1])
	ft.expect(f[2], false, FragDropped, ErrFragNoRoom)
	if st := ft.d.Stats(false); st.NoRoom != 1 {
		t.Fatalf("stats %+v", st)
	}
	for _, n := range []uint32{0, MaxFragsLimit + 1} {
		if err := ft.d.SetMaxFrags(n); err == nil {
			t.Errorf("SetMaxFrags(%d) accepted", n)
		}
	}

	ft = newFragTest(t, DefragConfig{MaxBytes: 1000})
	ft.gather(false, 0, FragHeld, f[0], f[1]) // 1600 bytes: over the limit now
	ft.expect(f[2], false, FragDropped, ErrFragNoRoom)
}

// TestDefragKernelRules checks the per-family rules of ip_frag_queue and
// nf_ct_frag6_queue for inconsistent fragments.
func TestDefragKernelRules(t *testing.T) {
	P := func(off, n int) headertest.Piece { return headertest.Piece{Off: off, Len: n} }
	L := func(off, n int) headertest.Piece { return headertest.Piece{Off: off, Len: n, Last: true} }
	for _, v6 := range []bool{false, true} {
		cut := func(ps ...headertest.Piece) [][]byte {
			if v6 {
				return wrap(true, headertest.Fragment6(datagram6(2392), 3, ps...))
			}
			return wrap(false, headertest.Fragment4(datagram4(2392, 3), ps...))
		}
		name := fmt.Sprintf("v6=%v", v6)
		t.Run(name+"/not-a-multiple-of-8", func(t *testing.T) {
			// IPv4 cuts 0-804 to 0-800 and completes with 800-2400;
			// IPv6 drops the queue and lets the fragment pass.
			f := cut(P(0, 804), P(800, 1600))
			ft := newFragTest(t, DefragConfig{})
			if v6 {
				ft.gather(true, 0, FragHeld, f[1])
				ft.expect(f[0], true, FragPass, ErrFragInvalid)
				if n, _ := ft.d.Held(); n != 0 {
					t.Fatalf("%d held", n)
				}
				return
			}
			got := ft.gather(false, 0, FragDone, f[0], f[1])
			if want := eth4(datagram4(2392, 3)); !bytes.Equal(got.Frame, want) {
				t.Fatalf("reassembled %x\nwant %x", got.Frame, want)
			}
			if !slices.Equal(got.Frag.Sizes, []uint16{800, 1600}) || got.Frag.MRU != 20+1600 {
				t.Fatalf("info %+v", got.Frag)
			}
		})
		t.Run(name+"/second-last-elsewhere", func(t *testing.T) {
			// A last fragment ending at 1600 after one ending at 2400:
			// IPv4 drops the queue, IPv6 only the fragment.
			f := cut(P(0, 800), L(1600, 800), L(800, 800), P(800, 800))
			ft := newFragTest(t, DefragConfig{})
			ft.gather(v6, 0, FragHeld, f[0], f[1])
			ft.expect(f[2], v6, FragDropped, ErrFragInvalid)
			want := FragHeld
			if v6 {
				want = FragDone
			}
			ft.gather(v6, 0, want, f[3])
		})
		t.Run(name+"/beyond-the-end", func(t *testing.T) {
			f := cut(L(800, 800), P(1600, 800))
			ft := newFragTest(t, DefragConfig{})
			ft.gather(v6, 0, FragHeld, f[0])
			ft.expect(f[1], v6, FragDropped, ErrFragInvalid)
			if n, _ := ft.d.Held(); (n == 0) != !v6 {
				t.Fatalf("%d held (IPv4 drops the queue, IPv6 keeps it)", n)
			}
		})
		t.Run(name+"/empty", func(t *testing.T) {
			f := cut(P(0, 800), P(800, 0))
			ft := newFragTest(t, DefragConfig{})
			ft.gather(v6, 0, FragHeld, f[0])
			ft.expect(f[1], v6, FragDropped, ErrFragInvalid)
		})
		t.Run(name+"/min-size-and-off", func(t *testing.T) {
			f := cut(P(0, 800), P(800, 1600))
			ft := newFragTest(t, DefragConfig{})
			if err := ft.d.SetMinFragSize(v6, 399); err == nil {
				t.Fatal("a minimum below 400 accepted")
			}
			if err := ft.d.SetMinFragSize(v6, 1000); err != nil {
				t.Fatal(err)
			}
			ft.expect(f[0], v6, FragDropped, ErrFragTooSmall)
			if st := ft.d.Stats(v6); st.TooSmall != 1 {
				t.Fatalf("stats %+v", st)
			}
			ft.d.SetEnabled(v6, false)
			ft.expect(f[0], v6, FragPass, ErrFragOff)
			if s := ft.d.Settings(v6); s.Enabled || s.MinFragSize != 1000 {
				t.Fatalf("settings %+v", s)
			}
		})
	}
	t.Run("v4/oversized", func(t *testing.T) {
		// 65528 + 100 bytes of data: more than 65535 in all.
		big := make([]byte, 20+8)
		copy(big, datagram4(0, 1)[:28])
		hdr := big[:20]
		frag := func(off, n int, mf bool) []byte {
			ip := append(append([]byte(nil), hdr...), make([]byte, n)...)
			fo := uint16(off >> 3)
			if mf {
				fo |= header.IPv4FlagMoreFragments
			}
			ip[2], ip[3] = byte((20+n)>>8), byte(20+n)
			ip[6], ip[7] = byte(fo>>8), byte(fo)
			return eth4(ip)
		}
		ft := newFragTest(t, DefragConfig{MaxFrags: MaxFragsLimit, MaxBytes: 1 << 20})
		var fs [][]byte
		for off := 0; off < 65528; off += 1480 {
			fs = append(fs, frag(off, min(1480, 65528-off), true))
		}
		ft.gather(false, 0, FragHeld, fs...)
		ft.expect(frag(65528, 100, false), false, FragDropped, ErrFragInvalid)
		if n, _ := ft.d.Held(); n != 0 {
			t.Fatalf("%d held", n)
		}
	})
	t.Run("v6/first-fragment-without-udp-header", func(t *testing.T) {
		f := wrap(true, headertest.Fragment6(datagram6(100), 4, P(0, 0), P(0, 8)))
		// 4 bytes of the 8-byte UDP header in the first fragment.
		short := append([]byte(nil), f[1][:14+48+4]...)
		short[14+5] = 8 + 4
		ft := newFragTest(t, DefragConfig{})
		ft.expect(short, true, FragPass, ErrFragInvalid)
	})
}

// TestRefragment sends reassembled datagrams out again: the original
// fragments, byte for byte, on the fast path; pieces of the MRU (IPv6:
// at least 1280) for a clone; whole when within the MRU plus the
// Ethernet header; refused when the MRU exceeds the MTU.
func TestRefragment(t *testing.T) {
	for _, v6 := range []bool{false, true} {
		for _, sizes := range [][]int{{1480, 1480, 1048}, {800, 1480, 1728}, {600, 600, 600, 600, 608}} {
			t.Run(fmt.Sprintf("v6=%v/%v", v6, sizes), func(t *testing.T) {
				var ps []headertest.Piece
				off := 0
				for _, n := range sizes {
					ps = append(ps, headertest.Piece{Off: off, Len: n})
					off += n
				}
				var whole []byte
				var frags [][]byte
				hl := 20
				if v6 {
					whole, hl = datagram6(off-8), 48
					frags = wrap(true, headertest.Fragment6(whole, 0xabcd, ps...))
				} else {
					whole = datagram4(off-8, 0x4321)
					frags = wrap(false, headertest.Fragment4(whole, ps...))
				}
				ft := newFragTest(t, DefragConfig{})
				perm := append([][]byte{frags[len(frags)-1]}, frags[:len(frags)-1]...)
				r := ft.gather(v6, 0, FragDone, perm...)
				if !r.Frag.NeedsRefragment(len(r.Frame), 14) {
					t.Fatal("no refragmentation needed")
				}
				var f Fragmenter
				var got [][]byte
				emit := func(b []byte) { got = append(got, append([]byte(nil), b...)) }
				if err := f.Fragment(r.Frame, r.L3, &r.Frag, 9000, false, emit); err != nil {
					t.Fatal(err)
				}
				if len(got) != len(frags) {
					t.Fatalf("%d fragments, want %d", len(got), len(frags))
				}
				for i := range got {
					if !bytes.Equal(got[i], frags[i]) {
						t.Fatalf("fragment %d:\n%x\nwant\n%x", i, got[i], frags[i])
					}
				}
				// A clone: the data in pieces of the MRU less the headers.
				got = nil
				if err := f.Fragment(r.Frame, r.L3, &r.Frag, 9000, true, emit); err != nil {
					t.Fatal(err)
				}
				mtu := int(r.Frag.MRU)
				if v6 {
					mtu = max(mtu, 1280)
				}
				piece := (mtu - hl) &^ 7
				var data []byte
				for i, g := range got {
					n := len(g) - 14 - hl
					if i < len(got)-1 && n != piece || n > piece {
						t.Fatalf("slow-path fragment %d has %d bytes of data, want %d", i, n, piece)
					}
					data = append(data, g[14+hl:]...)
				}
				if !bytes.Equal(data, whole[hl-map[bool]int{false: 0, true: 8}[v6]:]) {
					t.Fatal("slow-path fragments' data differ from the datagram's")
				}
				if err := f.Fragment(r.Frame, r.L3, &r.Frag, int(r.Frag.MRU)-1, false, emit); !errors.Is(err, ErrFragMTU) {
					t.Fatalf("MRU above the MTU: %v", err)
				}
			})
		}
	}
	// The kernel sends a datagram whole when its skb->len (link-layer
	// header included) is within the MRU plus the link-layer header: an
	// IPv4 datagram never is (its header is in the MRU), an IPv6 one is
	// when it lost no more than the fragment header: 96 + 8 bytes of
	// data in 40 + 104 bytes, against an MRU of 40 + 8 + 96.
	ft := newFragTest(t, DefragConfig{})
	ps := []headertest.Piece{{Off: 0, Len: 96}, {Off: 96, Len: 8}}
	r := ft.gather(false, 0, FragDone, wrap(false, headertest.Fragment4(datagram4(96, 1), ps...))...)
	if r.Frag.MRU != 116 || !r.Frag.NeedsRefragment(len(r.Frame), 14) {
		t.Fatalf("IPv4: MRU %d, no refragmentation of %d bytes", r.Frag.MRU, len(r.Frame))
	}
	r = ft.gather(true, 0, FragDone, wrap(true, headertest.Fragment6(datagram6(96), 1, ps...))...)
	if r.Frag.MRU != 144 || r.Frag.NeedsRefragment(len(r.Frame), 14) {
		t.Fatalf("IPv6: MRU %d, refragmentation of %d bytes", r.Frag.MRU, len(r.Frame))
	}
}

// TestDefragConcurrent: workers reassembling their own datagrams at once,
// with a sweeper expiring, all complete (run with -race).
func TestDefragConcurrent(t *testing.T) {
	d := NewDefrag(DefragConfig{}, nil)
	stop := make(chan struct{})
	swept := make(chan struct{})
	go func() {
		defer close(swept)
		for {
			select {
			case <-stop:
				return
			default:
				d.Expire()
			}
		}
	}()
	errs := make(chan error, 4)
	for w := 0; w < 4; w++ {
		go func(w int) {
			for i := 0; i < 50; i++ {
				frags := wrap(false, headertest.Fragment4(datagram4(2392, uint16(w*1000+i)), headertest.Pieces(2400, 800)...))
				var r Reassembled
				for j, f := range []int{2, 0, 1} {
					v, err := d.Gather(frags[f], 14, false, uint16(w), &r)
					if want := map[bool]FragVerdict{false: FragHeld, true: FragDone}[j == 2]; v != want {
						errs <- fmt.Errorf("worker %d datagram %d fragment %d: verdict %d (%v)", w, i, f, v, err)
						return
					}
				}
			}
			errs <- nil
		}(w)
	}
	for w := 0; w < 4; w++ {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	close(stop)
	<-swept
	if st := d.Stats(false); st.Completed != 4*50*3 {
		t.Errorf("stats %+v", st)
	}
}
