package daemon

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/ovsdp/ovsdp/flowkeys"
	"github.com/ovsdp/ovsdp/odp"
	"github.com/ovsdp/ovsdp/policy"
)

// handlerState is one handler goroutine's reusable memory.
type handlerState struct {
	id   int
	ups  []odp.Upcall
	meta odp.FlowKey
	dec  policy.Decision
	pkt  odp.Packet
}

func newHandlerState(id, batch int) *handlerState {
	return &handlerState{id: id, ups: make([]odp.Upcall, batch), meta: make(odp.FlowKey, 0, 16)}
}

// shedMode says how much of an upcall a lagging handler handles.
type shedMode uint8

const (
	// shedNone: handle everything.
	shedNone shedMode = iota
	// shedUnknown: handle misses from known sources only.
	shedUnknown
	// shedAll: drop every miss.
	shedAll
)

// handler reads upcalls in batches from rx until ctx is done, shedding
// load while it is behind (Config.MaxLag).
func (d *Daemon) handler(ctx context.Context, id int, rx odp.UpcallReceiver) {
	h := newHandlerState(id, d.cfg.Batch)
	var behind time.Time // since when every read filled a whole batch
	for {
		n, err := rx.Recv(ctx, h.ups)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			d.errLog.do(func() { d.log.Warn("receiving upcalls", "handler", id, "err", err) })
			if n == 0 {
				// Do not spin on a persistent error.
				select {
				case <-ctx.Done():
					return
				case <-time.After(10 * time.Millisecond):
				}
				continue
			}
		}
		now := time.Now()
		d.tick(now)
		if n < len(h.ups) {
			// The receiver ran empty: whatever arrives next is fresh.
			behind = time.Time{}
		} else if behind.IsZero() {
			behind = now
		}
		for i := 0; i < n; i++ {
			now = d.handleOne(ctx, h, &h.ups[i], behind, now)
			h.ups[i] = odp.Upcall{} // drop references to the packet
		}
	}
}

// handleOne handles one upcall; behind is when the handler fell behind
// (zero when it is not) and now the latest time the handler read. It
// returns the time after handling, which is read (and the latency
// recorded) only for upcalls handled in full: a shed upcall costs no
// clock reading.
func (d *Daemon) handleOne(ctx context.Context, h *handlerState, up *odp.Upcall, behind, now time.Time) time.Time {
	mode := shedNone
	if !behind.IsZero() {
		switch lag := now.Sub(behind); {
		case lag > 4*d.cfg.MaxLag:
			mode = shedAll
		case lag > d.cfg.MaxLag:
			mode = shedUnknown
		}
	}
	if mode != shedNone && up.Kind == odp.UpcallMiss && d.shedMiss(up, mode) {
		d.m.upcallsReceivedM.Inc()
		d.shed.Add(1)
		d.m.shed.Inc()
		if d.shedLog.allow() { // not a closure: shedding allocates nothing
			d.log.Warn("handler behind; shedding upcalls", "handler", h.id, "behind", now.Sub(behind).Round(time.Millisecond),
				"all", mode == shedAll, "shed_total", d.shed.Load())
		}
		return now
	}
	start := time.Now()
	err := d.handleUpcall(ctx, h, up)
	end := time.Now()
	d.tick(end)
	el := end.Sub(start)
	d.lat.Record(el)
	d.m.handlerLatency.Observe(el.Seconds())
	if err != nil {
		d.failed.Add(1)
		d.m.handledFail.Inc()
		d.errLog.do(func() { d.log.Warn("upcall", "handler", h.id, "kind", up.Kind.String(), "port", up.Port, "err", err) })
		return end
	}
	d.handled.Add(1)
	d.m.handledOK.Inc()
	return end
}

// shedMiss reports whether a lagging handler drops the miss up: always
// in shedAll mode; in shedUnknown mode unless the learning switch knows
// the frame's Ethernet source on the port it came in on. It decodes
// nothing but the frame's source address, so that dropping costs next
// to nothing.
func (d *Daemon) shedMiss(up *odp.Upcall, mode shedMode) bool {
	if mode == shedAll || len(up.Packet) < 14 {
		return true
	}
	p, ok := d.sw.Lookup([6]byte(up.Packet[6:12]))
	return !ok || p != up.Port
}

// HandleUpcall processes one upcall as a handler does: for a miss it
// decides, installs the megaflow (unless the flow limit is reached) and
// executes the packet; a controller (userspace action) upcall is counted
// and logged. It is exported for tests and benchmarks.
func (d *Daemon) HandleUpcall(ctx context.Context, up *odp.Upcall) error {
	h := newHandlerState(-1, 1)
	return d.handleUpcall(ctx, h, up)
}

func (d *Daemon) handleUpcall(ctx context.Context, h *handlerState, up *odp.Upcall) error {
	switch up.Kind {
	case odp.UpcallAction:
		d.m.upcallsActionM.Inc()
		d.m.controller.Inc()
		d.ctrl.Add(1)
		if d.log.Enabled(ctx, slog.LevelDebug) {
			d.log.Debug("controller upcall", "port", up.Port, "len", len(up.Packet), "userdata", hex.EncodeToString(up.Userdata))
		}
		return nil
	case odp.UpcallMiss:
	default:
		return fmt.Errorf("unknown upcall kind %d", up.Kind)
	}
	d.m.upcallsReceivedM.Inc()
	k, err := odp.ToFlowKeysExact(up.Key)
	if err != nil {
		return fmt.Errorf("upcall key: %w", err)
	}
	ps := d.pol.Load()
	seq := d.macSeq.Load()
	dec := &h.dec
	ps.rules.DecideInto(&k, dec)
	if dec.Normal {
		d.sw.Learn(&k)
	}
	acts := policy.Translate(dec, &k, ps.env)
	if err := d.install(ctx, &k, dec, acts, ps, seq); err != nil {
		// Still forward the packet.
		if xerr := d.execute(ctx, h, up, acts); xerr != nil {
			return errors.Join(err, xerr)
		}
		return err
	}
	return d.execute(ctx, h, up, acts)
}

// megaflowMask is a decision's mask as installed: the policy's mask with
// recirc_id matched exactly, as Open vSwitch always does, and in_port
// exact, as the kernel makes it whenever the key has an in_port (and an
// upcall's key always has one).
func megaflowMask(dec *policy.Decision) flowkeys.Key {
	m := dec.Mask
	m.RecircID = ^uint32(0)
	m.InPort = 0xffff // port numbers have 16 bits; odp.ToFlowKeys gives this mask
	return m
}

// install puts the megaflow for key k and decision dec, unless the flow
// limit is reached or the daemon already has it.
func (d *Daemon) install(ctx context.Context, k *flowkeys.Key, dec *policy.Decision, acts odp.Actions, ps *policyState, seq uint64) error {
	if int64(d.flows.len()) >= d.flowLimit.Load() {
		d.m.flowLimitHits.Inc()
		return nil
	}
	mask := megaflowMask(dec)
	ufid := ufidOf(k, &mask)
	if d.flows.get(ufid) != nil {
		// Another packet of the same megaflow got here first.
		return nil
	}
	wire, err := odp.MarshalActions(acts)
	if err != nil {
		return fmt.Errorf("encoding actions %s: %w", odp.FormatActions(acts), err)
	}
	r := &record{
		ufid:        ufid,
		id:          odp.FlowID{UFID: ufid},
		key:         *k,
		mask:        mask,
		keyAttrs:    odp.KeyFromFlowKeys(k),
		maskAttrs:   odp.MaskFromFlowKeys(&mask, k),
		actions:     acts,
		actionsWire: wire,
		normal:      dec.Normal,
		rulesGen:    ps.gen,
		macSeq:      seq,
		installed:   d.mono(),
		seenPass:    d.curPass.Load(),
	}
	f := odp.Flow{UFID: ufid, Key: r.keyAttrs, Mask: r.maskAttrs, Actions: acts}
	if _, err := d.dp.PutFlow(ctx, &f, odp.PutCreate); err != nil {
		if errors.Is(err, os.ErrExist) {
			d.flows.add(r)
			return nil
		}
		return fmt.Errorf("installing %s actions:%s: %w", odp.FormatKey(r.keyAttrs, r.maskAttrs, false), odp.FormatActions(acts), err)
	}
	if d.flows.add(r) {
		d.installed.Add(1)
		d.m.flowsInstalled.Inc()
	}
	return nil
}

// execute sends the upcall's packet through acts, with the upcall's
// metadata (in_port, priority, mark, conntrack, tunnel).
func (d *Daemon) execute(ctx context.Context, h *handlerState, up *odp.Upcall, acts odp.Actions) error {
	if len(acts) == 0 {
		return nil // dropped
	}
	meta := h.meta[:0]
	for _, a := range up.Key {
		switch a.KeyType() {
		case odp.KeyInPort, odp.KeyPriority, odp.KeySkbMark, odp.KeyRecircID, odp.KeyDPHash, odp.KeyTunnel,
			odp.KeyCTState, odp.KeyCTZone, odp.KeyCTMark, odp.KeyCTLabels, odp.KeyCTOrigTupleV4, odp.KeyCTOrigTupleV6:
			meta = append(meta, a)
		}
	}
	h.meta = meta
	h.pkt = odp.Packet{Data: up.Packet, Key: meta, Actions: acts, MRU: up.MRU}
	err := d.dp.Execute(ctx, &h.pkt)
	h.pkt = odp.Packet{}
	if err != nil {
		return fmt.Errorf("executing the packet: %w", err)
	}
	return nil
}
