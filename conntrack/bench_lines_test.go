package conntrack

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// BenchmarkEstablishedHotSize is BenchmarkEstablishedHot's probe of
// the same 1,000 active connections (every n/1,000-th, shuffled) in one
// table size per sub-benchmark, for a cache simulator (cachegrind),
// which cannot tell BenchmarkEstablishedHot's interleaved sizes apart:
// the misses of two runs of different lengths, subtracted, are one
// size's misses per lookup (scripts/ct-misses.sh). Its timings are not
// the report's (BenchmarkEstablishedHot measures the sizes under the
// same load).
func BenchmarkEstablishedHotSize(b *testing.B) {
	for _, n := range []int{1000, 1000000} {
		b.Run(fmt.Sprintf("conns=%d", n), func(b *testing.B) {
			tr := benchTracker(b, n)
			defer tr.StartSweeper(time.Hour)()
			ps := make([]Packet, hotConns)
			for h := range ps {
				ps[h] = Packet{Tuple: connTuple(h * (n / hotConns)), Len: 64}
			}
			rng := rand.New(rand.NewPCG(1, 2))
			rng.Shuffle(len(ps), func(x, y int) { ps[x], ps[y] = ps[y], ps[x] })
			a := Action{}
			b.ReportAllocs()
			b.ResetTimer()
			for i, h := 0, 0; i < b.N; i++ {
				var s State
				tr.Execute(&ps[h], &a, &s)
				if h++; h == hotConns {
					h = 0
				}
			}
		})
	}
}
