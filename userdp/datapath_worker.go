package userdp

import (
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/ovsdp/ovsdp/conntrack"
	"github.com/ovsdp/ovsdp/flowkeys"
	"github.com/ovsdp/ovsdp/odp"
)

// worker is the forwarding state of one goroutine: a port's receive loop,
// or the Execute path (under the datapath's execute mutex). Nothing in it
// is shared, so the per-packet path updates plain fields and publishes
// them to the datapath's atomics once per batch.
type worker struct {
	// The packet's context comes first, after ctxPad bytes, so that its
	// key starts on a 64-byte boundary whatever fields follow (the
	// comparator's 64-byte loads then never cross a cache line; see
	// ctxPad and TestHitPathKeysAligned).
	_   [ctxPad]byte
	ctx pktCtx

	dp *Datapath
	// tunnels is &dp.tunnels (&noTunnels without a datapath): output's
	// test for tunnel ports, one load (tunnelPorts).
	tunnels *atomic.Int32
	cache   *flowCache

	// Transmit queues, indexed by port number, and the ports that have
	// frames queued.
	txq   []txQueue
	dirty []uint32

	// Scratch copies for nested action lists (a stack).
	copyStack [maxCloneDepth + maxRecirc + 2]copySlot
	copies    int

	// Per-flow statistics of the current run of packets of one flow, at
	// each recirculation depth: a packet that recirculates meets a
	// different flow at each depth, and with one accumulator per depth
	// consecutive packets of one connection keep adding to the same
	// ones instead of publishing (atomics) at every lookup.
	acc [maxRecirc + 1]flowAcc

	execBuf  []byte   // Execute's packet buffer
	execBufs [][]byte // AppendExecute's, one a packet of a batch
	slab     upcallSlab
	rng      uint64
	now      uint64 // CLOCK_MONOTONIC ms of the current batch
	counters workerCounters

	natArgs setArgs              // the ct action's NAT rewrite (exec_ct.go)
	ctPkt   conntrack.Packet     // the ct action's view of the packet (exec_ct.go)
	tracker *conntrack.Tracker   // dp.Conntrack(), once the first ct action made it
	ctCache *conntrack.ConnCache // the connections of recent ct actions, by cache hash (exec_ct.go)
	// The receive loop's prefetch of a group's ct lookups
	// (exec_ct_prefetch.go): the tracker's Prefetcher, whether the
	// next group is prefetched, and in which zone.
	ctPrefetch   *conntrack.Prefetcher
	ctPrefetchOn bool
	ctZone       uint16
	memo         []recircMemo // the flows recirculated ct packets met, by cache hash (recirc_memo.go)

	tunOpts   [256]byte   // the Geneve options of the received packet (tunnel_rx.go)
	encap     encapParams // an encapsulation's parameters (exec_tnl.go)
	pushBuf   []byte      // tnl_push's packet buffer (exec_tnl.go)
	popOpts   [256]byte   // tnl_pop's Geneve options
	popMD     flowkeys.Metadata
	wall      time.Time // the batch's wall-clock time, for tunnel routes (exec_tnl.go)
	wallValid bool
	// The ct action's reassembly and output's fragmentation (exec_ct.go).
	reasm      conntrack.Reassembled
	fragmenter conntrack.Fragmenter
	// A tunnel port's PMTU replies (tunnel_pmtu.go): the reply's
	// buffer, and the worker that runs it as received on the port
	// (noInject in that one).
	pmtuBuf  []byte
	injector *worker
	noInject bool
}

// mallocHeader is the bytes the Go runtime puts before a heap object
// that has pointers and is larger than 512 bytes (up to 32 KB), as a
// worker is: the object's address is 8 past a multiple of its size
// class, itself a multiple of 64 for these sizes.
const mallocHeader = 8

// ctxPad puts worker.ctx.key at a multiple of 64 bytes from the start of
// the runtime's allocation.
const ctxPad = (64 - (mallocHeader+unsafe.Offsetof(pktCtx{}.key))%64) % 64

// copySlot is one scratch packet copy.
type copySlot struct {
	buf []byte
	ctx pktCtx
}

// workerCounters are counted per worker and published per batch.
type workerCounters struct {
	lost, actionErrors, explicitDrops, recircDrops, extractErrors, txNoPort, noEthernet uint64
}

// flowAcc accumulates statistics for consecutive packets of one flow.
type flowAcc struct {
	f       *megaflow
	packets uint64
	bytes   uint64
	flags   uint16
}

// txQueue holds the frames queued for one output port.
type txQueue struct {
	pkts [][]byte // queued frames
	bufs [][]byte // our copies (pkts[i] aliases bufs[i] unless stolen)
	// marks are the skb marks of a tunnel port's frames (outputTunnel
	// sets each one), which route the outer packets; nil for the queue
	// of a port that never was a tunnel.
	marks []uint32
	n     int
}

// txBatch is the number of frames queued per port before a write.
const txBatch = 64

func newWorker(dp *Datapath, cacheEntries int) *worker {
	w := &worker{dp: dp, cache: newFlowCache(dp.table, cacheEntries), rng: 0x9e3779b97f4a7c15, tunnels: &noTunnels}
	if dp != nil {
		w.rng ^= uint64(dp.seq.Add(1)) * 0xbf58476d1ce4e5b9
		w.tunnels = &dp.tunnels
	}
	return w
}

// process runs one received frame, at buf[off:off+n], from port inPort.
// It is lookupAndRun for a packet at recirculation depth 0, written out
// so that a cache hit executes without another call boundary.
func (w *worker) process(buf []byte, off, n int, inPort uint32) {
	c := &w.ctx
	// The key is as the straight-line extraction leaves it if that
	// extracted the last packet and nothing but the fast forms ran on
	// it, once the fields a fast ct form may have set are cleared (a
	// context that is not clean: start makes it clean).
	zeroed := c.straight
	if zeroed && !c.clean {
		clearKeyCT(&c.key)
	}
	w.start(c, buf, off, n)
	frame := buf[off : off+n]
	// The key and its cache hash in one pass (cacheHash's value; with
	// the cache disabled the hash is not used).
	l3, h, straight, err := flowkeys.ExtractPortHashedOver(frame, inPort, &c.key, w.cache.hasher, zeroed)
	c.straight = straight
	if err != nil {
		w.counters.extractErrors++
		return
	}
	c.l3off = l3
	c.keyValid = true
	c.proto = keyProtocol(&c.key)
	c.hash = h
	f := w.cache.lookupHashed(&c.key, h)
	if f == nil {
		w.miss(c)
		return
	}
	acc := &w.acc[0]
	if acc.f != f {
		w.switchAcc(acc, f)
	}
	a := acc.count(c, f)
	// The packet is as start left it: an Ethernet frame, the receive
	// buffer, no cutlen (runFast's state checks).
	if a.fast.kind != fastNone {
		if a.fast.kind == fastCTRecirc {
			w.runCTRecirc(c, f, a)
			return
		}
		if straight {
			if w.runFastStraight(c, a.fast, frame) {
				return
			}
		} else if w.runFastReceived(c, a.fast, frame) {
			return
		}
	}
	c.acts = a
	w.run(c, a.prog)
}

// start resets the packet state for a received frame at buf[off:off+n]:
// the frame, and, unless the previous packet left the context clean
// (pktCtx.clean), the other fields it resets.
func (w *worker) start(c *pktCtx, buf []byte, off, n int) {
	c.f.Buf, c.f.Off, c.f.Len = buf, off, n
	if c.clean {
		return
	}
	c.hValid, c.cutlen, c.recirc, c.steal, c.noEth, c.probability = false, 0, 0, true, false, 0
	c.egress = nil
	if c.ct.Flags != 0 { // only a ct action sets it
		c.ct.Clear()
	}
	c.clean = true
}

// lookupAndRun looks the packet's key up and executes the flow's actions,
// or sends a miss upcall.
//
// It adds the packet to the flow's statistics as the kernel's
// ovs_flow_stats_update does: the byte count is the whole frame, VLAN
// tags included (the kernel adds VLAN_HLEN to skb->len for the tag it
// holds out of band), and the TCP flags are those of the packet's own
// key (flowkeys.Extract sets them only for TCP over IP with a whole TCP
// header, never for a later fragment), whatever the flow's mask. They
// are accumulated while packets of one flow follow each other
// (flowAcc), and published when another flow's packet comes or the
// batch ends.
//
// h is the packet's exact-match cache hash (flowCache.hashOf at the
// first lookup, recircHash after a recirculation); it is kept in c for
// the next.
func (w *worker) lookupAndRun(c *pktCtx, h uint32) {
	c.hash = h
	f := w.cache.lookupHashed(&c.key, h)
	if f == nil {
		w.miss(c)
		return
	}
	w.runFlow(c, f)
}

// runFlow is lookupAndRun once the packet's flow f is found: it counts
// the packet in f's statistics and executes f's actions.
func (w *worker) runFlow(c *pktCtx, f *megaflow) {
	acc := &w.acc[c.recirc] // recirculate keeps c.recirc <= maxRecirc
	if acc.f != f {
		w.switchAcc(acc, f)
	}
	a := acc.count(c, f)
	if a.fast.kind != fastNone {
		if a.fast.kind == fastCTRecirc {
			w.runCTRecirc(c, f, a)
			return
		}
		// A straight key (a fast ct form led here) says the frame is
		// still as the straight-line extraction found it: only ct
		// and NAT, which rewrites addresses and ports in place, ran.
		if c.straight {
			if w.runFastStraight(c, a.fast, c.f.Bytes()) {
				return
			}
		} else if w.runFast(c, a.fast, c.f.Bytes()) {
			return
		}
	}
	c.acts = a
	w.run(c, a.prog)
}

// count adds the packet c to the statistics accumulated in acc for its
// flow f (acc.f, lookupAndRun), and returns f's actions (the caller
// records them in c.acts for run: only userspace actions read them).
func (acc *flowAcc) count(c *pktCtx, f *megaflow) *flowActions {
	acc.packets++
	acc.bytes += uint64(c.f.Len)
	acc.flags |= c.key.TCPFlags
	return f.acts.Load()
}

// switchAcc publishes the statistics accumulated in a for the previous
// flow and starts accumulating for f.
func (w *worker) switchAcc(a *flowAcc, f *megaflow) {
	w.flushAcc(a)
	a.f = f
}

// flushAcc publishes the flow statistics accumulated in a.
func (w *worker) flushAcc(a *flowAcc) {
	if a.f == nil {
		return
	}
	a.f.packets.Add(a.packets)
	a.f.bytes.Add(a.bytes)
	if a.f.used.Load() < w.now {
		a.f.used.Store(w.now)
	}
	if a.flags != 0 {
		a.f.tcpFlags.Or(uint32(a.flags))
	}
	*a = flowAcc{}
}

// miss sends a miss upcall for the packet.
func (w *worker) miss(c *pktCtx) {
	if w.dp == nil {
		return
	}
	m := upcallMsg{kind: odp.UpcallMiss, key: c.key, pkt: w.slab.copyOf(c.f.Bytes()), mru: c.mru()}
	if !w.dp.upcalls.send(&m, 0) {
		w.counters.lost++
	}
}

// userspace sends an action upcall.
func (w *worker) userspace(c *pktCtx, o *op) {
	if w.dp == nil {
		return
	}
	// As the kernel's output_userspace: the key as the actions left it,
	// not extracted again. After an action that invalidated it (push or
	// pop of MPLS, Ethernet or NSH, a VLAN tag over another) it is the
	// key from before, but for its MAC protocol, which those actions set
	// (the crosscheck scenario userspace-after-l2-actions).
	b := c.f.Bytes()
	// The kernel sends skb->len - cutlen bytes of the packet with its
	// out-of-band tag put back in line: the whole frame less cutlen.
	if cut := c.cut(); cut > 0 && int(cut) < len(b) {
		b = b[:len(b)-int(cut)]
	}
	m := upcallMsg{kind: odp.UpcallAction, key: c.key, pkt: w.slab.copyOf(b), userdata: o.user.userdata, mru: c.mru()}
	if o.user.actions && c.acts != nil {
		m.acts = c.acts.odp
	}
	if o.user.hasTunPort {
		m.egress = w.egressKeyFor(c, o.user.tunPort)
	}
	if !w.dp.upcalls.send(&m, o.user.pid) {
		w.counters.lost++
	}
}

// output queues frame for port. steal says frame is the receive buffer,
// not needed any more, and may be queued without a copy.
func (w *worker) output(port uint32, frame []byte, steal bool) {
	q := w.queue(port)
	if q == nil {
		return
	}
	if steal {
		q.pkts[q.n] = frame
		q.n++
		return
	}
	copy(w.slot(q, len(frame)), frame)
	w.commit(port, len(frame))
}

// reserve returns a buffer of n bytes, owned by port's queue, for a
// frame that commit then queues; nil if the port number is too large.
func (w *worker) reserve(port uint32, n int) []byte {
	q := w.queue(port)
	if q == nil {
		return nil
	}
	return w.slot(q, n)
}

// commit queues the first n bytes of the buffer reserve returned.
func (w *worker) commit(port uint32, n int) {
	q := &w.txq[port]
	q.pkts[q.n] = q.bufs[q.n][:n]
	q.n++
}

// slot returns q's next buffer, with room for n bytes.
func (w *worker) slot(q *txQueue, n int) []byte {
	b := q.bufs[q.n]
	if cap(b) < n {
		b = make([]byte, max(n, 2048))
		q.bufs[q.n] = b
	}
	return b[:n]
}

// queue returns port's transmit queue with room for one frame (flushing
// it when full), or nil if the port number is too large.
func (w *worker) queue(port uint32) *txQueue {
	if int(port) >= len(w.txq) {
		if port > maxPortNumber {
			w.counters.txNoPort++
			return nil
		}
		n := make([]txQueue, port+1)
		copy(n, w.txq)
		w.txq = n
	}
	q := &w.txq[port]
	if q.pkts == nil {
		q.pkts = make([][]byte, txBatch)
		q.bufs = make([][]byte, txBatch)
	}
	if q.n == txBatch {
		w.flushPort(port)
	}
	if q.n == 0 {
		w.dirty = append(w.dirty, port)
	}
	return q
}

// tryQueue is output's common case, small enough to be inlined: it
// queues a frame that may be stolen for a port whose queue is partly
// filled, and reports whether it did (else the caller calls output).
func (w *worker) tryQueue(port uint32, frame []byte) bool {
	if int(port) >= len(w.txq) {
		return false
	}
	q := &w.txq[port]
	if q.n == 0 || q.n >= len(q.pkts) {
		return false
	}
	q.pkts[q.n] = frame
	q.n++
	return true
}

// flushPort writes port's queued frames.
func (w *worker) flushPort(port uint32) {
	q := &w.txq[port]
	if q.n == 0 {
		return
	}
	p := w.dp.portByNumber(port)
	if p == nil {
		w.counters.txNoPort += uint64(q.n)
	} else if t, ok := p.port.(tunnelOut); ok && q.marks != nil {
		t.writeMarked(q.pkts[:q.n], q.marks[:q.n])
	} else {
		p.port.WriteBatch(q.pkts[:q.n]) // drops are counted by the port
	}
	// The slots keep their frames until overwritten (at most txBatch
	// frames a port, each a receive buffer, a queue buffer or the
	// execute buffer, all of which live on anyway): clearing them cost
	// a write barrier per frame whenever the GC was marking.
	q.n = 0
}

// flush ends a batch: transmits the queued frames and publishes the
// statistics.
func (w *worker) flush() {
	for i := range w.acc {
		if w.acc[i].f != nil {
			w.flushAcc(&w.acc[i])
		}
	}
	for _, p := range w.dirty {
		w.flushPort(p)
	}
	w.dirty = w.dirty[:0]
	w.wallValid = false
	if w.dp != nil {
		w.cache.publish(&w.dp.counters)
		w.dp.publish(&w.counters)
	}
	w.counters = workerCounters{}
}
