//go:build integration && linux

package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ovsdp/ovsdp/odp"
	"github.com/ovsdp/ovsdp/testenv"
)

// ctSysctl sets a /proc/sys/net/netfilter setting for the test and puts
// the old value back at its end.
func ctSysctl(t *testing.T, name, value string) {
	t.Helper()
	path := "/proc/sys/net/netfilter/" + name
	old, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading %s (is nf_conntrack loaded?): %v", path, err)
	}
	if err := os.WriteFile(path, []byte(value), 0o644); err != nil {
		t.Fatalf("setting %s: %v", path, err)
	}
	t.Cleanup(func() { os.WriteFile(path, old, 0o644) })
}

// sortedLines returns s's lines sorted (both tools dump in the kernel's
// hash order, which may change between two dumps).
func sortedLines(s string) []string {
	s = strings.TrimSuffix(s, "\n")
	if s == "" {
		return nil
	}
	l := strings.Split(s, "\n")
	sort.Strings(l)
	return l
}

// timeoutRE finds the timeouts of dump-conntrack -s, which count down
// between the two tools' dumps.
var timeoutRE = regexp.MustCompile(`,timeout=(\d+)`)

// compareCT runs the same read-only conntrack command with both tools
// and compares their output line by line and field by field (timeouts
// within 2 s of each other).
func compareCT(t *testing.T, refArgs, ourArgs []string) []string {
	t.Helper()
	ref, me := reference(), ours()
	want := sortedLines(ref.must(t, refArgs...))
	got := sortedLines(me.must(t, ourArgs...))
	if len(want) != len(got) {
		t.Errorf("%v: ovs-dpctl printed %d lines, dpctl %d:\novs-dpctl:\n%s\ndpctl:\n%s", ourArgs, len(want), len(got), strings.Join(want, "\n"), strings.Join(got, "\n"))
		return got
	}
	for i := range want {
		w, g := want[i], got[i]
		wt, gt := timeoutRE.FindStringSubmatch(w), timeoutRE.FindStringSubmatch(g)
		if wt != nil && gt != nil {
			a, _ := strconv.Atoi(wt[1])
			b, _ := strconv.Atoi(gt[1])
			if a-b > 2 || b-a > 2 {
				t.Errorf("%v: timeouts differ by more than 2 s:\novs-dpctl: %s\ndpctl:     %s", ourArgs, w, g)
			}
			w, g = timeoutRE.ReplaceAllString(w, ",timeout=T"), timeoutRE.ReplaceAllString(g, ",timeout=T")
		}
		if w != g {
			wf, gf := strings.Split(w, ","), strings.Split(g, ",")
			for j := 0; j < len(wf) && j < len(gf); j++ {
				if wf[j] != gf[j] {
					t.Errorf("%v: line %d differs at field %d (%q vs %q):\novs-dpctl: %s\ndpctl:     %s", ourArgs, i, j, wf[j], gf[j], w, g)
					break
				}
			}
			if len(wf) != len(gf) {
				t.Errorf("%v: line %d has %d fields in ovs-dpctl's, %d in dpctl's:\novs-dpctl: %s\ndpctl:     %s", ourArgs, i, len(wf), len(gf), w, g)
			}
		}
	}
	return got
}

// inNS runs fn in ns, failing the test on error.
func inNS(t *testing.T, ns *testenv.Netns, fn func() error) {
	t.Helper()
	if err := ns.Do(fn); err != nil {
		t.Fatal(err)
	}
}

// udpExchange sends one UDP request from ns1 to server (in ns2) on
// network ("udp4", "udp6") and its reply back; it returns the client's
// port.
func udpExchange(t *testing.T, ns1, ns2 *testenv.Netns, network, server string) int {
	t.Helper()
	var uc net.PacketConn
	var ud net.Conn
	inNS(t, ns2, func() (err error) { uc, err = net.ListenPacket(network, server); return err })
	defer uc.Close()
	inNS(t, ns1, func() (err error) { ud, err = net.Dial(network, server); return err })
	defer ud.Close()
	deadline := time.Now().Add(20 * time.Second)
	uc.SetDeadline(deadline)
	ud.SetDeadline(deadline)
	buf := make([]byte, 5)
	if _, err := ud.Write([]byte("query")); err != nil {
		t.Fatal(err)
	}
	n, from, err := uc.ReadFrom(buf)
	if err == nil {
		_, err = uc.WriteTo(buf[:n], from)
	}
	if err == nil {
		_, err = ud.Read(buf)
	}
	if err != nil {
		t.Fatalf("UDP %s request and reply through the datapath: %v", server, err)
	}
	return ud.LocalAddr().(*net.UDPAddr).Port
}

// ctTraffic opens a TCP connection to port dport (one message echoed;
// the connection stays open until the test ends, so that its entry
// stays ESTABLISHED), and runs a UDP request and reply to port 5353 and
// a ping, from ns1 (10.0.0.1) to ns2 (10.0.0.2). It returns the TCP and
// UDP client ports. Everything runs in turn: Dial returns once the
// handshake is done, and the server socket then has what to read.
func ctTraffic(t *testing.T, ns1, ns2 *testenv.Netns, dport int) (tcpPort, udpPort int) {
	t.Helper()
	var ln net.Listener
	var tc net.Conn
	inNS(t, ns2, func() (err error) {
		// No keepalives: a probe of a flushed connection would make the
		// kernel pick it up again as a new entry.
		lc := net.ListenConfig{KeepAlive: -1}
		ln, err = lc.Listen(context.Background(), "tcp4", fmt.Sprintf("10.0.0.2:%d", dport))
		return err
	})
	t.Cleanup(func() { ln.Close() })
	inNS(t, ns1, func() (err error) {
		d := net.Dialer{Timeout: 20 * time.Second, KeepAlive: -1}
		tc, err = d.Dial("tcp4", fmt.Sprintf("10.0.0.2:%d", dport))
		return err
	})
	t.Cleanup(func() { tc.Close() })
	sc, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sc.Close() })
	deadline := time.Now().Add(20 * time.Second)
	tc.SetDeadline(deadline)
	sc.SetDeadline(deadline)
	buf := make([]byte, 5)
	_, err = tc.Write([]byte("hello"))
	if err == nil {
		_, err = io.ReadFull(sc, buf)
	}
	if err == nil {
		_, err = sc.Write(buf)
	}
	if err == nil {
		_, err = io.ReadFull(tc, buf)
	}
	if err != nil {
		t.Fatalf("TCP echo through the datapath: %v", err)
	}
	udpPort = udpExchange(t, ns1, ns2, "udp4", "10.0.0.2:5353")
	if err := ns1.Ping("10.0.0.2", 10*time.Second); err != nil {
		t.Fatalf("ping through the datapath: %v", err)
	}
	return tc.LocalAddr().(*net.TCPAddr).Port, udpPort
}

// ctFlows adds the conntrack tests' flows to dp (ports 1 and 2): ARP is
// forwarded, TCP and ICMP are committed in zone 0 and UDP in zone 5, then
// recirculated to a flow that forwards every tracked packet.
func ctFlows(t *testing.T, me tool, dp string) {
	t.Helper()
	for _, p := range [][2]string{{"1", "2"}, {"2", "1"}} {
		in, out := p[0], p[1]
		for _, f := range [][2]string{
			{"recirc_id(0),in_port(" + in + "),eth(),eth_type(0x0806),arp()", out},
			{"recirc_id(0),in_port(" + in + "),eth(),eth_type(0x0800),ipv4(proto=6,frag=no)", "ct(commit),recirc(0x1)"},
			{"recirc_id(0),in_port(" + in + "),eth(),eth_type(0x0800),ipv4(proto=1,frag=no)", "ct(commit),recirc(0x1)"},
			{"recirc_id(0),in_port(" + in + "),eth(),eth_type(0x0800),ipv4(proto=17,frag=no)", "ct(commit,zone=5),recirc(0x1)"},
			{"recirc_id(0x1),ct_state(+trk),in_port(" + in + "),eth(),eth_type(0x0800),ipv4(frag=no)", out},
		} {
			me.must(t, "add-flow", dp, f[0], f[1])
		}
	}
}

// TestIntegrationConntrack runs TCP, UDP and ICMP between two namespaces
// through a kernel datapath whose flows commit them to conntrack (UDP in
// zone 5) and recirculate, and compares dpctl's conntrack commands with
// ovs-dpctl 3.1's on the same table: dump-conntrack (plain, -m, -s,
// zone=N), ct-stats-show, ct-bkts, flush-conntrack by tuple and by zone,
// and ct-get-nconns against the number of entries ovs-dpctl dumps.
// ovs-dpctl 3.1 is run without the DP argument (its flush-conntrack
// reads a DP given with zone= as a tuple); the datapath is the only one.
func TestIntegrationConntrack(t *testing.T) {
	requireKernel(t)
	me := ours()
	ctSysctl(t, "nf_conntrack_acct", "1")
	ctSysctl(t, "nf_conntrack_timestamp", "1")
	// UDP and ICMP entries would expire (30 s) while the slow guest runs
	// the comparisons, between the two tools' dumps.
	ctSysctl(t, "nf_conntrack_udp_timeout", "600")
	ctSysctl(t, "nf_conntrack_icmp_timeout", "600")
	ns1, ns2 := testenv.NewNetns(t), testenv.NewNetns(t)
	va, vb := testenv.NewVeth(t, nil, ns1), testenv.NewVeth(t, nil, ns2)
	ns1.AddAddr(t, va.PeerName, "10.0.0.1/24")
	ns2.AddAddr(t, vb.PeerName, "10.0.0.2/24")
	dp := newDP(t, va.Name, vb.Name)
	sdp := "system@" + dp
	me.must(t, "flush-conntrack", sdp)
	ctFlows(t, me, sdp)
	tcpPort, udpPort := ctTraffic(t, ns1, ns2, 8080)

	lines := compareCT(t, []string{"dump-conntrack"}, []string{"dump-conntrack", sdp})
	t.Logf("dump-conntrack, the same from both tools:\n%s", strings.Join(lines, "\n"))
	if len(lines) != 3 {
		t.Fatalf("dump-conntrack: want the TCP, UDP and ICMP connections, got\n%s", strings.Join(lines, "\n"))
	}
	for _, want := range []string{
		fmt.Sprintf("tcp,orig=(src=10.0.0.1,dst=10.0.0.2,sport=%d,dport=8080),reply=(src=10.0.0.2,dst=10.0.0.1,sport=8080,dport=%d),protoinfo=(state=ESTABLISHED)", tcpPort, tcpPort),
		fmt.Sprintf("udp,orig=(src=10.0.0.1,dst=10.0.0.2,sport=%d,dport=5353),reply=(src=10.0.0.2,dst=10.0.0.1,sport=5353,dport=%d),zone=5", udpPort, udpPort),
	} {
		if !strings.Contains(strings.Join(lines, "\n"), want) {
			t.Errorf("dump-conntrack lacks %s:\n%s", want, strings.Join(lines, "\n"))
		}
	}
	compareCT(t, []string{"dump-conntrack"}, []string{"dump-conntrack"})
	t.Logf("dump-conntrack -m:\n%s", strings.Join(compareCT(t, []string{"-m", "dump-conntrack"}, []string{"-m", "dump-conntrack", sdp}), "\n"))
	stats := compareCT(t, []string{"-s", "dump-conntrack"}, []string{"dump-conntrack", "-s", sdp})
	t.Logf("dump-conntrack -s:\n%s", strings.Join(stats, "\n"))
	if !strings.Contains(strings.Join(stats, "\n"), ",packets=") || !strings.Contains(strings.Join(stats, "\n"), ",start=") {
		t.Errorf("dump-conntrack -s shows no counters or start times with nf_conntrack_acct and nf_conntrack_timestamp on:\n%s", strings.Join(stats, "\n"))
	}
	compareCT(t, []string{"-m", "-s", "dump-conntrack", "zone=5"}, []string{"-m", "-s", "dump-conntrack", sdp, "zone=5"})
	compareCT(t, []string{"dump-conntrack", "zone=0"}, []string{"dump-conntrack", "zone=0"})
	compareCT(t, []string{"dump-conntrack", "zone=7"}, []string{"dump-conntrack", sdp, "zone=7"})
	compareCT(t, []string{"ct-stats-show"}, []string{"ct-stats-show", sdp})
	compareCT(t, []string{"ct-stats-show", "zone=5", "verbose"}, []string{"ct-stats-show", sdp, "zone=5", "verbose"})
	compareCT(t, []string{"-m", "ct-stats-show"}, []string{"-m", "ct-stats-show"})
	compareCT(t, []string{"ct-bkts"}, []string{"ct-bkts", sdp})

	// ct-get-nconns: the number of entries (ovs-dpctl 3.1 answers
	// "Operation not supported" on the kernel datapath).
	n := len(sortedLines(reference().must(t, "dump-conntrack")))
	if got := me.must(t, "ct-get-nconns", sdp); got != strconv.Itoa(n)+"\n" {
		t.Errorf("ct-get-nconns: %q, ovs-dpctl dumps %d entries", got, n)
	}
	if _, _, err := reference().run("", "ct-get-nconns"); err == nil {
		t.Errorf("ovs-dpctl 3.1 ct-get-nconns succeeded on the kernel datapath: the test's premise is wrong")
	}
	// ct-get-maxconns and ct-set-maxconns: nf_conntrack_max.
	raw, err := os.ReadFile("/proc/sys/net/netfilter/nf_conntrack_max")
	if err != nil {
		t.Fatal(err)
	}
	if got := me.must(t, "ct-get-maxconns", sdp); got != string(raw) {
		t.Errorf("ct-get-maxconns: %q, nf_conntrack_max %q", got, raw)
	}
	t.Cleanup(func() { os.WriteFile("/proc/sys/net/netfilter/nf_conntrack_max", raw, 0o644) })
	if got := me.must(t, "ct-set-maxconns", sdp, "12345"); got != "setting maxconns successful" {
		t.Errorf("ct-set-maxconns: %q", got)
	}
	if got := me.must(t, "ct-get-maxconns"); got != "12345\n" {
		t.Errorf("ct-get-maxconns after setting 12345: %q", got)
	}
	// The commands without kernel meaning fail as ovs-dpctl's do.
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"ct-enable-tcp-seq-chk"}, "enabling TCP sequence checking failed (Operation not supported)"},
		{[]string{"ct-get-tcp-seq-chk"}, "TCP sequence checking query failed (Operation not supported)"},
		{[]string{"ipf-set-enabled", "v4"}, "enabling fragmentation reassembly failed (Operation not supported)"},
		{[]string{"ipf-get-status"}, "ipf status could not be retrieved (Operation not supported)"},
	} {
		_, refErr, rerr := reference().run("", c.args...)
		_, ourErr, oerr := me.run("", c.args...)
		if rerr == nil || oerr == nil || !strings.Contains(refErr, c.want) || !strings.Contains(ourErr, "dpctl: "+c.want+": "+sdp+": ") {
			t.Errorf("%v: ovs-dpctl %v %q, dpctl %v %q; want both to say %q", c.args, rerr, refErr, oerr, ourErr, c.want)
		}
	}

	// flush-conntrack by tuple: the UDP entry (zone 5) by its full
	// original tuple, then the TCP one by a partial reply tuple.
	udpTuple := fmt.Sprintf("ct_nw_src=10.0.0.1,ct_nw_dst=10.0.0.2,ct_nw_proto=17,ct_tp_src=%d,ct_tp_dst=5353", udpPort)
	me.must(t, "flush-conntrack", sdp, "zone=5", udpTuple)
	lines = compareCT(t, []string{"dump-conntrack"}, []string{"dump-conntrack", sdp})
	if len(lines) != 2 || strings.Contains(strings.Join(lines, "\n"), "udp") {
		t.Errorf("after flushing the UDP tuple:\n%s", strings.Join(lines, "\n"))
	}
	me.must(t, "flush-conntrack", "", fmt.Sprintf("ct_nw_proto=6,ct_tp_dst=%d", tcpPort))
	lines = compareCT(t, []string{"dump-conntrack"}, []string{"dump-conntrack", sdp})
	if len(lines) != 1 || !strings.HasPrefix(lines[0], "icmp,") {
		t.Errorf("after flushing by the TCP reply tuple:\n%s", strings.Join(lines, "\n"))
	}
	// The same through ovs-dpctl: run traffic again, flush the UDP entry
	// with ovs-dpctl's syntax, and compare.
	_, udpPort = ctTraffic(t, ns1, ns2, 8081)
	reference().must(t, "flush-conntrack", "zone=5", fmt.Sprintf("ct_nw_src=10.0.0.1,ct_nw_dst=10.0.0.2,ct_nw_proto=17,ct_tp_src=%d,ct_tp_dst=5353", udpPort))
	lines = compareCT(t, []string{"dump-conntrack"}, []string{"dump-conntrack", sdp})
	if strings.Contains(strings.Join(lines, "\n"), "udp") {
		t.Errorf("ovs-dpctl's tuple flush left the UDP entry:\n%s", strings.Join(lines, "\n"))
	}

	// flush-conntrack by zone: zone 0 goes, zone 5 stays.
	ctTraffic(t, ns1, ns2, 8082)
	me.must(t, "flush-conntrack", sdp, "zone=0")
	lines = compareCT(t, []string{"dump-conntrack"}, []string{"dump-conntrack", sdp})
	if len(lines) != 1 || !strings.Contains(lines[0], ",zone=5") {
		t.Errorf("after flushing zone 0:\n%s", strings.Join(lines, "\n"))
	}
	if got := me.must(t, "ct-get-nconns"); got != "1\n" {
		t.Errorf("ct-get-nconns after flushing zone 0: %q", got)
	}
	me.must(t, "flush-conntrack")
	if got := me.must(t, "dump-conntrack", sdp); got != "" {
		t.Errorf("after flushing everything: %q", got)
	}
	// A tuple that names no connection fails as the kernel says.
	if _, errs, err := me.run("", "flush-conntrack", sdp, udpTuple); err == nil || !strings.Contains(errs, "failed to flush conntrack") {
		t.Errorf("flushing a missing tuple: %v %q", err, errs)
	}

	// IPv6: UDP in zone 6, dumped, then flushed by its full original
	// tuple (a direct delete, whose request must carry the IPv6 family)
	// and by a partial one.
	for _, ns := range []*testenv.Netns{ns1, ns2} {
		inNS(t, ns, func() error { return os.WriteFile("/proc/sys/net/ipv6/conf/all/disable_ipv6", []byte("0"), 0o644) })
	}
	ns1.AddAddr(t, va.PeerName, "fc00::1/64")
	ns2.AddAddr(t, vb.PeerName, "fc00::2/64")
	ns1.AddNeigh(t, va.PeerName, "fc00::2", ns2.MAC(t, vb.PeerName).String())
	ns2.AddNeigh(t, vb.PeerName, "fc00::1", ns1.MAC(t, va.PeerName).String())
	for _, p := range [][2]string{{"1", "2"}, {"2", "1"}} {
		me.must(t, "add-flow", sdp, "recirc_id(0),in_port("+p[0]+"),eth(),eth_type(0x86dd),ipv6(proto=17,frag=no)", "ct(commit,zone=6),recirc(0x1)")
		me.must(t, "add-flow", sdp, "recirc_id(0x1),ct_state(+trk),in_port("+p[0]+"),eth(),eth_type(0x86dd),ipv6(frag=no)", p[1])
	}
	port6 := udpExchange(t, ns1, ns2, "udp6", "[fc00::2]:5354")
	lines = compareCT(t, []string{"-m", "dump-conntrack", "zone=6"}, []string{"-m", "dump-conntrack", sdp, "zone=6"})
	t.Logf("dump-conntrack -m zone=6:\n%s", strings.Join(lines, "\n"))
	if want := fmt.Sprintf("udp,orig=(src=fc00::1,dst=fc00::2,sport=%d,dport=5354),reply=(src=fc00::2,dst=fc00::1,sport=5354,dport=%d),", port6, port6); len(lines) != 1 || !strings.HasPrefix(lines[0], want) {
		t.Errorf("IPv6 UDP entry: want %s..., got\n%s", want, strings.Join(lines, "\n"))
	}
	me.must(t, "flush-conntrack", sdp, "zone=6", fmt.Sprintf("ct_ipv6_src=fc00::1,ct_ipv6_dst=fc00::2,ct_nw_proto=17,ct_tp_src=%d,ct_tp_dst=5354", port6))
	if got := me.must(t, "dump-conntrack", sdp, "zone=6"); got != "" {
		t.Errorf("after flushing the IPv6 tuple: %q", got)
	}
	udpExchange(t, ns1, ns2, "udp6", "[fc00::2]:5354")
	me.must(t, "flush-conntrack", "ct_ipv6_dst=fc00::2")
	if got := me.must(t, "dump-conntrack", sdp, "zone=6"); got != "" {
		t.Errorf("after flushing ct_ipv6_dst=fc00::2: %q", got)
	}
}

// TestIntegrationConntrackNetdevMatchesKernel runs the same flows and
// traffic as TestIntegrationConntrack (TCP, UDP in zone 5, ICMP between
// two namespaces, committed and recirculated) through a kernel datapath
// and through a userspace one, each between its own two namespaces, and
// compares dpctl dump-conntrack of the two trackers: the kernel's table
// over ctnetlink and the userspace datapath's tracker over its control
// socket. The client ports and the ping's ID, which differ between the
// runs, are replaced by names; everything else must be equal.
func TestIntegrationConntrackNetdevMatchesKernel(t *testing.T) {
	requireKernel(t)
	me := ours()
	ctSysctl(t, "nf_conntrack_udp_timeout", "600")
	ctSysctl(t, "nf_conntrack_icmp_timeout", "600")
	// The kernel's entry ID (-m: after the reply tuple), which the
	// userspace tracker has not, and the ping's ID.
	entryIDRE, idRE := regexp.MustCompile(`\),id=\d+`), regexp.MustCompile(`id=\d+`)
	dump := func(dp string, tcpPort, udpPort int, args ...string) []string {
		// ours() again: the environment names the control sockets'
		// directory once the userspace datapath is up.
		cmd := []string{"dump-conntrack"}
		for _, a := range args { // options, then the datapath, then zone=
			if strings.HasPrefix(a, "-") {
				cmd = append(cmd, a)
			}
		}
		cmd = append(cmd, dp)
		for _, a := range args {
			if !strings.HasPrefix(a, "-") {
				cmd = append(cmd, a)
			}
		}
		out := ours().must(t, cmd...)
		out = entryIDRE.ReplaceAllString(out, ")")
		out = strings.NewReplacer(strconv.Itoa(tcpPort), "TCPPORT", strconv.Itoa(udpPort), "UDPPORT").Replace(out)
		return sortedLines(idRE.ReplaceAllString(out, "id=ID"))
	}

	// The kernel datapath.
	ns1, ns2 := testenv.NewNetns(t), testenv.NewNetns(t)
	va, vb := testenv.NewVeth(t, nil, ns1), testenv.NewVeth(t, nil, ns2)
	ns1.AddAddr(t, va.PeerName, "10.0.0.1/24")
	ns2.AddAddr(t, vb.PeerName, "10.0.0.2/24")
	sdp := "system@" + newDP(t, va.Name, vb.Name)
	me.must(t, "flush-conntrack", sdp)
	ctFlows(t, me, sdp)
	kt, ku := ctTraffic(t, ns1, ns2, 8083)

	// The userspace datapath, hosted here behind its control socket.
	dir, err := os.MkdirTemp("", "dpctl") // short: socket paths are limited to 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	t.Setenv("OVSDP_RUNDIR", dir)
	ns3, ns4 := testenv.NewNetns(t), testenv.NewNetns(t)
	vc, vd := testenv.NewVeth(t, nil, ns3), testenv.NewVeth(t, nil, ns4)
	ns3.AddAddr(t, vc.PeerName, "10.0.0.1/24")
	ns4.AddAddr(t, vd.PeerName, "10.0.0.2/24")
	udp := (&harness{t: t}).hostDP("ctnd")
	for _, name := range []string{vc.Name, vd.Name} {
		if _, err := udp.AddPort(context.Background(), odp.PortSpec{Name: name, Type: odp.PortNetdev}); err != nil {
			t.Fatalf("adding %s to netdev@ctnd: %v", name, err)
		}
	}
	ndp := "netdev@ctnd"
	me = ours()
	ctFlows(t, me, ndp)
	nt, nu := ctTraffic(t, ns3, ns4, 8083)

	for _, args := range [][]string{nil, {"-m"}, {"zone=5"}} {
		want, got := dump(sdp, kt, ku, args...), dump(ndp, nt, nu, args...)
		if strings.Join(want, "\n") != strings.Join(got, "\n") {
			t.Errorf("dump-conntrack %v differs:\nsystem@ (kernel):\n%s\nnetdev@ (userdp):\n%s", args, strings.Join(want, "\n"), strings.Join(got, "\n"))
		}
		if args == nil {
			t.Logf("dump-conntrack on both datapaths:\n%s", strings.Join(got, "\n"))
			if len(got) != 3 {
				t.Errorf("want the TCP, UDP and ICMP connections, got %d lines", len(got))
			}
		}
	}
	if got := me.must(t, "ct-get-nconns", ndp); got != "3\n" {
		t.Errorf("ct-get-nconns on netdev@: %q, want 3", got)
	}
	me.must(t, "flush-conntrack", ndp, "zone=5")
	if got := dump(ndp, nt, nu); len(got) != 2 || strings.Contains(strings.Join(got, "\n"), "zone=5") {
		t.Errorf("after flush-conntrack zone=5 on netdev@:\n%s", strings.Join(got, "\n"))
	}
}
