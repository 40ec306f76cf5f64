package daemon

import (
	"math/bits"
	"sync/atomic"
	"time"
)

// latencySub is the number of sub-buckets per power of two: quantiles
// are exact to within 1/latencySub (12.5%) of the value.
const (
	latencySubBits = 3
	latencySub     = 1 << latencySubBits
	latencyBuckets = (64 - latencySubBits + 1) * latencySub
)

// Latency is a lock-free log-linear histogram of durations, for the
// handler latency quantiles that the status and the benchmark report.
// Record allocates nothing and is safe for concurrent use.
type Latency struct {
	counts [latencyBuckets]atomic.Uint64
	n      atomic.Uint64
}

func latencyIndex(ns uint64) int {
	if ns < latencySub {
		return int(ns)
	}
	e := bits.Len64(ns) - 1 // ns >= 2^e
	m := (ns >> (e - latencySubBits)) & (latencySub - 1)
	return (e-latencySubBits+1)*latencySub + int(m)
}

// latencyUpper is the largest value that falls in bucket i.
func latencyUpper(i int) uint64 {
	if i < latencySub {
		return uint64(i)
	}
	e := i/latencySub + latencySubBits - 1
	m := uint64(i % latencySub)
	lo := (uint64(latencySub) + m) << (e - latencySubBits)
	return lo + (uint64(1) << (e - latencySubBits)) - 1
}

// Record adds one observation.
func (l *Latency) Record(d time.Duration) {
	if d < 0 {
		d = 0
	}
	l.counts[latencyIndex(uint64(d))].Add(1)
	l.n.Add(1)
}

// Count is the number of observations.
func (l *Latency) Count() uint64 { return l.n.Load() }

// Quantile returns the q-quantile (0 < q <= 1) of the observations (the
// upper bound of the bucket that holds it), or 0 without observations.
func (l *Latency) Quantile(q float64) time.Duration {
	var snap [latencyBuckets]uint64
	var total uint64
	for i := range l.counts {
		snap[i] = l.counts[i].Load()
		total += snap[i]
	}
	if total == 0 {
		return 0
	}
	if q > 1 {
		q = 1
	}
	rank := uint64(q * float64(total))
	if rank == 0 {
		rank = 1
	}
	var acc uint64
	for i, c := range snap {
		acc += c
		if acc >= rank {
			return time.Duration(latencyUpper(i))
		}
	}
	return time.Duration(latencyUpper(latencyBuckets - 1))
}

// Reset clears the histogram.
func (l *Latency) Reset() {
	for i := range l.counts {
		l.counts[i].Store(0)
	}
	l.n.Store(0)
}
