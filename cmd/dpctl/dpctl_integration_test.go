//go:build integration && linux

package main

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ovsdp/ovsdp/testenv"
)

const ovsDpctl = "/usr/bin/ovs-dpctl"

// requireKernel fails (never skips) without root, the module or ovs-dpctl.
func requireKernel(t testing.TB) {
	t.Helper()
	testenv.RequireRoot(t)
	testenv.RequireKernelModule(t, "openvswitch")
	if _, err := os.Stat(ovsDpctl); err != nil {
		t.Fatalf("the reference %s is missing (apt-get install openvswitch-switch): %v", ovsDpctl, err)
	}
	if err := os.MkdirAll("/run/openvswitch", 0o755); err != nil {
		t.Fatal(err)
	}
	// New internal ports would send IPv6 router solicitations, moving
	// the counters between the two tools' show.
	for _, f := range []string{"/proc/sys/net/ipv6/conf/all/disable_ipv6", "/proc/sys/net/ipv6/conf/default/disable_ipv6"} {
		if err := os.WriteFile(f, []byte("1"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// tool runs one of the two command lines.
type tool struct {
	name string
	path string
	env  []string
}

func ours() tool {
	return tool{name: "dpctl", path: os.Args[0], env: append(os.Environ(), "DPCTL_TEST_MAIN=1")}
}

func reference() tool { return tool{name: "ovs-dpctl", path: ovsDpctl, env: os.Environ()} }

// run runs the tool; it returns stdout, stderr and the error.
func (tl tool) run(stdin string, args ...string) (string, string, error) {
	cmd := exec.Command(tl.path, args...)
	cmd.Env = tl.env
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	return out.String(), errb.String(), err
}

func (tl tool) must(t testing.TB, args ...string) string {
	t.Helper()
	out, errs, err := tl.run("", args...)
	if err != nil {
		t.Fatalf("%s %s: %v: %s", tl.name, strings.Join(args, " "), err, errs)
	}
	return out
}

// newDP creates a kernel datapath with ovs-dpctl, deleted at the end.
func newDP(t testing.TB, ports ...string) string {
	t.Helper()
	name := fmt.Sprintf("dpc%06d", rand.IntN(1000000))
	reference().must(t, append([]string{"add-dp", "system@" + name}, ports...)...)
	t.Cleanup(func() { reference().run("", "del-dp", "system@"+name) })
	return name
}

// bothFlows are flows that both tools can add on Linux 6.1 with Open
// vSwitch 3.1, covering the key attributes and actions they share.
var bothFlows = [][2]string{
	{"in_port(1),eth(src=00:00:00:00:00:01,dst=00:00:00:00:00:02),eth_type(0x0800),ipv4(src=10.0.0.1,dst=10.0.0.2/255.255.255.0,proto=6,tos=0,ttl=64,frag=no),tcp(src=80,dst=8080),tcp_flags(syn)", "set(ipv4(ttl=63)),push_vlan(vid=10,pcp=0),2"},
	{"skb_priority(0x1),skb_mark(0x2),in_port(1),eth(src=00:00:00:00:00:03,dst=ff:ff:ff:ff:ff:ff),eth_type(0x0806),arp(sip=10.0.0.1,tip=10.0.0.2,op=1,sha=00:00:00:00:00:03,tha=00:00:00:00:00:00)", "userspace(pid=1234,userdata(01020304)),2"},
	{"recirc_id(0x1),dp_hash(0x5/0xff),in_port(2),eth(src=00:00:00:00:00:01,dst=00:00:00:00:00:02),eth_type(0x86dd),ipv6(src=2001:db8::1,dst=2001:db8::2,label=0,proto=17,tclass=0,hlimit=64,frag=no),udp(src=1,dst=2)", "set(ipv6(hlimit=1)),1"},
	{"in_port(1),eth(src=00:00:00:00:00:01,dst=00:00:00:00:00:02),eth_type(0x8100),vlan(vid=10,pcp=3),encap(eth_type(0x0800),ipv4(src=10.0.0.1,dst=10.0.0.2,proto=17,tos=0,ttl=64,frag=no),udp(src=53,dst=5353))", "pop_vlan,2"},
	{"in_port(2),eth(src=00:00:00:00:00:01,dst=00:00:00:00:00:02),eth_type(0x0800),ipv4(src=10.0.0.3,dst=10.0.0.4,proto=1,tos=0,ttl=64,frag=no),icmp(type=8,code=0)", "clone(set(eth(src=00:00:00:00:00:09,dst=00:00:00:00:00:0a)),1),2"},
	{"in_port(1),eth(src=00:00:00:00:00:01,dst=33:33:00:00:00:01),eth_type(0x86dd),ipv6(src=fe80::1,dst=ff02::1,label=0,proto=58,tclass=0,hlimit=255,frag=no),icmpv6(type=135,code=0),nd(target=2001:db8::1,sll=00:00:00:00:00:01,tll=00:00:00:00:00:00)", "sample(sample=50.0%,actions(1))"},
	{"in_port(2),eth(src=00:00:00:00:00:05,dst=00:00:00:00:00:06),eth_type(0x0800),ipv4(src=10.0.0.5,dst=10.0.0.6,proto=132,tos=0,ttl=64,frag=no),sctp(src=1,dst=2)", "check_pkt_len(size=200,gt(1),le(2))"},
	{"tunnel(tun_id=0x5,src=1.1.1.1,dst=2.2.2.2,ttl=64,flags(-df+csum+key)),in_port(1),eth(src=00:00:00:00:00:07,dst=00:00:00:00:00:08),eth_type(0x0800),ipv4(src=10.0.0.7,dst=10.0.0.8,proto=17,tos=0,ttl=64,frag=no),udp(src=4,dst=5)", "set(tunnel(tun_id=0x1,dst=3.3.3.3,ttl=64,tp_dst=4789,flags(df|key))),2"},
	{"ct_state(+new+trk),ct_zone(0x5),ct_mark(0x1),ct_label(0x2),in_port(2),eth(src=00:00:00:00:00:0b,dst=00:00:00:00:00:0c),eth_type(0x0800),ipv4(src=10.0.0.9,dst=10.0.0.10,proto=6,tos=0,ttl=64,frag=no),tcp(src=1,dst=2),tcp_flags(0)", "ct_clear,1"},
	{"in_port(1),eth(src=00:00:00:00:00:0d,dst=00:00:00:00:00:0e),eth_type(0x0800),ipv4(src=10.0.0.11,dst=10.0.0.12,proto=17,tos=0,ttl=64,frag=first),udp(src=6,dst=7)", "trunc(100),2"},
	{"in_port(1),eth(src=00:00:00:00:00:11,dst=00:00:00:00:00:12),eth_type(0x0800),ipv4(src=10.0.0.15,dst=10.0.0.16,proto=6,tos=0,ttl=64,frag=no),tcp(src=3,dst=4),tcp_flags(0/0)", "set(tcp(src=5/0xff)),2"},
}

// oursOnly are flows that Open vSwitch 3.1's ovs-dpctl cannot add (its
// parser or the kernel rejects what it sends) and dpctl can.
var oursOnly = [][2]string{
	// ovs-dpctl 3.1: "parsing actions (Invalid argument)".
	{"in_port(2),eth(src=00:00:00:00:00:0f,dst=00:00:00:00:00:10),eth_type(0x0800),ipv4(src=10.0.0.13,dst=10.0.0.14,proto=17,tos=0,ttl=64,frag=no),udp(src=8,dst=9)", "set(skb_mark(0x7)),set(udp(dst=99)),pop_eth,push_eth(src=00:00:00:00:00:01,dst=00:00:00:00:00:02),1"},
	{"in_port(1),eth(src=00:00:00:01:00:01,dst=00:00:00:01:00:02),eth_type(0x0800),ipv4(src=10.1.0.1,dst=10.1.0.2,proto=6,tos=0,ttl=64,frag=no),tcp(src=80,dst=8080)", "2"},
	{"in_port(1),eth(src=00:00:00:01:00:03,dst=00:00:00:01:00:04),eth_type(0x0800),ipv4(src=10.1.0.3,dst=10.1.0.4,proto=17,tos=0,ttl=64,frag=no),udp(src=1,dst=2)", "1,drop"},
	{"in_port(2),eth(src=00:00:00:01:00:05,dst=00:00:00:01:00:06),eth_type(0x0800),ipv4(src=10.1.0.5,dst=10.1.0.6,proto=17,tos=0,ttl=64,frag=no),udp(src=3,dst=4)", "recirc(0x5)"},
	{"in_port(2),eth(src=00:00:00:01:00:07,dst=00:00:00:01:00:08),eth_type(0x0800),ipv4(src=10.1.0.7,dst=10.1.0.8,proto=17,tos=0,ttl=64,frag=no),udp(src=5,dst=6)", "hash(l4(0)),recirc(0x6)"},
	{"in_port(1),eth(src=00:00:00:01:00:09,dst=00:00:00:01:00:0a),eth_type(0x0800),ipv4(src=10.1.0.9,dst=10.1.0.10,proto=17,tos=0,ttl=64,frag=no),udp(src=7,dst=8)", "dec_ttl(le_1(drop)),2"},
	{"in_port(1),eth(src=00:00:00:01:00:0b,dst=00:00:00:01:00:0c),eth_type(0x0800),ipv4(src=10.1.0.11,dst=10.1.0.12,proto=6,tos=0,ttl=64,frag=no),tcp(src=9,dst=10),tcp_flags(0/0)", "ct(commit,zone=5,mark=0x1/0xff,nat(src=10.0.0.1-10.0.0.9:100-200,random)),recirc(0x7)"},
	{"in_port(2),eth(src=00:00:00:01:00:0d,dst=00:00:00:01:00:0e),eth_type(0x0800),ipv4(src=10.1.0.13,dst=10.1.0.14,proto=17,tos=0,ttl=64,frag=no),udp(src=11,dst=12)", "push_mpls(label=100,tc=1,ttl=64,bos=1,eth_type=0x8847),1"},
	{"in_port(2),eth(src=00:00:00:01:00:0f,dst=00:00:00:01:00:10),eth_type(0x8847),mpls(label=100,tc=1,ttl=64,bos=1)", "pop_mpls(eth_type=0x800),1"},
	{"in_port(1),eth(src=00:00:00:01:00:11,dst=00:00:00:01:00:12),eth_type(0x86dd),ipv6(src=2001:db8::3,dst=2001:db8::4,label=0,proto=17,tclass=0,hlimit=64,frag=no),ipv6_exthdrs(0x4),udp(src=13,dst=14)", "2"},
}

// meterFlow uses a meter, which needs the meter to exist.
var meterFlow = [2]string{"in_port(1),eth(src=00:00:00:01:00:21,dst=00:00:00:01:00:22),eth_type(0x0800),ipv4(src=10.1.0.21,dst=10.1.0.22,proto=17,tos=0,ttl=64,frag=no),udp(src=21,dst=22)", "meter(3),2"}

// Open vSwitch 3.1 does not know the kernel's IPv6 extension-header
// attribute and prints it as key32(...); dpctl names it. The flows here
// leave it wildcarded, so both forms are dropped before comparing.
var (
	ovsNames = strings.NewReplacer(",key32(00 00/00 00)", "")
	ourNames = strings.NewReplacer(",ipv6_exthdrs(0/0)", "")
)

func TestIntegrationCompareWithOVS(t *testing.T) {
	requireKernel(t)
	ref, me := reference(), ours()
	dp := newDP(t, "p1,type=internal", "p2,type=internal")
	sdp := "system@" + dp

	compare := func(args ...string) {
		t.Helper()
		want := ovsNames.Replace(ref.must(t, args...))
		got := ourNames.Replace(me.must(t, args...))
		if got != want {
			t.Errorf("%s differs:\novs-dpctl:\n%s\ndpctl:\n%s", strings.Join(args, " "), want, got)
		}
	}
	compare("dump-dps")
	compare("show")
	compare("show", sdp)
	compare("show", "-s", sdp)

	// Flows added by each tool, read by both.
	for i, f := range bothFlows {
		tl := ref
		if i%2 == 1 {
			tl = me
		}
		if _, errs, err := tl.run("", "add-flow", sdp, f[0], f[1]); err != nil {
			t.Errorf("%s add-flow %s %s: %v: %s", tl.name, f[0], f[1], err, errs)
		}
	}
	compare("dump-flows", sdp)
	compare("dump-flows", "-m", sdp)
	compare("dump-flows", "--names", sdp)

	// What ovs-dpctl cannot add, dpctl can; ovs-dpctl then prints it
	// (in its own way for forms it does not know).
	me.must(t, "add-meter", sdp, "3", "pktps", "rate=100,burst=10")
	// meter(N) parses in 3.1 when the meter exists: a shared flow.
	ref.must(t, "add-flow", sdp, meterFlow[0], meterFlow[1])
	compare("dump-flows", sdp)
	for _, f := range oursOnly {
		if _, _, err := ref.run("", "add-flow", sdp, f[0], f[1]); err == nil {
			t.Errorf("ovs-dpctl add-flow %s %s: succeeded; it is listed as failing", f[0], f[1])
		}
		if _, errs, err := me.run("", "add-flow", sdp, f[0], f[1]); err != nil {
			t.Errorf("dpctl add-flow %s %s: %v: %s", f[0], f[1], err, errs)
		}
	}
	t.Logf("ovs-dpctl dump-flows -m:\n%s", ref.must(t, "dump-flows", "-m", sdp))
	t.Logf("dpctl dump-flows -m:\n%s", me.must(t, "dump-flows", "-m", sdp))
	compare("show", sdp)

	// The kernel's own rejections stay errors, with its message.
	for _, f := range [][2]string{
		{"in_port(1),eth(),eth_type(0x0800),ipv4(frag=no)", "trunc(13),2"},
		{"in_port(1),eth(),eth_type(0x0800),ipv4(frag=no)", strings.Repeat("clone(", 17) + "1" + strings.Repeat(")", 17)},
	} {
		_, errs, err := me.run("", "add-flow", sdp, f[0], f[1])
		if err == nil {
			t.Errorf("dpctl add-flow %s %s: succeeded, the kernel rejects it", f[0], f[1])
			continue
		}
		t.Logf("dpctl add-flow %s: %s", f[1], errs)
		if !strings.HasPrefix(errs, "dpctl: updating flow table: ") || strings.Count(errs, "dpctl:") != 1 || strings.Contains(errs, "genl:") {
			t.Errorf("dpctl add-flow %s: stderr %q: want one dpctl: line with the kernel's error", f[1], errs)
		}
	}

	// filter= works against the kernel.
	out := me.must(t, "dump-flows", sdp, "filter=ip,nw_proto=132")
	if strings.Count(out, "\n") != 1 || !strings.Contains(out, "sctp(src=1,dst=2)") {
		t.Errorf("dump-flows filter=sctp: %q", out)
	}
	ref.must(t, "del-flows", sdp)
	compare("dump-flows", sdp)
}

func TestIntegrationMetersAndLimits(t *testing.T) {
	requireKernel(t)
	me := ours()
	dp := "system@" + newDP(t)
	if out := me.must(t, "meter-features", dp); !strings.Contains(out, "band types: drop") {
		t.Errorf("meter-features: %q", out)
	}
	me.must(t, "add-meter", dp, "7", "kbps", "rate=1000,burst=100")
	out := me.must(t, "show-meters", dp, "7")
	if !strings.HasPrefix(out, "meter:7 packets:0, bytes:0") || !strings.HasSuffix(out, "\n  band 0: packets:0 bytes:0\n") {
		t.Errorf("show-meters: %q", out)
	}
	if all := me.must(t, "show-meters", dp); !strings.HasPrefix(all, "meter:7 packets:0, bytes:0") || strings.Count(all, "meter:") != 1 {
		t.Errorf("show-meters (scan) = %q, want meter 7 only", all)
	}
	me.must(t, "del-meter", dp, "7")
	if _, errs, err := me.run("", "show-meters", dp, "7"); err == nil || !strings.Contains(errs, "reading meter 7") {
		t.Errorf("show-meters of a deleted meter: %v %q", err, errs)
	}
	me.must(t, "ct-set-limits", dp, "default=10", "zone=1,limit=5", "zone=2,limit=7")
	out = me.must(t, "ct-get-limits", dp, "zone=1,2,3")
	want := "default limit=10\nzone=1,limit=5,count=0\nzone=2,limit=7,count=0\nzone=3,limit=10,count=0\n"
	if out != want {
		t.Errorf("ct-get-limits = %q, want %q", out, want)
	}
	me.must(t, "ct-del-limits", dp, "zone=1")
	if out := me.must(t, "ct-get-limits", dp, "zone=1"); out != "default limit=10\nzone=1,limit=10,count=0\n" {
		t.Errorf("ct-get-limits after delete = %q", out)
	}
	if out := me.must(t, "-f", "json", "ct-get-limits", dp); !strings.Contains(out, `"default": 10`) {
		t.Errorf("ct-get-limits json = %q", out)
	}
}

func TestIntegrationErrors(t *testing.T) {
	requireKernel(t)
	me := ours()
	dp := "system@" + newDP(t)
	check := func(want string, args ...string) {
		t.Helper()
		_, errs, err := me.run("", args...)
		if err == nil || !strings.Contains(errs, want) || !strings.HasPrefix(errs, "dpctl: ") || strings.Contains(errs, "genl:") {
			t.Errorf("dpctl %s: %v, stderr %q; want an error with %q", strings.Join(args, " "), err, errs, want)
		}
	}
	check("datapath system@nope does not exist", "show", "system@nope")
	check("no port named nope in system@", "del-if", dp, "nope")
	check("column 16", "add-flow", dp, "in_port(1),eth(sorc=00:00:00:00:00:01)", "2")
	check("file exists", "add-dp", dp)

	// Without CAP_NET_ADMIN.
	cmd := exec.Command(os.Args[0], "add-dp", "system@nopriv")
	cmd.Env = append(os.Environ(), "DPCTL_TEST_MAIN=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Run(); err == nil || !strings.Contains(errb.String(), "CAP_NET_ADMIN is needed") {
		t.Errorf("add-dp as nobody: %v, stderr %q; want CAP_NET_ADMIN is needed", err, errb.String())
	}
}

// bulkFlows writes n distinct flows to a file for add-flows, and their
// keys alone to another for del-flows (ovs-dpctl, like dpctl, refuses a
// delete line with actions).
func bulkFlows(t testing.TB, n int) (addFile, delFile string) {
	t.Helper()
	dir := t.TempDir()
	addFile, delFile = filepath.Join(dir, "add"), filepath.Join(dir, "del")
	var a, d strings.Builder
	for i := 0; i < n; i++ {
		k := fmt.Sprintf("in_port(1),eth(src=00:00:00:00:00:01,dst=00:00:00:00:00:02),eth_type(0x0800),ipv4(src=10.%d.%d.%d,dst=10.0.0.2,proto=17,tos=0,ttl=64,frag=no),udp(src=1,dst=2)", i>>16&0xff, i>>8&0xff, i&0xff)
		a.WriteString(k + " 2\n")
		d.WriteString(k + "\n")
	}
	if err := os.WriteFile(addFile, []byte(a.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(delFile, []byte(d.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return addFile, delFile
}

// bulkSize is the number of flows of the bulk test and benchmark:
// DPCTL_BULK, else 10,000 (make ktest sets 100,000, as the issue asks;
// that takes a few minutes under TCG).
func bulkSize() int {
	n := 10000
	if s := os.Getenv("DPCTL_BULK"); s != "" {
		fmt.Sscan(s, &n)
	}
	return n
}

func countLines(s string) int { return strings.Count(s, "\n") }

func TestIntegrationBulk(t *testing.T) {
	requireKernel(t)
	me := ours()
	dp := "system@" + newDP(t, "p1,type=internal", "p2,type=internal")
	n := bulkSize()
	file, delFile := bulkFlows(t, n)
	start := time.Now()
	me.must(t, "add-flows", dp, file)
	t.Logf("add-flows of %d flows: %v", n, time.Since(start))
	start = time.Now()
	if got := countLines(me.must(t, "dump-flows", dp)); got != n {
		t.Errorf("dump-flows | wc -l = %d, want %d", got, n)
	}
	t.Logf("dump-flows of %d flows: %v", n, time.Since(start))
	start = time.Now()
	me.must(t, "del-flows", dp, delFile)
	t.Logf("del-flows FILE of %d flows: %v", n, time.Since(start))
	if got := countLines(me.must(t, "dump-flows", dp)); got != 0 {
		t.Errorf("after del-flows FILE: %d flows left", got)
	}
}

// copyBinary copies the executable at path into dir and returns the
// copy's path.
func copyBinary(tb testing.TB, path, dir string) string {
	tb.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	dst := filepath.Join(dir, filepath.Base(path))
	if err := os.WriteFile(dst, data, 0o755); err != nil {
		tb.Fatal(err)
	}
	return dst
}

// BenchmarkIntegrationFlows times add-flows, dump-flows and del-flows
// FILE of bulkSize() flows with dpctl and with ovs-dpctl in the same run,
// and reports dpctl's speed relative to ovs-dpctl (>1: dpctl faster).
func BenchmarkIntegrationFlows(b *testing.B) {
	requireKernel(b)
	n := bulkSize()
	file, delFile := bulkFlows(b, n)
	dp := "system@" + newDP(b, "p1,type=internal", "p2,type=internal")
	// Both tools run from copies in a local temporary directory. In the
	// VM, /usr/bin and the work tree are 9p shares without a page cache:
	// every run pages its binary in again over virtio, which cost dpctl
	// (10 MB) about 1.1 s of system time per command against ovs-dpctl's
	// 2.3 MB, more than a whole 10k-flow dump. On a real machine both
	// are on local disk.
	dir := b.TempDir()
	tools := []tool{reference(), ours()}
	for i := range tools {
		tools[i].path = copyBinary(b, tools[i].path, dir)
	}
	// Each tool adds the flows and deletes them once per iteration.
	// Dumping leaves the table as it is, so while it is full both tools
	// dump it, dumpRounds times each, taking turns to go first: a 10k
	// dump takes about 1.5 s under TCG, and one sample of it varies by
	// more than the difference between the tools.
	const dumpRounds = 2
	times := map[string][3]time.Duration{}
	runs := map[string][3]int{}
	timed := func(tl tool, j int, args ...string) string {
		start := time.Now()
		out := tl.must(b, args...)
		t, r := times[tl.name], runs[tl.name]
		t[j] += time.Since(start)
		r[j]++
		times[tl.name], runs[tl.name] = t, r
		return out
	}
	for i := 0; i < b.N; i++ {
		for _, tl := range tools {
			timed(tl, 0, "add-flows", dp, file)
			for r := 0; r < dumpRounds; r++ {
				for k := range tools {
					d := tools[(k+r)%len(tools)]
					if got := countLines(timed(d, 1, "dump-flows", dp)); got != n {
						b.Fatalf("%s dump-flows: %d lines, want %d", d.name, got, n)
					}
				}
			}
			timed(tl, 2, "del-flows", dp, delFile)
		}
	}
	for j, what := range []string{"add", "dump", "del"} {
		r, o := times["ovs-dpctl"][j], times["dpctl"][j]
		b.ReportMetric(float64(r)/float64(o), what+"-speedup")
		b.Logf("%s-flows of %d flows (%d runs): ovs-dpctl %v, dpctl %v: dpctl %.2fx as fast", what, n, runs["dpctl"][j], r, o, float64(r)/float64(o))
	}
}
