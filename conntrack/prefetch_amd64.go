package conntrack

// prefetch asks the processor to bring the cache line at addr into every
// level of its caches (PREFETCHT0, prefetch_amd64.s) and returns at once:
// a hint, which never faults (any address, nil or unmapped, is fine),
// reads nothing into the program and changes nothing it can see. The
// address is a uintptr, not a pointer, so that the garbage collector and
// checkptr have nothing to say about addresses computed from an entry's
// (the start of its connection, see Prefetcher); a line that the
// collector frees meanwhile is only a wasted prefetch. An assembly
// function is not inlined: a call costs about 3 ns here
// (BenchmarkPrefetchCall), which is why a burst's lines go through
// prefetchLines, one call for all of them.
func prefetch(addr uintptr)

// prefetchLines is prefetch of every address in addrs, in one call.
//
//go:noescape
func prefetchLines(addrs []uintptr)
