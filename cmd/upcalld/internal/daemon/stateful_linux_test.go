package daemon

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/ovsdp/ovsdp/odp"
	"github.com/ovsdp/ovsdp/testenv"
)

// TestNamespaceCTFirewall is scenarioCTFirewall on the userspace
// datapath and its connection tracker (as root; TestIntegrationCTFirewall
// runs it on the kernel's, in the VM).
func TestNamespaceCTFirewall(t *testing.T) { scenarioCTFirewall(t, openUserdp) }

// scenarioCTFirewall: h1 pings h2 and opens a TCP connection to it that
// carries a transfer (the replies and ACKs are established traffic);
// h2's ping and connection to h1 fail, though h1 listens; the megaflows
// of the recirculated passes match ct_state.
func scenarioCTFirewall(t *testing.T, open func(t testing.TB) odp.Datapath) {
	testenv.RequireRoot(t)
	h1, v1 := newHost(t, hostIP(0))
	h2, v2 := newHost(t, hostIP(1))
	dp := open(t)
	rules := mustRules(t, ctFirewall(t, v1.PeerName))
	d, _ := startDaemon(t, Config{Datapath: dp, Ports: []string{v1.PeerName, v2.PeerName}, Rules: rules})

	if err := h1.Ping(hostIP(1), 10*time.Second); err != nil {
		t.Fatalf("ping from h1 to h2: %v", err)
	}
	tcpTransfer(t, h1, h2, hostIP(1), 256<<10)

	// h2 may not open to h1: ICMP echo and a TCP connection to a
	// listening h1 are both new from h2.
	if err := h2.Ping(hostIP(0), 1500*time.Millisecond); err == nil {
		t.Errorf("h2 pinged h1 through the firewall")
	}
	var l net.Listener
	if err := h1.Do(func() error {
		var err error
		l, err = net.Listen("tcp", hostIP(0)+":5002")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	accepted := make(chan struct{}, 1)
	go func() {
		if c, err := l.Accept(); err == nil {
			c.Close()
			accepted <- struct{}{}
		}
	}()
	if err := h2.Do(func() error {
		c, err := net.DialTimeout("tcp", hostIP(0)+":5002", 2*time.Second)
		if err == nil {
			c.Close()
			return fmt.Errorf("connected")
		}
		return nil
	}); err != nil {
		t.Errorf("h2 opened a TCP connection to h1 through the firewall")
	}
	select {
	case <-accepted:
		t.Errorf("h1 accepted a connection from h2")
	default:
	}
	// And h1 still may.
	tcpTransfer(t, h1, h2, hostIP(1), 64<<10)

	d.RevalidateNow(context.Background())
	flows := dumpFlows(t, dp)
	t.Logf("%d flows:\n%s", len(flows), strings.Join(flows, "\n"))
	var commit, est, drop bool
	for _, f := range flows {
		switch {
		case strings.Contains(f, "ct_state(+new+trk)") && strings.Contains(f, "actions:ct(commit),recirc("):
			commit = true
		case strings.Contains(f, "+est+trk)") && !strings.HasPrefix(f, "recirc_id(0),"):
			est = true
		case strings.Contains(f, "ct_state(-est+trk)") && strings.HasSuffix(f, "actions:drop"):
			drop = true
		}
	}
	if !commit || !est || !drop {
		t.Errorf("want a committing flow for new connections (%v), a flow for established ones (%v) and a drop flow for h2's new ones (%v)", commit, est, drop)
	}
}

// TestNamespaceGroups is scenarioGroups on the userspace datapath (as
// root; TestIntegrationGroups runs it on the kernel's, in the VM).
func TestNamespaceGroups(t *testing.T) { scenarioGroups(t, openUserdp) }

// scenarioGroups: three hosts; UDP from h1 to h2 goes through a group
// by its destination port: 7000 a fast_failover group (h2's port, else
// h3's), 7001 an all group (h2 and h3 both get it), 7002 a select group
// (connections spread over h2 and h3). When h2's link goes down (its
// carrier, read by the daemon at the next pass), the fast_failover
// traffic moves to h3; everything else is switched.
func scenarioGroups(t *testing.T, open func(t testing.TB) odp.Datapath) {
	testenv.RequireRoot(t)
	hosts, veths := newHosts(t, 3, hostIP)
	p2, p3 := veths[1].PeerName, veths[2].PeerName
	rules := mustRules(t, strings.NewReplacer("P2", p2, "P3", p3).Replace(`
group_id=1,type=fast_failover,bucket=watch_port:P2,actions=output:P2,bucket=watch_port:P3,actions=output:P3
group_id=2,type=all,bucket=output:P2,bucket=output:P3
group_id=3,type=select,bucket=output:P2,bucket=output:P3
priority=10,udp,tp_dst=7000,actions=group:1
priority=10,udp,tp_dst=7001,actions=group:2
priority=10,udp,tp_dst=7002,actions=group:3
priority=0,actions=normal
`))
	dp := open(t)
	d, _ := startDaemon(t, Config{Datapath: dp, Ports: []string{veths[0].PeerName, p2, p3}, Rules: rules})
	if err := hosts[0].Ping(hostIP(1), 10*time.Second); err != nil {
		t.Fatalf("ping h1 -> h2: %v", err)
	}
	caps := []*testenv.Capture{nil, hosts[1].Capture(t, veths[1].Name), hosts[2].Capture(t, veths[2].Name)}
	// send sends UDP datagrams from h1's source port sport to h2's port
	// dport.
	send := func(sport, dport int) {
		t.Helper()
		if err := hosts[0].Do(func() error {
			c, err := net.DialUDP("udp", &net.UDPAddr{IP: net.ParseIP(hostIP(0)), Port: sport}, &net.UDPAddr{IP: net.ParseIP(hostIP(1)), Port: dport})
			if err != nil {
				return err
			}
			defer c.Close()
			_, err = c.Write([]byte("group test"))
			return err
		}); err != nil {
			t.Fatalf("UDP from h1: %v", err)
		}
	}
	// got returns the source ports of the UDP datagrams to dport that
	// host i received within a while.
	got := func(i, dport int) map[int]bool {
		ports := map[int]bool{}
		for {
			f, err := caps[i].Next(300 * time.Millisecond)
			if err != nil {
				return ports
			}
			b := f.Data
			if f.Outgoing || len(b) < 42 || binary.BigEndian.Uint16(b[12:]) != 0x0800 || b[23] != 17 {
				continue
			}
			l4 := b[14+int(b[14]&0xf)*4:]
			if int(binary.BigEndian.Uint16(l4[2:])) == dport {
				ports[int(binary.BigEndian.Uint16(l4[0:]))] = true
			}
		}
	}
	check := func(what string, dport int, want2, want3 bool) {
		t.Helper()
		send(40000, dport)
		g2, g3 := got(1, dport), got(2, dport)
		if g2[40000] != want2 || g3[40000] != want3 {
			t.Errorf("%s: h2 received it: %v (want %v), h3: %v (want %v)", what, g2[40000], want2, g3[40000], want3)
		}
	}
	check("fast_failover, h2 up", 7000, true, false)
	check("all", 7001, true, true)

	// select: 30 connections, spread over both.
	for sport := 41000; sport < 41030; sport++ {
		send(sport, 7002)
	}
	g2, g3 := got(1, 7002), got(2, 7002)
	both := 0
	for p := range g2 {
		if g3[p] {
			both++
		}
	}
	if len(g2) < 3 || len(g3) < 3 || len(g2)+len(g3) != 30 || both != 0 {
		t.Errorf("select over 30 connections: h2 got %d, h3 got %d, both %d", len(g2), len(g3), both)
	}

	// h2's link goes down: its port loses its carrier.
	hosts[1].LinkDown(t, veths[1].Name)
	deadline := time.Now().Add(5 * time.Second)
	for carrierUp(p2) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if carrierUp(p2) {
		t.Fatalf("%s still has a carrier after its peer went down", p2)
	}
	if _, err := d.RevalidateNow(context.Background()); err != nil {
		t.Fatal(err)
	}
	check("fast_failover, h2 down", 7000, false, true)
	hosts[1].LinkUp(t, veths[1].Name)
	for !carrierUp(p2) && time.Now().Before(deadline.Add(5*time.Second)) {
		time.Sleep(10 * time.Millisecond)
	}
	d.RevalidateNow(context.Background())
	check("fast_failover, h2 up again", 7000, true, false)
	if t.Failed() {
		t.Logf("flows:\n%s", strings.Join(dumpFlows(t, dp), "\n"))
	}
}

// newHosts makes n hosts (newHost), host i with address ip(i).
func newHosts(t testing.TB, n int, ip func(i int) string) ([]*testenv.Netns, []*testenv.Veth) {
	var hosts []*testenv.Netns
	var veths []*testenv.Veth
	for i := range n {
		ns, v := newHost(t, ip(i))
		hosts, veths = append(hosts, ns), append(veths, v)
	}
	return hosts, veths
}
