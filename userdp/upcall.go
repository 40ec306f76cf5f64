package userdp

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/ovsdp/ovsdp/flowkeys"
	"github.com/ovsdp/ovsdp/odp"
)

// Upcalls. A miss (or a userspace action) puts an upcall message in the
// bounded queue of one handler, without ever blocking: when the queue is
// full, or no handler is registered (the kernel's "no upcall PID"), the
// upcall is counted as lost and the packet dropped, as the kernel's
// n_lost. The message carries the packet key as a flowkeys.Key; the
// handler's goroutine converts it to attributes in Recv, so the
// forwarding path does no more than copy the packet.

// DefaultUpcallQueueLen is the default length of each handler's queue:
// enough for a burst of new flows offered faster than the handlers set
// them up (10000 at 100000/s against two handlers doing 60-90k/s on two
// cores leaves 1000-4000 waiting) to wait rather than be lost. A queued
// upcall takes about 700 bytes (its flowkeys.Key), so a queue 2.8 MiB.
const DefaultUpcallQueueLen = 4096

// ErrReceiverClosed is returned (wrapped) by Recv on a closed receiver.
var ErrReceiverClosed = errors.New("userdp: upcall receiver closed")

// upcallMsg is an upcall in a handler's queue.
type upcallMsg struct {
	kind     odp.UpcallKind
	key      flowkeys.Key
	pkt      []byte
	userdata []byte
	acts     odp.Actions
	mru      uint16    // a reassembled packet's MRU (OVS_PACKET_ATTR_MRU)
	egress   egressKey // userspace(tunnel_out_port)'s egress tunnel key
}

// upcallQueue is one handler's queue.
type upcallQueue struct {
	ch     chan upcallMsg
	pid    uint32
	done   chan struct{}
	closed sync.Once
	dp     *Datapath
}

// upcallSet is the immutable set of registered handlers.
type upcallSet struct {
	qs []*upcallQueue
}

// upcallRouter dispatches upcalls to the registered handlers.
type upcallRouter struct {
	mu      sync.Mutex // serialises Upcalls/Close
	set     atomic.Pointer[upcallSet]
	nextPID uint32
	hasher  *flowkeys.KeyedHasher
}

// send queues m for the handler chosen by pid (a userspace action's PID
// naming one of ours) or else by the hash of the key; it returns false
// if the upcall is lost.
func (r *upcallRouter) send(m *upcallMsg, pid uint32) bool {
	s := r.set.Load()
	if s == nil || len(s.qs) == 0 {
		return false
	}
	var q *upcallQueue
	if pid != 0 {
		for _, c := range s.qs {
			if c.pid == pid {
				q = c
				break
			}
		}
	}
	if q == nil {
		q = s.qs[cacheHash(&m.key, r.hasher)%uint32(len(s.qs))]
	}
	select {
	case q.ch <- *m:
		return true
	default:
		return false
	}
}

// open replaces the registered handlers with n new ones.
func (r *upcallRouter) open(dp *Datapath, n, qlen int) []*upcallQueue {
	r.mu.Lock()
	defer r.mu.Unlock()
	qs := make([]*upcallQueue, n)
	for i := range qs {
		r.nextPID++
		qs[i] = &upcallQueue{ch: make(chan upcallMsg, qlen), pid: r.nextPID, done: make(chan struct{}), dp: dp}
	}
	r.set.Store(&upcallSet{qs: qs})
	return qs
}

// remove unregisters q.
func (r *upcallRouter) remove(q *upcallQueue) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.set.Load()
	if s == nil {
		return
	}
	var qs []*upcallQueue
	for _, c := range s.qs {
		if c != q {
			qs = append(qs, c)
		}
	}
	r.set.Store(&upcallSet{qs: qs})
}

// UpcallReceiver is one handler's receiver of a userspace Datapath's
// upcalls (an odp.UpcallReceiver).
type UpcallReceiver struct {
	q *upcallQueue
}

var _ odp.UpcallReceiver = (*UpcallReceiver)(nil)

// PID returns the receiver's upcall ID: a userspace action whose PID is
// this value sends its upcalls to this receiver (others go to the
// receiver chosen by the packet's hash).
func (u *UpcallReceiver) PID() uint32 { return u.q.pid }

// Recv fills ups with up to len(ups) upcalls, blocking until at least one
// is queued, ctx is done, or the receiver is closed. Each upcall's
// Packet, Key and Actions are the caller's to keep.
func (u *UpcallReceiver) Recv(ctx context.Context, ups []odp.Upcall) (int, error) {
	if len(ups) == 0 {
		return 0, nil
	}
	q := u.q
	select {
	case <-q.done:
		return 0, fmt.Errorf("userdp: recv: %w", ErrReceiverClosed)
	default:
	}
	var m upcallMsg
	select {
	case m = <-q.ch:
	case <-ctx.Done():
		return 0, ctx.Err()
	case <-q.done:
		return 0, fmt.Errorf("userdp: recv: %w", ErrReceiverClosed)
	}
	q.fill(&ups[0], &m)
	n := 1
	for n < len(ups) {
		select {
		case m = <-q.ch:
			q.fill(&ups[n], &m)
			n++
		default:
			return n, nil
		}
	}
	return n, nil
}

// fill converts a queued message to an odp.Upcall.
func (q *upcallQueue) fill(u *odp.Upcall, m *upcallMsg) {
	*u = odp.Upcall{
		Kind:     m.kind,
		Port:     m.key.InPort,
		Key:      keyAttrs(&m.key), // the Geneve options included (the key's TunOpts)
		Packet:   m.pkt,
		Userdata: m.userdata,
		Actions:  m.acts,
		MRU:      m.mru,
	}
	u.EgressTunnel = m.egress.tunnel()
}

// Backlog reports how many upcalls wait in the receiver's queue and how
// many it holds before the datapath counts further ones as lost. The
// daemon sheds load from this, not from how long a batch took.
func (u *UpcallReceiver) Backlog() (queued, capacity int, err error) {
	return len(u.q.ch), cap(u.q.ch), nil
}

// Close unregisters the receiver and unblocks a pending Recv. Upcalls
// still queued are discarded.
func (u *UpcallReceiver) Close() error {
	u.q.closed.Do(func() {
		u.q.dp.upcalls.remove(u.q)
		close(u.q.done)
	})
	return nil
}

// upcallSlab hands out packet copies for upcalls from large blocks, so
// that a miss costs an allocation only once per block.
type upcallSlab struct {
	b []byte
}

const upcallSlabSize = 256 << 10

// copyOf returns a copy of p that nothing else refers to.
func (s *upcallSlab) copyOf(p []byte) []byte {
	if len(p) > upcallSlabSize/4 {
		return append([]byte(nil), p...)
	}
	if len(s.b) < len(p) {
		s.b = make([]byte, upcallSlabSize)
	}
	c := s.b[:len(p):len(p)]
	copy(c, p)
	s.b = s.b[len(p):]
	return c
}
