package userdp

import (
	"bytes"
	"errors"
	"sync"
	"testing"
)

func TestMemPipe(t *testing.T) {
	a, b, err := NewMemPipe("a", "b", 1500, 4)
	if err != nil {
		t.Fatal(err)
	}
	frames := [][]byte{udpFrame64(1), udpFrame64(2), make([]byte, 1500+22+1), udpFrame64(3), udpFrame64(4), udpFrame64(5)}
	n, err := a.WriteBatch(frames)
	if err != nil || n != 4 {
		t.Fatalf("WriteBatch: %d, %v; want 4 (one too long, one queue full)", n, err)
	}
	if st := a.Stats(); st.TxPackets != 4 || st.TxErrors != 1 || st.TxDropped != 1 || st.TxBytes != 4*60 {
		t.Errorf("writer stats %+v", st)
	}
	bufs := [][]byte{make([]byte, 100), make([]byte, 100), make([]byte, 40)}
	sizes := make([]int, 3)
	n, err = b.ReadBatch(bufs, sizes, 10)
	if err != nil || n != 2 {
		t.Fatalf("ReadBatch: %d, %v; want 2 (the frames for the too small third buffer are dropped)", n, err)
	}
	if !bytes.Equal(bufs[0][10:10+sizes[0]], frames[0]) || !bytes.Equal(bufs[1][10:10+sizes[1]], frames[1]) {
		t.Errorf("frames differ")
	}
	if st := b.Stats(); st.RxPackets != 2 || st.RxErrors != 2 || st.RxBytes != 120 {
		t.Errorf("reader stats %+v, want 2 packets, 2 errors", st)
	}
	// A blocked reader is released by Close.
	var wg sync.WaitGroup
	wg.Add(1)
	var rerr error
	go func() {
		defer wg.Done()
		_, rerr = b.ReadBatch(bufs, sizes, 0)
	}()
	b.Close()
	wg.Wait()
	if !errors.Is(rerr, ErrPortClosed) {
		t.Errorf("read on closed: %v", rerr)
	}
	if _, err := a.WriteBatch(frames[:1]); !errors.Is(err, ErrPortClosed) {
		t.Errorf("write to closed peer: %v", err)
	}
	if _, _, err := NewMemPipe("x", "y", 0, 1); err == nil {
		t.Errorf("MTU 0 accepted")
	}
	if _, _, err := NewMemPipe("x", "y", 1500, 0); err == nil {
		t.Errorf("depth 0 accepted")
	}
}

func TestMemPipeNoAllocs(t *testing.T) {
	a, b, err := NewMemPipe("a", "b", 1500, 64)
	if err != nil {
		t.Fatal(err)
	}
	pkts := make([][]byte, 32)
	for i := range pkts {
		pkts[i] = udpFrame64(i)
	}
	bufs := make([][]byte, 32)
	for i := range bufs {
		bufs[i] = make([]byte, BufferSize(1500))
	}
	sizes := make([]int, 32)
	allocs := testing.AllocsPerRun(100, func() {
		a.WriteBatch(pkts)
		b.ReadBatch(bufs, sizes, DefaultHeadroom)
	})
	if allocs != 0 {
		t.Errorf("%v allocations per batch, want 0", allocs)
	}
	if st := b.Stats(); st.RxPackets != 101*32 {
		t.Errorf("read %d frames, want %d", st.RxPackets, 101*32)
	}
}

func BenchmarkMemPipe(b *testing.B) {
	for _, batch := range []int{1, 32} {
		b.Run(map[int]string{1: "batch1", 32: "batch32"}[batch], func(b *testing.B) {
			x, y, _ := NewMemPipe("a", "b", 1500, 256)
			pkts := make([][]byte, batch)
			bufs := make([][]byte, batch)
			for i := range pkts {
				pkts[i] = udpFrame64(i)
				bufs[i] = make([]byte, BufferSize(1500))
			}
			sizes := make([]int, batch)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i += batch {
				x.WriteBatch(pkts)
				y.ReadBatch(bufs, sizes, DefaultHeadroom)
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds()/1e6, "Mpps")
		})
	}
}
