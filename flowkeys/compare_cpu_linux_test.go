package flowkeys

import (
	"bytes"
	"runtime"
	"sort"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// cmpLayout places the three operands of a comparison: the byte offset
// modulo 64 of the packet's key (a), the flow's key (b) and the mask (m).
type cmpLayout struct {
	name    string
	a, b, m uintptr
}

// cmpLayouts are the layouts BenchmarkEqualMaskedCPU measures: every
// operand 64-byte aligned; every operand 8 bytes past a 64-byte boundary;
// and the userdp hit path before its megaflows and subtables were laid
// out for alignment (the worker's packet key aligned, the megaflow's key
// and the subtable's mask 8 bytes past, behind the runtime's 8-byte
// allocation header).
var cmpLayouts = []cmpLayout{
	{"aligned", 0, 0, 0},
	{"off8", 8, 8, 8},
	{"mixed", 0, 8, 8},
}

// keysAt returns three keys whose memory starts at the layout's offsets
// from 64-byte boundaries, in one pointer-free allocation (large, so
// page aligned), filled with the same words (the mask all ones).
func keysAt(tb testing.TB, l cmpLayout) (a, b, m *Key) {
	const stride = KeyBytes + 128
	buf := make([]uint64, (3*stride+4096)/8)
	base := uintptr(unsafe.Pointer(unsafe.SliceData(buf)))
	skip := (64 - base%64) % 64
	at := func(i int, off uintptr) *Key {
		k := (*Key)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(buf)), skip+uintptr(i)*stride+off))
		if got := uintptr(unsafe.Pointer(k)) % 64; got != off {
			tb.Fatalf("layout %s: key %d at %d mod 64, want %d", l.name, i, got, off)
		}
		return k
	}
	a, b, m = at(0, l.a), at(1, l.b), at(2, l.m)
	for j := range a.Words() {
		a.Words()[j] = uint64(j)*0x9e3779b97f4a7c15 + 1
		m.Words()[j] = ^uint64(0)
	}
	*b = *a
	return a, b, m
}

// threadNanos is the calling thread's CPU time in nanoseconds.
func threadNanos(tb testing.TB) int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		tb.Fatalf("clock_gettime(CLOCK_THREAD_CPUTIME_ID): %v", err)
	}
	return ts.Nano()
}

// cpuChunks is how many alternating chunks BenchmarkEqualMaskedCPU
// splits b.N into.
const cpuChunks = 400

// BenchmarkEqualMaskedCPU measures EqualMasked against bytes.Equal over
// the same 128 bytes (words 8-24, unmasked: the mask is all ones) of the
// same two keys, under each layout of cmpLayouts and each comparator the
// dispatch can choose on this CPU ("dispatch" is the one it chooses).
// Method: the goroutine is locked to its thread and timed by the
// thread's CPU clock (time descheduled on this shared machine counts for
// neither); b.N is split into 400 chunks, each running ours then
// bytes.Equal, or the other way round on odd chunks. It reports ours'
// ns/op, bytes.Equal's (baseline-ns/op), their ratio over the run
// (x-vs-baseline: above 1, ours is faster) and the median of the
// chunks' ratios (median-chunk-x).
func BenchmarkEqualMaskedCPU(b *testing.B) {
	impls := []struct {
		name string
		impl uint8
	}{{"dispatch", cmpImpl}}
	var names []string
	for name := range cmpImpls() {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		impls = append(impls, struct {
			name string
			impl uint8
		}{name, cmpImpls()[name]})
	}
	r := Range{Start: 8, End: 24}
	for _, l := range cmpLayouts {
		x, y, m := keysAt(b, l)
		xb, yb := x.Bytes()[8*r.Start:8*r.End], y.Bytes()[8*r.Start:8*r.End]
		for _, im := range impls {
			b.Run(l.name+"/"+im.name+"/ours", func(b *testing.B) {
				orig := cmpImpl
				cmpImpl = im.impl
				defer func() { cmpImpl = orig }()
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				chunk := max(1, b.N/cpuChunks)
				var ok, same bool
				ours := func(n int) int64 {
					t0 := threadNanos(b)
					for i := 0; i < n; i++ {
						ok = EqualMasked(x, y, m, r)
					}
					return threadNanos(b) - t0
				}
				base := func(n int) int64 {
					t0 := threadNanos(b)
					for i := 0; i < n; i++ {
						same = bytes.Equal(xb, yb)
					}
					return threadNanos(b) - t0
				}
				var ourNs, baseNs int64
				var ratios []float64
				b.ResetTimer()
				for done, c := 0, 0; done < b.N; done, c = done+chunk, c+1 {
					n := min(chunk, b.N-done)
					var o, s int64
					if c%2 == 0 {
						o = ours(n)
						s = base(n)
					} else {
						s = base(n)
						o = ours(n)
					}
					ourNs += o
					baseNs += s
					if o > 0 {
						ratios = append(ratios, float64(s)/float64(o))
					}
				}
				if !ok || !same {
					b.Fatalf("equal keys compared unequal (EqualMasked %v, bytes.Equal %v)", ok, same)
				}
				b.ReportMetric(float64(ourNs)/float64(b.N), "ns/op")
				b.ReportMetric(float64(baseNs)/float64(b.N), "baseline-ns/op")
				if ourNs > 0 {
					b.ReportMetric(float64(baseNs)/float64(ourNs), "x-vs-baseline")
				}
				if len(ratios) > 0 {
					sort.Float64s(ratios)
					b.ReportMetric(ratios[len(ratios)/2], "median-chunk-x")
				}
			})
		}
	}
}
