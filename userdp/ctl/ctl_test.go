package ctl_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
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

// serveWith hosts netdev@name (made with dpOpts) behind a control socket
// with opts in a temporary run directory.
func serveWith(t *testing.T, name string, dpOpts []userdp.Option, opts ...ctl.Option) *userdp.Datapath {
	t.Helper()
	dir, err := os.MkdirTemp("", "ctl") // short: socket paths are limited to 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	t.Setenv("OVSDP_RUNDIR", filepath.Join(dir, "run"))
	dp, err := userdp.New(name, append([]userdp.Option{userdp.WithoutLocalPort()}, dpOpts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dp.Close() })
	srv, err := ctl.Listen(ctl.SocketPath(name), dp, opts...)
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(context.Background())
	t.Cleanup(func() { srv.Close() })
	return dp
}

// rawReply reads one JSON reply line.
func rawReply(t *testing.T, r *bufio.Reader) map[string]any {
	t.Helper()
	line, err := r.ReadBytes('\n')
	if err != nil {
		t.Fatalf("reading a reply: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal(line, &m); err != nil {
		t.Fatalf("reply %q: %v", line, err)
	}
	return m
}

// The socket and its directory get their modes from chmod, not from the
// umask.
func TestSocketModesIgnoreUmask(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	serveWith(t, "modes", nil)
	for _, c := range []struct {
		path string
		want os.FileMode
	}{{ctl.Dir(), 0o700}, {ctl.SocketPath("modes"), 0o600}} {
		st, err := os.Stat(c.path)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != c.want {
			t.Errorf("%s: mode %v under umask 000, want %v", c.path, st.Mode().Perm(), c.want)
		}
	}
}

// A request over 4 MiB is answered with an error, and the connection
// goes on with the next request.
func TestRequestTooLong(t *testing.T) {
	serveWith(t, "long", nil)
	c, err := net.Dial("unix", ctl.SocketPath("long"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(20 * time.Second))
	go func() {
		big := `{"op":"execute","packet":{"data":"` + strings.Repeat("A", 5<<20) + `"}}` + "\n"
		c.Write([]byte(big + `{"op":"info"}` + "\n"))
	}()
	r := bufio.NewReader(c)
	m := rawReply(t, r)
	if e, _ := m["err"].(string); !strings.Contains(e, "request longer than 4194304 bytes") || m["errno"] != "EMSGSIZE" {
		t.Errorf("reply to a 5 MiB request: %v; want a request-too-long error", m)
	}
	if m := rawReply(t, r); m["info"] == nil {
		t.Errorf("reply to the next request: %v; want the datapath's info", m)
	}
}

// Past the connection limit a client gets an error, not a hang; a slot
// freed is usable again.
func TestConnectionLimit(t *testing.T) {
	serveWith(t, "conns", nil, ctl.WithMaxConns(2))
	ctx := context.Background()
	var cs []*ctl.Client
	for i := 0; i < 2; i++ {
		c, err := ctl.Dial("conns")
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := c.Info(ctx); err != nil {
			t.Fatalf("client %d: %v", i, err)
		}
		cs = append(cs, c)
	}
	c3, err := ctl.Dial("conns")
	if err != nil {
		t.Fatal(err)
	}
	_, err = c3.Info(ctx)
	c3.Close()
	if !errors.Is(err, syscall.EAGAIN) || !strings.Contains(err.Error(), "serves 2 connections already") {
		t.Errorf("third connection: %v; want the connection limit's error", err)
	}
	cs[0].Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		c4, err := ctl.Dial("conns")
		if err != nil {
			t.Fatal(err)
		}
		_, err = c4.Info(ctx)
		c4.Close()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a freed slot is not reused: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// An idle connection is closed with a notice; the client redials and
// resends on its own.
func TestIdleTimeout(t *testing.T) {
	serveWith(t, "idle", nil, ctl.WithIdleTimeout(200*time.Millisecond))
	raw, err := net.Dial("unix", ctl.SocketPath("idle"))
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	raw.SetReadDeadline(time.Now().Add(5 * time.Second))
	start := time.Now()
	r := bufio.NewReader(raw)
	m := rawReply(t, r)
	if m["closed"] != true || m["errno"] != "ETIMEDOUT" {
		t.Errorf("idle connection: %v; want the idle notice", m)
	}
	if _, err := r.ReadByte(); err == nil {
		t.Errorf("idle connection still open after the notice")
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("idle connection closed after %v; want about 200ms", d)
	}

	c, err := ctl.Dial("idle")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	for i := 0; i < 2; i++ {
		if _, err := c.Info(ctx); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		time.Sleep(400 * time.Millisecond)
	}
	n := 0
	if err := c.DumpFlows(ctx, odp.DumpOptions{}, func(*odp.Flow) error { n++; return nil }); err != nil {
		t.Errorf("dump after an idle period: %v", err)
	}
}

// The flow cap refuses a new flow past it with EFBIG and a clear error;
// changing an existing flow still works; Info reports the cap.
func TestFlowLimit(t *testing.T) {
	serveWith(t, "cap", []userdp.Option{userdp.WithFlowLimit(3)})
	c, err := ctl.Dial("cap")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	flow := func(i int) *odp.Flow {
		k, m, err := odp.ParseMaskedKey("in_port(1),eth(),eth_type(0x0800),ipv4(dst=10.0.0." + string(rune('0'+i)) + ",frag=no)")
		if err != nil {
			t.Fatal(err)
		}
		return &odp.Flow{Key: k, Mask: m, Actions: odp.Actions{}}
	}
	for i := 1; i <= 3; i++ {
		if _, err := c.PutFlow(ctx, flow(i), odp.PutCreate); err != nil {
			t.Fatalf("flow %d: %v", i, err)
		}
	}
	_, err = c.PutFlow(ctx, flow(4), odp.PutCreate)
	if !errors.Is(err, syscall.EFBIG) || !strings.Contains(err.Error(), "flow table is full: it holds 3 flows, its limit") {
		t.Errorf("flow past the cap: %v; want EFBIG with a clear error", err)
	}
	if _, err := c.PutFlow(ctx, flow(2), odp.PutModify|odp.PutCreate); err != nil {
		t.Errorf("modifying a flow at the cap: %v", err)
	}
	info, err := c.Info(ctx)
	if err != nil || info.FlowLimit != 3 || info.Stats.Flows != 3 {
		t.Errorf("Info = %+v, %v; want 3 flows of a limit of 3", info, err)
	}
}

// List leaves out status sockets and files that cannot name a datapath.
func TestListOnlyControlSockets(t *testing.T) {
	serveWith(t, "br0", nil)
	for _, p := range []string{ctl.StatusSocket("netdev", "br0"), ctl.StatusSocket("system", "k0"),
		filepath.Join(ctl.Dir(), "upcalld-netdev-br0.sock"), filepath.Join(ctl.Dir(), "a@b.sock")} {
		l, err := net.Listen("unix", p)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
	}
	os.WriteFile(filepath.Join(ctl.Dir(), "plain.sock"), nil, 0o600)
	names, err := ctl.List()
	if err != nil || len(names) != 1 || names[0] != "br0" {
		t.Errorf("List = %q, %v; want [br0]", names, err)
	}
}

// TestCloseWhileConnecting closes servers while clients connect to them:
// Close must never wait for a connection that Serve admits after it (a
// WaitGroup Add concurrent with Wait, which the race detector reports),
// and must not leave such a connection open.
func TestCloseWhileConnecting(t *testing.T) {
	t.Setenv("OVSDP_RUNDIR", t.TempDir())
	dp, err := userdp.New("ctlclose", userdp.WithoutLocalPort())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dp.Close() })
	for round := 0; round < 50; round++ {
		srv, err := ctl.Listen(ctl.SocketPath("ctlclose"), dp)
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		served := make(chan error, 1)
		go func() { served <- srv.Serve(context.Background()) }()
		stop := make(chan struct{})
		dialed := make(chan struct{})
		go func() {
			defer close(dialed)
			for {
				select {
				case <-stop:
					return
				default:
				}
				if c, err := net.Dial("unix", srv.Addr()); err == nil {
					c.Close()
				}
			}
		}()
		time.Sleep(time.Duration(round%5) * time.Millisecond)
		done := make(chan struct{})
		go func() { srv.Close(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("round %d: Close hangs", round)
		}
		close(stop)
		<-dialed
		if err := <-served; err != nil {
			t.Fatalf("round %d: Serve: %v", round, err)
		}
	}
}

// TestStatusSocketPath: upcalld's status socket is
// "upcalld-TYPE-NAME.status" in the run directory, a suffix List does
// not take for a datapath.
func TestStatusSocketPath(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("OVSDP_RUNDIR", dir)
	if got, want := ctl.StatusSocket("system", "br0"), filepath.Join(dir, "upcalld-system-br0.status"); got != want {
		t.Errorf("StatusSocket = %q, want %q", got, want)
	}
}
