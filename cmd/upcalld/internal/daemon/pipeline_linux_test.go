package daemon

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ovsdp/ovsdp/odp"
	"github.com/ovsdp/ovsdp/testenv"
)

// TestNamespaceContribPipeline is scenarioContribPipeline on the
// userspace datapath (as root; TestIntegrationContribPipeline runs it on
// the kernel's, in the VM).
func TestNamespaceContribPipeline(t *testing.T) { scenarioContribPipeline(t, openUserdp) }

// contribPipeline is contrib/pipeline/pipeline.rules with its port names
// replaced by names.
func contribPipeline(t testing.TB, client, srv1, srv2 string) string {
	b, err := os.ReadFile("../../../../contrib/pipeline/pipeline.rules")
	if err != nil {
		t.Fatal(err)
	}
	return strings.NewReplacer("pl-client", client, "pl-srv1", srv1, "pl-srv2", srv2).Replace(string(b))
}

// scenarioContribPipeline runs contrib/pipeline: a client (10.0.0.1) and
// two servers (10.0.0.2 and .3) that listen on port 8080 and answer with
// their name. The client's connections to the service 10.0.0.100:80 are
// spread over both servers and answered; the client cannot reach a server
// directly, nor a server the client; when a server's link goes down, new
// connections all go to the other.
func scenarioContribPipeline(t *testing.T, open func(t testing.TB) odp.Datapath) {
	testenv.RequireRoot(t)
	hosts, veths := newHosts(t, 3, func(i int) string { return fmt.Sprintf("10.0.0.%d", i+1) })
	for i, ns := range hosts {
		ns.SetMAC(t, veths[i].Name, fmt.Sprintf("02:00:00:00:00:%02x", i+1))
	}
	// No ARP in this pipeline: the neighbours are static.
	hosts[0].AddNeigh(t, veths[0].Name, "10.0.0.100", "02:00:00:00:01:00")
	for i := 1; i < 3; i++ {
		hosts[i].AddNeigh(t, veths[i].Name, "10.0.0.1", "02:00:00:00:00:01")
	}
	hosts[0].AddNeigh(t, veths[0].Name, "10.0.0.2", "02:00:00:00:00:02")
	hosts[1].AddNeigh(t, veths[1].Name, "10.0.0.3", "02:00:00:00:00:03")
	names := []string{veths[0].PeerName, veths[1].PeerName, veths[2].PeerName}
	rules := mustRules(t, contribPipeline(t, names[0], names[1], names[2]))
	dp := open(t)
	d, _ := startDaemon(t, Config{Datapath: dp, Ports: names, Rules: rules})

	// The servers answer every connection with their name.
	for i := 1; i < 3; i++ {
		var l net.Listener
		if err := hosts[i].Do(func() error {
			var err error
			l, err = net.Listen("tcp", fmt.Sprintf("10.0.0.%d:8080", i+1))
			return err
		}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		name := fmt.Sprintf("srv%d", i)
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				c.Write([]byte(name))
				c.Close()
			}
		}()
	}
	// ask opens a connection from host i to addr and returns the answer.
	ask := func(i int, addr string) (string, error) {
		var out string
		err := hosts[i].Do(func() error {
			c, err := net.DialTimeout("tcp", addr, 2*time.Second)
			if err != nil {
				return err
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(5 * time.Second))
			b, err := io.ReadAll(c)
			out = string(b)
			return err
		})
		return out, err
	}
	got := map[string]int{}
	for range 20 {
		ans, err := ask(0, "10.0.0.100:80")
		if err != nil {
			t.Fatalf("client to the service: %v", err)
		}
		got[ans]++
	}
	if got["srv1"] == 0 || got["srv2"] == 0 || got["srv1"]+got["srv2"] != 20 {
		t.Errorf("20 connections to the service: answers %v, want both servers", got)
	}
	// The ACL: the client does not reach a server but through the
	// service, and a server opens nothing.
	if _, err := ask(0, "10.0.0.2:8080"); err == nil {
		t.Errorf("the client reached srv1 directly")
	}
	if _, err := ask(1, "10.0.0.1:22"); err == nil {
		t.Errorf("srv1 opened a connection to the client")
	}
	if _, err := ask(1, "10.0.0.3:8080"); err == nil {
		t.Errorf("srv1 opened a connection to srv2")
	}

	// srv1's link goes down: after the next pass, every new connection
	// goes to srv2.
	hosts[1].LinkDown(t, veths[1].Name)
	deadline := time.Now().Add(5 * time.Second)
	for carrierUp(names[1]) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	d.RevalidateNow(context.Background())
	for range 6 {
		ans, err := ask(0, "10.0.0.100:80")
		if err != nil || ans != "srv2" {
			t.Errorf("with srv1 down: answer %q, error %v; want srv2", ans, err)
		}
	}
	d.RevalidateNow(context.Background())
	flows := dumpFlows(t, dp)
	t.Logf("%d flows:\n%s", len(flows), strings.Join(flows, "\n"))
}
