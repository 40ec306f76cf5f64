package daemon

import (
	"time"

	"github.com/ovsdp/ovsdp/odp"
)

// Overload. A handler sheds load only when its receiver says it is
// really overloaded, never from how long a batch took (under an emulated
// CPU a batch of 64 can take 200 ms while the queue holds a fraction of
// what it can): after every read that filled a whole batch (a read that
// ran the receiver empty means the handler has caught up), it asks the
// receiver how full its queue is (a backlogReporter: the kernel upcall
// socket's receive memory, the userspace datapath's queue length) and
// whether it overran since the last read (an overrunCounter: ENOBUFS on
// a kernel upcall socket).
//
//   - queue at least shedHighNum/shedHighDen full, or an overrun since
//     the last read: shed misses from unknown sources (shedUnknown);
//   - queue at least shedAllNum/shedAllDen full: shed every miss
//     (shedAll);
//   - once shedding, the handler goes on until the queue is below
//     shedLowNum/shedLowDen full (or ran empty), so that it does not
//     flap at the threshold; from shedAll it steps back to shedUnknown
//     below the high mark.
//
// A shed miss is a lost miss: its packet is dropped and its flow set up
// only when another of its packets comes. So the marks sit close to the
// top: a handler sheds only when the queue is about to overflow (the
// datapath would then drop upcalls without looking at them), not while
// the queue still has room for a burst it will work off once the burst
// ends (at half full it shed thousands of the tuples workload's misses
// that the queue had room for: BenchmarkIntegrationVsOVSSat/netdev).
// The hysteresis sheds only down to three quarters, enough room for the
// handler to get ahead again, not a quarter of the queue's worth of
// misses each time.
//
// A receiver that reports no queue depth (one that is neither kind)
// falls back to the wall-clock rule of Config.MaxLag.
const (
	shedHighNum, shedHighDen = 7, 8
	shedAllNum, shedAllDen   = 15, 16
	shedLowNum, shedLowDen   = 3, 4
)

// backlogReporter is a receiver that reports its queue's fill: queued
// of capacity, in units of its own (bytes or upcalls).
type backlogReporter interface {
	Backlog() (queued, capacity int, err error)
}

// overrunCounter is a receiver that counts the upcalls it lost to a
// full queue.
type overrunCounter interface {
	Lost() uint64
}

// overload is one handler's load state, updated after every read.
type overload struct {
	mode shedMode
	// behind is, for a receiver without a backlog, since when every read
	// filled a whole batch (zero when the last one did not).
	behind time.Time
	// lost is the receiver's overrun count at the last read.
	lost uint64
	// queued and capacity are the last backlog read (for the log).
	queued, capacity int
	// overrun is set when the last read saw new overruns.
	overrun bool
}

// assess updates o after a read of n upcalls into a batch of size batch
// from rx at now, and returns how much of the batch to handle.
func (d *Daemon) assess(o *overload, rx odp.UpcallReceiver, n, batch int, now time.Time) shedMode {
	o.overrun = false
	if oc, ok := rx.(overrunCounter); ok {
		l := oc.Lost()
		o.overrun = l > o.lost
		o.lost = l
	}
	if n < batch {
		// The receiver ran empty: whatever arrives next is fresh.
		o.mode, o.behind, o.queued = shedNone, time.Time{}, 0
		return shedNone
	}
	br, ok := rx.(backlogReporter)
	var q, c int
	var err error
	if ok {
		q, c, err = br.Backlog()
	}
	if !ok || err != nil || c <= 0 {
		// No queue depth: the wall-clock rule.
		if o.behind.IsZero() {
			o.behind = now
		}
		o.mode = d.lagMode(o.behind, now)
		if o.overrun && o.mode == shedNone {
			o.mode = shedUnknown
		}
		return o.mode
	}
	o.queued, o.capacity = q, c
	o.mode = nextShedMode(o.mode, q, c, o.overrun)
	return o.mode
}

// nextShedMode is the shedding mode after mode for a queue holding q of
// c, with or without an overrun since the last read (see the rules
// above).
func nextShedMode(mode shedMode, q, c int, overrun bool) shedMode {
	// Compare q/c with num/den in integers: q*den >= c*num. Both are
	// socket buffer sizes or queue lengths: far from overflowing.
	atLeast := func(num, den int) bool { return q*den >= c*num }
	switch {
	case atLeast(shedAllNum, shedAllDen):
		return shedAll
	case atLeast(shedHighNum, shedHighDen) || overrun:
		return shedUnknown
	case mode != shedNone && atLeast(shedLowNum, shedLowDen):
		return shedUnknown // still draining: hysteresis
	}
	return shedNone
}

// lagMode is the wall-clock rule, for receivers that report no queue
// depth: how much a handler that fell behind at behind (every read since
// filled a whole batch) handles at now.
func (d *Daemon) lagMode(behind, now time.Time) shedMode {
	if behind.IsZero() {
		return shedNone
	}
	switch lag := now.Sub(behind); {
	case lag > 4*d.cfg.MaxLag:
		return shedAll
	case lag > d.cfg.MaxLag:
		return shedUnknown
	}
	return shedNone
}
