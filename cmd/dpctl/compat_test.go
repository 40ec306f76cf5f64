package main

import (
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ovsdp/ovsdp/genl"
	"github.com/ovsdp/ovsdp/internal/buildinfo"
	"github.com/ovsdp/ovsdp/userdp/ctl"
)

// TestGoldenCompat covers ovs-dpctl's remaining options and commands:
// --read-only, -t, -o, -V, help, list-commands, normalize-actions,
// parse-actions with arguments, offload-stats-show, dump-flows type= and
// pmd=, del-if -d, add-dp -V.
func TestGoldenCompat(t *testing.T) {
	h := newHarness(t)
	h.hostDP("br0")
	h.addMemPorts("br0", "p1", "p2", "p3")
	h.mustRun("", "add-flow", "in_port(1),eth(),eth_type(0x0800),ipv4(dst=10.0.0.1,frag=no)", "2")

	// --read-only refuses what changes a datapath, and only that.
	for _, args := range [][]string{
		{"add-dp", "netdev@x"}, {"del-dp", "netdev@br0"}, {"add-if", "netdev@br0", "p4,type=memory"},
		{"del-if", "netdev@br0", "p1"}, {"set-if", "netdev@br0", "p1"},
		{"add-flow", "in_port(1),eth(),eth_type(0x0806),arp()", "2"}, {"mod-flow", "in_port(1)", "2"},
		{"del-flow", "in_port(1)"}, {"add-flows", "-"}, {"mod-flows", "-"}, {"del-flows"},
		{"cache-set-size", "netdev@br0", "masks-cache", "256"},
		{"add-meter", "1", "rate=1"}, {"del-meter", "1"}, {"ct-set-limits", "default=1"}, {"ct-del-limits", "zone=1"},
	} {
		h.mustFail("command does not work in read only mode", "", append([]string{"--read-only"}, args...)...)
	}
	h.mustRun("", "--read-only", "dump-flows")
	h.mustRun("", "dump-flows", "--read-only")

	// -t: a positive integer, as ovs-dpctl.
	h.mustFail("value 0 on -t or --timeout is invalid", "", "-t", "0", "dump-dps")
	h.mustFail("value x on -t or --timeout is invalid", "", "--timeout=x", "dump-dps")
	h.mustRun("", "-t", "5", "dump-dps")
	h.mustRun("", "-t5", "dump-dps")
	h.mustFail("does not log to syslog", "", "--syslog-target=localhost:514", "dump-dps")
	h.mustFail("--log-file needs --verbose", "", "--log-file=/dev/null", "dump-dps")
	h.mustRun("", "-vdbg", "dump-dps")
	h.mustRun("", "--verbose=dpif:dbg", "dump-dps")

	h.mustRun("", "-o")
	h.mustRun("", "list-commands")

	// normalize-actions, as ovs-dpctl 3.1 prints it (one group a line).
	tcp := "in_port(1),eth(src=00:00:00:00:00:01,dst=00:00:00:00:00:02),eth_type(0x0800),ipv4(src=1.1.1.1,dst=2.2.2.2,proto=6,tos=0,ttl=64,frag=no),tcp(src=1,dst=2)"
	r := h.mustRun("", "normalize-actions", tcp, "push_vlan(vid=9,pcp=0),3,2,pop_vlan,1,push_vlan(vid=11,pcp=0),2")
	want := "input flow: " + tcp + "\nno vlan: no mpls: 1\nvlan(vid=9,pcp=0): no mpls: 2,3\nvlan(vid=11,pcp=0): no mpls: 2\n"
	if r.stdout != want {
		t.Errorf("normalize-actions:\n%s\nwant\n%s", r.stdout, want)
	}
	// The same packets out of differently ordered actions print the same.
	r2 := h.mustRun("", "normalize-actions", tcp, "1,push_vlan(vid=11,pcp=0),2,pop_vlan,push_vlan(vid=9,pcp=0),2,3")
	if r2.stdout != want {
		t.Errorf("reordered normalize-actions:\n%s\nwant\n%s", r2.stdout, want)
	}
	h.mustRun("", "-m", "normalize-actions", "in_port(1),eth(src=00:00:00:00:00:01,dst=00:00:00:00:00:02),eth_type(0x8100),vlan(vid=5,pcp=1),encap(eth_type(0x0800),ipv4(src=1.1.1.1,dst=2.2.2.2,proto=17,tos=0,ttl=64,frag=no),udp(src=1,dst=2))",
		"pop_vlan,5,4,push_vlan(tpid=0x88a8,vid=7,pcp=2),push_vlan(vid=3,pcp=0),p,set(ipv4(ttl=3)),1", "p=3")
	h.mustRun("", "normalize-actions", "in_port(1),eth(src=00:00:00:00:00:01,dst=00:00:00:00:00:02),eth_type(0x8847),mpls(label=5,tc=1,ttl=3,bos=1)", "2,1")
	h.mustFail("x: expected NAME=NUMBER", "", "normalize-actions", tcp, "2", "x")
	h.mustFail("parsing actions", "", "normalize-actions", tcp, "bogus")
	h.mustFail("parsing flow key", "", "normalize-actions", "bogus", "1")
	h.mustFail("requires at least 2 arguments", "", "normalize-actions", tcp)

	h.mustRun("", "parse-actions", "1,2", "drop")
	h.mustFail(`argument 2 "bogus"`, "", "parse-actions", "1", "bogus", "2")
	h.mustRun("", "-f", "json", "parse-actions", "1,2")

	h.mustRun("", "offload-stats-show")
	h.mustRun("", "offload-stats-show", "netdev@br0")
	h.mustFail("does not exist", "", "offload-stats-show", "netdev@nope")

	// dump-flows type= and pmd= select flows instead of naming a datapath.
	for _, sel := range []string{"type=ovs", "type=all", "type=non-offloaded", "type=tc,ovs", "pmd=-1"} {
		if r := h.mustRun("", "dump-flows", sel); !strings.Contains(r.stdout, "actions:2") {
			t.Errorf("dump-flows %s: %q, want the flow", sel, r.stdout)
		}
	}
	for _, sel := range []string{"type=offloaded", "type=tc", "type=dpdk,partially-offloaded", "pmd=0", "pmd=3"} {
		if r := h.mustRun("", "dump-flows", "netdev@br0", sel, "filter=ip"); r.stdout != "\n" && r.stdout != "" {
			t.Errorf("dump-flows %s: %q, want no flow", sel, r.stdout)
		}
	}
	h.mustFail("failed to parse type", "", "dump-flows", "type=bogus")
	h.mustFail("pmd=x", "", "dump-flows", "pmd=x")
	h.mustFail("type= given twice", "", "dump-flows", "type=ovs", "type=tc")

	// del-if -d: memory ports have no device to delete.
	h.mustRun("", "del-if", "-d", "netdev@br0", "p3")
	h.mustFail("no port named p3", "", "del-if", "-d", "netdev@br0", "p3")

	// add-dp -V VERSION:FEATURES.
	h.mustFail("apply to kernel datapaths only", "", "add-dp", "-V", "2:per-cpu", "netdev@x")
	h.mustFail("apply to kernel datapaths only", "", "add-dp", "--features=per-vport", "netdev@x")
	h.mustFail("version 3 is not the ovs_datapath family version (2)", "", "add-dp", "-V", "3:per-cpu", "netdev@x")
	h.mustFail(`unknown feature "bogus"`, "", "add-dp", "-V", "2:unaligned+bogus", "netdev@x")
	// dump-conntrack-exp is refused with the reason (the other conntrack
	// commands: TestGoldenConntrack).
	h.mustFail("'dump-conntrack-exp' is not supported: conntrack expectations are not read yet", "", "dump-conntrack-exp")
	h.mustFail("command does not work in read only mode", "", "--read-only", "flush-conntrack")
	h.check("compat")
}

func TestParseFeatures(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want uint32
	}{
		{"per-cpu", genl.FeatureUnaligned | genl.FeatureDispatchUpcallPerCPU},
		{"2:per-vport", genl.FeatureUnaligned | genl.FeatureVportPIDs},
		{"unaligned+vport-pids", 3},
		{"2:unaligned,tc-recirc-sharing", 5},
		{"0x9", 9},
		{"2:0", 0},
	} {
		got, err := parseFeatures(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("parseFeatures(%q) = %#x, %v; want %#x", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "2:", "x:per-cpu", "1:per-cpu", "fast", "per-cpu+x", "0x1ffffffff"} {
		if _, err := parseFeatures(bad); err == nil {
			t.Errorf("parseFeatures(%q) succeeded", bad)
		}
	}
	if s := formatFeatures(0x80000009); s != "unaligned,dispatch-upcall-per-cpu,0x80000000" {
		t.Errorf("formatFeatures = %q", s)
	}
}

// TestVersion checks -V: dpctl's build and a line on the kernel's
// datapath support (here, with kernel datapaths out of the picture, at
// least the kernel release).
func TestVersion(t *testing.T) {
	h := newHarness(t)
	r := h.mustRun("", "-V")
	if first := "dpctl " + buildinfo.Get().String() + "\n"; !strings.HasPrefix(r.stdout, first) {
		t.Errorf("-V output does not start with %q:\n%s", first, r.stdout)
	}
	for _, want := range []string{"\nkernel: Linux ", "kernel datapath"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("-V output lacks %q:\n%s", want, r.stdout)
		}
	}
	if r2 := h.mustRun("", "--version", "dump-dps"); r2.stdout != r.stdout {
		t.Errorf("--version before a command runs the command too:\n%s", r2.stdout)
	}
}

// TestTimeout checks that -t ends a command that hangs: a netdev@
// datapath whose server accepts connections and never answers.
func TestTimeout(t *testing.T) {
	h := newHarness(t)
	path := ctl.SocketPath("hung")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	conns := make(chan net.Conn, 16)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conns <- c
		}
	}()
	fired := make(chan uint64, 1)
	saved := timeoutExit
	timeoutExit = func(_ io.Writer, secs uint64) { fired <- secs }
	defer func() { timeoutExit = saved }()
	done := make(chan result, 1)
	go func() { done <- h.run("", "-t", "1", "show", "netdev@hung") }()
	select {
	case secs := <-fired:
		if secs != 1 {
			t.Errorf("timeout after %d seconds, want 1", secs)
		}
	case r := <-done:
		t.Fatalf("the command ended before -t 1 fired: %+v", r)
	case <-time.After(20 * time.Second):
		t.Fatal("-t 1 did not fire within 20 s")
	}
	// Let the hung command end (its server goes away) before the test
	// ends.
	l.Close()
	for len(conns) > 0 {
		(<-conns).Close()
	}
	select {
	case r := <-done:
		if r.code == 0 {
			t.Errorf("the hung command succeeded once its server went away: %+v", r)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the hung command did not end when its server went away")
	}
}
