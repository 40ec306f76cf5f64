package userdp

import (
	"encoding/binary"

	"github.com/ovsdp/ovsdp/conntrack"
	"github.com/ovsdp/ovsdp/internal/header"
)

// Prefetching a burst's connections.
//
// Traffic spread over many connections misses the worker's ConnCache,
// and each ct action's lookup is then two dependent misses to memory
// (the tracker's bucket, then the connection: see package conntrack),
// paid one packet after the other. The receive loop therefore runs a
// batch in groups of conntrack.MaxBurst frames (processBatch), and
// while the previous group's ct lookups most likely missed the
// ConnCache (see below), it first reads each frame's connection tuple from its headers (ctTupleOf)
// and has the tracker prefetch the lines its lookup will read
// (conntrack.Prefetcher), so that the group's misses overlap; then it
// processes the frames one by one, in order, exactly as without the
// prefetch (a prefetch is a hint: it changes no state, and a frame
// whose flow has no ct action, or whose ct action is in another zone,
// only wasted its prefetch). Nothing is counted per packet for it: at
// the end of each group, processBatch looks at the last frame's
// first-pass flow (the worker's statistics accumulator of depth 0), and
// when that is a firewall's ct(...),recirc(N) flow (the fast form
// fastCTRecirc) whose group hit the exact-match cache less than once a
// frame (its first level, not the second-level cache behind it: a frame
// that hits it meets it twice, before and after its recirculation; the
// ConnCache is indexed by the same hash and as large, so it misses as
// often), the next group is prefetched, in that
// flow's ct zone. Traffic of a few busy connections (BenchmarkPipelineCT)
// never prefetches, and a ct action that does not run in that fast form
// is never prefetched for. (With the exact-match cache disabled, every
// such group is.)

// processBatch runs the n received frames bufs[i][DefaultHeadroom:
// DefaultHeadroom+sizes[i]] from port inPort in order, as process one by
// one, in groups of conntrack.MaxBurst with the ct lookups of a group
// prefetched first while the worker's ConnCache most likely misses (see
// above).
func (w *worker) processBatch(bufs [][]byte, sizes []int, n int, inPort uint32) {
	n = min(n, len(bufs), len(sizes))
	for i := 0; i < n; {
		k := min(n-i, conntrack.MaxBurst)
		if w.ctPrefetchOn {
			w.prefetchCT(bufs[i:i+k], sizes[i:i+k])
		}
		hits0, smc0 := w.cache.cacheHits, w.cache.smcHits
		for j := i; j < i+k; j++ {
			w.process(bufs[j], DefaultHeadroom, sizes[j], inPort)
		}
		// On for the next group when the group's last first-pass flow
		// was a ct(...),recirc(N) one and its frames hit the
		// exact-match cache proper (not the second-level cache behind
		// it, which holds far more microflows than the ConnCache) less
		// than once a frame (a recirculated frame that hits looks it
		// up twice).
		ct := false
		if f := w.acc[0].f; f != nil {
			if a := f.acts.Load(); a != nil && a.fast.kind == fastCTRecirc {
				ct, w.ctZone = true, a.fast.ct.Zone
			}
		}
		w.ctPrefetchOn = ct && (w.cache.cacheHits-hits0)-(w.cache.smcHits-smc0) < uint64(k)
		i += k
	}
}

// prefetchCT prefetches the tracker's lines for the ct lookups of
// frames bufs[i][DefaultHeadroom:DefaultHeadroom+sizes[i]] in the zone
// of the worker's last first-pass ct action.
func (w *worker) prefetchCT(bufs [][]byte, sizes []int) {
	pf := w.ctPrefetch
	if pf == nil {
		return
	}
	var tp conntrack.Tuple
	for i, b := range bufs {
		if end := DefaultHeadroom + sizes[i]; sizes[i] >= 0 && end <= len(b) && ctTupleOf(b[DefaultHeadroom:end], &tp) {
			pf.Add(&tp, w.ctZone)
		}
	}
	pf.Conns()
}

// ctTupleOf sets *tp to the connection tuple that the tracker
// (conntrack.FromKey over the frame's flow key and L4 bytes) gives an
// untagged Ethernet frame of TCP or UDP over IPv4 (options allowed, not
// a fragment) or over IPv6 (no extension header) whose IP lengths hold
// the whole L4 header, reading only those headers, and reports whether
// the frame is one; for every other frame it reports false (the
// prefetch skips it). TestCTTupleOfMatchesTracker and FuzzCTTupleOf
// compare it with the tracker's tuple.
func ctTupleOf(frame []byte, tp *conntrack.Tuple) bool {
	if len(frame) < header.EthernetMinimumSize {
		return false
	}
	ip := frame[header.EthernetMinimumSize:]
	var l4 []byte
	var proto uint8
	switch binary.BigEndian.Uint16(frame[12:]) {
	case header.EtherTypeIPv4:
		if len(ip) < header.IPv4MinimumSize || ip[0]>>4 != 4 {
			return false
		}
		ihl := int(ip[0]&0x0f) * 4
		tot := int(binary.BigEndian.Uint16(ip[2:]))
		if ihl < header.IPv4MinimumSize || tot < ihl || tot > len(ip) || binary.BigEndian.Uint16(ip[6:])&0x3fff != 0 {
			return false // a bad header or a fragment
		}
		proto, l4 = ip[9], ip[ihl:tot]
		*tp = conntrack.Tuple{Proto: proto}
		copy(tp.Src[:4], ip[12:16])
		copy(tp.Dst[:4], ip[16:20])
	case header.EtherTypeIPv6:
		if len(ip) < header.IPv6MinimumSize || ip[0]>>4 != 6 {
			return false
		}
		end := header.IPv6MinimumSize + int(binary.BigEndian.Uint16(ip[4:]))
		if end > len(ip) {
			return false
		}
		proto, l4 = ip[6], ip[header.IPv6MinimumSize:end]
		*tp = conntrack.Tuple{Proto: proto, V6: true}
		copy(tp.Src[:], ip[8:24])
		copy(tp.Dst[:], ip[24:40])
	default:
		return false
	}
	switch proto {
	case header.IPProtoUDP:
		if len(l4) < 8 {
			return false
		}
	case header.IPProtoTCP:
		if len(l4) < 20 || l4[12]>>4 < 5 || int(l4[12]>>4)*4 > len(l4) {
			return false
		}
	default:
		return false
	}
	tp.SrcPort, tp.DstPort = binary.BigEndian.Uint16(l4), binary.BigEndian.Uint16(l4[2:])
	return true
}
