package daemon

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ovsdp/ovsdp/odp"
	"github.com/ovsdp/ovsdp/policy"
	"github.com/ovsdp/ovsdp/userdp"
)

var dpSeq atomic.Int32

// harness is a daemon driving a userspace datapath with in-memory ports
// 1..n: frames written to in[i] enter port i, frames output to port i
// arrive on out[i].
type harness struct {
	t      testing.TB
	dp     *userdp.Datapath
	d      *Daemon
	in     map[uint32]*userdp.MemPort
	out    map[uint32]chan []byte
	cancel context.CancelFunc
	done   chan error
	reg    *prometheus.Registry
}

func newHarness(t testing.TB, nports int, cfg Config, dpOpts ...userdp.Option) *harness {
	t.Helper()
	name := fmt.Sprintf("upt%d", dpSeq.Add(1))
	dp, err := userdp.New(name, append([]userdp.Option{userdp.WithoutLocalPort()}, dpOpts...)...)
	if err != nil {
		t.Fatalf("userdp.New: %v", err)
	}
	t.Cleanup(func() { dp.Close() })
	h := &harness{t: t, dp: dp, in: map[uint32]*userdp.MemPort{}, out: map[uint32]chan []byte{}}
	for i := 1; i <= nports; i++ {
		pname := fmt.Sprintf("m%d", i)
		p, err := dp.AddPort(context.Background(), odp.PortSpec{Name: pname, Type: userdp.PortMemory, Options: map[string]string{"queue": "8192"}})
		if err != nil {
			t.Fatalf("AddPort %s: %v", pname, err)
		}
		peer := dp.MemoryPeer(pname)
		h.in[p.Number] = peer
		ch := make(chan []byte, 65536)
		h.out[p.Number] = ch
		go func() {
			bufs := [][]byte{make([]byte, 2048)}
			sizes := []int{0}
			for {
				n, err := peer.ReadBatch(bufs, sizes, 0)
				if err != nil {
					return
				}
				for i := 0; i < n; i++ {
					select {
					case ch <- append([]byte(nil), bufs[i][:sizes[i]]...):
					default: // a test that does not read: drop
					}
				}
			}
		}()
	}
	h.reg = prometheus.NewRegistry()
	cfg.Datapath = dp
	cfg.Registry = h.reg
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
		if testing.Verbose() {
			cfg.Logger = slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
		}
	}
	if cfg.Handlers == 0 {
		cfg.Handlers = 2
	}
	if cfg.RevalidateInterval == 0 {
		// Tests run passes themselves (RevalidateNow); policy changes
		// still wake the revalidator.
		cfg.RevalidateInterval = time.Hour
	}
	d, err := New(cfg)
	if err != nil {
		t.Fatalf("daemon.New: %v", err)
	}
	h.d = d
	return h
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(b), "\n"))
	return len(b), nil
}

// start runs the daemon until the test ends, and waits until its
// handlers are registered.
func (h *harness) start() {
	h.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	h.done = make(chan error, 1)
	go func() { h.done <- h.d.Run(ctx) }()
	h.t.Cleanup(h.stop)
	deadline := time.Now().Add(5 * time.Second)
	for h.d.Status().Handlers == 0 {
		if time.Now().After(deadline) {
			h.t.Fatalf("daemon did not start its handlers within 5s")
		}
		time.Sleep(time.Millisecond)
	}
}

// stop stops the daemon (the datapath and its flows stay).
func (h *harness) stop() {
	if h.cancel == nil {
		return
	}
	h.cancel()
	h.cancel = nil
	select {
	case err := <-h.done:
		if err != nil {
			h.t.Errorf("daemon.Run: %v", err)
		}
	case <-time.After(10 * time.Second):
		h.t.Errorf("daemon did not stop within 10s")
	}
}

// send injects frame on port.
func (h *harness) send(port uint32, frame []byte) {
	h.t.Helper()
	if n, err := h.in[port].WriteBatch([][]byte{frame}); n != 1 {
		h.t.Fatalf("injecting a frame on port %d: %v", port, err)
	}
}

// expect waits for a frame equal to want on port.
func (h *harness) expect(port uint32, want []byte) {
	h.t.Helper()
	timeout := time.After(5 * time.Second)
	for {
		select {
		case got := <-h.out[port]:
			if bytes.Equal(got, want) {
				return
			}
		case <-timeout:
			h.t.Fatalf("port %d: the expected frame did not arrive within 5s", port)
		}
	}
}

// expectNone checks that nothing arrives on port for a while.
func (h *harness) expectNone(port uint32, d time.Duration) {
	h.t.Helper()
	select {
	case got := <-h.out[port]:
		h.t.Fatalf("port %d: unexpected frame of %d bytes", port, len(got))
	case <-time.After(d):
	}
}

// drain empties every port's output.
func (h *harness) drain() {
	for _, ch := range h.out {
		for len(ch) > 0 {
			<-ch
		}
	}
}

// flows dumps the datapath's flows as "key actions:ACTS" lines (non
// verbose key text, UFIDs aside), sorted.
func (h *harness) flows() []string {
	h.t.Helper()
	var out []string
	err := h.dp.DumpFlows(context.Background(), odp.DumpOptions{}, func(f *odp.Flow) error {
		out = append(out, odp.FormatKey(f.Key, f.Mask, false)+" actions:"+odp.FormatActions(f.Actions))
		return nil
	})
	if err != nil {
		h.t.Fatalf("dump: %v", err)
	}
	sort.Strings(out)
	return out
}

// waitFlows waits until the datapath has n flows.
func (h *harness) waitFlows(n int) []string {
	h.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		fs := h.flows()
		if len(fs) == n {
			return fs
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("want %d flows, have %d:\n%s", n, len(fs), strings.Join(fs, "\n"))
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// revalidate runs a pass.
func (h *harness) revalidate() PassResult {
	h.t.Helper()
	r, err := h.d.RevalidateNow(context.Background())
	if err != nil {
		h.t.Fatalf("RevalidateNow: %v", err)
	}
	return r
}

// counter returns the value of a counter metric (labels as name=value).
func (h *harness) counter(name string, labels ...string) float64 {
	h.t.Helper()
	mfs, err := h.reg.Gather()
	if err != nil {
		h.t.Fatalf("gather: %v", err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			for _, l := range labels {
				k, v, _ := strings.Cut(l, "=")
				found := false
				for _, lp := range m.GetLabel() {
					if lp.GetName() == k && lp.GetValue() == v {
						found = true
					}
				}
				if !found {
					continue next
				}
			}
			if c := m.GetCounter(); c != nil {
				return c.GetValue()
			}
			if g := m.GetGauge(); g != nil {
				return g.GetValue()
			}
		}
	}
	h.t.Fatalf("no metric %s %v", name, labels)
	return 0
}

func mustRules(t testing.TB, text string) *policy.RuleSet {
	t.Helper()
	rs, err := policy.ParseRules("test.rules", strings.NewReader(text))
	if err != nil {
		t.Fatalf("rules: %v", err)
	}
	return rs
}

// Frames.

type mac [6]byte

func macN(n byte) mac { return mac{0x02, 0, 0, 0, 0, n} }

var bcast = mac{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}

func csum(b []byte) uint16 {
	var s uint32
	for i := 0; i+1 < len(b); i += 2 {
		s += uint32(binary.BigEndian.Uint16(b[i:]))
	}
	if len(b)%2 == 1 {
		s += uint32(b[len(b)-1]) << 8
	}
	for s>>16 != 0 {
		s = s&0xffff + s>>16
	}
	return ^uint16(s)
}

// udpFrame builds an Ethernet/IPv4/UDP frame (TTL 64, TOS tos) with a
// valid IPv4 header checksum and no UDP checksum.
func udpFrame(src, dst mac, sip, dip [4]byte, sport, dport uint16, tos uint8) []byte {
	payload := []byte("upcalld test payload")
	b := make([]byte, 14+20+8+len(payload))
	copy(b[0:], dst[:])
	copy(b[6:], src[:])
	binary.BigEndian.PutUint16(b[12:], 0x0800)
	ip := b[14:34]
	ip[0] = 0x45
	ip[1] = tos
	binary.BigEndian.PutUint16(ip[2:], uint16(20+8+len(payload)))
	ip[8] = 64
	ip[9] = 17
	copy(ip[12:], sip[:])
	copy(ip[16:], dip[:])
	binary.BigEndian.PutUint16(ip[10:], csum(ip))
	udp := b[34:]
	binary.BigEndian.PutUint16(udp[0:], sport)
	binary.BigEndian.PutUint16(udp[2:], dport)
	binary.BigEndian.PutUint16(udp[4:], uint16(8+len(payload)))
	copy(udp[8:], payload)
	return b
}

func ip4(a, b, c, d byte) [4]byte { return [4]byte{a, b, c, d} }

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

type slogLogger = slog.Logger

func newTestLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// portTx is how many frames the datapath output on port: sent, or
// dropped by a full in-memory queue.
func (h *harness) portTx(port uint32) uint64 {
	ps, err := h.dp.Ports(context.Background())
	if err != nil {
		h.t.Fatal(err)
	}
	for _, p := range ps {
		if p.Number == port {
			// Frames the in-memory port dropped because its reader fell
			// behind (its queue full) were output all the same.
			return p.Stats.TxPackets + p.Stats.TxDropped
		}
	}
	h.t.Fatalf("no port %d", port)
	return 0
}
