package ctl_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/ovsdp/ovsdp/odp"
	"github.com/ovsdp/ovsdp/userdp"
	"github.com/ovsdp/ovsdp/userdp/ctl"
)

// serve hosts a userspace datapath with two in-memory ports behind a
// control socket in a temporary directory and returns a client for it.
func serve(t *testing.T) (*userdp.Datapath, *ctl.Client) {
	t.Helper()
	t.Setenv("OVSDP_RUNDIR", t.TempDir())
	dp, err := userdp.New("ctltest", userdp.WithoutLocalPort())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dp.Close() })
	ctx := context.Background()
	for _, n := range []string{"p1", "p2"} {
		if _, err := dp.AddPort(ctx, odp.PortSpec{Name: n, Type: userdp.PortMemory}); err != nil {
			t.Fatal(err)
		}
	}
	srv, err := ctl.Listen(ctl.SocketPath("ctltest"), dp)
	if err != nil {
		t.Fatal(err)
	}
	deleted := make(chan struct{}, 1)
	srv.OnDelete = func() { deleted <- struct{}{} }
	go srv.Serve(ctx)
	t.Cleanup(func() { srv.Close() })
	c, err := ctl.Dial("ctltest")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return dp, c
}

func TestClientServer(t *testing.T) {
	_, c := serve(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	if names, err := ctl.List(); err != nil || len(names) != 1 || names[0] != "ctltest" {
		t.Fatalf("List = %v, %v", names, err)
	}
	if c.Name() != "ctltest" || c.Type() != "netdev" {
		t.Errorf("Name, Type = %s, %s", c.Name(), c.Type())
	}
	ports, err := c.Ports(ctx)
	if err != nil || len(ports) != 2 || ports[0].Name != "p1" || ports[1].Number != 2 {
		t.Fatalf("Ports = %+v, %v", ports, err)
	}

	key, mask, err := odp.ParseMaskedKey("in_port(1),eth(),eth_type(0x0800),ipv4(src=10.0.0.1,proto=17,frag=no),udp(dst=53)")
	if err != nil {
		t.Fatal(err)
	}
	acts, err := odp.ParseActions("set(ipv4(ttl=9)),2")
	if err != nil {
		t.Fatal(err)
	}
	ufid := odp.UFID{1, 2, 3}
	f := &odp.Flow{UFID: ufid, Key: key, Mask: mask, Actions: acts}
	if _, err := c.PutFlow(ctx, f, odp.PutCreate); err != nil {
		t.Fatal(err)
	}
	// The same flow again: the datapath's EEXIST crosses the socket.
	_, err = c.PutFlow(ctx, f, odp.PutCreate)
	if !errors.Is(err, os.ErrExist) || !errors.Is(err, syscall.EEXIST) {
		t.Errorf("second create: %v, want EEXIST", err)
	}
	got, err := c.GetFlow(ctx, odp.FlowID{UFID: ufid})
	if err != nil {
		t.Fatal(err)
	}
	if a, b := odp.FormatActions(got.Actions), odp.FormatActions(acts); a != b {
		t.Errorf("GetFlow actions = %s, want %s", a, b)
	}
	if a, b := odp.FormatKey(got.Key, got.Mask, false), odp.FormatKey(key, mask, false); a != b {
		t.Errorf("GetFlow key = %s, want %s", a, b)
	}
	// An empty action list (drop) survives the trip as empty, not absent.
	drop := &odp.Flow{UFID: ufid, Key: key, Mask: mask, Actions: odp.Actions{}}
	if _, err := c.PutFlow(ctx, drop, odp.PutModify); err != nil {
		t.Fatal(err)
	}
	n := 0
	err = c.DumpFlows(ctx, odp.DumpOptions{}, func(f *odp.Flow) error {
		n++
		if f.Actions == nil || len(f.Actions) != 0 {
			t.Errorf("dumped actions = %#v, want an empty list", f.Actions)
		}
		return nil
	})
	if err != nil || n != 1 {
		t.Errorf("DumpFlows: %d flows, %v", n, err)
	}
	// An error from the callback stops the dump and the connection stays
	// usable.
	stop := errors.New("stop")
	if err := c.DumpFlows(ctx, odp.DumpOptions{}, func(*odp.Flow) error { return stop }); !errors.Is(err, stop) {
		t.Errorf("DumpFlows with a failing callback: %v", err)
	}
	if _, err := c.DelFlow(ctx, odp.FlowID{UFID: ufid}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.DelFlow(ctx, odp.FlowID{UFID: ufid}); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("second delete: %v, want ENOENT", err)
	}
	info, err := c.Info(ctx)
	if err != nil || info.Stats.Flows != 0 {
		t.Errorf("Info = %+v, %v", info, err)
	}
	if err := c.FlushFlows(ctx); err != nil {
		t.Error(err)
	}
	if _, err := c.Upcalls(ctx, 1); !errors.Is(err, odp.ErrUnsupported) {
		t.Errorf("Upcalls over the socket: %v, want ErrUnsupported", err)
	}
	if err := c.DelPort(ctx, 2); err != nil {
		t.Error(err)
	}
	if err := c.DelPort(ctx, 2); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("second DelPort: %v, want ENOENT", err)
	}
}

func TestDialMissing(t *testing.T) {
	t.Setenv("OVSDP_RUNDIR", t.TempDir())
	_, err := ctl.Dial("nope")
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Dial of a missing datapath: %v, want ErrNotExist", err)
	}
}

func TestListenRefusesLiveSocket(t *testing.T) {
	serve(t)
	dp, err := userdp.New("other", userdp.WithoutLocalPort())
	if err != nil {
		t.Fatal(err)
	}
	defer dp.Close()
	if _, err := ctl.Listen(filepath.Join(ctl.Dir(), "ctltest.sock"), dp); !errors.Is(err, os.ErrExist) {
		t.Errorf("Listen on a served socket: %v, want ErrExist", err)
	}
}
