package daemon

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ovsdp/ovsdp/odp"
)

// The shedding rules on a receiver that reports its backlog: the high
// and all marks, an overrun, the hysteresis down to the low mark.
func TestNextShedMode(t *testing.T) {
	for _, c := range []struct {
		mode    shedMode
		q, c    int
		overrun bool
		want    shedMode
	}{
		{shedNone, 0, 1000, false, shedNone},
		{shedNone, 499, 1000, false, shedNone},
		{shedNone, 500, 1000, false, shedUnknown},
		{shedNone, 874, 1000, false, shedUnknown},
		{shedNone, 875, 1000, false, shedAll},
		{shedNone, 1000, 1000, false, shedAll},
		{shedNone, 2000, 1000, false, shedAll}, // a socket charges more than its buffer at times
		{shedNone, 10, 1000, true, shedUnknown},
		{shedUnknown, 300, 1000, false, shedUnknown}, // draining
		{shedUnknown, 249, 1000, false, shedNone},
		{shedAll, 600, 1000, false, shedUnknown},
		{shedAll, 300, 1000, false, shedUnknown},
		{shedAll, 100, 1000, false, shedNone},
		{shedAll, 100, 1000, true, shedUnknown},
	} {
		if got := nextShedMode(c.mode, c.q, c.c, c.overrun); got != c.want {
			t.Errorf("nextShedMode(%d, %d of %d, overrun %v) = %d, want %d", c.mode, c.q, c.c, c.overrun, got, c.want)
		}
	}
}

// scriptedRx is a receiver that answers each Recv with the next step of
// its script (after the step's delay: a slow batch) and reports the
// step's backlog and overrun count; once the script is done it closes
// done and blocks until the context ends.
type scriptedRx struct {
	steps []rxStep
	next  int
	q, c  int
	lost  atomic.Uint64
	done  chan struct{}
}

// rxStep is one read: its upcalls, its delay, the backlog it reports
// after it, and how many overruns happened before it.
type rxStep struct {
	ups     []odp.Upcall
	delay   time.Duration
	q, c    int
	overrun uint64
}

func (r *scriptedRx) Recv(ctx context.Context, ups []odp.Upcall) (int, error) {
	if r.next == len(r.steps) {
		if r.done != nil {
			close(r.done)
			r.done = nil
		}
		<-ctx.Done()
		return 0, ctx.Err()
	}
	s := r.steps[r.next]
	r.next++
	time.Sleep(s.delay)
	r.q, r.c = s.q, s.c
	r.lost.Add(s.overrun)
	return copy(ups, s.ups), nil
}

func (r *scriptedRx) Backlog() (int, int, error) { return r.q, r.c, nil }
func (r *scriptedRx) Lost() uint64               { return r.lost.Load() }
func (r *scriptedRx) Close() error               { return nil }
func (r *scriptedRx) PID() uint32                { return 1 }

// lagOnlyRx is a receiver without a backlog or overrun count.
type lagOnlyRx struct{ r *scriptedRx }

func (l lagOnlyRx) Recv(ctx context.Context, ups []odp.Upcall) (int, error) {
	return l.r.Recv(ctx, ups)
}
func (l lagOnlyRx) Close() error { return nil }
func (l lagOnlyRx) PID() uint32  { return 1 }

// runScript runs a handler over rx (a batch of batch upcalls) until its
// script is done and returns the daemon's status.
func runScript(t *testing.T, h *harness, rx odp.UpcallReceiver, sr *scriptedRx) Status {
	t.Helper()
	sr.done = make(chan struct{})
	done := sr.done
	ctx, cancel := context.WithCancel(context.Background())
	exited := make(chan struct{})
	go func() { h.d.handler(ctx, 0, rx); close(exited) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatalf("the handler read %d of %d steps in 20 s", sr.next, len(sr.steps))
	}
	cancel()
	<-exited
	return h.d.Status()
}

// A handler whose batches are slow (each read 20 ms, far beyond MaxLag,
// as under an emulated CPU) but whose receiver's queue stays short sheds
// nothing; it sheds new sources once the queue is half full or the
// receiver overran, everything once it is 7/8 full, and handles in full
// again once a read runs the queue empty. Before, it shed by wall clock:
// every full batch after MaxLag.
func TestShedOnBacklogNotLag(t *testing.T) {
	const batch = 4
	h := newHarness(t, 2, Config{Logger: discardLogger(), Batch: batch, MaxLag: time.Millisecond})
	known := missFrom(t, macN(1), macN(9))
	h.d.handleOne(context.Background(), newHandlerState(0, 1), &known, shedNone, time.Now()) // learns macN(1) on port 1
	seq := 0
	full := func(q, c int, overrun uint64) rxStep {
		// One miss from the known source, the others from new ones.
		ups := []odp.Upcall{missFrom(t, macN(1), mac{0x02, 0x20, 0, 0, byte(seq >> 8), byte(seq)})}
		for len(ups) < batch {
			seq++
			ups = append(ups, missFrom(t, mac{0x02, 0x10, 0, 0, byte(seq >> 8), byte(seq)}, macN(9)))
		}
		seq++
		return rxStep{ups: ups, delay: 20 * time.Millisecond, q: q, c: c, overrun: overrun}
	}
	sr := &scriptedRx{}
	// Slow and full, but the queue short: nothing shed.
	for range 5 {
		sr.steps = append(sr.steps, full(100, 1000, 0))
	}
	base := h.d.Status()
	st := runScript(t, h, sr, sr)
	if shed, handled := st.Shed-base.Shed, st.Handled-base.Handled; shed != 0 || handled != 5*batch {
		t.Fatalf("slow batches, short queue: shed %d, handled %d; want 0 and %d", shed, handled, 5*batch)
	}

	// Half full: new sources shed, the known one handled; the queue
	// draining (300 of 1000) still sheds; an overrun with a short queue
	// sheds; 7/8 full sheds everything; a read that runs the queue empty
	// handles all.
	sr = &scriptedRx{steps: []rxStep{
		full(500, 1000, 0),
		full(300, 1000, 0),
		full(100, 1000, 0), // below the low mark: back to handling
		full(100, 1000, 1), // an overrun
		full(900, 1000, 0),
	}}
	last := full(0, 1000, 0)
	last.ups = last.ups[:2] // a partial read: the receiver ran empty
	sr.steps = append(sr.steps, last)
	base = h.d.Status()
	st = runScript(t, h, sr, sr)
	wantShed := uint64((batch - 1) + (batch - 1) + 0 + (batch - 1) + batch)
	wantHandled := uint64(1+1+batch+1+0) + 2
	if shed, handled := st.Shed-base.Shed, st.Handled-base.Handled; shed != wantShed || handled != wantHandled {
		t.Errorf("overload script: shed %d, handled %d; want %d and %d", shed, handled, wantShed, wantHandled)
	}

	// A receiver that reports no depth: the wall-clock rule of MaxLag
	// still protects the daemon.
	sr = &scriptedRx{}
	for range 4 {
		sr.steps = append(sr.steps, full(0, 0, 0))
	}
	base = h.d.Status()
	st = runScript(t, h, lagOnlyRx{sr}, sr)
	if shed := st.Shed - base.Shed; shed == 0 {
		t.Errorf("a receiver without a backlog, slow full batches beyond MaxLag: nothing shed")
	}
}
