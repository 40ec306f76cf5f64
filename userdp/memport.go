package userdp

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/ovsdp/ovsdp/odp"
)

// memRing is a bounded queue of frames copied into preallocated slots.
type memRing struct {
	mu       sync.Mutex
	nonEmpty sync.Cond
	slots    [][]byte // each len == slot size
	lens     []int
	head     int // next slot to read
	count    int
	closed   bool
}

func newMemRing(depth, slot int) *memRing {
	r := &memRing{slots: make([][]byte, depth), lens: make([]int, depth)}
	backing := make([]byte, depth*slot)
	for i := range r.slots {
		r.slots[i] = backing[i*slot : (i+1)*slot : (i+1)*slot]
	}
	r.nonEmpty.L = &r.mu
	return r
}

// MemPort is an in-memory port, one end of a pipe made by NewMemPipe:
// frames written to one end are read from the other. It needs no
// privileges and allocates nothing per frame, so unit tests and
// benchmarks use it in place of a netdev. Each direction is a bounded
// queue; a frame written to a full queue is dropped and counted as a tx
// drop on the writing end, as a device with a full transmit queue does.
type MemPort struct {
	name   string
	typ    odp.PortType
	mtu    int
	rx     *memRing // frames for us to read
	peer   *MemPort
	closed atomic.Bool
	stats  Counters
}

// NewMemPipe returns the two ends of an in-memory link. Each end's
// receive queue holds depth frames of up to 14+8+mtu bytes (an Ethernet
// header, two VLAN tags, the MTU); longer frames are refused by
// WriteBatch and counted as tx errors. Both ends have type
// odp.PortNetdev.
func NewMemPipe(nameA, nameB string, mtu, depth int) (*MemPort, *MemPort, error) {
	if mtu <= 0 || mtu > 65535 {
		return nil, nil, fmt.Errorf("userdp: memory pipe %s<->%s: MTU %d out of range 1..65535", nameA, nameB, mtu)
	}
	if depth <= 0 {
		return nil, nil, fmt.Errorf("userdp: memory pipe %s<->%s: queue depth %d must be positive", nameA, nameB, depth)
	}
	slot := 14 + 8 + mtu
	a := &MemPort{name: nameA, typ: odp.PortNetdev, mtu: mtu, rx: newMemRing(depth, slot)}
	b := &MemPort{name: nameB, typ: odp.PortNetdev, mtu: mtu, rx: newMemRing(depth, slot)}
	a.peer, b.peer = b, a
	return a, b, nil
}

// Name returns the port's name.
func (p *MemPort) Name() string { return p.name }

// Type returns odp.PortNetdev.
func (p *MemPort) Type() odp.PortType { return p.typ }

// MTU returns the MTU given to NewMemPipe.
func (p *MemPort) MTU() int { return p.mtu }

// Stats returns the port's counters.
func (p *MemPort) Stats() odp.PortStats { return p.stats.Snapshot() }

// ReadBatch implements Port.
func (p *MemPort) ReadBatch(bufs [][]byte, sizes []int, offset int) (int, error) {
	if len(sizes) < len(bufs) {
		return 0, fmt.Errorf("userdp: %s: read: %d sizes for %d buffers", p.name, len(sizes), len(bufs))
	}
	if len(bufs) == 0 {
		return 0, nil
	}
	r := p.rx
	r.mu.Lock()
	for r.count == 0 && !r.closed {
		r.nonEmpty.Wait()
	}
	if r.closed {
		r.mu.Unlock()
		return 0, fmt.Errorf("userdp: %s: read: %w", p.name, ErrPortClosed)
	}
	n := 0
	var bytes uint64
	for r.count > 0 && n < len(bufs) {
		l := r.lens[r.head]
		src := r.slots[r.head][:l]
		r.head++
		if r.head == len(r.slots) {
			r.head = 0
		}
		r.count--
		b := bufs[n]
		if offset < 0 || offset > len(b) || len(b)-offset < l {
			p.stats.RxErrors.Add(1)
			continue
		}
		copy(b[offset:], src)
		sizes[n] = l
		bytes += uint64(l)
		n++
	}
	r.mu.Unlock()
	p.stats.rx(n, bytes)
	return n, nil
}

// WriteBatch implements Port: it copies the frames into the peer's
// receive queue.
func (p *MemPort) WriteBatch(pkts [][]byte) (int, error) {
	if p.closed.Load() {
		return 0, fmt.Errorf("userdp: %s: write: %w", p.name, ErrPortClosed)
	}
	r := p.peer.rx
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return 0, fmt.Errorf("userdp: %s: write: %w", p.name, ErrPortClosed)
	}
	n := 0
	var bytes uint64
	var drops, errs uint64
	for _, pkt := range pkts {
		if len(pkt) > len(r.slots[0]) {
			errs++
			continue
		}
		if r.count == len(r.slots) {
			drops++
			continue
		}
		i := r.head + r.count
		if i >= len(r.slots) {
			i -= len(r.slots)
		}
		r.lens[i] = copy(r.slots[i], pkt)
		r.count++
		bytes += uint64(len(pkt))
		n++
	}
	if n > 0 {
		r.nonEmpty.Signal()
	}
	r.mu.Unlock()
	p.stats.tx(n, bytes)
	if drops > 0 {
		p.stats.TxDropped.Add(drops)
	}
	if errs > 0 {
		p.stats.TxErrors.Add(errs)
	}
	return n, nil
}

// Close closes this end: its pending and future reads return
// ErrPortClosed, and frames written to it by the peer are refused.
func (p *MemPort) Close() error {
	p.closed.Store(true)
	r := p.rx
	r.mu.Lock()
	r.closed = true
	r.count = 0
	r.nonEmpty.Broadcast()
	r.mu.Unlock()
	return nil
}

var _ Port = (*MemPort)(nil)
