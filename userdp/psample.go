package userdp

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/ovsdp/ovsdp/odp"
)

// The psample action (OVS_ACTION_ATTR_PSAMPLE, Linux 6.11 and later; 6.1
// refuses it with EINVAL) sends a copy of the packet to a psample group.
// The kernel multicasts it to the psample generic netlink family's
// "packets" group (PSAMPLE_CMD_SAMPLE with PSAMPLE_ATTR_SAMPLE_GROUP,
// SAMPLE_RATE, IIFINDEX, ORIGSIZE, DATA and USER_COOKIE); here every
// subscriber of PsampleEvents gets it (odp.PsampleEvent). As the kernel's execute_psample:
// the rate is the enclosing sample action's probability (UINT32_MAX
// outside one), the data is the packet less the cut of a trunc before
// it, and the packet goes on to the next action. A subscriber that does
// not keep up loses events (counted), as a netlink multicast listener
// whose socket is full; with no subscriber the action does nothing.

var _ odp.Psampler = (*Datapath)(nil)

// psampleQueueLen is how many events a subscriber's queue holds.
const psampleQueueLen = 1024

// psampleHub holds the subscribers of PsampleEvents.
type psampleHub struct {
	mu   sync.Mutex
	subs atomic.Pointer[[]*psampleSub]
	lost atomic.Uint64
}

type psampleSub struct{ q chan odp.PsampleEvent }

// PsampleEvents subscribes to the samples of every psample action of the
// datapath, whatever their group (odp.Psampler). The channel is closed when ctx is done
// or the datapath is closed. PsampleLost counts the events dropped because
// a subscriber's queue (1024 events) was full.
func (dp *Datapath) PsampleEvents(ctx context.Context) (<-chan odp.PsampleEvent, error) {
	out := make(chan odp.PsampleEvent)
	s := &psampleSub{q: make(chan odp.PsampleEvent, psampleQueueLen)}
	h := &dp.psample
	h.mu.Lock()
	var subs []*psampleSub
	if p := h.subs.Load(); p != nil {
		subs = append(subs, *p...)
	}
	subs = append(subs, s)
	h.subs.Store(&subs)
	h.mu.Unlock()
	go func() {
		defer close(out)
		defer h.remove(s)
		for {
			select {
			case ev := <-s.q:
				select {
				case out <- ev:
				case <-ctx.Done():
					return
				case <-dp.stop:
					return
				}
			case <-ctx.Done():
				return
			case <-dp.stop:
				return
			}
		}
	}()
	return out, nil
}

// PsampleLost returns how many psample events subscribers lost.
func (dp *Datapath) PsampleLost() uint64 { return dp.psample.lost.Load() }

func (h *psampleHub) remove(s *psampleSub) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var subs []*psampleSub
	for _, x := range *h.subs.Load() {
		if x != s {
			subs = append(subs, x)
		}
	}
	h.subs.Store(&subs)
}

// psample runs a psample action on the packet.
func (w *worker) psample(c *pktCtx, o *op) {
	if w.dp == nil {
		return
	}
	p := w.dp.psample.subs.Load()
	if p == nil || len(*p) == 0 {
		return
	}
	b := c.f.Bytes()
	orig := len(b)
	if cut := c.cut(); cut > 0 && int(cut) < len(b) {
		b = b[:len(b)-int(cut)]
	}
	rate := c.probability
	if rate == 0 {
		rate = 0xffffffff
	}
	ev := odp.PsampleEvent{Group: o.a, Rate: rate, InPort: c.key.InPort, OrigSize: uint32(orig),
		Cookie: o.user.userdata, Data: append([]byte(nil), b...)}
	for _, s := range *p {
		select {
		case s.q <- ev:
		default:
			w.dp.psample.lost.Add(1)
		}
	}
}

// compilePsample checks a psample action's cookie (at most 16 bytes, as
// the kernel's OVS_PSAMPLE_COOKIE_MAX_SIZE).
func compilePsample(a odp.Psample, path string) (op, error) {
	if len(a.Cookie) > odp.PsampleCookieMaxLen {
		return op{}, einval("%s: cookie of %d bytes exceeds %d", path, len(a.Cookie), odp.PsampleCookieMaxLen)
	}
	var cookie []byte
	if len(a.Cookie) > 0 {
		cookie = append([]byte(nil), a.Cookie...)
	}
	return op{kind: opPsample, a: a.Group, user: &userspaceArgs{userdata: cookie}}, nil
}
