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

// handler reads upcalls in batches from rx until ctx is done.
func (d *Daemon) handler(ctx context.Context, id int, rx odp.UpcallReceiver) {
	h := newHandlerState(id, d.cfg.Batch)
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
		for i := 0; i < n; i++ {
			d.handleOne(ctx, h, &h.ups[i])
			h.ups[i] = odp.Upcall{} // drop references to the packet
		}
	}
}

// handleOne handles one upcall and records its latency.
func (d *Daemon) handleOne(ctx context.Context, h *handlerState, up *odp.Upcall) {
	start := time.Now()
	err := d.handleUpcall(ctx, h, up)
	el := time.Since(start)
	d.lat.Record(el)
	d.m.handlerLatency.Observe(el.Seconds())
	if err != nil {
		d.failed.Add(1)
		d.m.handledFail.Inc()
		d.errLog.do(func() { d.log.Warn("upcall", "handler", h.id, "kind", up.Kind.String(), "port", up.Port, "err", err) })
		return
	}
	d.handled.Add(1)
	d.m.handledOK.Inc()
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
