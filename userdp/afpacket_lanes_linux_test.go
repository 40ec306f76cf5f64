package userdp

import (
	"encoding/binary"
	"errors"
	"sync"
	"testing"
	"time"
)

// ringOf returns p as a RingPort with two lanes, or fails the test (a
// host without BPF for the fanout program fails here, with the reason).
func ringOf(t testing.TB, p NetdevPort) *RingPort {
	t.Helper()
	r, ok := p.(*RingPort)
	if !ok {
		t.Fatalf("%s is a %T, not a RingPort", p.Name(), p)
	}
	if n, err := r.Lanes(); n != 2 {
		t.Fatalf("%s has %d lane: %v", p.Name(), n, err)
	}
	return r
}

// TestNetdevRingLanes: 180,000 frames sent in bursts (the port goes to
// the block lane) and trickles (it goes back to the slots), twice, are
// read in the order they were sent, none twice, with frames read from
// both lanes and the lane switched at least four times.
func TestNetdevRingLanes(t *testing.T) {
	rx, tx := netdevPair(t, NetdevRing)
	r := ringOf(t, rx)
	const burst, trickle = 88_000, 2_000
	total := uint32(2 * (burst + trickle))
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		seq := uint32(0)
		batch := make([][]byte, 64)
		for round := 0; round < 2; round++ {
			for end := seq + burst; seq < end; {
				for i := range batch {
					batch[i] = seqFrame(seq + uint32(i))
				}
				n, _ := tx.WriteBatch(batch)
				seq += uint32(n)
			}
			// A frame at a time, 60 µs apart or more: below
			// 20,000 frames/s.
			for end := seq + trickle; seq < end; seq++ {
				time.Sleep(60 * time.Microsecond)
				tx.WriteBatch([][]byte{seqFrame(seq)})
			}
		}
	}()
	bufs := make([][]byte, 64)
	sizes := make([]int, 64)
	for i := range bufs {
		bufs[i] = make([]byte, BufferSize(rx.MTU()))
	}
	var last int64 = -1
	got := 0
	var bad error
	for last < int64(total-1) && bad == nil {
		n, err := rx.ReadBatch(bufs, sizes, DefaultHeadroom)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < n; i++ {
			f := bufs[i][DefaultHeadroom : DefaultHeadroom+sizes[i]]
			if !isSeqFrame(f) {
				continue
			}
			s := int64(binary.BigEndian.Uint32(f[42:]))
			if s <= last {
				bad = errors.New("out of order")
				t.Errorf("frame %d read after frame %d (lane frames %v, switches %d)", s, last, r.lanes.frames, r.lanes.switches)
				break
			}
			last = s
			got++
		}
	}
	wg.Wait()
	st := rx.Stats()
	t.Logf("fanout group's PACKET_FANOUT_FLAG_IGNORE_OUTGOING accepted: %v", r.lanes.groupIgnoresOutgoing)
	t.Logf("%d of %d frames read, %d dropped; from the slots %d, from the blocks %d; %d lane switches", got, total, st.RxDropped, r.lanes.frames[0], r.lanes.frames[1], r.lanes.switches)
	if r.lanes.frames[0] == 0 || r.lanes.frames[1] == 0 || r.lanes.switches < 4 {
		t.Errorf("lanes not both used (slots %d, blocks %d frames, %d switches, want 4 or more)", r.lanes.frames[0], r.lanes.frames[1], r.lanes.switches)
	}
	if uint64(got)+st.RxDropped < uint64(total) {
		t.Errorf("%d frames read and %d dropped of %d sent", got, st.RxDropped, total)
	}
}

// TestNetdevRingLoneFrame: on an idle port, a lone frame is read from
// the slot lane (which hands it over at once; the block lane would hold
// it until its block's timer fires).
func TestNetdevRingLoneFrame(t *testing.T) {
	rx, tx := netdevPair(t, NetdevRing)
	r := ringOf(t, rx)
	bufs := [][]byte{make([]byte, BufferSize(rx.MTU()))}
	sizes := []int{0}
	for i := 0; i < 10; i++ {
		before := r.lanes.frames
		if _, err := tx.WriteBatch([][]byte{seqFrame(uint32(i))}); err != nil {
			t.Fatal(err)
		}
		for got := false; !got; {
			n, err := rx.ReadBatch(bufs, sizes, DefaultHeadroom)
			if err != nil {
				t.Fatal(err)
			}
			got = n == 1 && isSeqFrame(bufs[0][DefaultHeadroom:DefaultHeadroom+sizes[0]])
		}
		if r.lanes.frames[0] <= before[0] || r.lanes.frames[1] != before[1] {
			t.Fatalf("frame %d: lane frames %v, then %v: want it from the slots", i, before, r.lanes.frames)
		}
	}
}

// TestNetdevRingCloseInBulk: Close unblocks a reader of a port in the
// block lane, and reads after it fail with ErrPortClosed.
func TestNetdevRingCloseInBulk(t *testing.T) {
	rx, tx := netdevPair(t, NetdevRing)
	r := ringOf(t, rx)
	batch := make([][]byte, 64)
	for i := range batch {
		batch[i] = seqFrame(uint32(i))
	}
	bufs := make([][]byte, 64)
	sizes := make([]int, 64)
	for i := range bufs {
		bufs[i] = make([]byte, BufferSize(rx.MTU()))
	}
	for !r.lanes.bulk {
		tx.WriteBatch(batch)
		readWithTimeout(rx, bufs, sizes)
	}
	// Read what is left, then block in ReadBatch and close.
	done := make(chan error, 1)
	go func() {
		for {
			if _, err := rx.ReadBatch(bufs, sizes, DefaultHeadroom); err != nil {
				done <- err
				return
			}
		}
	}()
	time.Sleep(20 * time.Millisecond)
	if err := rx.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, ErrPortClosed) {
		t.Fatalf("read after Close: %v, want ErrPortClosed", err)
	}
}

// TestNetdevRingOneLane: where the lanes cannot be made (no BPF), a
// ring port has the slot ring alone, says why, and reads a lone frame
// and a burst in order, without allocating.
func TestNetdevRingOneLane(t *testing.T) {
	ringLanesOff = true
	rx, tx := netdevPair(t, NetdevRing)
	ringLanesOff = false
	r := rx.(*RingPort)
	if n, err := r.Lanes(); n != 1 || !errors.Is(err, errNoFanoutBPF) {
		t.Fatalf("Lanes() = %d, %v; want 1 and the reason", n, err)
	}
	batch := make([][]byte, 64)
	bufs := make([][]byte, 64)
	sizes := make([]int, 64)
	for i := range bufs {
		bufs[i] = make([]byte, BufferSize(rx.MTU()))
	}
	next := uint32(0)
	read := func(upTo uint32) {
		for next < upTo {
			n, err := rx.ReadBatch(bufs, sizes, DefaultHeadroom)
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; i < n; i++ {
				f := bufs[i][DefaultHeadroom : DefaultHeadroom+sizes[i]]
				if !isSeqFrame(f) {
					continue // the kernel's own (IPv6 neighbour discovery)
				}
				if s := binary.BigEndian.Uint32(f[42:]); s != next {
					t.Fatalf("frame %d read, want %d", s, next)
				}
				next++
			}
		}
	}
	if _, err := tx.WriteBatch([][]byte{seqFrame(0)}); err != nil {
		t.Fatal(err)
	}
	read(1)
	for round := 0; round < 10; round++ {
		for i := range batch {
			batch[i] = seqFrame(next + uint32(i))
		}
		if n, err := tx.WriteBatch(batch); n != len(batch) {
			t.Fatalf("%d of %d frames written: %v", n, len(batch), err)
		}
		read(next + uint32(len(batch)))
	}
	if r.lanes.frames[0] < uint64(next) || r.lanes.frames[1] != 0 {
		t.Errorf("lane frames %v, want all %d (and the kernel's own) from the slots", r.lanes.frames, next)
	}
	allocs := testing.AllocsPerRun(20, func() {
		tx.WriteBatch(batch[:1])
		for n := 0; n == 0; {
			n, _ = rx.ReadBatch(bufs, sizes, DefaultHeadroom)
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations per frame written and read, want 0", allocs)
	}
}

// TestNetdevRingSwitchOrder: with frames waiting in both lanes when the
// lane is switched (by hand here), the reader delivers them in the
// order they were sent: after a switch to the blocks, the slots' frames
// first although a block is ready; after a switch back, the blocks'
// frames first, whether their block was handed over or is still being
// filled.
func TestNetdevRingSwitchOrder(t *testing.T) {
	rx, tx := netdevPair(t, NetdevRing)
	r := ringOf(t, rx)
	r.lanes.manual = true
	bufs := make([][]byte, 64)
	sizes := make([]int, 64)
	for i := range bufs {
		bufs[i] = make([]byte, BufferSize(rx.MTU()))
	}
	seq := uint32(0)
	send := func(n int) {
		t.Helper()
		for i := 0; i < n; i++ {
			if _, err := tx.WriteBatch([][]byte{seqFrame(seq)}); err != nil {
				t.Fatal(err)
			}
			seq++
		}
	}
	next := uint32(0)
	read := func(what string) {
		t.Helper()
		for next < seq {
			n, err := rx.ReadBatch(bufs, sizes, DefaultHeadroom)
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; i < n; i++ {
				f := bufs[i][DefaultHeadroom : DefaultHeadroom+sizes[i]]
				if !isSeqFrame(f) {
					continue
				}
				if s := binary.BigEndian.Uint32(f[42:]); s != next {
					t.Fatalf("%s: frame %d read, want %d (lane frames %v)", what, s, next, r.lanes.frames)
				}
				next++
			}
		}
	}
	for round := 0; round < 3; round++ {
		before := r.lanes.frames
		send(100) // to the slots
		r.lanes.set(true)
		send(100)                         // to the blocks
		time.Sleep(20 * time.Millisecond) // the block's timer hands it over
		read("switched to the blocks, block ready")
		r.lanes.set(false)
		send(100)                         // to the slots
		time.Sleep(20 * time.Millisecond) // nothing in the blocks
		read("switched back, no block")
		r.lanes.set(true)
		send(100)
		r.lanes.set(false)
		send(100) // the block with the 100 before may still be filled
		read("switched back, block being filled")
		r.lanes.set(true)
		send(100)
		time.Sleep(20 * time.Millisecond)
		r.lanes.set(false)
		send(100)
		read("switched back, block ready")
		if r.lanes.frames[0]-before[0] < 400 || r.lanes.frames[1]-before[1] < 300 {
			t.Fatalf("lane frames %v, then %v: want 400 more from the slots and 300 from the blocks", before, r.lanes.frames)
		}
	}
}
