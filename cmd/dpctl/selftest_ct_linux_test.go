package main

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ovsdp/ovsdp/testenv"
)

// The conntrack tests of the kernel's openvswitch selftests
// (tools/testing/selftests/net/openvswitch/openvswitch.sh:
// test_ct_connect_v4, test_nat_connect_v4 and test_nat_related_v4),
// performed with this dpctl: add-dp, add-if and add-flow with the
// selftests' flow strings, the same commands on system@ (in the VM,
// TestIntegrationSelftestsCT) and on netdev@ (on the host as root,
// TestSelftestsCTNetdev), and the selftests' expectations checked.
//
// One departure: the selftests' "other direction (should fail)" step of
// ct_connect_v4 and nat_connect_v4 runs "nc -zv 172.31.110.10 4443" in
// the client's own namespace, to the client's own address, which never
// crosses the datapath (it fails there only when the listener it spawned
// just before is not yet up). The step meant is the server opening a
// connection to the client, which the flows refuse; that is what runs
// here.

// selftest is one of the selftests: its flows and the
// traffic that checks it, given the datapath and the namespaces.
type selftest struct {
	name string
	// flows are the selftest's flows, one "KEY ACTIONS" a line.
	flows string
	// setup adds the routes the selftest adds.
	setup func(t *testing.T, client, server *testenv.Netns)
	check func(t *testing.T, dp string, client, server *testenv.Netns)
}

// selftestARP are the selftests' ARP flows.
const selftestARP = `
		in_port(1),eth(),eth_type(0x0806),arp() 2
		in_port(2),eth(),eth_type(0x0806),arp() 1`

var selftestsCT = []selftest{{
	name: "ct_connect_v4",
	flows: selftestARP + `
		ct_state(-trk),eth(),eth_type(0x0800),ipv4() ct(commit),recirc(0x1)
		recirc_id(0x1),ct_state(+trk+new),in_port(1),eth(),eth_type(0x0800),ipv4(src=172.31.110.10) 2
		recirc_id(0x1),ct_state(+trk+est),in_port(1),eth(),eth_type(0x0800),ipv4(src=172.31.110.10) 2
		recirc_id(0x1),ct_state(+trk+est),in_port(2),eth(),eth_type(0x0800),ipv4(dst=172.31.110.10) 1
		recirc_id(0x1),ct_state(+trk+inv),eth(),eth_type(0x0800),ipv4() drop`,
	check: selftestConnects("172.31.110.20"),
}, {
	name: "nat_connect_v4",
	flows: selftestARP + `
		ct_state(-trk),in_port(1),eth(),eth_type(0x0800),ipv4(dst=192.168.0.20) ct(commit,nat(dst=172.31.110.20)),recirc(0x1)
		ct_state(-trk),in_port(2),eth(),eth_type(0x0800),ipv4() ct(commit,nat),recirc(0x2)
		recirc_id(0x1),ct_state(+trk-inv),in_port(1),eth(),eth_type(0x0800),ipv4() 2
		recirc_id(0x2),ct_state(+trk-inv),in_port(2),eth(),eth_type(0x0800),ipv4() 1`,
	setup: func(t *testing.T, client, server *testenv.Netns) {
		client.AddRoute(t, "default", "172.31.110.20", "")
	},
	check: selftestConnects("192.168.0.20"),
}, {
	name: "nat_related_v4",
	flows: selftestARP + `
		ct_state(-trk),in_port(1),eth(),eth_type(0x0800),ipv4(dst=172.31.110.20) ct(commit,nat(src=192.168.0.20)),recirc(0x1)
		recirc_id(0x1),ct_state(+trk-inv),in_port(1),eth(),eth_type(0x0800),ipv4() 2
		ct_state(-trk),in_port(2),eth(),eth_type(0x0800),ipv4() ct(commit,nat),recirc(0x2)
		recirc_id(0x2),ct_state(+rel+trk),in_port(2),eth(),eth_type(0x0800),ipv4(src=172.31.110.20,dst=172.31.110.10,proto=1),icmp() 1
		recirc_id(0x2),ct_state(+rel+trk),in_port(2),eth(),eth_type(0x0800),ipv4(dst=192.168.0.20,proto=1),icmp() drop`,
	setup: func(t *testing.T, client, server *testenv.Netns) {
		server.AddRoute(t, "192.168.0.20/32", "172.31.110.10", "")
	},
	check: func(t *testing.T, dp string, client, server *testenv.Netns) {
		// "echo a | nc -u -w 1 172.31.110.20 10000": the server answers
		// port unreachable, which must come back to the client with its
		// destination un-NATed. On a connected socket that is
		// ECONNREFUSED (the selftest only looks at the flows).
		var c net.Conn
		if err := client.Do(func() (err error) { c, err = net.Dial("udp4", "172.31.110.20:10000"); return err }); err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Write([]byte("a\n")); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Read(make([]byte, 16)); !errors.Is(err, syscall.ECONNREFUSED) {
			t.Errorf("UDP to a closed port of the server through SNAT: read %v, want ECONNREFUSED (the un-NATed port unreachable)", err)
		}
		flows := selftestDpctl(t, "dump-flows", dp)
		drop, rel := "", ""
		for _, l := range strings.Split(flows, "\n") {
			if strings.Contains(l, "+rel") && strings.HasSuffix(l, "actions:drop") {
				drop = l
			}
			if strings.Contains(l, "+rel") && strings.HasSuffix(l, "actions:1") {
				rel = l
			}
		}
		// The selftest's check: no related packet kept the NAT address.
		if !strings.Contains(drop, "packets:0,") {
			t.Errorf("the drop flow for related ICMP with the NAT address matched packets (or is missing): %q\n%s", drop, flows)
		}
		if rel == "" || strings.Contains(rel, "packets:0,") {
			t.Errorf("no related ICMP reached the client's flow: %q\n%s", rel, flows)
		}
	},
}}

// selftestConnects is the check of ct_connect_v4 and nat_connect_v4:
// "ping -c 3" from the client to addr, a TCP connection from the client
// to addr:4443 that opens, and one from the server to the client that
// the flows refuse.
func selftestConnects(addr string) func(t *testing.T, dp string, client, server *testenv.Netns) {
	return func(t *testing.T, dp string, client, server *testenv.Netns) {
		selftestPing(t, client, addr)
		selftestConnect(t, client, server, addr+":4443", true)
		selftestConnect(t, server, client, "172.31.110.10:4443", false)
	}
}

// selftestDpctl runs this test binary as dpctl.
func selftestDpctl(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "DPCTL_TEST_MAIN=1")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("dpctl %s: %v: %s", strings.Join(args, " "), err, errb.String())
	}
	return out.String()
}

// selftestPing is "ping -c 3" from ns: every echo must be answered.
func selftestPing(t *testing.T, ns *testenv.Netns, dst string) {
	t.Helper()
	if out, err := ns.Run("ping", "-c", "3", "-i", "0.2", "-W", "5", dst); err != nil {
		t.Errorf("ping -c 3 %s: %v\n%s", dst, err, out)
	}
}

// selftestConnect opens a TCP connection from ns to addr, where peer
// listens ("nc -lvnp 4443" and "nc -i 1 -zv ADDR 4443"); want says
// whether it must open.
func selftestConnect(t *testing.T, ns, peer *testenv.Netns, addr string, want bool) {
	t.Helper()
	_, port, _ := net.SplitHostPort(addr)
	var ln net.Listener
	if err := peer.Do(func() (err error) { ln, err = net.Listen("tcp4", ":"+port); return err }); err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		if c, err := ln.Accept(); err == nil {
			c.Close()
		}
	}()
	timeout := 5 * time.Second
	if !want {
		timeout = 2 * time.Second // a SYN and its first retransmission
	}
	var c net.Conn
	err := ns.Do(func() (err error) { c, err = net.DialTimeout("tcp4", addr, timeout); return err })
	switch {
	case err == nil && !want:
		c.Close()
		t.Errorf("TCP to %s opened, want refused by the flows", addr)
	case err == nil:
		c.Close()
	case want:
		t.Errorf("TCP to %s: %v, want it to open", addr, err)
	}
}

// runSelftest performs s on a new datapath of type typ ("system",
// "netdev") between two new namespaces, with dpctl as the selftest
// uses ovs-dpctl.py.
func runSelftest(t *testing.T, typ string, s selftest) {
	dp := fmt.Sprintf("%s@st%06d", typ, rand.IntN(1000000))
	client, server := testenv.NewNetns(t), testenv.NewNetns(t)
	c, sv := testenv.NewVeth(t, nil, client), testenv.NewVeth(t, nil, server)
	client.AddAddr(t, c.PeerName, "172.31.110.10/24")
	server.AddAddr(t, sv.PeerName, "172.31.110.20/24")
	if s.setup != nil {
		s.setup(t, client, server)
	}
	selftestDpctl(t, "add-dp", dp)
	t.Cleanup(func() {
		cmd := exec.Command(os.Args[0], "del-dp", dp)
		cmd.Env = append(os.Environ(), "DPCTL_TEST_MAIN=1")
		cmd.Run()
	})
	selftestDpctl(t, "add-if", dp, c.Name)
	selftestDpctl(t, "add-if", dp, sv.Name)
	// The kernel's table outlives datapaths: start from an empty one.
	selftestDpctl(t, "flush-conntrack", dp)
	for _, l := range strings.Split(strings.TrimSpace(s.flows), "\n") {
		f := strings.Fields(l)
		if len(f) != 2 {
			t.Fatalf("%s: flow line %q is not KEY ACTIONS", s.name, l)
		}
		selftestDpctl(t, "add-flow", dp, f[0], f[1])
	}
	s.check(t, dp, client, server)
	if t.Failed() {
		t.Logf("%s flows:\n%s\nconntrack:\n%s", dp, selftestDpctl(t, "dump-flows", dp), selftestDpctl(t, "dump-conntrack", dp))
	}
}

// TestSelftestsCTNetdev performs the kernel selftests' conntrack tests on
// netdev@ datapaths that dpctl add-dp starts in upcalld (see
// runSelftest); TestIntegrationSelftestsCT performs them on system@.
func TestSelftestsCTNetdev(t *testing.T) {
	testenv.RequireRoot(t)
	dir, err := os.MkdirTemp("", "dpctl") // short: socket paths are limited to 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	t.Setenv("OVSDP_RUNDIR", dir)
	buildUpcalld(t)
	for _, s := range selftestsCT {
		t.Run(s.name, func(t *testing.T) { runSelftest(t, "netdev", s) })
	}
}
