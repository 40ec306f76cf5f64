package userdp

import (
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/ovsdp/ovsdp/flowkeys"
	"github.com/ovsdp/ovsdp/odp"
)

// TestHitPathKeysAligned checks that the three operands of the hit
// path's masked comparison start on 64-byte boundaries: the packet's key
// (worker.ctx.key), the megaflow's key and its subtable's mask, as the
// table's put and newWorker allocate them. The comparator loads 64 bytes
// at a time from word 8 on (a 5-tuple mask's range); a load that crosses
// a cache line costs more (BenchmarkEqualMaskedCPU in flowkeys: AVX-512
// 1.03x of bytes.Equal aligned, 0.86x with the flow's operands 8 bytes
// past). The layouts rely on the Go runtime putting an 8-byte header
// before a heap object that has pointers and is larger than 512 bytes
// (up to 32 KB): megaflow and subtable place the key and the mask at
// offset 56; worker's packet key is at offset 56 too.
func TestHitPathKeysAligned(t *testing.T) {
	at := func(what string, p *flowkeys.Key) {
		t.Helper()
		if off := uintptr(unsafe.Pointer(p)) % 64; off != 0 {
			t.Errorf("%s starts %d bytes past a 64-byte boundary, want 0 (offsets: megaflow.key %d of %d bytes, subtable.mask %d of %d, worker.ctx.key %d of %d)",
				what, off, unsafe.Offsetof(megaflow{}.key), unsafe.Sizeof(megaflow{}), unsafe.Offsetof(subtable{}.mask), unsafe.Sizeof(subtable{}),
				unsafe.Offsetof(worker{}.ctx)+unsafe.Offsetof(pktCtx{}.key), unsafe.Sizeof(worker{}))
		}
	}
	rng := rand.New(rand.NewPCG(5, 6))
	tb := newTable()
	masks := randomMasks(rng, 3)
	for i := 0; i < 12; i++ {
		m := masks[i%len(masks)]
		pk := randomKey(rng)
		var k flowkeys.Key
		flowkeys.ApplyMask(&k, &pk, &m, flowkeys.FullRange)
		var u odp.UFID
		u[0], u[1] = byte(i), 1
		if _, err := tb.put(&flowSpec{ufid: u, key: k, mask: m, ukey: pk, acts: &flowActions{}, name: "aligned"}, odp.PutCreate); err != nil {
			t.Fatalf("put flow %d: %v", i, err)
		}
	}
	if len(tb.byUFID) != 12 {
		t.Fatalf("table holds %d flows by UFID, want 12", len(tb.byUFID))
	}
	for _, f := range tb.byUFID {
		at("a megaflow's key", &f.key)
		at("a subtable's mask", &f.st.mask)
		at("a megaflow's mask pointer", f.mask)
	}
	dp, err := New("aligned", WithoutLocalPort())
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	defer dp.Close()
	for i := 0; i < 3; i++ {
		w := newWorker(dp, 64)
		at("a worker's packet key", &w.ctx.key)
	}
}
