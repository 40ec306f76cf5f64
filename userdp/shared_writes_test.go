package userdp

import (
	"bytes"
	"testing"
	"unsafe"
)

// bytesOf is a copy of the memory of *p.
func bytesOf[T any](p *T) []byte {
	return bytes.Clone(unsafe.Slice((*byte)(unsafe.Pointer(p)), unsafe.Sizeof(*p)))
}

// TestPerPacketPathWritesNoSharedState: between two ends of a batch,
// forwarding packets writes nothing that other forwarding goroutines
// share: the megaflow the packets hit (its statistics included), the
// datapath's hit/miss and drop counters and the input port's dpPort
// stay byte for byte as they were over 1000 packets, with the
// exact-match cache and without it (every packet looked up in the
// subtables, whose hit counts rank them), and so does the subtable (the
// exact-match cache and the statistics being accumulated are the
// worker's own; the
// output port is written once per 64 queued frames, by WriteBatch).
// The batch's end publishes them: 1000 hits, and the flow's 1000
// packets. This is what lets two goroutines on two ports scale
// (BenchmarkForwardCores). It sees writes that change memory: a store of
// the value already there (which still takes the cache line from other
// cores) is not seen; a per-packet f.bytes.Add(1) in lookupAndRun makes
// it fail.
func TestPerPacketPathWritesNoSharedState(t *testing.T) {
	t.Run("cache", func(t *testing.T) { testNoSharedWrites(t, DefaultCacheEntries) })
	// Every packet through the megaflow table, as when the microflows
	// outnumber the cache's entries.
	t.Run("nocache", func(t *testing.T) { testNoSharedWrites(t, 0) })
}

func testNoSharedWrites(t *testing.T, cacheEntries int) {
	w, sink, frame := pipelineFixture(t, cacheEntries)
	dp := w.dp
	buf := make([]byte, BufferSize(1500))
	one := func() {
		copy(buf[DefaultHeadroom:], frame)
		w.process(buf, DefaultHeadroom, len(frame), 1)
	}
	// Warm up: the flow in the cache, the output queue made.
	one()
	w.flush()
	f := w.cache.lookup(&w.ctx.key)
	if f == nil {
		t.Fatal("the packet's flow is not in the cache")
	}
	w.flush() // publishes that lookup's hit
	in := dp.portByNumber(1)
	flow0, st0, counters0, drops0, port0 := bytesOf(f), bytesOf(f.st), bytesOf(&dp.counters), bytesOf(&dp.drops), bytesOf(in)
	hits0, pkts0, tx0 := dp.counters.hit.Load(), f.packets.Load(), sink.tx.Load()
	const n = 1000
	for range n {
		one()
	}
	for _, c := range []struct {
		what          string
		before, after []byte
	}{
		{"the megaflow", flow0, bytesOf(f)},
		{"the megaflow's subtable", st0, bytesOf(f.st)},
		{"the datapath's counters", counters0, bytesOf(&dp.counters)},
		{"the datapath's drop counters", drops0, bytesOf(&dp.drops)},
		{"the input port's dpPort", port0, bytesOf(in)},
	} {
		if !bytes.Equal(c.before, c.after) {
			t.Errorf("%d packets forwarded within a batch wrote %s (shared with other forwarding goroutines):\nbefore % x\nafter  % x", n, c.what, c.before, c.after)
		}
	}
	if got := sink.tx.Load() - tx0; got != n/txBatch*txBatch {
		t.Errorf("the output port was sent %d frames before the batch ended, want the %d of full queues", got, n/txBatch*txBatch)
	}
	w.flush()
	if got := dp.counters.hit.Load() - hits0; got != n {
		t.Errorf("after the batch: %d hits published, want %d", got, n)
	}
	if got := f.packets.Load() - pkts0; got != n {
		t.Errorf("after the batch: the flow counts %d packets more, want %d", got, n)
	}
	if got := sink.tx.Load() - tx0; got != n {
		t.Errorf("after the batch: %d frames sent, want %d", got, n)
	}
}
