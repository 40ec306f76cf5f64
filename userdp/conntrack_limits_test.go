package userdp

import (
	"context"
	"errors"
	"reflect"
	"syscall"
	"testing"

	"github.com/ovsdp/ovsdp/odp"
)

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
	syn := ctTCP(1, 2, 40001, 80, 0x02, 1000, 0)
	h.send(1, syn)
	h.expectFrame(2, syn)
}

// TestConntrackLabelsOrder: dump-conntrack's labels are the 128-bit
// number (odp.CTEntry.Labels, network byte order), as the kernel's are
// read, not the bitmap bytes the key carries.
func TestConntrackLabelsOrder(t *testing.T) {
	h := newHarness(t, 2)
	h.put("recirc_id(0),in_port(1),"+anyEth+ipTCP, "ct(commit,label=0x561234/0xffffff),2")
	syn := ctTCP(1, 2, 40000, 80, 0x02, 1000, 0)
	h.send(1, syn)
	h.expectFrame(2, syn)
	var got []odp.CTEntry
	if err := h.dp.DumpConntrack(context.Background(), odp.CTFilter{}, func(e *odp.CTEntry) error { got = append(got, *e); return nil }); err != nil {
		t.Fatal(err)
	}
	want := [16]byte{13: 0x56, 14: 0x12, 15: 0x34}
	if len(got) != 1 || got[0].Labels != want {
		t.Fatalf("dump: %+v, want one entry with labels %x", got, want)
	}
}
