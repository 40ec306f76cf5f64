package userdp

import (
	"context"
	"errors"
	"reflect"
	"syscall"
	"testing"

	"github.com/ovsdp/ovsdp/odp"
)

// TestConntrackAdmin runs a TCP connection through ct(commit) in zone 3
// and reads it back as dpctl does (odp.Conntracker): the entry with its
// tuples, zone, status and TCP state, the count, a flush by a partial
// tuple that matches nothing and then one that matches, and the maximum.
func TestConntrackAdmin(t *testing.T) {
	h := newHarness(t, 2)
	ctx := context.Background()
	h.put("recirc_id(0),in_port(1),"+anyEth+ipTCP, "ct(commit,zone=3),2")
	h.put("recirc_id(0),in_port(2),"+anyEth+ipTCP, "ct(commit,zone=3),1")
	h.synAndSynAck()

	var got []odp.CTEntry
	dump := func(f odp.CTFilter) {
		got = got[:0]
		if err := h.dp.DumpConntrack(ctx, f, func(e *odp.CTEntry) error { got = append(got, *e); return nil }); err != nil {
			t.Fatal(err)
		}
	}
	dump(odp.CTFilter{})
	if len(got) != 1 {
		t.Fatalf("dump: %d entries, want 1: %+v", len(got), got)
	}
	e := got[0]
	if e.Zone != 3 || e.Orig.Proto != 6 || e.Orig.SrcPort != 40000 || e.Orig.DstPort != 80 ||
		e.Reply.SrcPort != 80 || e.Reply.DstPort != 40000 || e.Orig.Src != e.Reply.Dst ||
		e.Status&odp.CTStatusSeenReply == 0 || e.ProtoInfo.StateOrig != odp.CTTCPSynRecv || e.Timeout == 0 {
		t.Errorf("entry %+v", e)
	}
	if !e.Orig.Src.Is4() {
		t.Errorf("source %v is not IPv4", e.Orig.Src)
	}
	if dump(odp.CTFilter{HasZone: true, Zone: 4}); len(got) != 0 {
		t.Errorf("zone 4: %d entries, want none", len(got))
	}
	if n, err := h.dp.ConntrackCount(ctx); n != 1 || err != nil {
		t.Errorf("count %d, %v", n, err)
	}
	// A partial original tuple: another destination port matches nothing.
	other := odp.CTFilter{Proto: 6, Orig: odp.CTTuple{DstPort: 81}}
	if err := h.dp.FlushConntrack(ctx, other); err != nil {
		t.Fatal(err)
	}
	if dump(odp.CTFilter{}); len(got) != 1 {
		t.Fatalf("a flush of port 81 removed the port-80 connection")
	}
	this := odp.CTFilter{Proto: 6, Orig: odp.CTTuple{Src: e.Orig.Src, DstPort: 80}}
	if err := h.dp.FlushConntrack(ctx, this); err != nil {
		t.Fatal(err)
	}
	if dump(odp.CTFilter{}); len(got) != 0 {
		t.Errorf("after a flush of its tuple: %+v", got)
	}
	if err := h.dp.SetMaxConns(ctx, 77); err != nil {
		t.Fatal(err)
	}
	if n, err := h.dp.MaxConns(ctx); n != 77 || err != nil {
		t.Errorf("max %d, %v; want 77", n, err)
	}
	if st, err := h.dp.ConntrackStats(ctx); err != nil || st.Insert != 1 {
		t.Errorf("stats %+v, %v; want 1 insert", st, err)
	}
}

// TestZoneLimitsAPI sets, reads and deletes zone limits through
// odp.CTLimiter, as the kernel's ovs_ct_limit answers them, and checks
// that a commit past a zone's limit drops the packet.
func TestZoneLimitsAPI(t *testing.T) {
	h := newHarness(t, 2)
	ctx := context.Background()
	var lim odp.CTLimiter = h.dp
	if err := lim.SetZoneLimits(ctx, []odp.CTZoneLimit{{Zone: odp.CTDefaultZone, Limit: 10}, {Zone: 3, Limit: 1}, {Zone: 9, Limit: 4}}); err != nil {
		t.Fatal(err)
	}
	if err := lim.SetZoneLimits(ctx, []odp.CTZoneLimit{{Zone: 4, Limit: 1}, {Zone: 70000, Limit: 1}}); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("zone 70000: %v, want EINVAL", err)
	}
	h.put("recirc_id(0),in_port(1),"+anyEth+ipTCP, "ct(commit,zone=3),2")
	h.put("recirc_id(0),in_port(2),"+anyEth+ipTCP, "ct(commit,zone=3),1")
	h.synAndSynAck()
	// A second connection in zone 3 is over the limit: dropped.
	h.send(1, ctTCP(1, 2, 40001, 80, 0x02, 1000, 0))
	h.expectNone(2)
	got, err := lim.ZoneLimits(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []odp.CTZoneLimit{{Zone: odp.CTDefaultZone, Limit: 10}, {Zone: 3, Limit: 1, Count: 1}, {Zone: 9, Limit: 4}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("all limits: %+v, want %+v (zone 4 was in a refused request)", got, want)
	}
	// A zone without its own limit has the default's; one out of range
	// is left out of the answer.
	if got, _ := lim.ZoneLimits(ctx, 5, 3, 1<<20); !reflect.DeepEqual(got, []odp.CTZoneLimit{{Zone: 5, Limit: 10}, {Zone: 3, Limit: 1, Count: 1}}) {
		t.Errorf("zones 5, 3 and 1<<20: %+v", got)
	}
	if err := lim.DelZoneLimits(ctx, 3, odp.CTDefaultZone); err != nil {
		t.Fatal(err)
	}
	if err := lim.DelZoneLimits(ctx, -2); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("delete zone -2: %v, want EINVAL", err)
	}
	if got, _ := lim.ZoneLimits(ctx); !reflect.DeepEqual(got, []odp.CTZoneLimit{{Zone: odp.CTDefaultZone}, {Zone: 9, Limit: 4}}) {
		t.Errorf("after deleting zone 3's and the default: %+v", got)
	}
	// Unlimited again: the second connection passes.
	h.send(1, ctTCP(1, 2, 40001, 80, 0x02, 1000, 0))
	if got := h.expect(2); len(got) == 0 {
		t.Error("the second connection did not pass once unlimited")
	}
}

// TestConntrackLabelsOrder: dump-conntrack's labels are the 128-bit
// number (odp.CTEntry.Labels, network byte order), as the kernel's are
// read, not the bitmap bytes the key carries.
func TestConntrackLabelsOrder(t *testing.T) {
	h := newHarness(t, 2)
	h.put("recirc_id(0),in_port(1),"+anyEth+ipTCP, "ct(commit,label=0x561234/0xffffff),2")
	h.put("recirc_id(0),in_port(2),"+anyEth+ipTCP, "ct,1")
	h.synAndSynAck()
	var got [][16]byte
	h.dp.DumpConntrack(context.Background(), odp.CTFilter{}, func(e *odp.CTEntry) error { got = append(got, e.Labels); return nil })
	if want := [16]byte{13: 0x56, 14: 0x12, 15: 0x34}; len(got) != 1 || got[0] != want {
		t.Fatalf("dumped labels %x, want one entry's %x", got, want)
	}
}
