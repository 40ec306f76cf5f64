package ctl_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ovsdp/ovsdp/odp"
	"github.com/ovsdp/ovsdp/userdp"
	"github.com/ovsdp/ovsdp/userdp/ctl"
)

// panicky is a datapath whose Ports panics while armed: the test's way
// to force a panic inside a connection's request (no request a client
// can send makes the real datapath panic).
type panicky struct {
	odp.Datapath
	armed atomic.Bool
}

func (p *panicky) Ports(ctx context.Context) ([]odp.Port, error) {
	if p.armed.CompareAndSwap(true, false) {
		panic("forced by the test")
	}
	return p.Datapath.Ports(ctx)
}

// syncBuffer is a bytes.Buffer safe for the server's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *syncBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *syncBuffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// A panic while serving a request is contained to its connection: it is
// logged with its stack and counted, that connection is closed, and the
// server and its datapath go on serving other connections (and new
// ones). Before, the panic ended the whole process.
func TestConnectionPanicContained(t *testing.T) {
	t.Setenv("OVSDP_RUNDIR", t.TempDir())
	udp, err := userdp.New("ctlpanic", userdp.WithoutLocalPort())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { udp.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := udp.AddPort(ctx, odp.PortSpec{Name: "p1", Type: userdp.PortMemory}); err != nil {
		t.Fatal(err)
	}
	dp := &panicky{Datapath: udp}
	srv, err := ctl.Listen(ctl.SocketPath("ctlpanic"), dp)
	if err != nil {
		t.Fatal(err)
	}
	var logs syncBuffer
	srv.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	go srv.Serve(ctx)
	t.Cleanup(func() { srv.Close() })

	other, err := ctl.Dial("ctlpanic")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	victim, err := ctl.Dial("ctlpanic")
	if err != nil {
		t.Fatal(err)
	}
	defer victim.Close()
	dp.armed.Store(true)
	if _, err := victim.Ports(ctx); err == nil {
		t.Fatal("the request that panicked got an answer")
	}
	// The connection closes while the panic unwinds; the report follows.
	deadline := time.Now().Add(5 * time.Second)
	for (srv.Panics() == 0 || !strings.Contains(logs.String(), "stack=")) && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if got := srv.Panics(); got != 1 {
		t.Errorf("Panics = %d, want 1", got)
	}
	out := logs.String()
	if !strings.Contains(out, "control connection panicked") || !strings.Contains(out, "forced by the test") ||
		!strings.Contains(out, "goroutine") || !strings.Contains(out, "panicky") {
		t.Errorf("log %q: want the panic and its stack", out)
	}
	// The other connection, and a new one, still work, and so does the
	// datapath.
	if ports, err := other.Ports(ctx); err != nil || len(ports) != 1 {
		t.Errorf("another connection after the panic: %v, %v", ports, err)
	}
	again, err := ctl.Dial("ctlpanic")
	if err != nil {
		t.Fatalf("dialing after the panic: %v", err)
	}
	defer again.Close()
	key, err := odp.ParseKey("in_port(1),eth(),eth_type(0x0800),ipv4(proto=17,frag=no),udp()")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := again.PutFlow(ctx, &odp.Flow{UFID: odp.UFID{9}, Key: key}, odp.PutCreate); err != nil {
		t.Errorf("a put after the panic: %v", err)
	}
	if ports, err := again.Ports(ctx); err != nil || len(ports) != 1 {
		t.Errorf("a new connection after the panic: %v, %v", ports, err)
	}
}
