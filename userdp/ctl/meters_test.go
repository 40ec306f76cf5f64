package ctl_test

import (
	"context"
	"errors"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

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
	srv, err := ctl.Listen(ctl.SocketPath("nometers"), noMeters{dp})
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

// noMeters hides a datapath's meters.
type noMeters struct{ odp.Datapath }
