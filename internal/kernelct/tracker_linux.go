package kernelct

import (
	"context"
	"errors"
	"fmt"
	"syscall"

	"github.com/ti-mo/conntrack"

	"github.com/ovsdp/ovsdp/odp"
)

// DefaultSysctlDir is where the kernel's conntrack settings are.
const DefaultSysctlDir = "/proc/sys/net/netfilter"

// Tracker is a ctnetlink connection to the kernel's conntrack table of
// the calling thread's network namespace. It implements odp.Conntracker.
type Tracker struct {
	conn *conntrack.Conn
	// sysctlDir holds nf_conntrack_max (DefaultSysctlDir; tests point it
	// elsewhere).
	sysctlDir string
}

var _ odp.Conntracker = (*Tracker)(nil)

// Open connects to ctnetlink. It fails when the kernel has no
// nf_conntrack_netlink (the error says so).
func Open() (*Tracker, error) {
	c, err := conntrack.Dial(nil)
	if err != nil {
		return nil, fmt.Errorf("kernelct: connecting to ctnetlink: %w", err)
	}
	return &Tracker{conn: c, sysctlDir: DefaultSysctlDir}, nil
}

// Close closes the connection.
func (t *Tracker) Close() error {
	return t.conn.Close()
}

// dump returns the table's entries in f's zone (the kernel before 6.8
// cannot filter dumps by zone, so ovs-dpctl and this filter here).
func (t *Tracker) dump(ctx context.Context, f odp.CTFilter) ([]conntrack.Flow, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	flows, err := t.conn.Dump(nil)
	if err != nil {
		return nil, fmt.Errorf("kernelct: dumping the conntrack table: %w", err)
	}
	if !f.HasZone {
		return flows, nil
	}
	n := 0
	for i := range flows {
		if flows[i].Zone == f.Zone {
			flows[n] = flows[i]
			n++
		}
	}
	return flows[:n], nil
}

// DumpConntrack implements odp.Conntracker.
func (t *Tracker) DumpConntrack(ctx context.Context, f odp.CTFilter, fn func(*odp.CTEntry) error) error {
	flows, err := t.dump(ctx, f)
	if err != nil {
		return err
	}
	for i := range flows {
		e := Entry(&flows[i])
		if err := fn(&e); err != nil {
			return err
		}
	}
	return nil
}

// FlushConntrack implements odp.Conntracker as ovs-dpctl does on the
// kernel: the whole table in one request; one connection named by a full
// original tuple (in f's zone, zone 0 without one) by a direct delete,
// which fails when there is none; otherwise every matching entry of a
// dump, one delete each (an entry that expired meanwhile is not an
// error).
func (t *Tracker) FlushConntrack(ctx context.Context, f odp.CTFilter) error {
	if f.IsZero() && !f.HasZone {
		if err := t.conn.Flush(); err != nil {
			return fmt.Errorf("kernelct: flushing the conntrack table: %w", err)
		}
		return nil
	}
	if f.IsFiveTuple() {
		fl := conntrack.Flow{TupleOrig: ctTuple(f.Orig), Zone: f.Zone}
		if f.Orig.Src.Is6() {
			// conntrack.Conn.Delete takes the request's family from both
			// tuples; the kernel looks the entry up by the original one.
			fl.TupleReply = ctTuple(odp.CTTuple{Src: f.Orig.Dst, Dst: f.Orig.Src, Proto: f.Orig.Proto,
				SrcPort: f.Orig.DstPort, DstPort: f.Orig.SrcPort,
				ICMPID: f.Orig.ICMPID, ICMPType: f.Orig.ICMPType, ICMPCode: f.Orig.ICMPCode})
		}
		if err := t.conn.Delete(fl); err != nil {
			return fmt.Errorf("kernelct: deleting %s in zone %d: %w", odp.FormatCTTuple(f.Orig), f.Zone, err)
		}
		return nil
	}
	flows, err := t.dump(ctx, f)
	if err != nil {
		return err
	}
	for i := range flows {
		e := Entry(&flows[i])
		if !f.Matches(&e) {
			continue
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		del := conntrack.Flow{TupleOrig: flows[i].TupleOrig, TupleReply: flows[i].TupleReply, Zone: flows[i].Zone, ID: flows[i].ID}
		if err := t.conn.Delete(del); err != nil && !errors.Is(err, syscall.ENOENT) {
			return fmt.Errorf("kernelct: deleting %s in zone %d: %w", odp.FormatCTTuple(e.Orig), e.Zone, err)
		}
	}
	return nil
}

// ConntrackStats implements odp.Conntracker: ctnetlink's per-CPU
// statistics, summed.
func (t *Tracker) ConntrackStats(ctx context.Context) (odp.CTStats, error) {
	var s odp.CTStats
	if err := ctx.Err(); err != nil {
		return s, err
	}
	cpus, err := t.conn.Stats()
	if err != nil {
		return s, fmt.Errorf("kernelct: reading the per-CPU conntrack statistics: %w", err)
	}
	for _, c := range cpus {
		s.Found += uint64(c.Found)
		s.Invalid += uint64(c.Invalid)
		s.Ignore += uint64(c.Ignore)
		s.Insert += uint64(c.Insert)
		s.InsertFailed += uint64(c.InsertFailed)
		s.Drop += uint64(c.Drop)
		s.EarlyDrop += uint64(c.EarlyDrop)
		s.Error += uint64(c.Error)
		s.SearchRestart += uint64(c.SearchRestart)
	}
	return s, nil
}

// ConntrackCount implements odp.Conntracker: the nf_conntrack_count
// sysctl, the kernel's count of the namespace's connections. (ctnetlink's
// IPCTNL_MSG_CT_GET_STATS, as conntrack.Conn.StatsGlobal sends it with
// NLM_F_DUMP, never completes on Linux 6.1: the kernel answers it as a
// plain request.)
func (t *Tracker) ConntrackCount(ctx context.Context) (uint32, error) {
	return t.readSysctl(ctx, "nf_conntrack_count", "reading the number of connections")
}

// MaxConns implements odp.Conntracker: the nf_conntrack_max sysctl.
func (t *Tracker) MaxConns(ctx context.Context) (uint32, error) {
	return t.readSysctl(ctx, "nf_conntrack_max", "reading the maximum number of connections")
}
