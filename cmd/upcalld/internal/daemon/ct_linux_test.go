package daemon

import (
	"context"
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

// ctFirewallNames is the stateful firewall of the demo with port names:
// h1 (port P1) may open connections to h2 (port P2), h2 may not open any
// to h1, and the replies flow; ARP is switched.
func ctFirewallNames(p1, p2 string) string {
	return strings.NewReplacer("P1", p1, "P2", p2).Replace(`
table=0,priority=10,ip,actions=ct(table=1)
table=0,priority=0,actions=normal
table=1,priority=10,ct_state=+trk+new,ip,in_port=P1,actions=ct(commit,table=2)
table=1,priority=10,ct_state=+trk+est,ip,actions=resubmit(,2)
table=1,priority=0,actions=drop
table=2,actions=normal
`)
}

// scenarioCTFirewall: h1 pings h2 and opens a TCP connection to it that
// carries a transfer (the replies and ACKs are established traffic);
// h2's ping and connection to h1 fail, though h1 listens; the megaflows
// of the recirculated passes match ct_state.
func scenarioCTFirewall(t *testing.T, open func(t testing.TB) odp.Datapath) {
	testenv.RequireRoot(t)
	h1, v1 := newHost(t, hostIP(0))
	h2, v2 := newHost(t, hostIP(1))
	dp := open(t)
	rules := mustRules(t, ctFirewallNames(v1.PeerName, v2.PeerName))
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
