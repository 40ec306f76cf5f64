package daemon

import (
	"context"
	"encoding/binary"
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

// handlerState is one handler goroutine's reusable memory: the batch
// of upcalls it read and, for each, its work in progress; the puts and
// executes of the batch, handed to the datapath together.
type handlerState struct {
	id  int
	ups []odp.Upcall
	// one holds the upcall of handleOne and handleUpcall (a batch of one).
	one [1]odp.Upcall
	dec policy.Decision
	// work[i] is ups[i]'s progress through the batch.
	work []upcallWork
	// flows are the batch's megaflows to put, flowPtrs pointers to them,
	// putOf[j] the index in work of flows[j]'s upcall.
	flows    []odp.Flow
	flowPtrs []*odp.Flow
	putOf    []int
	// pkts are the batch's packets to execute, pktPtrs pointers to them,
	// execOf[j] the index in work of pkts[j]'s upcall; meta holds their
	// metadata keys back to back.
	pkts    []odp.Packet
	pktPtrs []*odp.Packet
	execOf  []int
	meta    odp.FlowKey
	// acts holds the batch's translated actions back to back (each
	// upcall's upcallWork.acts is a full slice of it), so that
	// translating grows no slice per upcall; a megaflow's record gets
	// its own exact-size copy (queueInstall).
	acts odp.Actions
	// errs collects per-item results when the datapath has no batched
	// calls.
	errs []error
}

// upcallWork is one upcall's progress through its batch.
type upcallWork struct {
	// shed: dropped without handling (counted, no latency).
	shed bool
	// exec: its packet is to be executed with acts.
	exec bool
	acts odp.Actions
	// rec is the megaflow record it installs, nil when none (flow limit,
	// already installed, or installed by an earlier upcall of the batch).
	rec *record
	// metaStart and metaEnd delimit its metadata in handlerState.meta.
	metaStart, metaEnd int
	// installErr and execErr are the failures of its put and execute;
	// err is its outcome, set at the end of the batch (or earlier when it
	// fails before installing, e.g. a bad key).
	installErr, execErr, err error
}

func newHandlerState(id, batch int) *handlerState {
	return &handlerState{
		id:       id,
		ups:      make([]odp.Upcall, batch),
		work:     make([]upcallWork, batch),
		flows:    make([]odp.Flow, 0, batch),
		flowPtrs: make([]*odp.Flow, 0, batch),
		putOf:    make([]int, 0, batch),
		pkts:     make([]odp.Packet, 0, batch),
		pktPtrs:  make([]*odp.Packet, 0, batch),
		execOf:   make([]int, 0, batch),
		meta:     make(odp.FlowKey, 0, 8*batch),
		acts:     make(odp.Actions, 0, 8*batch),
		errs:     make([]error, 0, batch),
	}
}

// batcher is what a datapath offers, optionally, to put and execute many
// at once (genl's *Datapath: one sendmsg for up to 50 requests instead
// of a netlink round trip each). The daemon uses it when the datapath
// has it and calls PutFlow and Execute once per item otherwise. errs[i]
// is item i's error; err a failure of the whole call, after which the
// items without an error of their own are in doubt (see itemErr).
type batcher interface {
	PutFlows(ctx context.Context, flows []*odp.Flow, flags odp.PutFlags) (errs []error, err error)
	ExecuteBatch(ctx context.Context, pkts []*odp.Packet) (errs []error, err error)
}

// appendExecuter is what a datapath offers, optionally, to execute a
// batch of packets with their results appended to the caller's slice
// (userdp's *Datapath: the batch's frames leave in one write a port,
// and the handler's reused slice takes the results). The daemon prefers
// a batcher's ExecuteBatch, then this, then Execute once per packet.
type appendExecuter interface {
	AppendExecute(ctx context.Context, errs []error, pkts []*odp.Packet) []error
}

// shedMode says how much of a batch an overloaded handler handles.
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
// load while rx reports it is overloaded (overload.go), and handles each
// batch together (handleBatch).
func (d *Daemon) handler(ctx context.Context, id int, rx odp.UpcallReceiver) {
	h := newHandlerState(id, d.cfg.Batch)
	var o overload
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
		mode := d.assess(&o, rx, n, len(h.ups), now)
		if mode != shedNone && d.shedLog.allow() { // not a closure: shedding allocates nothing
			d.log.Warn("handler overloaded; shedding upcalls", "handler", id, "queued", o.queued, "capacity", o.capacity,
				"overrun", o.overrun, "all", mode == shedAll, "shed_total", d.shed.Load())
		}
		if d.taps.n.Load() > 0 {
			d.taps.publish(h.ups[:n])
		}
		d.handleBatchContained(ctx, h, h.ups[:n], mode, now)
		clear(h.ups[:n]) // drop references to the packets
	}
}

// handleBatch handles a batch of upcalls read at now, shedding as mode
// says (overload.go). First it sheds what an overloaded handler drops; then it decides every other upcall in turn,
// puts all the batch's new megaflows in one batched call and executes
// all its packets in another (puts first, as Open vSwitch's handlers do,
// so that later packets already hit the new flows), and accounts for
// each upcall as handled or failed.
//
// The latency recorded for each handled upcall is the time from the
// batch's read (now) to the end of the whole batch's work: what the last
// upcall of the batch waited for its packet to leave, an upper bound for
// the others. It returns the time after handling, read only when some
// upcall was handled in full: shedding costs no clock reading.
func (d *Daemon) handleBatch(ctx context.Context, h *handlerState, ups []odp.Upcall, mode shedMode, now time.Time) time.Time {
	if cap(h.work) < len(ups) {
		h.work = make([]upcallWork, len(ups))
	}
	work := h.work[:len(ups)]
	handle := 0
	for i := range ups {
		up := &ups[i]
		work[i] = upcallWork{}
		if mode != shedNone && up.Kind == odp.UpcallMiss && d.shedMiss(up, mode) {
			work[i].shed = true
			d.m.upcallsReceivedM.Inc()
			d.shed.Add(1)
			d.m.shed.Inc()
			continue
		}
		handle++
	}
	if handle == 0 {
		return now
	}
	d.process(ctx, h, ups)
	end := time.Now()
	d.tick(end)
	el := end.Sub(now)
	for i := range ups {
		w := &work[i]
		if w.shed {
			continue
		}
		d.lat.Record(el)
		d.m.handlerLatency.Observe(el.Seconds())
		if err := w.err; err != nil {
			d.failed.Add(1)
			d.m.handledFail.Inc()
			up := &ups[i]
			d.errLog.do(func() { d.log.Warn("upcall", "handler", h.id, "kind", up.Kind.String(), "port", up.Port, "err", err) })
		} else {
			d.handled.Add(1)
			d.m.handledOK.Inc()
		}
		*w = upcallWork{} // drop references
	}
	return end
}

// handleOne handles one upcall as a batch of one (see handleBatch).
func (d *Daemon) handleOne(ctx context.Context, h *handlerState, up *odp.Upcall, mode shedMode, now time.Time) time.Time {
	h.one[0] = *up
	end := d.handleBatch(ctx, h, h.one[:], mode, now)
	h.one[0] = odp.Upcall{}
	return end
}

// shedMiss reports whether an overloaded handler drops the miss up: always
// in shedAll mode; in shedUnknown mode unless the learning switch knows
// the frame's Ethernet source on the port it came in on. It decodes
// nothing but the frame's source address, so that dropping costs next
// to nothing.
func (d *Daemon) shedMiss(up *odp.Upcall, mode shedMode) bool {
	if mode == shedAll || len(up.Packet) < 14 {
		return true
	}
	// The VLAN of the frame's outer 802.1Q or 802.1ad tag, if any.
	tci := uint16(0)
	if t := binary.BigEndian.Uint16(up.Packet[12:]); (t == flowkeys.EthTypeVLAN || t == flowkeys.EthTypeQinQ) && len(up.Packet) >= 16 {
		tci = flowkeys.VLANTagPresent | binary.BigEndian.Uint16(up.Packet[14:])&0xfff
	}
	vlan, ok := d.pol.Load().env.VLANs.InputVLAN(up.Port, tci)
	if !ok {
		return true
	}
	p, ok := d.sw.LookupVLAN(vlan, [6]byte(up.Packet[6:12]))
	return !ok || p != up.Port
}

// HandleUpcall processes one upcall as a handler does: for a miss it
// decides, installs the megaflow (unless the flow limit is reached) and
// executes the packet; a controller (userspace action) upcall is counted
// and goes to the packet-in subscribers (packetin.go). It is exported for tests and benchmarks.
func (d *Daemon) HandleUpcall(ctx context.Context, up *odp.Upcall) error {
	h := newHandlerState(-1, 1)
	return d.handleUpcall(ctx, h, up)
}

// handleUpcall processes one upcall (a batch of one, never shed) and
// returns its outcome, without accounting for it.
func (d *Daemon) handleUpcall(ctx context.Context, h *handlerState, up *odp.Upcall) error {
	h.one[0] = *up
	h.work[0] = upcallWork{}
	d.process(ctx, h, h.one[:])
	err := h.work[0].err
	h.work[0] = upcallWork{}
	h.one[0] = odp.Upcall{}
	return err
}

// process handles the upcalls of a batch not marked shed in h.work:
// decide each in turn, put the new megaflows, execute the packets. Each
// upcall's outcome is left in h.work[i].err: a failed put still executes
// the packet, and an upcall whose put and execute both fail reports both.
func (d *Daemon) process(ctx context.Context, h *handlerState, ups []odp.Upcall) {
	h.flows, h.putOf, h.meta, h.acts = h.flows[:0], h.putOf[:0], h.meta[:0], h.acts[:0]
	for i := range ups {
		if w := &h.work[i]; !w.shed {
			w.err = d.decideContained(ctx, h, i, &ups[i])
		}
	}
	d.installBatch(ctx, h)
	d.executeBatch(ctx, h, ups)
	clear(h.acts) // drop references to the action values
	h.acts = h.acts[:0]
	for i := range ups {
		w := &h.work[i]
		switch {
		case w.installErr != nil && w.execErr != nil:
			w.err = errors.Join(w.installErr, w.execErr)
		case w.installErr != nil:
			w.err = w.installErr
		case w.execErr != nil:
			w.err = w.execErr
		}
	}
}

// decide handles the decision part of upcall i of a batch: for a miss,
// the policy's decision, learning, the actions, the megaflow to install
// (queued in h.flows) and the packet to execute (h.work[i].exec). An
// error returned means the upcall goes no further.
func (d *Daemon) decide(ctx context.Context, h *handlerState, i int, up *odp.Upcall) error {
	switch up.Kind {
	case odp.UpcallAction:
		d.m.upcallsActionM.Inc()
		d.m.controller.Inc()
		d.ctrl.Add(1)
		if d.log.Enabled(ctx, slog.LevelDebug) {
			d.log.Debug("controller upcall", "port", up.Port, "len", len(up.Packet), "userdata", hex.EncodeToString(up.Userdata))
		}
		d.packetIn(up)
		return nil
	case odp.UpcallMiss:
	default:
		return fmt.Errorf("unknown upcall kind %d", up.Kind)
	}
	d.m.upcallsReceivedM.Inc()
	if testHookDecide != nil {
		testHookDecide(up)
	}
	k, err := odp.ToFlowKeysExact(up.Key)
	if err != nil {
		d.m.refused(refusedKey)
		return fmt.Errorf("upcall key: %w", err)
	}
	ps := d.pol.Load()
	seq := d.macSeq.Load()
	dec := &h.dec
	table, err := d.startTable(&k)
	if err != nil {
		d.m.refused(refusedRecirc)
		return err
	}
	ps.env.DecideAtInto(ps.rules, &k, table, dec)
	ps.env.Learn(dec, &k)
	w := &h.work[i]
	start := len(h.acts)
	h.acts = policy.AppendTranslate(h.acts, dec, &k, ps.env)
	w.acts = h.acts[start:len(h.acts):len(h.acts)]
	w.exec = len(w.acts) > 0 // no actions: dropped
	w.installErr = d.queueInstall(h, i, &k, dec, w.acts, ps, seq)
	return nil
}

// startTable is the table a packet's decision starts in: 0, or after
// recirculation the table its recirc_id continues in.
func (d *Daemon) startTable(k *flowkeys.Key) (int, error) {
	if k.RecircID == 0 {
		return 0, nil
	}
	t, ok := d.recirc.Table(k.RecircID)
	if !ok {
		return 0, fmt.Errorf("recirc_id %#x is no recirculation of this daemon's (freed, or from before a restart): dropped", k.RecircID)
	}
	return t, nil
}

// megaflowMask is a decision's mask as installed: the policy's mask with
// recirc_id matched exactly, as Open vSwitch always does, and in_port
// exact, as the kernel makes it whenever the key has an in_port (and an
// upcall's key always has one). A mask that reads Geneve option bytes
// also matches their length exactly and the Geneve option flag, as the
// kernel's mask of options always does (genev_tun_opt_from_nlattr): a
// flow for 4 bytes of options must not match a packet with 8. A mask
// that reads none leaves every option wildcarded (the miss's options
// then do not split megaflows; no rule field of package policy reads
// them today).
func megaflowMask(dec *policy.Decision) flowkeys.Key {
	m := dec.Mask
	m.RecircID = ^uint32(0)
	m.InPort = 0xffff // port numbers have 16 bits; odp.ToFlowKeys gives this mask
	if m.TunOptsLen != 0 || m.TunOpts != ([flowkeys.TunOptsMax]byte{}) {
		m.TunOptsLen = 0xff
		m.TunFlags |= odp.KernelTunnelGeneveOpt
	}
	return m
}

// queueInstall queues the megaflow for key k and decision dec (upcall i
// of the batch) to be put, unless the flow limit is reached (counting
// the flows already queued), the daemon already has it, or an earlier
// upcall of the batch queued it (another packet of the same megaflow).
func (d *Daemon) queueInstall(h *handlerState, i int, k *flowkeys.Key, dec *policy.Decision, acts odp.Actions, ps *policyState, seq uint64) error {
	if int64(d.flows.len()+len(h.putOf)) >= d.flowLimit.Load() {
		d.m.flowLimitHits.Inc()
		return nil
	}
	mask := megaflowMask(dec)
	ufid := ufidOf(k, &mask)
	if d.flows.get(ufid) != nil {
		// Another packet of the same megaflow got here first.
		return nil
	}
	for _, j := range h.putOf {
		if h.work[j].rec.ufid == ufid {
			return nil // the same, earlier in this batch
		}
	}
	keyAttrs, maskAttrs, err := odp.MegaflowFromFlowKeys(k, &mask)
	if err != nil {
		d.m.refused(refusedInexpressible)
		return fmt.Errorf("no megaflow: %w", err)
	}
	wire, err := odp.MarshalActions(acts)
	if err != nil {
		d.m.refused(refusedActions)
		return fmt.Errorf("encoding actions %s: %w", odp.FormatActions(acts), err)
	}
	// acts lives in the handler's batch buffer (h.acts): the record
	// keeps its own copy.
	acts = append(make(odp.Actions, 0, len(acts)), acts...)
	r := &record{
		ufid:        ufid,
		id:          odp.FlowID{UFID: ufid},
		key:         *k,
		mask:        mask,
		keyAttrs:    keyAttrs,
		maskAttrs:   maskAttrs,
		actions:     acts,
		actionsWire: wire,
		normal:      dec.Normal,
		normalTCI:   dec.NormalTCI,
		rulesGen:    ps.gen,
		macSeq:      seq,
		installed:   d.mono(),
		seenPass:    d.curPass.Load(),
	}
	h.work[i].rec = r
	h.flows = append(h.flows, odp.Flow{UFID: ufid, Key: r.keyAttrs, Mask: r.maskAttrs, Actions: acts})
	h.putOf = append(h.putOf, i)
	return nil
}

// itemErr is item j's error among n items of a batched call that
// returned errs and err: its own error, else the call's (a failure of
// the whole call leaves the items without an error of their own in
// doubt: they count as failed), else an error if the datapath returned
// too few results.
func itemErr(errs []error, err error, j, n int) error {
	if j < len(errs) && errs[j] != nil {
		return errs[j]
	}
	if err != nil {
		return err
	}
	if len(errs) != n {
		return fmt.Errorf("the datapath returned %d results for %d requests", len(errs), n)
	}
	return nil
}

// installBatch puts the batch's queued megaflows, in one call when the
// datapath is a batcher, and records those installed. A flow the
// datapath already has (EEXIST: another handler put it, or it survived a
// restart) is recorded as the daemon's without counting as installed, as
// for a single put. A flow whose put failed for good (e.g. a socket
// failure after the kernel took it) and that the datapath does have is
// adopted by the next revalidation.
func (d *Daemon) installBatch(ctx context.Context, h *handlerState) {
	n := len(h.flows)
	if n == 0 {
		return
	}
	h.flowPtrs = h.flowPtrs[:0]
	for j := range h.flows {
		h.flowPtrs = append(h.flowPtrs, &h.flows[j])
	}
	var errs []error
	var berr error
	if b, ok := d.dp.(batcher); ok {
		errs, berr = b.PutFlows(ctx, h.flowPtrs, odp.PutCreate)
	} else {
		errs = h.errs[:0]
		for _, f := range h.flowPtrs {
			_, err := d.dp.PutFlow(ctx, f, odp.PutCreate)
			errs = append(errs, err)
		}
		h.errs = errs
	}
	for j, i := range h.putOf {
		w := &h.work[i]
		r := w.rec
		err := itemErr(errs, berr, j, n)
		switch {
		case err == nil:
			if d.flows.add(r) {
				d.installed.Add(1)
				d.m.flowsInstalled.Inc()
			}
		case errors.Is(err, os.ErrExist):
			d.flows.add(r)
		default:
			d.m.refused(refusedPut)
			w.installErr = fmt.Errorf("installing %s actions:%s: %w", odp.FormatKey(r.keyAttrs, r.maskAttrs, false), odp.FormatActions(r.actions), err)
		}
	}
	clear(h.flows)
	clear(h.flowPtrs)
	clear(h.errs)
}

// executeBatch sends the batch's packets through their actions, with
// their upcalls' metadata (in_port, priority, mark, conntrack, tunnel),
// in one call when the datapath is a batcher.
func (d *Daemon) executeBatch(ctx context.Context, h *handlerState, ups []odp.Upcall) {
	h.pkts, h.execOf = h.pkts[:0], h.execOf[:0]
	meta := h.meta[:0]
	for i := range ups {
		w := &h.work[i]
		if w.shed || !w.exec || w.err != nil {
			continue
		}
		w.metaStart = len(meta)
		for _, a := range ups[i].Key {
			switch a.KeyType() {
			case odp.KeyInPort, odp.KeyPriority, odp.KeySkbMark, odp.KeyRecircID, odp.KeyDPHash, odp.KeyTunnel,
				odp.KeyCTState, odp.KeyCTZone, odp.KeyCTMark, odp.KeyCTLabels, odp.KeyCTOrigTupleV4, odp.KeyCTOrigTupleV6:
				meta = append(meta, a)
			}
		}
		w.metaEnd = len(meta)
		h.execOf = append(h.execOf, i)
	}
	h.meta = meta
	n := len(h.execOf)
	if n == 0 {
		return
	}
	h.pktPtrs = h.pktPtrs[:0]
	for _, i := range h.execOf {
		w := &h.work[i]
		up := &ups[i]
		h.pkts = append(h.pkts, odp.Packet{Data: up.Packet, Key: meta[w.metaStart:w.metaEnd:w.metaEnd], Actions: w.acts, MRU: up.MRU})
	}
	for j := range h.pkts {
		h.pktPtrs = append(h.pktPtrs, &h.pkts[j])
	}
	var errs []error
	var berr error
	if b, ok := d.dp.(batcher); ok {
		errs, berr = b.ExecuteBatch(ctx, h.pktPtrs)
	} else if x, ok := d.dp.(appendExecuter); ok {
		errs = x.AppendExecute(ctx, h.errs[:0], h.pktPtrs)
		h.errs = errs
	} else {
		errs = h.errs[:0]
		for _, p := range h.pktPtrs {
			errs = append(errs, d.dp.Execute(ctx, p))
		}
		h.errs = errs
	}
	for j, i := range h.execOf {
		if err := itemErr(errs, berr, j, n); err != nil {
			h.work[i].execErr = fmt.Errorf("executing the packet: %w", err)
		}
	}
	clear(h.pkts)
	clear(h.pktPtrs)
	clear(h.errs)
	clear(h.meta)
}
