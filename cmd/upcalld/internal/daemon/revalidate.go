package daemon

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/ovsdp/ovsdp/flowkeys"
	"github.com/ovsdp/ovsdp/odp"
	"github.com/ovsdp/ovsdp/policy"
)

// dumped is one flow of a terse dump.
type dumped struct {
	ufid  odp.UFID
	stats odp.FlowStats
	// key and mask are set for a flow without a UFID (the datapath then
	// dumps its key even in a terse dump).
	key, mask odp.FlowKey
}

// PassResult summarises one revalidation pass.
type PassResult struct {
	Dumped, Adopted, Modified, Deleted, Kept int
	Duration                                 time.Duration
	FlowLimit                                int
}

// revalidator runs a pass every interval, and soon after a policy change.
func (d *Daemon) revalidator(ctx context.Context) {
	t := time.NewTicker(d.cfg.RevalidateInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-d.wake:
			// Let a burst of changes (a reload, many MAC moves) settle.
			select {
			case <-ctx.Done():
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
		if _, err := d.RevalidateNow(ctx); err != nil && ctx.Err() == nil {
			d.errLog.do(func() { d.log.Warn("revalidation", "err", err) })
		}
	}
}

// RevalidateNow runs one revalidation pass: it ages the MAC table, dumps
// the flows (tersely: UFIDs and statistics), adopts flows it does not
// know, deletes flows idle for longer than the idle timeout (100 ms when
// over the flow limit, every flow when over twice the limit), re-decides
// every flow affected by a policy change since it was decided (rules,
// ports, MAC table) and modifies its actions or deletes it, forgets flows
// that left the datapath, and adjusts the flow limit to the pass's
// duration.
func (d *Daemon) RevalidateNow(ctx context.Context) (PassResult, error) {
	d.revalMu.Lock()
	defer d.revalMu.Unlock()
	start := time.Now()
	d.tick(start)
	var res PassResult
	pass := d.curPass.Add(1)
	d.pollDatapath(ctx)
	if _, err := d.refreshPorts(ctx); err != nil {
		return res, err
	}
	d.refreshLiveness(ctx)
	d.sw.Expire()
	ps := d.pol.Load()
	dirty := d.snapshotDirty()

	buf := d.dumpBuf[:0]
	err := d.dp.DumpFlows(ctx, odp.DumpOptions{Terse: true}, func(f *odp.Flow) error {
		df := dumped{ufid: f.UFID, stats: f.Stats}
		if f.UFID.IsZero() {
			df.key, df.mask = f.Key, f.Mask
		}
		buf = append(buf, df)
		return nil
	})
	d.dumpBuf = buf[:0]
	if err != nil {
		return res, fmt.Errorf("dumping flows: %w", err)
	}
	res.Dumped = len(buf)
	limit := int(d.flowLimit.Load())
	nFlows := len(buf)
	killAll := nFlows > 2*limit
	maxIdle := uint64(d.cfg.IdleTimeout / time.Millisecond)
	overLimit := nFlows > limit
	if overLimit {
		maxIdle = uint64(limitIdle / time.Millisecond)
		d.errLog.do(func() {
			d.log.Warn("more flows than the flow limit", "flows", nFlows, "limit", limit, "delete_all", killAll)
		})
	}
	now := d.mono()
	for i := range buf {
		df := &buf[i]
		r, err := d.lookupDumped(ctx, df, now)
		if err != nil {
			d.errLog.do(func() { d.log.Warn("cannot revalidate flow; deleting it", "ufid", df.ufid.String(), "err", err) })
			id := odp.FlowID{UFID: df.ufid, Key: df.key}
			if df.ufid.IsZero() {
				id.UFID = odp.UFID{}
			}
			d.delFlow(ctx, id, nil, reasonUnusable)
			res.Deleted++
			continue
		}
		if r == nil {
			continue // gone meanwhile
		}
		if r.adopted && r.rulesGen == 0 {
			res.Adopted++
		}
		r.seenPass = pass
		if df.stats.Packets != r.packets {
			if df.stats.Packets > r.packets && r.normal {
				// Traffic keeps the source address learned, as Open
				// vSwitch's revalidator does when it pushes stats.
				ps := d.pol.Load()
				ps.env.Learn(&policy.Decision{Normal: true, NormalTCI: r.normalTCI}, &r.key)
			}
			r.packets = df.stats.Packets
		}
		used := df.stats.Used
		if used == 0 || used < r.installed {
			used = max(used, r.installed)
		}
		if killAll || (now > used && now-used > maxIdle) {
			reason := reasonIdle
			if overLimit {
				reason = reasonLimit
			}
			d.delFlow(ctx, r.id, r, reason)
			res.Deleted++
			continue
		}
		if r.key.RecircID != 0 && r.mask.RecircID != 0 {
			if _, ok := d.recirc.Table(r.key.RecircID); !ok {
				// Its recirculation ID was freed: no packet carries it
				// any more (or it is a flow of an earlier daemon's).
				d.delFlow(ctx, r.id, r, reasonRevalidate)
				res.Deleted++
				continue
			}
		}
		need := r.rulesGen != ps.gen
		if !need && r.normal {
			if s, ok := dirty[r.key.EthDst]; ok && s > r.macSeq {
				need = true
			}
		}
		if !need {
			res.Kept++
			continue
		}
		switch d.redecide(ctx, r, ps) {
		case outcomeModified:
			res.Modified++
		case outcomeDeleted:
			res.Deleted++
		default:
			res.Kept++
		}
	}
	// Forget flows that left the datapath (deleted by someone else, or
	// flushed): only those that existed before this pass began.
	var gone []*record
	d.flows.each(func(r *record) {
		// Records created during this pass carry its number.
		if r.seenPass < pass {
			gone = append(gone, r)
		}
	})
	for _, r := range gone {
		d.flows.remove(r.ufid, r)
	}
	// Recirculation IDs no flow referred to for a whole pass are freed;
	// the flows that match them go in the next pass.
	d.recirc.Sweep()

	res.Duration = time.Since(start)
	d.lastDump.Store(int64(res.Duration))
	d.lastPassEnd.Store(time.Now().UnixNano())
	d.passes.Add(1)
	d.m.revalidations.Inc()
	d.m.revalDuration.Observe(res.Duration.Seconds())
	nl := adjustFlowLimit(int(d.flowLimit.Load()), int(d.maxLimit), nFlows, res.Duration)
	if int64(nl) != d.flowLimit.Load() {
		if nl < int(d.flowLimit.Load()) {
			d.log.Warn("flow dump was slow; lowering the flow limit", "duration", res.Duration, "flows", nFlows, "limit", nl)
		}
		d.flowLimit.Store(int64(nl))
	}
	res.FlowLimit = nl
	if res.Modified+res.Deleted+res.Adopted > 0 {
		d.log.Debug("revalidated", "dumped", res.Dumped, "adopted", res.Adopted, "modified", res.Modified,
			"deleted", res.Deleted, "duration", res.Duration)
	}
	return res, nil
}

// adjustFlowLimit is Open vSwitch's rule for the dynamic flow limit
// (ofproto-dpif-upcall.c, after each dump): a dump over 2 s divides the
// limit by its length in seconds, one over 1.3 s takes a quarter off, and
// a dump under 1 s that went faster than limit flows per second adds
// 1000; the result stays within [min(1000, max), max].
func adjustFlowLimit(limit, maxLimit, nFlows int, dur time.Duration) int {
	ms := max(int(dur/time.Millisecond), 1)
	switch {
	case ms > 2000:
		limit /= ms / 1000
	case ms > 1300:
		limit = limit * 3 / 4
	case ms < 1000 && limit < nFlows*1000/ms:
		limit += 1000
	}
	return min(maxLimit, max(limit, minFlowLimit))
}

// revalidatorLag returns how long ago the last revalidation pass ended
// (since the daemon started when none has): about one revalidation
// interval at most while the revalidator keeps up, growing without bound
// when passes fail or one never ends.
func (d *Daemon) revalidatorLag(now time.Time) time.Duration {
	if end := d.lastPassEnd.Load(); end != 0 {
		return now.Sub(time.Unix(0, end))
	}
	return now.Sub(d.started)
}

// snapshotDirty returns the MAC addresses changed recently, with the
// sequence number of their last change. An address stays in the set for
// one more pass after it was reported, so that a flow decided just before
// the change but installed just after the pass still gets re-decided.
func (d *Daemon) snapshotDirty() map[[6]byte]uint64 {
	cur := d.macSeq.Load()
	d.macMu.Lock()
	defer d.macMu.Unlock()
	snap := make(map[[6]byte]uint64, len(d.dirty))
	for mac, s := range d.dirty {
		snap[mac] = s
		if s <= d.prevSnap {
			delete(d.dirty, mac)
		}
	}
	d.prevSnap = cur
	return snap
}

// lookupDumped returns the record of a dumped flow, adopting the flow if
// the daemon does not know it.
func (d *Daemon) lookupDumped(ctx context.Context, df *dumped, now uint64) (*record, error) {
	var f *odp.Flow
	if df.ufid.IsZero() {
		if df.key == nil {
			return nil, errors.New("the datapath dumped a flow with neither UFID nor key")
		}
		f = &odp.Flow{Key: df.key, Mask: df.mask}
	} else {
		if r := d.flows.get(df.ufid); r != nil {
			return r, nil
		}
		var err error
		f, err = d.dp.GetFlow(ctx, odp.FlowID{UFID: df.ufid})
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return nil, nil
			}
			return nil, fmt.Errorf("getting flow: %w", err)
		}
	}
	r, err := adoptRecord(f, now)
	if err != nil {
		return nil, err
	}
	r.packets = df.stats.Packets
	d.reserveRecirc(r)
	if cur := d.flows.get(r.ufid); cur != nil {
		return cur, nil
	}
	d.flows.add(r)
	return d.flows.get(r.ufid), nil
}

// reserveRecirc keeps the recirculation IDs of an adopted flow from
// being handed out: they recirculate to an earlier daemon's tables.
func (d *Daemon) reserveRecirc(r *record) {
	d.recirc.Reserve(r.key.RecircID)
	for _, a := range r.actions {
		if rc, ok := a.(odp.Recirc); ok {
			d.recirc.Reserve(rc.ID)
		}
	}
}

// adoptRecord builds the record of a flow found in the datapath. Its
// policy generation is 0, so that the next pass re-decides it.
func adoptRecord(f *odp.Flow, now uint64) (*record, error) {
	k, m, err := flowKeys(f.Key, f.Mask)
	if err != nil {
		return nil, fmt.Errorf("flow key: %w", err)
	}
	wire, err := odp.MarshalActions(f.Actions)
	if err != nil {
		return nil, fmt.Errorf("flow actions: %w", err)
	}
	r := &record{
		ufid: f.UFID, id: odp.FlowID{UFID: f.UFID},
		key: k, mask: m, keyAttrs: f.Key, maskAttrs: f.Mask,
		actions: f.Actions, actionsWire: wire,
		installed: now, adopted: true,
	}
	if f.UFID.IsZero() {
		r.ufid = ufidOf(&k, &m)
		r.id = odp.FlowID{Key: f.Key}
	}
	return r, nil
}

// flowKeys converts a dumped flow's key and mask. Datapaths dump the
// masked key, which the kernel's flow-key rules (odp.ToFlowKeys) may
// refuse although the flow was accepted:
//   - where the mask wildcards the Ethernet type, the key's eth_type is
//     0 (at the level after the VLAN tags: inside the encap of a tagged
//     frame); such a key is converted with a placeholder Ethernet type
//     that needs no L3 attributes, which the mask wildcards again;
//   - where the mask leaves out an MPLS flow's label stack (the
//     megaflow of a frame without a bottom-of-stack entry, see
//     odp.MegaflowFromFlowKeys), the masked key's label count is 0 and
//     its mpls attribute has 0 bytes; such a key is converted with one
//     zero label, which the mask wildcards again.
func flowKeys(key, mask odp.FlowKey) (k, m flowkeys.Key, err error) {
	k, m, err = odp.ToFlowKeys(key, mask)
	if err == nil {
		return k, m, nil
	}
	fixed, ok := fixDumpedKey(key, mask)
	if !ok {
		return k, m, err
	}
	k2, m2, err2 := odp.ToFlowKeys(fixed, mask)
	if err2 != nil {
		return k, m, err
	}
	return k2, m2, nil
}

// fixDumpedKey returns a copy of a dumped (masked) key with what
// flowKeys replaces, level by level (mask is the mask attributes at the
// same level), and whether it replaced anything.
func fixDumpedKey(key, mask odp.FlowKey) (odp.FlowKey, bool) {
	var out odp.FlowKey
	typeMasked := false
	if me, ok := mask.Find(odp.KeyEthertype).(odp.Ethertype); ok && me != 0 {
		typeMasked = true
	}
	var maskEncap odp.FlowKey
	if e, ok := mask.Find(odp.KeyEncap).(odp.Encap); ok {
		maskEncap = e.Key
	}
	for i, a := range key {
		var repl odp.KeyAttr
		switch v := a.(type) {
		case odp.Ethertype:
			if v < 0x600 && !typeMasked {
				repl = odp.Ethertype(placeholderEthType)
			}
		case odp.MPLS:
			if len(v) == 0 {
				repl = odp.MPLS{0}
			}
		case odp.Encap:
			if inner, ok := fixDumpedKey(v.Key, maskEncap); ok {
				repl = odp.Encap{Key: inner}
			}
		}
		if repl == nil {
			continue
		}
		if out == nil {
			out = append(odp.FlowKey(nil), key...)
		}
		out[i] = repl
	}
	return out, out != nil
}

// placeholderEthType is the IEEE local experimental EtherType.
const placeholderEthType = 0x88b5

// adopt reads every flow of the datapath (a full dump) and records it,
// to be re-decided by the next pass. It returns how many it adopted.
func (d *Daemon) adopt(ctx context.Context) (int, error) {
	now := d.mono()
	n := 0
	var bad []odp.FlowID
	err := d.dp.DumpFlows(ctx, odp.DumpOptions{}, func(f *odp.Flow) error {
		r, err := adoptRecord(f, now)
		if err != nil {
			d.log.Warn("existing flow cannot be revalidated; deleting it", "ufid", f.UFID.String(), "err", err)
			bad = append(bad, odp.FlowID{UFID: f.UFID, Key: f.Key})
			return nil
		}
		r.packets = f.Stats.Packets
		d.reserveRecirc(r)
		if d.flows.add(r) {
			n++
		}
		return nil
	})
	if err != nil {
		return n, err
	}
	d.seedLearning()
	for _, id := range bad {
		if !id.UFID.IsZero() {
			id.Key = nil
		}
		d.delFlow(ctx, id, nil, reasonUnusable)
	}
	return n, nil
}

type outcome int

const (
	outcomeKept outcome = iota
	outcomeModified
	outcomeDeleted
)

// redecide decides flow r again with the policy ps. If the new decision
// depends on bits outside the flow's mask, the flow no longer stands for
// one decision and is deleted (its packets will miss and be decided
// afresh); otherwise its actions are modified if they changed.
func (d *Daemon) redecide(ctx context.Context, r *record, ps *policyState) outcome {
	seq := d.macSeq.Load()
	var dec policy.Decision
	table, err := d.startTable(&r.key)
	if err != nil {
		d.delFlow(ctx, r.id, r, reasonRevalidate)
		return outcomeDeleted
	}
	ps.env.DecideAtInto(ps.rules, &r.key, table, &dec)
	mask := megaflowMask(&dec)
	if !maskSubset(&mask, &r.mask) {
		d.delFlow(ctx, r.id, r, reasonRevalidate)
		return outcomeDeleted
	}
	acts := policy.Translate(&dec, &r.key, ps.env)
	wire, err := odp.MarshalActions(acts)
	if err != nil {
		d.errLog.do(func() { d.log.Warn("encoding actions", "err", err) })
		d.delFlow(ctx, r.id, r, reasonRevalidate)
		return outcomeDeleted
	}
	if bytes.Equal(wire, r.actionsWire) {
		r.rulesGen, r.macSeq, r.normal, r.normalTCI = ps.gen, seq, dec.Normal, dec.NormalTCI
		return outcomeKept
	}
	f := odp.Flow{UFID: r.id.UFID, Key: r.keyAttrs, Mask: r.maskAttrs, Actions: acts}
	if _, err := d.dp.PutFlow(ctx, &f, odp.PutModify); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			d.flows.remove(r.ufid, r)
			return outcomeDeleted
		}
		d.errLog.do(func() { d.log.Warn("modifying flow; deleting it", "ufid", r.ufid.String(), "err", err) })
		d.delFlow(ctx, r.id, r, reasonRevalidate)
		return outcomeDeleted
	}
	d.log.Debug("flow modified", "ufid", r.ufid.String(), "from", odp.FormatActions(r.actions), "to", odp.FormatActions(acts))
	d.flows.setActions(r, acts, wire)
	r.rulesGen, r.macSeq, r.normal, r.normalTCI = ps.gen, seq, dec.Normal, dec.NormalTCI
	d.m.flowsModified.Inc()
	return outcomeModified
}

// delFlow deletes a flow from the datapath and forgets its record.
func (d *Daemon) delFlow(ctx context.Context, id odp.FlowID, r *record, reason string) {
	if _, err := d.dp.DelFlow(ctx, id); err != nil && !errors.Is(err, os.ErrNotExist) {
		d.errLog.do(func() { d.log.Warn("deleting flow", "ufid", id.UFID.String(), "err", err) })
	}
	if r != nil {
		d.flows.remove(r.ufid, r)
	}
	d.m.flowsDeleted.WithLabelValues(reason).Inc()
}

// seedLearning teaches the learning switch the source addresses of the
// adopted flows that the policy sends to "normal" and that match an exact
// input port and source address: each such flow exists because that
// address was seen on that port. Without it a restarted daemon would
// flood until every host spoke again.
func (d *Daemon) seedLearning() {
	ps := d.pol.Load()
	var seeds []*record
	d.flows.each(func(r *record) {
		if r.adopted && r.rulesGen == 0 && uint16(r.mask.InPort) == 0xffff && r.mask.EthSrc == [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff} {
			seeds = append(seeds, r)
		}
	})
	for _, r := range seeds {
		table, err := d.startTable(&r.key)
		if err != nil {
			continue // an earlier daemon's recirculation: nothing to learn
		}
		var dec policy.Decision
		ps.env.DecideAtInto(ps.rules, &r.key, table, &dec)
		ps.env.Learn(&dec, &r.key)
	}
}
