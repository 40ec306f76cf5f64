package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ovsdp/ovsdp/odp"
	"github.com/ovsdp/ovsdp/userdp"
	"github.com/ovsdp/ovsdp/userdp/ctl"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// harness hosts userspace datapaths in the test process, behind control
// sockets in a temporary OVSDP_RUNDIR, and runs dpctl commands against
// them with newApp: no privileges needed.
type harness struct {
	t   *testing.T
	log strings.Builder // the transcript compared with the golden file
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	dir, err := os.MkdirTemp("", "dpctl") // short: socket paths are limited to 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	t.Setenv("OVSDP_RUNDIR", dir)
	// The host's kernel datapaths (or its lack of the module) must not
	// change the transcripts: the system type has none here.
	saved := backends["system"]
	backends["system"] = noKernel{}
	t.Cleanup(func() { backends["system"] = saved })
	return &harness{t: t}
}

// noKernel is a system backend without datapaths.
type noKernel struct{}

func (noKernel) list(context.Context) ([]string, error) { return nil, nil }
func (noKernel) create(context.Context, string) error {
	return fmt.Errorf("kernel datapaths are disabled in this test: %w", os.ErrPermission)
}
func (noKernel) open(context.Context, string) (odp.Datapath, error) {
	return nil, fmt.Errorf("genl: ovs_datapath get: %w", os.ErrNotExist)
}
func (noKernel) del(context.Context, string) error { return os.ErrNotExist }

// hostDP starts the userspace datapath netdev@name, as upcalld would.
func (h *harness) hostDP(name string, opts ...userdp.Option) *userdp.Datapath {
	h.t.Helper()
	dp, err := userdp.New(name, append([]userdp.Option{userdp.WithoutLocalPort(), userdp.WithRebalanceInterval(0)}, opts...)...)
	if err != nil {
		h.t.Fatal(err)
	}
	srv, err := ctl.Listen(ctl.SocketPath(name), dp)
	if err != nil {
		dp.Close()
		h.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			srv.Close()
			<-done
			os.Remove(ctl.SocketPath(name))
			dp.Close()
		})
	}
	// Set before Serve runs, and stop once however often it is called
	// (del-dp has the server call it, the test's cleanup too).
	srv.OnDelete = stop
	go func() { _ = srv.Serve(ctx); close(done) }()
	h.t.Cleanup(stop)
	return dp
}

// result is one command's outcome.
type result struct {
	stdout, stderr string
	code           int
}

// run runs dpctl with args (global options anywhere, as in main) and
// stdin, and records the command and its outcome in the transcript.
func (h *harness) run(stdin string, args ...string) result {
	h.t.Helper()
	var out, errb bytes.Buffer
	app := newApp(strings.NewReader(stdin), &out, &errb)
	err := app.Run(permuteFlags(append([]string{"dpctl"}, args...)))
	resetGlobals()
	r := result{code: 0}
	if err != nil {
		reportError(&errb, err)
		r.code = exitCode(err)
	}
	r.stdout, r.stderr = normalize(out.String()), normalize(errb.String())
	if isTextDump(args) {
		// Both datapaths dump in hash-table order.
		lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
		sort.Strings(lines)
		r.stdout = strings.Join(lines, "\n") + "\n"
	}
	fmt.Fprintf(&h.log, "$ dpctl %s\n", normalize(strings.Join(args, " ")))
	if stdin != "" {
		for _, l := range strings.SplitAfter(strings.TrimSuffix(stdin, "\n"), "\n") {
			fmt.Fprintf(&h.log, "< %s", l)
		}
		h.log.WriteString("\n")
	}
	h.log.WriteString(r.stdout)
	for _, l := range strings.SplitAfter(strings.TrimSuffix(r.stderr, "\n"), "\n") {
		if l != "" {
			fmt.Fprintf(&h.log, "! %s", strings.TrimSuffix(l, "\n")+"\n")
		}
	}
	if r.code != 0 {
		fmt.Fprintf(&h.log, "[exit %d]\n", r.code)
	}
	h.log.WriteString("\n")
	return r
}

// isTextDump reports whether args run dump-flows with text output.
func isTextDump(args []string) bool {
	dump, json := false, false
	for i, a := range args {
		switch {
		case a == "dump-flows":
			dump = true
		case a == "--format=json" || a == "-f=json" || ((a == "-f" || a == "--format") && i+1 < len(args) && args[i+1] == "json"):
			json = true
		}
	}
	return dump && !json
}

// mustRun runs a command that must succeed.
func (h *harness) mustRun(stdin string, args ...string) result {
	h.t.Helper()
	r := h.run(stdin, args...)
	if r.code != 0 {
		h.t.Errorf("dpctl %s: exit %d: %s", strings.Join(args, " "), r.code, r.stderr)
	}
	return r
}

// mustFail runs a command that must fail with a message containing want.
func (h *harness) mustFail(want string, stdin string, args ...string) result {
	h.t.Helper()
	r := h.run(stdin, args...)
	if r.code == 0 {
		h.t.Errorf("dpctl %s: succeeded, want failure %q", strings.Join(args, " "), want)
	} else if !strings.Contains(r.stderr, want) {
		h.t.Errorf("dpctl %s: stderr %q does not contain %q", strings.Join(args, " "), r.stderr, want)
	}
	if !strings.HasPrefix(r.stderr, "dpctl: ") || strings.Contains(r.stderr, "dpctl: dpctl:") {
		h.t.Errorf("dpctl %s: stderr %q: want one \"dpctl: \" prefix", strings.Join(args, " "), r.stderr)
	}
	return r
}

var (
	usedRE   = regexp.MustCompile(`used:[0-9]+\.[0-9]+s`)
	usedJSON = regexp.MustCompile(`"Used": ?[0-9]+`)
)

// normalize replaces what cannot be stable: used: times (a clock
// difference), and the run directory.
func normalize(s string) string {
	s = usedRE.ReplaceAllString(s, "used:T")
	s = usedJSON.ReplaceAllString(s, `"Used":T`)
	if d := os.Getenv("OVSDP_RUNDIR"); d != "" {
		s = strings.ReplaceAll(s, d, "$RUNDIR")
	}
	return s
}

// check compares the transcript with testdata/NAME.golden (or writes it
// with -update).
func (h *harness) check(name string) {
	h.t.Helper()
	path := filepath.Join("testdata", name+".golden")
	got := h.log.String()
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			h.t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		h.t.Fatalf("%v (run go test -run %s -update to create it)", err, h.t.Name())
	}
	if d := cmp.Diff(string(want), got); d != "" {
		h.t.Errorf("%s differs (-want +got):\n%s", path, d)
	}
}

// addMemPorts adds in-memory ports to netdev@name.
func (h *harness) addMemPorts(name string, ports ...string) {
	h.t.Helper()
	args := []string{"add-if", "netdev@" + name}
	for _, p := range ports {
		args = append(args, p+",type=memory")
	}
	h.mustRun("", args...)
}

func TestGoldenDatapaths(t *testing.T) {
	h := newHarness(t)
	h.mustRun("", "dump-dps")
	h.hostDP("br0")
	h.hostDP("br1")
	h.mustRun("", "dump-dps")
	h.mustRun("", "-f", "json", "dump-dps")
	h.addMemPorts("br0", "p1", "p2")
	h.mustRun("", "add-if", "netdev@br0", "p9,type=memory,port_no=9,mtu=9000")
	h.mustFail("exists", "", "add-if", "netdev@br0", "p1,type=memory")
	h.mustFail("not supported", "", "add-if", "netdev@br0", "v1,type=erspan")
	h.mustRun("", "show", "netdev@br0")
	h.mustRun("", "show", "-s", "netdev@br0")
	h.mustRun("", "show")
	h.mustRun("", "show", "--format", "json", "netdev@br1")
	h.mustFail("datapath netdev@nope does not exist", "", "show", "netdev@nope")
	h.mustRun("", "set-if", "netdev@br0", "p9,mtu=1500")
	h.mustFail("can't change type", "", "set-if", "netdev@br0", "p9,type=internal")
	h.mustFail("no port named nope in netdev@br0", "", "set-if", "netdev@br0", "nope")
	h.mustRun("", "del-if", "netdev@br0", "p9")
	h.mustFail("no port named p9 in netdev@br0", "", "del-if", "netdev@br0", "p9")
	h.mustRun("", "show", "netdev@br0")
	h.mustRun("", "cache-get-size", "netdev@br0")
	h.mustRun("", "-f", "json", "cache-get-size")
	h.run("", "cache-set-size", "netdev@br0", "masks-cache", "256")
	h.mustFail("unknown cache", "", "cache-set-size", "netdev@br0", "emc", "256")
	h.mustFail("size is malformed", "", "cache-set-size", "netdev@br0", "masks-cache", "x")
	h.mustFail("exists", "", "add-dp", "netdev@br0")
	h.mustFail("unknown datapath type", "", "add-dp", "dummy@x")
	h.mustRun("", "del-dp", "netdev@br1")
	h.mustRun("", "dump-dps")
	h.mustFail("does not exist", "", "del-dp", "netdev@br1")
	h.check("datapaths")
}

func TestGoldenFlows(t *testing.T) {
	h := newHarness(t)
	h.hostDP("br0")
	h.addMemPorts("br0", "p1", "p2", "p3")
	// The DP argument is optional with a single datapath.
	h.mustRun("", "add-flow", "in_port(1),eth(src=00:00:00:00:00:01,dst=00:00:00:00:00:02),eth_type(0x0800),ipv4(src=10.0.0.1,dst=10.0.0.2/255.255.255.0,proto=6,tos=0,ttl=64,frag=no),tcp(src=80,dst=8080)", "set(ipv4(ttl=63)),push_vlan(vid=10,pcp=0),2")
	h.mustRun("", "add-flow", "netdev@br0", "ufid:11111111-2222-3333-4444-555555555555,in_port(2),eth(),eth_type(0x0800),ipv4(src=10.0.0.0/255.0.0.0,proto=17,frag=no),udp(dst=53)", "set(ipv4(src=1.1.1.1/255.255.255.255,ttl=9/0)),3")
	h.mustRun("", "add-flow", "in_port(p3),eth(),eth_type(0x86dd),ipv6(proto=58,frag=no),icmpv6(type=128)", "drop")
	h.mustRun("", "add-flow", "in_port(3),eth(dst=ff:ff:ff:ff:ff:ff),eth_type(0x0806),arp(op=1)", "1,drop")
	h.mustFail("exists", "", "add-flow", "in_port(3),eth(dst=ff:ff:ff:ff:ff:ff),eth_type(0x0806),arp(op=1)", "2")
	h.mustFail("column 16", "", "add-flow", "in_port(1),eth(sorc=00:00:00:00:00:01)", "2")
	h.mustFail("parsing actions", "", "add-flow", "in_port(1),eth()", "set(ipv4(ttl=1)")
	h.mustFail("datapath netdev@nope does not exist", "", "add-flow", "netdev@nope", "in_port(1)", "2")
	h.mustRun("", "dump-flows")
	h.mustRun("", "dump-flows", "-m")
	h.mustRun("", "dump-flows", "--names")
	h.mustRun("", "dump-flows", "filter=tcp,tp_dst=8080")
	h.mustRun("", "dump-flows", "netdev@br0", "filter=in_port=p2")
	h.mustRun("", "dump-flows", "filter=udp,nw_src=10.1.0.0/16")
	h.mustRun("", "dump-flows", "filter=arp")
	h.mustFail("failed to parse filter", "", "dump-flows", "filter=tcp,tp_dst=foo")
	h.mustFail("no port has this name", "", "dump-flows", "filter=in_port=nope")
	h.mustRun("", "-f", "json", "dump-flows", "filter=udp")
	h.mustRun("", "get-flow", "ufid:11111111-2222-3333-4444-555555555555")
	h.mustRun("", "get-flow", "--format=json", "ufid:11111111-2222-3333-4444-555555555555")
	h.mustFail("getting flow", "", "get-flow", "ufid:99999999-2222-3333-4444-555555555555")
	h.mustRun("", "mod-flow", "-s", "in_port(3),eth(dst=ff:ff:ff:ff:ff:ff),eth_type(0x0806),arp(op=1)", "1,2")
	h.mustRun("", "mod-flow", "-s", "-f", "json", "--clear", "in_port(3),eth(dst=ff:ff:ff:ff:ff:ff),eth_type(0x0806),arp(op=1)", "2")
	h.mustFail("no such file", "", "mod-flow", "in_port(3),eth(),eth_type(0x0806),arp(op=2)", "2")
	h.mustRun("", "mod-flow", "--may-create", "in_port(3),eth(),eth_type(0x0806),arp(op=2)", "2")
	h.mustRun("", "del-flow", "-s", "in_port(3),eth(),eth_type(0x0806),arp(op=2)")
	h.mustFail("perhaps you need to specify a UFID", "", "del-flow", "in_port(3),eth(),eth_type(0x0806),arp(op=2)")
	h.mustRun("", "del-flow", "ufid:11111111-2222-3333-4444-555555555555")
	h.mustRun("", "dump-flows")
	h.mustRun("", "del-flows")
	h.mustRun("", "dump-flows")
	// Flows on Geneve option bytes and on ERSPAN metadata (geneveFlows,
	// erspanFlows: the same flows the kernel comparison puts on
	// system@), one set at a time.
	for _, set := range []struct {
		flows [][2]string
		ufid  string
	}{{geneveFlows, geneveUFID}, {erspanFlows, erspanUFID}} {
		h.mustRun("", "del-flows")
		for _, f := range set.flows {
			h.mustRun("", "add-flow", f[0], f[1])
		}
		h.mustRun("", "dump-flows")
		h.mustRun("", "dump-flows", "-m")
		h.mustRun("", "get-flow", set.ufid)
	}
	h.check("flows")
}

func TestGoldenFlowFiles(t *testing.T) {
	h := newHarness(t)
	h.hostDP("br0")
	h.addMemPorts("br0", "p1", "p2")
	file := "# flows\n" +
		"in_port(1),eth(),eth_type(0x0800),ipv4(dst=10.0.0.1,frag=no) 2\n" +
		"add in_port(1),eth(),eth_type(0x0800),ipv4(dst=10.0.0.2,frag=no) 2\n" +
		"\n" +
		"in_port(1),eth(),eth_type(0x0800),ipv4(dst=10.0.0.3,frag=no) bogus(1)\n" +
		"in_port(1),eth(),eth_type(0x0800),ipv4(dst=10.0.0.4,frag=no)\n"
	h.mustFail("2 of the lines of - failed", file, "add-flows", "-")
	h.mustRun("", "dump-flows")
	path := filepath.Join(os.Getenv("OVSDP_RUNDIR"), "mod.txt")
	mod := "in_port(1),eth(),eth_type(0x0800),ipv4(dst=10.0.0.1,frag=no) 1\n" +
		"delete in_port(1),eth(),eth_type(0x0800),ipv4(dst=10.0.0.2,frag=no)\n" +
		"add in_port(1),eth(),eth_type(0x0800),ipv4(dst=10.0.0.5,frag=no) 1\n"
	if err := os.WriteFile(path, []byte(mod), 0o644); err != nil {
		t.Fatal(err)
	}
	h.mustRun("", "mod-flows", "netdev@br0", path)
	h.mustRun("", "dump-flows")
	h.mustRun("in_port(1),eth(),eth_type(0x0800),ipv4(dst=10.0.0.5,frag=no)\n", "del-flows", "netdev@br0", "-")
	h.mustRun("", "dump-flows")
	h.mustFail("opening file", "", "add-flows", "/nonexistent/flows")
	h.check("flowfiles")
}

// TestGoldenMeters runs the meter commands on a userspace datapath, which
// has meters as the kernel does (TestIntegrationMetersAndLimits runs them
// on system@; userdp's TestMeterAction sends packets through a meter).
func TestGoldenMeters(t *testing.T) {
	h := newHarness(t)
	h.hostDP("br0")
	h.mustRun("", "meter-features")
	h.mustRun("", "add-meter", "1", "pktps", "rate=1,burst=2")
	h.mustRun("", "add-meter", "netdev@br0", "7", "rate=1000,burst=100")
	h.mustFail("meter 9: 2 bands, at most 1", "", "add-meter", "9", "rate=1", "rate=2")
	h.mustFail("rate 0", "", "add-meter", "9", "rate=0")
	h.mustRun("", "show-meters")
	h.mustFail("reading meter 3", "", "show-meters", "3")
	h.mustRun("", "-s", "del-meter", "1")
	h.mustRun("", "del-meter", "7")
	h.mustRun("", "show-meters")
	h.check("meters")
}

// TestGoldenLimits runs the conntrack-limit commands on netdev@, whose
// tracker has the kernel's ovs_ct_limit semantics (odp.CTLimiter over
// the control socket), and the meter and limit commands' argument
// errors.
func TestGoldenLimits(t *testing.T) {
	h := newHarness(t)
	h.hostDP("br0")
	for _, args := range [][]string{
		{"ct-set-limits", "default=10", "zone=1,limit=5", "zone=2,limit=7"},
		{"ct-get-limits"},
		{"ct-get-limits", "zone=1,3"},
		{"ct-del-limits", "zone=1"},
		{"ct-get-limits", "zone=1"},
		{"ct-del-limits", "default"},
		{"ct-get-limits"},
	} {
		h.mustRun("", args...)
	}
	// Argument errors come before the datapath's.
	h.mustFail("no band given", "", "add-meter", "1", "kbps")
	h.mustFail("wrong number of arguments", "", "add-meter", "1")
	h.mustFail("is not a meter ID", "", "add-meter", "x", "rate=1")
	h.mustFail("invalid zone limit field: lim", "", "ct-set-limits", "zone=1,lim=5")
	h.mustFail("invalid argument zones=1", "", "ct-get-limits", "zones=1")
	h.check("limits")
}

func TestGoldenParse(t *testing.T) {
	h := newHarness(t)
	keys := "# keys\nin_port(1),eth(src=00:00:00:00:00:01,dst=00:00:00:00:00:02),eth_type(0x0800)\n\nin_port(1),foo(2)\n"
	h.mustFail("1 line(s) failed", keys, "parse-keys")
	h.mustRun("eth_type(0x0800),ipv4(src=10.0.0.1/255.255.255.0,dst=10.0.0.2,proto=6,tos=0,ttl=64/0,frag=no)\n", "parse-wc-keys")
	acts := "set(ipv4(ttl=63)),push_vlan(vid=10,pcp=0),2\ndrop\n1,drop(3)\nrecirc(0x5),hash(l4(0)),dec_ttl(le_1(drop)),meter(3)\n"
	h.mustRun(acts, "parse-actions")
	h.mustRun("1,2\n", "-f", "json", "parse-actions")
	h.check("parse")
}

func TestGoldenUsage(t *testing.T) {
	h := newHarness(t)
	h.mustFail("missing command name", "")
	h.mustFail(`unknown command "nonsense"`, "", "nonsense")
	h.mustFail("flag provided but not defined", "", "--bogus", "dump-dps")
	h.mustFail(`--format "xml": want text or json`, "", "--format", "xml", "dump-dps")
	h.mustFail("wrong number of arguments", "", "del-dp")
	h.mustFail("no datapath found", "", "dump-flows")
	h.hostDP("a")
	h.hostDP("b")
	h.mustFail("several datapaths exist (netdev@a, netdev@b): name one", "", "dump-flows")
	h.check("usage")
}

// TestProbeKey checks the drop probe's constant key.
func TestProbeKey(t *testing.T) {
	k, _, err := odp.ParseMaskedKey(probeKey)
	if err != nil || len(k) == 0 {
		t.Fatalf("probe key %q: %v", probeKey, err)
	}
}
