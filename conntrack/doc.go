// Package conntrack tracks connections as Linux's nf_conntrack does for
// the openvswitch module's ct action (net/openvswitch/conntrack.c over
// net/netfilter, Linux 6.1), for the userspace datapath.
//
// # Use
//
// A datapath compiles each ct action once (CompileAction, which refuses
// what the kernel refuses), turns each packet into a Packet (FromKey:
// the flow key plus the L4 bytes; the tracker parses nothing itself),
// and calls Execute with the packet's State, which the packet carries
// through recirculation. Afterwards State.ToKey sets the flow key's
// ct_state, ct_zone, ct_mark, ct_label and original tuple as the kernel
// sets them, and Packet.Rewritten says which of the packet's addresses
// and ports NAT changed (to the values now in Packet.Tuple and
// Packet.Inner); rewriting the bytes, with incremental checksums, is the
// datapath's job. An error from Execute means the kernel would drop the
// packet (table full, zone limit, NAT range exhausted, a clash on
// commit).
//
// # What is tracked as the kernel does
//
//   - ct_state: +trk always; +new for a connection not yet committed or
//     committed with no reply seen; +est, +rel and +rpl from the
//     packet's relation to it; +inv for what the protocol tracker
//     refuses (and then no mark, labels or original tuple, and the
//     action's zone); +snat and +dnat for each NAT manipulation the
//     action executed, including the kernel's quirks: the reply of a
//     source-NATed connection is +dnat, and the original direction of a
//     destination-NATed one is +dnat+snat (ovs_ct_nat's second, null
//     source pass).
//   - commit confirms the connection (within the zone's limit and the
//     global maximum); mark and labels are set, masked, only when
//     committing; force deletes a connection found in the reply
//     direction and starts a new one; a later ct in the same zone reuses
//     the packet's connection instead of tracking it again.
//   - TCP: the kernel's tcp_conntracks table (SYN_SENT to TIME_WAIT,
//     SYN_SENT2), its special cases (ignored SYNs and the SYN/ACK
//     resync, reopening from TIME_WAIT and CLOSE, RST checks, RFC 5961
//     challenge ACKs, simultaneous open, pick-up of established
//     connections), tcp_in_window's four bounds with window scaling and
//     SACK, and the per-state timeouts with the retransmission and
//     unacknowledged-data caps. Flags combinations the kernel refuses
//     are invalid. As openvswitch's __ovs_ct_lookup, a committed
//     connection's window tracking turns liberal once it is established
//     and assured: later out-of-window segments pass (only out-of-window
//     RSTs are refused).
//   - UDP and UDP-Lite: 30 s unreplied, 120 s once replied after its
//     first 2 s (then assured). GRE: 30 s / 180 s. ICMP and ICMPv6:
//     queries and their replies are connections (30 s), a reply or a
//     type without an inverse cannot start one, errors are related to
//     the connection their embedded packet's inverse is the reply of.
//     Every other protocol (SCTP and DCCP included, which the kernel
//     tracks with their own state machines) is generic: no ports, 600 s.
//   - NAT: source and destination, address ranges (chosen by a hash of
//     the addresses; persistent leaves out the destination), port (or
//     ICMP identifier) ranges with the kernel's default classes, random
//     and hash offsets; an established or related packet is rewritten to
//     the inverse of the other direction's tuple, an ICMP error's
//     embedded packet back to what it was before NAT. A tuple whose
//     reply another connection holds is never handed out.
//
// IP fragments are reassembled before tracking by the tracker's Defrag
// (frag.go: the kernel's handle_fragments over ip_defrag and
// nf_ct_frag6_gather, with Open vSwitch's ipf settings), and a
// reassembled datagram is fragmented again for output by a Fragmenter
// (refrag.go: do_output and ovs_fragment).
//
// Helpers and timeout policies: there are none. A ct action with a
// helper is refused with EINVAL, as kernel 6.1 refuses a helper it has
// not loaded (with nf_conntrack_ftp/_tftp loaded it would accept ftp on
// TCP and tftp on UDP, a difference); one with a timeout policy is
// accepted and keeps the default timeouts, as the kernel does with a
// policy it cannot find (it only logs). Checked in the VM by
// crosscheck's TestIntegrationCTHelperTimeout.
//
// Not done (yet): connection helpers and timeout policies, the TCP
// checksum check the kernel makes at PRE_ROUTING, early drop of
// unassured connections when the table is full, the reuse of an
// existing source mapping for a source outside the range, and NAT
// sequence adjustment (there is no helper to need it).
//
// # The table and the per-packet cost
//
// The lookup of an established connection takes no lock and allocates
// nothing: the table is a fixed array of buckets, each one cache line
// of six slots (atomic pointers to entries) with a 8-bit tag of each
// slot's hash beside them, plus a chain (atomic links) for the entries
// that find no free slot. Readers read them as RCU readers read the
// kernel's hlist_nulls, with the garbage collector as the grace period
// (see table.go). Writers (commit, delete, the sweeper) take one of 256
// stripe locks. This was chosen over seqlocked open addressing because
// a connection has two entries (one per direction) that must appear and
// disappear together, an entry never moves, and deleted entries stay
// safe to walk through without a retry loop on the reader's side. The
// bucket count is fixed when the tracker is made (a power of two at
// least half the maximum of connections: four entries a bucket at the
// maximum, about 4% of them chained), so no reader ever meets a resize.
//
// A lookup compares the six tags with its hash's and reads only
// the entries whose tag matches: a bucket's other connections (three
// on average in a full table, and cold when the traffic's working set
// is small) are not read. A connection is laid out for the lookup (see
// conn): 256 bytes; its first cache line holds the original direction's
// entry and every field a lookup reads or writes after the compare
// (status, expires, stream), its second the reply direction's entry, so
// that an original-direction hit reads the bucket's line and one line
// of the connection, a reply-direction hit the bucket's and an aligned
// pair; mark and labels, in the third line, are read only once set.
// Entries hold no pointer to their connection (entry.conn finds it from
// the entry's address), so the line holds the state beside the tuple.
// Until ctflat2 (session 9) every hit read both of the connection's
// first two lines (expires was at byte 64) and an established UDP
// packet a fourth (stream).
// Measured with cachegrind's simulation of this machine's L1d and a
// 4 MB L2 as the last level (no prefetcher modelled; a 3M-lookup run
// minus a 1M one), BenchmarkEstablished at 1,000,000 connections, every
// connection probed, misses the last level 3.64 times per lookup with
// chained buckets of one pointer and 2.91 times with the tagged slots
// (the L1d 3.93 and 2.98 times): about the floor for the bucket's line
// and the connection's two. BenchmarkEstablishedHot (the same 1,000
// connections probed in every table size) misses the last level about
// 0 times per op either way, its working set fits; the L1d about 4.4
// times per lookup either way (17.3 and 17.5 per op of four lookups,
// to within these runs' spread of about 0.5). What still makes its 1,000,000-connection lookup
// slower than the 1,000-connection one is the TLB (its 1,000
// connections and their buckets lie on about 2,000 pages), which
// cachegrind does not model. The bucket array is therefore on
// transparent huge pages where the kernel has them (newTable,
// hugepage_linux.go): at 1,000,000 connections its 32 MB are 16 TLB
// entries instead of 8,192, which takes the buckets' thousand pages out
// of that count (BenchmarkEstablishedHot's ratio about 2.4 → 2.15 on
// this shared machine). The connections stay on the heap's 4 KB pages:
// moving them into slabs on huge pages at commit gained about 0.1 more
// but kept a whole slab alive while any of its connections lived (a
// connection is never reused), 8 times the heap of a churning table
// (issue 15's notes). Above cache size what remains is memory (and TLB)
// latency per line: two dependent misses per lookup, the bucket's line
// and then the connection's pair.
//
// Huge pages in this guest do not extend the TLB's reach, though (ctslab,
// session 10): its host backs guest memory with 4 KB pages, so a TLB
// entry still maps 4 KB. A chase of dependent loads over 1,000 lines on
// 1,000 distinct 4 KB pages costs 12.4 ns per pair of loads against 7.2
// over 16 pages, the same with the memory fresh from mmap and advised
// MADV_HUGEPAGE (all of it on huge pages, as smaps showed) as with
// MADV_NOHUGEPAGE; connections bump-allocated from such a fresh huge-page
// slab left BenchmarkEstablishedHot's ratio where the heap's 4 KB pages
// have it (1.46-1.54 against 1.44-1.59 for a 4 KB slab and 1.38-1.45 for
// the heap). What counts is how many distinct 4 KB pages the active
// connections' lookups touch, and a table of more than 32,768
// connections therefore has a hot cache in front of its buckets (see
// table.go): 32 KB of bucket-shaped lines that lookups read first and
// leave the live entries they found in (one lookup in eight), so that
// 1,000 active connections are found through 8 pages instead of through
// their buckets' 1,000. Their connections' own 1,000 pages remain (a
// connection is never moved or reused).
//
// The datapath calls ExecuteKey, which is FromKey, Execute and ToKey in
// one call, with the case of an established TCP or UDP connection in
// line (fast.go), through a ConnCache of its own per forwarding thread:
// the connection entry a packet met is remembered by the packet's
// exact-match cache hash, and the next packet of that microflow checks
// that entry (tuple, zone, not deleted, not expired: the table's own
// test) instead of hashing its tuple and probing the bucket, a chain of
// dependent loads that is most of an established lookup's latency
// (BenchmarkPipelineCT: about 78 → 66 ns a packet). A slot keeps that
// hash beside the entry, and a packet with another hash (another
// microflow) does not read the entry, whose line, with more
// connections than slots, is most likely another connection's and cold
// (ctbatch: BenchmarkPipelineCTConnsBurst over 50,000 connections).
//
// # Bursts
//
// Traffic spread over more connections than the caches hold misses
// memory twice a lookup (the bucket, then the connection), one lookup
// after the other. ExecuteBurst runs a burst of packets (each with its
// own action and state) as Execute one by one in order, with exactly
// the same results and state changes, but first hashes every packet's
// tuple and prefetches its bucket, then prefetches the connection lines
// whose tags match in each bucket (PREFETCHT0, prefetch_amd64.s; a
// no-op on other architectures), in groups of MaxBurst (32), so that
// the group's misses overlap instead of adding up (burst.go). A
// Prefetcher does the same for a caller that runs the lookups itself:
// the userspace datapath's receive loop prefetches each group of 32
// received frames' connections (their tuples read from the headers)
// while its first-pass ct flow misses the exact-match cache (and so the
// ConnCache, indexed by the same hash), then processes the frames in
// order as before. A prefetch is only a hint: it changes
// nothing, so a connection that an earlier packet of the burst creates
// or deletes costs a later one only its prefetch.
//
// BenchmarkEstablishedBurst (BenchmarkEstablished's lookups, in bursts
// of 32), medians of 5 runs alternated with main's binary at 200ms, load
// 0.6-1.0: 139 ns a lookup at 1,000,000 connections against 242 one by
// one in the same runs, and 78 against 49 at 1,000, where everything is
// in the cache and the burst's hashing and prefetches are pure cost (the
// hash is computed twice, once for the prefetch and once by the lookup):
// 1.78× the 1,000-connection lookup instead of 4.9×, issue 15's goal of
// 1.5× still not met. What bounds it is no longer the latency of one
// miss after the other but, most likely, the misses in flight and the
// TLB (this VM has no performance counters to show which): every
// lookup's bucket and connection lie on 4 KB pages of their own (this
// guest's host backs its memory with 4 KB pages, see above), and a
// prefetch that misses the TLB waits for a page walk like a load.
// Prefetching the connections a few lookups ahead of each one instead
// of all before the first (software pipelining) measured no better.
//
// After the lookup a TCP segment takes its connection's own mutex for the state
// machine, as the kernel takes ct->lock; UDP, ICMP and generic packets
// only store the new expiry and add to the counters, atomically.
// Expiry costs the packet path nothing more: expired connections are
// skipped (and removed) by the lookups that meet them and removed by a
// sweeper (Sweep, SweepBuckets, StartSweeper) that walks the buckets.
package conntrack
