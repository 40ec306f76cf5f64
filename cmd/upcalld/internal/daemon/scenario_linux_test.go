package daemon

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"net"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ovsdp/ovsdp/odp"
	"github.com/ovsdp/ovsdp/testenv"
)

// Scenarios on real veth pairs and namespaces, shared by the userspace
// datapath tests (namespace_linux_test.go, as root) and the kernel ones
// (integration_test.go, in the VM).

// topo is n hosts, each in a namespace with a veth to the datapath.
type topo struct {
	t     testing.TB
	hosts []*testenv.Netns
	veths []*testenv.Veth
	ports []uint32 // datapath port number of host i
	dp    odp.Datapath
	d     *Daemon
	stop  func()
}

func hostIP(i int) string { return fmt.Sprintf("10.9.0.%d", i+1) }

// newTopo builds n hosts on the datapath made by open, and runs a daemon
// with cfg on it.
func newTopo(t testing.TB, n int, open func(t testing.TB) odp.Datapath, cfg Config) *topo {
	return newTopoWith(t, n, open, cfg, nil)
}

// newTopoWith is newTopo where prep, if not nil, may change cfg knowing
// the datapath's port names (host i's is names[i]) before the daemon
// starts.
func newTopoWith(t testing.TB, n int, open func(t testing.TB) odp.Datapath, cfg Config, prep func(names []string, cfg *Config)) *topo {
	testenv.RequireRoot(t)
	tp := &topo{t: t}
	var names []string
	for i := 0; i < n; i++ {
		ns, v := newHost(t, hostIP(i))
		tp.hosts = append(tp.hosts, ns)
		tp.veths = append(tp.veths, v)
		names = append(names, v.PeerName)
	}
	if prep != nil {
		prep(names, &cfg)
	}
	tp.dp = open(t)
	cfg.Datapath = tp.dp
	cfg.Ports = names
	tp.d, tp.stop = startDaemon(t, cfg)
	ports, err := tp.dp.Ports(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		found := false
		for _, p := range ports {
			if p.Name == name {
				tp.ports = append(tp.ports, p.Number)
				found = true
			}
		}
		if !found {
			t.Fatalf("port %s not in the datapath: %+v", name, ports)
		}
	}
	return tp
}

// newHost makes a host: a namespace with address ip/24 on a veth whose
// other end (PeerName, in the test's namespace) is for a datapath port.
func newHost(t testing.TB, ip string) (*testenv.Netns, *testenv.Veth) {
	ns := testenv.NewNetns(t)
	// No IPv6: its router solicitations and MLD reports would add flows
	// unrelated to the test.
	ns.MustRun(t, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1")
	v := testenv.NewVeth(t, ns, nil)
	ns.AddAddr(t, v.Name, ip+"/24")
	if err := ns.Do(func() error { return disableOffloads(v.Name) }); err != nil {
		t.Fatal(err)
	}
	if err := disableOffloads(v.PeerName); err != nil {
		t.Fatal(err)
	}
	return ns, v
}

// startDaemon runs a daemon with cfg (a quiet logger and two handlers
// unless cfg says otherwise) until the test ends, and waits for its
// handlers. stop stops it earlier (once; later calls do nothing).
func startDaemon(t testing.TB, cfg Config) (d *Daemon, stop func()) {
	if cfg.Logger == nil {
		cfg.Logger = discardLogger()
		if testing.Verbose() {
			cfg.Logger = testLogger(t)
		}
	}
	if cfg.Handlers == 0 {
		cfg.Handlers = 2
	}
	d, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	halt := func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("daemon: %v", err)
			}
		case <-time.After(10 * time.Second):
			buf := make([]byte, 1<<20)
			t.Errorf("daemon did not stop within 10s; goroutines:\n%s", buf[:runtime.Stack(buf, true)])
		}
	}
	stopped := false
	stopOnce := func() {
		if !stopped {
			stopped = true
			halt()
		}
	}
	t.Cleanup(stopOnce)
	deadline := time.Now().Add(10 * time.Second)
	for d.Status().Handlers == 0 {
		select {
		case err := <-done:
			t.Fatalf("daemon exited: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("daemon did not start within 10s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	return d, stopOnce
}

func testLogger(t testing.TB) *slogLogger { return newTestLogger(t) }

// rawSender opens an AF_PACKET socket in host i's namespace, closed when
// the test ends, and its address for sendto out of the host's veth.
func (tp *topo) rawSender(i int) (int, *unix.SockaddrLinklayer) {
	return rawSenderOn(tp.t, tp.hosts[i], tp.veths[i].Name)
}

// rawSenderOn opens an AF_PACKET socket in ns that sends on ifname,
// closed when the test ends.
func rawSenderOn(tb testing.TB, ns *testenv.Netns, ifname string) (int, *unix.SockaddrLinklayer) {
	return packetSocketIn(tb, ns), &unix.SockaddrLinklayer{Ifindex: ns.Index(tb, ifname), Protocol: 0x0008, Halen: 6}
}

// packetSocketIn opens an unbound AF_PACKET socket in ns, closed when
// the test ends.
func packetSocketIn(tb testing.TB, ns *testenv.Netns) int {
	var fd int
	if err := ns.Do(func() error {
		var err error
		fd, err = unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
		return err
	}); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { unix.Close(fd) })
	return fd
}

// dumpFlows returns the datapath's flows as text lines.
func dumpFlows(t testing.TB, dp odp.Datapath) []string {
	t.Helper()
	var out []string
	err := dp.DumpFlows(context.Background(), odp.DumpOptions{}, func(f *odp.Flow) error {
		out = append(out, odp.FormatKey(f.Key, f.Mask, false)+" actions:"+odp.FormatActions(f.Actions))
		return nil
	})
	if err != nil {
		t.Fatalf("dump: %v", err)
	}
	return out
}

// scenarioLearning: every pair pings, a TCP transfer completes, and the
// megaflows are the expected few (in_port, eth src and dst only).
func scenarioLearning(t *testing.T, open func(t testing.TB) odp.Datapath) {
	tp := newTopo(t, 3, open, Config{})
	for i := range tp.hosts {
		for j := range tp.hosts {
			if i == j {
				continue
			}
			if err := tp.hosts[i].Ping(hostIP(j), 10*time.Second); err != nil {
				t.Fatalf("ping from host %d to %s: %v", i+1, hostIP(j), err)
			}
		}
	}
	tcpTransfer(t, tp.hosts[0], tp.hosts[1], hostIP(1), 4<<20)
	tp.d.RevalidateNow(context.Background())

	flows := dumpFlows(t, tp.dp)
	t.Logf("%d flows:\n%s", len(flows), strings.Join(flows, "\n"))
	macs := make([]string, len(tp.hosts))
	for i, h := range tp.hosts {
		macs[i] = h.MAC(t, tp.veths[i].Name).String()
	}
	re := regexp.MustCompile(`^recirc_id\(0\),in_port\((\d+)\),eth\(src=([0-9a-f:]{17}),dst=([0-9a-f:]{17})\) actions:([0-9,]+)$`)
	unicast := 0
	for _, f := range flows {
		m := re.FindStringSubmatch(f)
		if m == nil {
			t.Errorf("flow is not an in_port+eth megaflow: %s", f)
			continue
		}
		if m[3] == "ff:ff:ff:ff:ff:ff" {
			continue
		}
		// A unicast flow between two hosts outputs to the destination's
		// port only.
		si, di := indexOf(macs, m[2]), indexOf(macs, m[3])
		if si < 0 || di < 0 {
			t.Errorf("flow between unknown addresses: %s", f)
			continue
		}
		if want := fmt.Sprintf("%d", tp.ports[di]); m[4] != want || m[1] != fmt.Sprintf("%d", tp.ports[si]) {
			t.Errorf("flow %s: want in_port(%d) and actions:%s", f, tp.ports[si], want)
		}
		unicast++
	}
	// 3 hosts: 6 directed pairs, plus at most one broadcast flow (ARP)
	// per port.
	if unicast > 6 || len(flows) > 9 {
		t.Errorf("%d flows (%d unicast): want at most 6 unicast + 3 broadcast", len(flows), unicast)
	}
	if unicast < 2 {
		t.Errorf("only %d unicast flows after pings and a TCP transfer", unicast)
	}
}

func indexOf(ss []string, s string) int {
	for i, x := range ss {
		if x == s {
			return i
		}
	}
	return -1
}

// tcpTransfer sends n bytes from host a to b's address over TCP and
// checks they arrive intact.
func tcpTransfer(t *testing.T, a, b *testenv.Netns, bAddr string, n int) {
	t.Helper()
	var l net.Listener
	if err := b.Do(func() error {
		var err error
		l, err = net.Listen("tcp", bAddr+":5001")
		return err
	}); err != nil {
		t.Fatalf("listen in %s: %v", b, err)
	}
	defer l.Close()
	type result struct {
		sum [32]byte
		n   int64
		err error
	}
	got := make(chan result, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			got <- result{err: err}
			return
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(30 * time.Second))
		h := sha256.New()
		m, err := io.Copy(h, c)
		var r result
		copy(r.sum[:], h.Sum(nil))
		r.n, r.err = m, err
		got <- r
	}()
	data := make([]byte, n)
	for i := range data {
		data[i] = byte(i*7 + i>>8)
	}
	want := sha256.Sum256(data)
	var c net.Conn
	if err := a.Do(func() error {
		var err error
		c, err = net.DialTimeout("tcp", bAddr+":5001", 10*time.Second)
		return err
	}); err != nil {
		t.Fatalf("dial %s from %s: %v", bAddr, a, err)
	}
	c.SetDeadline(time.Now().Add(30 * time.Second))
	start := time.Now()
	if _, err := c.Write(data); err != nil {
		t.Fatalf("TCP write: %v", err)
	}
	c.Close()
	r := <-got
	if r.err != nil || r.n != int64(n) || r.sum != want {
		t.Fatalf("TCP transfer: received %d of %d bytes (err %v), digest match %v", r.n, n, r.err, r.sum == want)
	}
	t.Logf("TCP: %d bytes in %v", n, time.Since(start))
}

// scenarioRewrite: a rules file with dec_ttl and mod_nw_tos; the receiver
// sees TTL 63, TOS 0x20 and a correct IPv4 checksum.
func scenarioRewrite(t *testing.T, open func(t testing.TB) odp.Datapath) {
	// Port numbers are only known once the ports exist: start with
	// "normal", then reload the real rules.
	tp := newTopo(t, 2, open, Config{Rules: mustRules(t, "priority=0,actions=normal\n")})
	p0, p1 := tp.ports[0], tp.ports[1]
	rules := fmt.Sprintf("priority=100,udp,nw_dst=%s,actions=dec_ttl,mod_nw_tos:32,output:%d\npriority=50,udp,actions=drop\npriority=0,actions=normal\n", hostIP(1), p1)
	if err := tp.d.ReloadRules("rewrite.rules", strings.NewReader(rules)); err != nil {
		t.Fatal(err)
	}
	_ = p0
	mac1 := tp.hosts[1].MAC(t, tp.veths[1].Name).String()
	tp.hosts[0].AddNeigh(t, tp.veths[0].Name, hostIP(1), mac1)
	capt := tp.hosts[1].Capture(t, tp.veths[1].Name)
	// An unconnected socket: nothing listens on the port, and the port
	// unreachable that comes back would fail a connected socket's next
	// write (ECONNREFUSED) if it arrived before it.
	var c net.PacketConn
	if err := tp.hosts[0].Do(func() error {
		var err error
		c, err = net.ListenPacket("udp4", ":0")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	dst := &net.UDPAddr{IP: net.ParseIP(hostIP(1)), Port: 7777}
	for i := 0; i < 3; i++ { // the first is a miss, the others hit the flow
		if _, err := c.WriteTo([]byte(fmt.Sprintf("rewrite me %d", i)), dst); err != nil {
			t.Fatal(err)
		}
		f, err := capt.WaitFor(5*time.Second, func(f testenv.Frame) bool {
			d := f.Data
			return len(d) >= 42 && binary.BigEndian.Uint16(d[12:]) == 0x0800 && d[23] == 17 &&
				binary.BigEndian.Uint16(d[36:]) == 7777
		})
		if err != nil {
			t.Fatalf("packet %d: %v", i, err)
		}
		ip := f.Data[14:34]
		if ip[8] != 63 || ip[1] != 0x20 {
			t.Errorf("packet %d: TTL %d TOS %#x, want 63 and 0x20", i, ip[8], ip[1])
		}
		if cs := csum(ip); cs != 0 {
			t.Errorf("packet %d: IPv4 header checksum does not verify (%#04x)", i, cs)
		}
		if !bytes.Contains(f.Data, []byte(fmt.Sprintf("rewrite me %d", i))) {
			t.Errorf("packet %d: payload changed", i)
		}
	}
	flows := dumpFlows(t, tp.dp)
	found := false
	for _, f := range flows {
		if strings.Contains(f, "set(ipv4(tos=0x20/0xfc,ttl=63/0xff))") || (strings.Contains(f, "tos=0x20") && strings.Contains(f, "ttl=63")) {
			found = true
		}
	}
	if !found {
		t.Errorf("no flow with the masked set of TOS and TTL:\n%s", strings.Join(flows, "\n"))
	}
}

// scenarioOverload: a generator in host 0's namespace sends rate new
// flows per second for dur (raw frames with new source addresses and
// ports); the daemon keeps running, counts what it lost and shed, and as
// soon as the flood ends the hosts ping again. It logs the handler's
// rate and latency during the flood and the time to recover.
func scenarioOverload(t *testing.T, open func(t testing.TB) odp.Datapath, rate int, dur time.Duration) {
	// Info level even under -v: a debug line per learned address would
	// measure the log, not the daemon.
	logger := discardLogger()
	if testing.Verbose() {
		logger = slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	tp := newTopo(t, 2, open, Config{RevalidateInterval: 500 * time.Millisecond, Logger: logger})
	if err := tp.hosts[0].Ping(hostIP(1), 10*time.Second); err != nil {
		t.Fatalf("ping before the flood: %v", err)
	}
	fd, sa := tp.rawSender(0)
	dst := mac{0x02, 0xee, 0, 0, 0, 1} // nobody: flooded
	copy(sa.Addr[:], dst[:])
	const tick = 10 * time.Millisecond
	perTick := rate * int(tick) / int(time.Second)
	total := rate * int(dur/time.Second)
	frame := udpFrame(mac{}, dst, ip4(10, 9, 1, 1), ip4(10, 9, 1, 2), 0, 9, 0)
	sent, sendErrs := 0, 0
	tp.d.Latency().Reset()
	before := tp.d.Status()
	start := time.Now()
	next := start
	for sent < total {
		for i := 0; i < perTick && sent < total; i++ {
			src := mac{0x02, 0x77}
			binary.BigEndian.PutUint32(src[2:], uint32(sent+1))
			copy(frame[6:], src[:])
			binary.BigEndian.PutUint16(frame[34:], uint16(sent))
			if err := unix.Sendto(fd, frame, 0, sa); err != nil {
				sendErrs++
			}
			sent++
		}
		next = next.Add(tick)
		time.Sleep(time.Until(next))
	}
	elapsed := time.Since(start)
	end := time.Now()
	tp.d.pollDatapath(context.Background())
	st := tp.d.Status()
	t.Logf("flood: %d new flows in %v (%.0f/s, %d send errors); during it: handled %d (%.0f/s), shed %d, lost %d, latency p50 %s p99 %s; flows %d (limit %d), MAC entries %d",
		sent, elapsed.Round(time.Millisecond), float64(sent)/elapsed.Seconds(), sendErrs,
		st.Handled-before.Handled, float64(st.Handled-before.Handled)/elapsed.Seconds(), st.Shed-before.Shed, st.Lost-before.Lost,
		st.LatencyP50, st.LatencyP99, st.Flows, st.FlowLimit, st.MACs)
	if st.Handled-before.Handled+st.Shed-before.Shed+st.Lost-before.Lost == 0 {
		t.Fatalf("the flood reached neither the handlers nor the shed and lost counters")
	}
	// Recovery: both directions ping as soon as the flood ends.
	for i, j := range [][2]int{{0, 1}, {1, 0}} {
		if err := tp.hosts[j[0]].Ping(hostIP(j[1]), 10*time.Second); err != nil {
			st := tp.d.Status()
			t.Fatalf("ping %d after the flood (%v after its end): %v; handled %d, shed %d, lost %d, flows %d",
				i, time.Since(end).Round(time.Millisecond), err, st.Handled, st.Shed, st.Lost, st.Flows)
		}
	}
	recovered := time.Since(end)
	tp.d.RevalidateNow(context.Background())
	st = tp.d.Status()
	t.Logf("recovered: both pings answered %v after the flood ended; in all: handled %d, shed %d, lost %d, flows %d (limit %d), MAC entries %d",
		recovered.Round(time.Millisecond), st.Handled, st.Shed, st.Lost, st.Flows, st.FlowLimit, st.MACs)
	if st.Flows > st.MaxFlowLimit {
		t.Errorf("%d flows above the limit %d", st.Flows, st.MaxFlowLimit)
	}
}
