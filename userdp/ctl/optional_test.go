package ctl_test

import (
	"context"
	"errors"
	"net/netip"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/ovsdp/ovsdp/internal/header"
	"github.com/ovsdp/ovsdp/internal/header/headertest"
	"github.com/ovsdp/ovsdp/odp"
	"github.com/ovsdp/ovsdp/userdp/ctl"
)

// TestMeters runs every meter operation over the socket: the client's
// answers and errors are the datapath's.
func TestMeters(t *testing.T) {
	dp, c := serve(t)
	ctx := context.Background()
	var _ odp.Meters = c
	f, err := c.MeterFeatures(ctx)
	want, _ := dp.MeterFeatures(ctx)
	if err != nil || !cmp.Equal(f, want) {
		t.Errorf("MeterFeatures = %+v, %v; want %+v", f, err, want)
	}
	m := odp.MeterInfo{ID: 4, KBPS: true, Bands: []odp.MeterBand{{Type: odp.MeterBandDrop, Rate: 1000, Burst: 64}}}
	if err := c.SetMeter(ctx, m, true); err != nil {
		t.Fatal(err)
	}
	got, err := c.GetMeter(ctx, 4)
	direct, _ := dp.GetMeter(ctx, 4)
	if err != nil || !cmp.Equal(got, direct) || got.Bands[0].Rate != 1000 || !got.KBPS {
		t.Errorf("GetMeter = %+v, %v; want %+v", got, err, direct)
	}
	for _, c2 := range []struct {
		name string
		err  error
		want error
	}{
		{"set without bands", c.SetMeter(ctx, odp.MeterInfo{ID: 5}, false), syscall.EINVAL},
		{"set in a taken slot", c.SetMeter(ctx, odp.MeterInfo{ID: 4 + 1024, Bands: m.Bands}, false), syscall.EBUSY},
	} {
		if !errors.Is(c2.err, c2.want) {
			t.Errorf("%s: %v, want %v", c2.name, c2.err, c2.want)
		}
	}
	if _, err := c.GetMeter(ctx, 5); !errors.Is(err, syscall.ENOENT) {
		t.Errorf("GetMeter of a missing meter: %v, want ENOENT", err)
	}
	del, err := c.DelMeter(ctx, 4)
	if err != nil || del.ID != 4 || len(del.Bands) != 1 {
		t.Errorf("DelMeter = %+v, %v", del, err)
	}
	if del, err := c.DelMeter(ctx, 4); err != nil || del.ID != 4 || len(del.Bands) != 0 {
		t.Errorf("DelMeter of a deleted meter = %+v, %v; want the ID only", del, err)
	}
}

// TestMetersUnsupported serves a datapath without meters: the client
// gets EOPNOTSUPP.
func TestMetersUnsupported(t *testing.T) {
	dp, _ := serve(t)
	t.Setenv("OVSDP_RUNDIR", t.TempDir())
	srv, err := ctl.Listen(ctl.SocketPath("nometers"), bareDatapath{dp})
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(context.Background())
	defer srv.Close()
	c, err := ctl.Dial("nometers")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.MeterFeatures(context.Background()); !errors.Is(err, odp.ErrUnsupported) {
		t.Errorf("MeterFeatures: %v, want ErrUnsupported", err)
	}
}

// bareDatapath hides a datapath's optional interfaces (meters, conntrack).
type bareDatapath struct{ odp.Datapath }

// TestConntrack runs every conntrack operation over the socket: a
// connection committed by an executed packet comes back from the dump as
// the datapath itself reports it, a flush of its zone removes it, and a
// datapath without a tracker answers ErrUnsupported.
func TestConntrack(t *testing.T) {
	dp, c := serve(t)
	ctx := context.Background()
	var _ odp.Conntracker = c
	frame := headertest.Eth(headertest.MAC("02:00:00:00:00:02"), headertest.MAC("02:00:00:00:00:01"), header.EtherTypeIPv4,
		headertest.IPv4(headertest.IPv4Hdr{Src: headertest.IP4("10.0.0.1"), Dst: headertest.IP4("10.0.0.2"), Proto: header.IPProtoUDP, TTL: 64},
			headertest.UDP(1000, 53, []byte("query"))))
	acts, err := odp.ParseActions("ct(commit,zone=2)")
	if err != nil {
		t.Fatal(err)
	}
	if err := dp.Execute(ctx, &odp.Packet{Data: frame, Key: odp.FlowKey{odp.InPort(1)}, Actions: acts}); err != nil {
		t.Fatal(err)
	}
	var direct, remote []odp.CTEntry
	dp.DumpConntrack(ctx, odp.CTFilter{}, func(e *odp.CTEntry) error { direct = append(direct, *e); return nil })
	if err := c.DumpConntrack(ctx, odp.CTFilter{}, func(e *odp.CTEntry) error { remote = append(remote, *e); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(remote) != 1 || remote[0].Zone != 2 || remote[0].Orig.DstPort != 53 ||
		!cmp.Equal(remote, direct, cmpopts.IgnoreFields(odp.CTEntry{}, "Timeout"), cmp.Comparer(func(a, b netip.Addr) bool { return a == b })) {
		t.Errorf("dump over the socket %+v, the datapath's %+v", remote, direct)
	}
	if err := c.FlushConntrack(ctx, odp.CTFilter{HasZone: true, Zone: 2}); err != nil {
		t.Errorf("flush: %v", err)
	}
	n := 0
	if err := c.DumpConntrack(ctx, odp.CTFilter{}, func(*odp.CTEntry) error { n++; return nil }); err != nil || n != 0 {
		t.Errorf("dump after the flush: %d entries, %v", n, err)
	}
	if err := c.SetMaxConns(ctx, 1234); err != nil {
		t.Fatal(err)
	}
	if m, err := c.MaxConns(ctx); m != 1234 || err != nil {
		t.Errorf("max %d, %v", m, err)
	}
	if m, _ := dp.MaxConns(ctx); m != 1234 {
		t.Errorf("the datapath's maximum is %d, want 1234", m)
	}
	if cnt, err := c.ConntrackCount(ctx); cnt != 0 || err != nil {
		t.Errorf("count %d, %v", cnt, err)
	}
	st, err := c.ConntrackStats(ctx)
	want, _ := dp.ConntrackStats(ctx)
	if err != nil || !cmp.Equal(st, want) {
		t.Errorf("stats %+v, %v; want %+v", st, err, want)
	}

	t.Setenv("OVSDP_RUNDIR", t.TempDir())
	srv, err := ctl.Listen(ctl.SocketPath("noct"), bareDatapath{dp})
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ctx)
	defer srv.Close()
	nc, err := ctl.Dial("noct")
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if _, err := nc.ConntrackCount(ctx); !errors.Is(err, odp.ErrUnsupported) {
		t.Errorf("count without a tracker: %v, want ErrUnsupported", err)
	}
}

// TestZoneLimits sets, reads and deletes conntrack zone limits over the
// socket (odp.CTLimiter): the answers and errors are the datapath's.
func TestZoneLimits(t *testing.T) {
	dp, c := serve(t)
	ctx := context.Background()
	var _ odp.CTLimiter = c
	if err := c.SetZoneLimits(ctx, []odp.CTZoneLimit{{Zone: odp.CTDefaultZone, Limit: 9}, {Zone: 4, Limit: 2}}); err != nil {
		t.Fatal(err)
	}
	got, err := c.ZoneLimits(ctx)
	direct, _ := dp.ZoneLimits(ctx)
	if err != nil || !cmp.Equal(got, direct) || len(got) != 2 || got[1] != (odp.CTZoneLimit{Zone: 4, Limit: 2}) {
		t.Errorf("ZoneLimits() = %+v, %v; want %+v", got, err, direct)
	}
	if got, err := c.ZoneLimits(ctx, 7); err != nil || !cmp.Equal(got, []odp.CTZoneLimit{{Zone: 7, Limit: 9}}) {
		t.Errorf("ZoneLimits(7) = %+v, %v; want the default's 9", got, err)
	}
	// A query of zones that are all out of range answers an empty list.
	if got, err := c.ZoneLimits(ctx, 1<<20); err != nil || got == nil || len(got) != 0 {
		t.Errorf("ZoneLimits(1<<20) = %#v, %v; want an empty list", got, err)
	}
	if err := c.SetZoneLimits(ctx, []odp.CTZoneLimit{{Zone: 70000, Limit: 1}}); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("SetZoneLimits of zone 70000: %v, want EINVAL", err)
	}
	if err := c.DelZoneLimits(ctx, 4, odp.CTDefaultZone); err != nil {
		t.Fatal(err)
	}
	if got, _ := c.ZoneLimits(ctx); !cmp.Equal(got, []odp.CTZoneLimit{{Zone: odp.CTDefaultZone}}) {
		t.Errorf("after deleting: %+v, want the unlimited default only", got)
	}
}
