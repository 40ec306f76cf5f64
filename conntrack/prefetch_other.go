//go:build !amd64

package conntrack

// prefetch is a no-op on this architecture (amd64 has PREFETCHT0 in
// prefetch_amd64.s): the burst's lookups are then plain lookups in
// order.
func prefetch(addr uintptr) {}

// prefetchLines is a no-op too (see prefetch).
func prefetchLines(addrs []uintptr) {}
