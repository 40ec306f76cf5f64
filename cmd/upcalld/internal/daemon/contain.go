package daemon

import (
	"context"
	"fmt"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/ovsdp/ovsdp/odp"
)

// Where a contained panic happened (upcalld_panics_contained_total).
const (
	panicHandler = "handler"
	panicControl = "control"
	panicStatus  = "status"
)

// testHookStatus, when set (by tests only), is called before each status
// answer; a test makes it panic to prove that the panic is contained to
// that status connection. Atomic: the test changes it while the status
// server runs.
var testHookStatus atomic.Pointer[func()]

// testHookDecide, when set (by tests only: nothing in production sets
// it), is called at the start of each miss's decision; a test makes it
// panic to prove that the panic is contained.
var testHookDecide func(up *odp.Upcall)

// PanicsContained is how many panics the daemon contained: in its
// handlers (the upcall, or the batch, failed), or reported by the
// control socket (PanicContained).
func (d *Daemon) PanicsContained() uint64 { return d.panics.Load() }

// PanicContained counts a panic that another part of the process
// contained (the control socket's connections, where "control"), in
// upcalld_panics_contained_total; the part logs it itself.
func (d *Daemon) PanicContained(where string) {
	d.panics.Add(1)
	d.m.panics.WithLabelValues(where).Inc()
}

// reportPanic counts a panic r recovered in where
// (upcalld_panics_contained_total{where}) and logs it as msg with attrs,
// the panic and the stack, at most 10 reports a second. Call it from the
// deferred function that recovered, so that the stack is the panic's.
func (d *Daemon) reportPanic(where, msg string, r any, attrs ...any) {
	n := d.panics.Add(1)
	d.m.panics.WithLabelValues(where).Inc()
	if d.panicLog.allow() {
		d.log.Error(msg, append(attrs, "panic", fmt.Sprint(r), "panics_contained", n, "stack", string(debug.Stack()))...)
	}
}

// contained reports a panic recovered in handler id while doing what,
// and returns it as an error.
func (d *Daemon) contained(id int, what string, r any) error {
	d.reportPanic(panicHandler, "handler panicked; contained, the handler goes on", r, "handler", id, "during", what)
	return fmt.Errorf("panic while %s: %v", what, r)
}

// decideContained is decide with a panic contained to upcall i: the
// upcall fails with the panic as its error (nothing installed or
// executed for it), and the rest of the batch goes on.
func (d *Daemon) decideContained(ctx context.Context, h *handlerState, i int, up *odp.Upcall) (err error) {
	nFlows, nPut := len(h.flows), len(h.putOf)
	defer func() {
		if r := recover(); r != nil {
			// Undo what the decision queued.
			h.flows, h.putOf = h.flows[:nFlows], h.putOf[:nPut]
			h.work[i] = upcallWork{}
			err = d.contained(h.id, "deciding an upcall", r)
		}
	}()
	return d.decide(ctx, h, i, up)
}

// handleBatchContained is handleBatch with a panic elsewhere than in a
// decision (putting the flows, executing the packets) contained to the
// batch: the batch's upcalls that were not shed count as failed, and the
// handler goes on with the next batch.
func (d *Daemon) handleBatchContained(ctx context.Context, h *handlerState, ups []odp.Upcall, mode shedMode, now time.Time) {
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		d.contained(h.id, "handling a batch of upcalls", r)
		for i := range ups {
			if i < len(h.work) && !h.work[i].shed {
				d.failed.Add(1)
				d.m.handledFail.Inc()
			}
		}
		clear(h.work)
		clear(h.flows)
		clear(h.flowPtrs)
		clear(h.pkts)
		clear(h.pktPtrs)
		clear(h.errs)
		h.flows, h.putOf, h.flowPtrs, h.pkts, h.pktPtrs, h.execOf, h.errs = h.flows[:0], h.putOf[:0], h.flowPtrs[:0], h.pkts[:0], h.pktPtrs[:0], h.execOf[:0], h.errs[:0]
	}()
	d.handleBatch(ctx, h, ups, mode, now)
}

// containedStatus runs f for one status connection with a panic
// contained to it: counted (upcalld_panics_contained_total{where="status"}),
// logged with its stack (rate-limited like the handlers' reports) and
// returned as an error; the status server goes on with the next
// connection.
func (d *Daemon) containedStatus(what string, f func()) (err error) {
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		d.reportPanic(panicStatus, "status connection panicked; contained, the status socket goes on", r, "during", what)
		err = fmt.Errorf("upcalld: internal error while %s: %v", what, r)
	}()
	f()
	return nil
}
