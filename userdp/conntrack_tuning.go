package userdp

import (
	"context"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/ovsdp/ovsdp/conntrack"
	"github.com/ovsdp/ovsdp/odp"
)

// The tracker's settings that Open vSwitch's userspace datapath has and
// the kernel's does not (the ipf-* commands, ct-*-tcp-seq-chk,
// ct-*-sweep-interval, ct-bkts): odp.FragReassembler, odp.CTTuner and
// odp.CTBucketCounter over the datapath's conntrack.Tracker.

var (
	_ odp.FragReassembler = (*Datapath)(nil)
	_ odp.CTTuner         = (*Datapath)(nil)
	_ odp.CTBucketCounter = (*Datapath)(nil)
)

// SetIPFEnabled implements odp.FragReassembler.
func (dp *Datapath) SetIPFEnabled(ctx context.Context, v6, on bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	dp.Conntrack().Defrag().SetEnabled(v6, on)
	return nil
}

// SetIPFMinFrag implements odp.FragReassembler: 0 (the default, the
// kernel's behaviour) or at least conntrack.MinFragSizeLimit.
func (dp *Datapath) SetIPFMinFrag(ctx context.Context, v6 bool, size uint32) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return dp.Conntrack().Defrag().SetMinFragSize(v6, size)
}

// SetIPFMaxFrags implements odp.FragReassembler: from 1 to
// conntrack.MaxFragsLimit.
func (dp *Datapath) SetIPFMaxFrags(ctx context.Context, n uint32) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return dp.Conntrack().Defrag().SetMaxFrags(n)
}

// IPFStatus implements odp.FragReassembler.
func (dp *Datapath) IPFStatus(ctx context.Context) (odp.IPFStatusAll, error) {
	d := dp.Conntrack().Defrag()
	fam := func(v6 bool) odp.IPFStatus {
		s, st := d.Settings(v6), d.Stats(v6)
		return odp.IPFStatus{Enabled: s.Enabled, MinFragSize: s.MinFragSize,
			Accepted: st.Accepted, CompletedSent: st.Completed, ExpiredSent: st.Expired,
			TooSmall: st.TooSmall, Overlap: st.Overlap, Purged: st.Purged, NoRoom: st.NoRoom, Invalid: st.Invalid}
	}
	n, _ := d.Held()
	return odp.IPFStatusAll{V4: fam(false), V6: fam(true), MaxFrags: d.MaxFrags(), NFrags: uint32(n)}, ctx.Err()
}

// IPFQueues implements odp.FragReassembler.
func (dp *Datapath) IPFQueues(ctx context.Context) ([]odp.IPFQueue, error) {
	qs := dp.Conntrack().Defrag().Queues()
	out := make([]odp.IPFQueue, len(qs))
	for i, q := range qs {
		src := conntrack.Tuple{V6: q.V6, Src: q.Src, Dst: q.Dst}
		out[i] = odp.IPFQueue{Src: src.SrcAddr(), Dst: src.DstAddr(), ID: q.ID, Proto: q.Proto, Zone: q.Zone,
			Frags: uint32(q.Frags), First: q.First, Last: q.Last}
	}
	return out, ctx.Err()
}

// TCPSeqCheck implements odp.CTTuner.
func (dp *Datapath) TCPSeqCheck(ctx context.Context) (bool, error) {
	return dp.Conntrack().TCPSeqCheck(), ctx.Err()
}

// SetTCPSeqCheck implements odp.CTTuner.
func (dp *Datapath) SetTCPSeqCheck(ctx context.Context, on bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	dp.Conntrack().SetTCPSeqCheck(on)
	return nil
}

// SweepInterval implements odp.CTTuner.
func (dp *Datapath) SweepInterval(ctx context.Context) (uint32, error) {
	dp.Conntrack()
	dp.ct.mu.Lock()
	defer dp.ct.mu.Unlock()
	return uint32(dp.ct.sweep / time.Millisecond), ctx.Err()
}

// SetSweepInterval implements odp.CTTuner: the sweeper starts again with
// the new interval (at least 1 ms).
func (dp *Datapath) SetSweepInterval(ctx context.Context, ms uint32) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if ms == 0 {
		return fmt.Errorf("userdp: sweep interval of 0 ms: %w", syscall.EINVAL)
	}
	t := dp.Conntrack()
	dp.ct.mu.Lock()
	defer dp.ct.mu.Unlock()
	if dp.ct.closed {
		return fmt.Errorf("userdp: datapath %s is closed: %w", dp.name, os.ErrClosed)
	}
	if dp.ct.stop != nil {
		dp.ct.stop()
	}
	dp.ct.sweep = time.Duration(ms) * time.Millisecond
	dp.ct.stop = t.StartSweeper(dp.ct.sweep)
	return nil
}

// ConntrackBuckets implements odp.CTBucketCounter.
func (dp *Datapath) ConntrackBuckets(ctx context.Context) (int, error) {
	return dp.Conntrack().Buckets(), ctx.Err()
}
