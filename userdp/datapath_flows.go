package userdp

import (
	"context"
	"fmt"
	"os"
	"syscall"

	"github.com/ovsdp/ovsdp/conntrack"
	"github.com/ovsdp/ovsdp/flowkeys"
	"github.com/ovsdp/ovsdp/internal/header"
	"github.com/ovsdp/ovsdp/odp"
)

// PutFlow creates or modifies a flow as flags say (odp.PutCreate alone:
// create, EEXIST if it exists; odp.PutModify alone: replace the actions
// of an existing flow, ENOENT if there is none, odp.PutZeroStats clearing
// its statistics; both: either). The key and mask are accepted or
// rejected (EINVAL) by the kernel's rules (odp.ToFlowKeys), and so are
// the actions, validated against the flow's masked key; an action this
// datapath cannot execute is refused with an error wrapping
// odp.ErrUnsupported. It returns the statistics a modified flow had.
// See table_ops.go for how flows are identified and which duplicates
// are refused.
func (dp *Datapath) PutFlow(ctx context.Context, f *odp.Flow, flags odp.PutFlags) (odp.FlowStats, error) {
	// The spec is a temporary that put copies from: on the stack, not
	// one more heap object (three flow keys) per put.
	var s flowSpec
	if err := dp.flowSpec(f, &s); err != nil {
		return odp.FlowStats{}, err
	}
	st, err := dp.table.put(&s, flags)
	if err != nil {
		return st, fmt.Errorf("userdp: %w", err)
	}
	return st, nil
}

// flowSpec converts and validates a flow to put, into s.
func (dp *Datapath) flowSpec(f *odp.Flow, s *flowSpec) error {
	// A flow with a UFID is named by it lazily (flowSpec.nameOf): its
	// formatting cost two allocations on every put.
	var name string
	if f.UFID.IsZero() {
		name = flowName(f.UFID, f.Key)
	}
	k, m, err := odp.ToFlowKeys(f.Key, f.Mask)
	if err != nil {
		return fmt.Errorf("userdp: put flow %s: %w", flowName(f.UFID, f.Key), err)
	}
	prog, err := compileActions(f.Actions, &k)
	if err != nil {
		return fmt.Errorf("userdp: put flow %s: %w", flowName(f.UFID, f.Key), err)
	}
	*s = flowSpec{ufid: f.UFID, key: k, mask: m, name: name,
		acts: newFlowActions(append(odp.Actions{}, f.Actions...), prog)}
	if f.UFID.IsZero() {
		// A flow without UFID is identified by its key as given.
		if uk, _, err := odp.ToFlowKeys(f.Key, nil); err == nil {
			s.ukey = uk
		} else {
			s.ukey = k
		}
	}
	return nil
}

// flowID converts a FlowID: the UFID, or the key as given.
func flowID(id odp.FlowID, op string) (odp.UFID, flowkeys.Key, error) {
	var k flowkeys.Key
	if id.UFID.IsZero() {
		if len(id.Key) == 0 {
			return id.UFID, k, fmt.Errorf("userdp: %s flow: neither UFID nor key given: %w", op, syscall.EINVAL)
		}
		var err error
		if k, _, err = odp.ToFlowKeys(id.Key, nil); err != nil {
			return id.UFID, k, fmt.Errorf("userdp: %s flow %s: %w", op, flowName(id.UFID, id.Key), err)
		}
	}
	return id.UFID, k, nil
}

// GetFlow returns one flow, by UFID or (for a flow put without UFID) by
// key; ENOENT if there is none.
func (dp *Datapath) GetFlow(ctx context.Context, id odp.FlowID) (*odp.Flow, error) {
	u, k, err := flowID(id, "get")
	if err != nil {
		return nil, err
	}
	f := dp.table.get(u, &k)
	if f == nil {
		return nil, fmt.Errorf("userdp: get flow %s: %w", flowName(id.UFID, id.Key), errFlowNotFound)
	}
	return flowOut(f, false), nil
}

// DelFlow deletes one flow and returns its final statistics; ENOENT if
// there is none.
func (dp *Datapath) DelFlow(ctx context.Context, id odp.FlowID) (odp.FlowStats, error) {
	u, k, err := flowID(id, "delete")
	if err != nil {
		return odp.FlowStats{}, err
	}
	f := dp.table.del(u, &k)
	if f == nil {
		return odp.FlowStats{}, fmt.Errorf("userdp: delete flow %s: %w", flowName(id.UFID, id.Key), errFlowNotFound)
	}
	return f.stats(), nil
}

// FlushFlows deletes every flow.
func (dp *Datapath) FlushFlows(ctx context.Context) error {
	dp.table.mu.Lock()
	dp.table.flush()
	dp.table.mu.Unlock()
	return nil
}

// DumpFlows calls fn for every flow, reading the table as lookups do
// (without a lock, so fn may put and delete flows; flows put or deleted
// during the dump may or may not be seen). The *odp.Flow is fn's to
// keep. An error from fn, or ctx being done, stops the dump.
//
// As the kernel dumps them, the key is the flow's masked key and the
// mask is given in full (odp.KeyFromFlowKeys, odp.MaskFromFlowKeys);
// opts.Terse gives only the UFID (or, for a flow without UFID, its key)
// and the statistics.
func (dp *Datapath) DumpFlows(ctx context.Context, opts odp.DumpOptions, fn func(*odp.Flow) error) error {
	var err error
	dp.table.each(func(f *megaflow) bool {
		if err = ctx.Err(); err != nil {
			return false
		}
		err = fn(flowOut(f, opts.Terse))
		return err == nil
	})
	return err
}

// flowOut converts a flow for Get and Dump.
func flowOut(f *megaflow, terse bool) *odp.Flow {
	out := &odp.Flow{UFID: f.ufid, Stats: f.stats()}
	if terse {
		if f.ufid.IsZero() && f.ukey != nil {
			out.Key = odp.KeyFromFlowKeys(f.ukey)
		}
		return out
	}
	out.Key = odp.KeyFromFlowKeys(&f.key)
	out.Mask = odp.MaskFromFlowKeys(&f.st.mask, &f.key)
	out.Actions = append(odp.Actions{}, f.acts.Load().odp...)
	return out
}

// Execute runs actions on a packet, as the kernel's packet execute: the
// metadata (in_port, priority, skb_mark, recirc_id, dp_hash, conntrack
// fields) comes from p.Key, the rest of the key is extracted from
// p.Data, and the actions are validated against that key. A key with
// eth_type and no eth makes the packet an L3 packet (no Ethernet
// header), as in the kernel; any other packet shorter than an Ethernet
// header is EINVAL. Flow statistics are not
// changed; a recirculation looks the packet up as if it had been
// received.
func (dp *Datapath) Execute(ctx context.Context, p *odp.Packet) error {
	x, err := prepareExecute(p)
	if err != nil {
		return err
	}
	dp.mu.Lock()
	closed := dp.closed
	dp.mu.Unlock()
	if closed {
		return fmt.Errorf("userdp: execute: datapath %s is closed: %w", dp.name, os.ErrClosed)
	}
	dp.execMu.Lock()
	defer dp.execMu.Unlock()
	w := dp.execW
	dp.runExecute(w, &w.execBuf, p, &x)
	w.flush()
	return nil
}

// AppendExecute executes pkts as Execute does, in order, and appends
// each one's result to errs (nil when it was executed; one packet's
// failure does not stop the others), returning the extended slice. The
// frames the batch outputs leave together, one write per port for up to
// txBatch packets instead of one per packet, as a handler executes the
// packets of a batch of upcalls. errs is the caller's to reuse: with
// room for len(pkts) more, it allocates nothing beyond what Execute
// does for each packet.
func (dp *Datapath) AppendExecute(ctx context.Context, errs []error, pkts []*odp.Packet) []error {
	dp.mu.Lock()
	closed := dp.closed
	dp.mu.Unlock()
	dp.execMu.Lock()
	defer dp.execMu.Unlock()
	w := dp.execW
	queued := 0
	for _, p := range pkts {
		if closed {
			errs = append(errs, fmt.Errorf("userdp: execute: datapath %s is closed: %w", dp.name, os.ErrClosed))
			continue
		}
		x, err := prepareExecute(p)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if queued == txBatch {
			// Every buffer is queued or sent: send them, reuse them.
			w.flush()
			queued = 0
		}
		if len(w.execBufs) <= queued {
			w.execBufs = append(w.execBufs, nil)
		}
		dp.runExecute(w, &w.execBufs[queued], p, &x)
		queued++
		errs = append(errs, nil)
	}
	if queued > 0 {
		w.flush()
	}
	return errs
}

// execPrep is a packet to execute, validated: its extracted key, its
// compiled actions, whether it is an L3 packet.
type execPrep struct {
	key  flowkeys.Key
	prog []op
	l3   bool
}

// prepareExecute validates p and extracts and compiles what
// runExecute needs (see Execute).
func prepareExecute(p *odp.Packet) (execPrep, error) {
	if len(p.Data) > MaxFrameLen {
		return execPrep{}, fmt.Errorf("userdp: execute: packet of %d bytes exceeds %d: %w", len(p.Data), MaxFrameLen, syscall.EINVAL)
	}
	if p.UpcallPID != 0 {
		return execPrep{}, fmt.Errorf("userdp: execute: upcall PID %d: the userspace datapath has no netlink ports (its upcalls go to the registered handlers): %w", p.UpcallPID, syscall.EINVAL)
	}
	mk, err := odp.ToFlowKeysExact(p.Key)
	if err != nil {
		return execPrep{}, fmt.Errorf("userdp: execute: %w", err)
	}
	// A key with eth_type and no eth is an L3 packet's: the kernel
	// extracts it from the network header with that EtherType.
	l3 := mk.MacProto == flowkeys.MacProtoNone
	if len(p.Data) < 14 && !l3 {
		return execPrep{}, fmt.Errorf("userdp: execute: packet of %d bytes is shorter than an Ethernet header: %w", len(p.Data), syscall.EINVAL)
	}
	// The key's metadata, the tunnel's included (the kernel attaches
	// it to the packet: a recirculation or upcall sees it).
	md := flowkeys.MetadataOf(&mk)
	md.L3, md.EthType = l3, mk.EthType
	x := execPrep{l3: l3}
	if err := flowkeys.Extract(p.Data, &md, &x.key); err != nil {
		return execPrep{}, fmt.Errorf("userdp: execute: %w: %w", err, syscall.EINVAL)
	}
	prog, err := compileActions(p.Actions, &x.key)
	if err != nil {
		return execPrep{}, fmt.Errorf("userdp: execute: %w", err)
	}
	x.prog = prog
	return x, nil
}

// runExecute runs the prepared packet p on w (the execute worker, its
// lock held) in the buffer *bp, grown as needed; the frames it outputs
// are queued on w until w.flush, and refer to *bp until then.
func (dp *Datapath) runExecute(w *worker, bp *[]byte, p *odp.Packet, x *execPrep) {
	need := DefaultHeadroom + len(p.Data)
	if cap(*bp) < need {
		*bp = make([]byte, max(need, 2048))
	}
	buf := (*bp)[:cap(*bp)]
	copy(buf[DefaultHeadroom:], p.Data)
	w.now = dp.nowMs()
	c := &w.ctx
	*c = pktCtx{f: frameBuf{Buf: buf, Off: DefaultHeadroom, Len: len(p.Data)}, key: x.key, keyValid: true, steal: true, proto: keyProtocol(&x.key),
		acts: newFlowActions(p.Actions, x.prog), ct: conntrack.StateFromKey(&x.key), noEth: x.l3}
	c.hash = w.cache.hashOf(&x.key) // for a recirc action's lookup (recircHash)
	if p.MRU != 0 {
		// A reassembled packet back from userspace: output fragments it
		// to the MRU again (the kernel's OVS_CB(skb)->mru; its fragment
		// sizes are not known, and an IPv6 one gets a new ID).
		c.frag = conntrack.FragInfo{MRU: p.MRU, V6: x.key.EthType == header.EtherTypeIPv6, ID: w.random()}
		c.cutlen = cutReassembled
	}
	w.run(c, x.prog)
}
