package userdp

import (
	"context"
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
