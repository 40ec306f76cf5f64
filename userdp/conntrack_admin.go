package userdp

import (
	"context"

	"github.com/ovsdp/ovsdp/conntrack"
	"github.com/ovsdp/ovsdp/odp"
)

// The datapath's connection tracker, as dpctl's conntrack commands see
// it (odp.Conntracker): its entries in odp's form, with Open vSwitch's
// TCP state numbering, flushes by zone and by (partial) tuple, and the
// counters. The tracker is made on first use, by a ct action or here.

var _ odp.Conntracker = (*Datapath)(nil)

// DumpConntrack implements odp.Conntracker.
func (dp *Datapath) DumpConntrack(ctx context.Context, f odp.CTFilter, fn func(*odp.CTEntry) error) error {
	return dp.Conntrack().Dump(conntrack.Filter{HasZone: f.HasZone, Zone: f.Zone}, func(e *conntrack.Entry) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		ce := ctEntry(e)
		return fn(&ce)
	})
}

// FlushConntrack implements odp.Conntracker: it deletes the entries that
// f selects (odp.CTFilter.Matches).
func (dp *Datapath) FlushConntrack(ctx context.Context, f odp.CTFilter) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	cf := conntrack.Filter{HasZone: f.HasZone, Zone: f.Zone}
	if !f.IsZero() {
		cf.Match = func(e *conntrack.Entry) bool {
			ce := ctEntry(e)
			return f.Matches(&ce)
		}
	}
	dp.Conntrack().Flush(cf)
	return nil
}

// ConntrackStats implements odp.Conntracker.
func (dp *Datapath) ConntrackStats(ctx context.Context) (odp.CTStats, error) {
	s := dp.Conntrack().Stats()
	return odp.CTStats{Invalid: s.Invalid, Insert: s.Insert, InsertFailed: s.InsertFailed, Drop: s.Drop, Error: s.Error}, ctx.Err()
}

// ConntrackCount implements odp.Conntracker.
func (dp *Datapath) ConntrackCount(ctx context.Context) (uint32, error) {
	return uint32(dp.Conntrack().Count()), ctx.Err()
}

// MaxConns implements odp.Conntracker (0: no maximum).
func (dp *Datapath) MaxConns(ctx context.Context) (uint32, error) {
	return dp.Conntrack().MaxConns(), ctx.Err()
}

// SetMaxConns implements odp.Conntracker (0: no maximum).
func (dp *Datapath) SetMaxConns(ctx context.Context, n uint32) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	dp.Conntrack().SetMaxConns(n)
	return nil
}

// ctTuple is t in odp's form: an ICMP tuple's ID, type and code in their
// own fields instead of the ports.
func ctTuple(t conntrack.Tuple) odp.CTTuple {
	ct := odp.CTTuple{Src: t.SrcAddr(), Dst: t.DstAddr(), Proto: t.Proto}
	if ct.IsICMP() {
		ct.ICMPID, ct.ICMPType, ct.ICMPCode = t.ICMPID(), t.ICMPType(), t.ICMPCode()
	} else {
		ct.SrcPort, ct.DstPort = t.SrcPort, t.DstPort
	}
	return ct
}

// ctEntry is e in odp's form. The tracker keeps one TCP state per
// connection, shown for both directions as ovs-dpctl shows the kernel's.
func ctEntry(e *conntrack.Entry) odp.CTEntry {
	ce := odp.CTEntry{Orig: ctTuple(e.Orig), Reply: ctTuple(e.Reply), Zone: e.Zone, Mark: e.Mark, Labels: odp.CTLabelsFromWire(e.Labels[:]),
		Status: odp.CTStatus(e.Status), Timeout: e.Timeout,
		OrigCounters:  odp.CTCounters{Packets: e.OrigPackets, Bytes: e.OrigBytes},
		ReplyCounters: odp.CTCounters{Packets: e.ReplyPackets, Bytes: e.ReplyBytes}, Bucket: int64(e.Bucket)}
	if e.Orig.Proto == odp.IPProtoTCP {
		s := odp.CTTCPStateOfKernel(uint8(e.TCP))
		ce.ProtoInfo = odp.CTProtoInfo{Proto: odp.IPProtoTCP, StateOrig: s, StateReply: s,
			WScaleOrig: e.WScaleOrig, WScaleReply: e.WScaleReply,
			FlagsOrig: odp.CTTCPFlags(e.TCPFlagsOrig), FlagsReply: odp.CTTCPFlags(e.TCPFlagsReply)}
	}
	return ce
}
