//go:build integration

package daemon

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/ovsdp/ovsdp/internal/header"
	"github.com/ovsdp/ovsdp/odp"
	"github.com/ovsdp/ovsdp/testenv"
)

// BenchmarkIntegrationVsOVS handles the same traffic of new flows once
// with upcalld and once with a private ovs-vswitchd (Debian's, started
// under a temporary directory: ovsdb-tool create, ovsdb-server
// --remote=punix:, ovs-vswitchd --pidfile --detach), on the same kind of
// datapath: "system" (the kernel's; in the VM) or "netdev" (the
// userspace one: upcalld's netdev@ and ovs-vswitchd's
// datapath_type=netdev, on the host). The topology is the same for both:
// a sender namespace and a sink namespace, each with a veth whose other
// end is a port of the switch (OpenFlow ports 1 and 2 for OVS). The
// workloads:
//
//   - macs: the learning switch (upcalld's default rules, OVS's NORMAL);
//     OVSCMP_FLOWS frames (default 1000), each from a new source MAC to
//     the sink (whose address both learned first);
//   - tuples: OVSCMP_FLOWS rules, each an exact UDP 5-tuple to port 2
//     (the same text as upcalld rules and as OpenFlow flows, megaflows
//     exact on the 5-tuple), and one frame of each 5-tuple;
//   - pipeline: a typical VLAN pipeline in both languages (table 0 tags
//     port 1's untagged frames with VLAN 10 and resubmits to table 1,
//     which forwards VLAN 10 frames to the sink's MAC on port 2 with the
//     tag stripped, and drops the rest), and frames with new source MACs
//     and new source ports: the megaflows should be few.
//
// The frames are sent from an AF_PACKET socket at OVSCMP_RATE frames a
// second (default: 1000 on system, under QEMU TCG; 10000 on netdev), in
// bursts of 16, and the sink's socket is read, by a process of their
// own (this test binary again, in peer mode: runCmpPeer) for both
// switches: the same offered load for both, and upcalld's process holds
// only upcalld. Reported, measured the same way for both:
// setup/s (new flows delivered to the sink per second, from the first
// frame sent to the last delivered), first-packet latency p50 and p99
// (send to arrival at the sink, per new flow: the upcall's whole round
// trip), undelivered frames, the datapath's lost upcalls (its
// statistics: upcalld's Status or `ovs-appctl dpctl/show`), delivered
// (new flows that reached the sink), and megaflows (the datapath's flow count after the
// traffic: upcalld's dump, or the lines of `ovs-appctl dpctl/dump-flows`,
// which for system@ is what `ovs-dpctl dump-flows | wc -l` counts). upcalld also reports its own handler latency
// (handler-p50-ns, handler-p99-ns); ovs-vswitchd exposes none for the
// kernel datapath.
//
//	go test -c -tags integration -o /tmp/daemon.test ./cmd/upcalld/internal/daemon
//	bin/vmrun /tmp/daemon.test -test.run '^$' -test.bench '^BenchmarkIntegrationVsOVS$/^system$' -test.benchtime 1x
//	/tmp/daemon.test -test.run '^$' -test.bench '^BenchmarkIntegrationVsOVS$/^netdev$' -test.benchtime 1x   # host, as root
func BenchmarkIntegrationVsOVS(b *testing.B) {
	for _, dp := range []struct {
		name string
		open func(testing.TB) odp.Datapath
		rate int
	}{{"system", openKernel, 1000}, {"netdev", openUserdp, 10000}} {
		b.Run(dp.name, func(b *testing.B) {
			for _, w := range []string{"macs", "tuples", "pipeline"} {
				b.Run(w, func(b *testing.B) {
					c := cmpCase{dpType: dp.name, workload: w, flows: envInt("OVSCMP_FLOWS", 1000), rate: envInt("OVSCMP_RATE", dp.rate)}
					b.Run("upcalld", func(b *testing.B) { c.run(b, false, func(n *cmpNet) cmpSwitch { return c.upcalld(b, n, dp.open) }) })
					// ovs-vswitchd's userspace datapath is one per process,
					// with a tap device "ovs-netdev": in a namespace of its
					// own, it cannot meet another instance on this host.
					b.Run("ovs", func(b *testing.B) { c.run(b, dp.name == "netdev", func(n *cmpNet) cmpSwitch { return c.ovs(b, n) }) })
				})
			}
		})
	}
}

// BenchmarkIntegrationVsOVSSat is BenchmarkIntegrationVsOVS with the
// same workloads, topology and measurement, offered faster than either
// switch sets up flows (issue 17: at OVSCMP_RATE both keep up, so the
// ratio is pinned at 1): OVSSAT_FLOWS new flows (default 2000 on system,
// under QEMU TCG; 10000 on netdev) at OVSSAT_RATE frames a second
// (default 4000 on system; 100000 on netdev). setup/s is then each
// switch's achieved rate; sent/s says what the sender achieved, and the
// drop counters (sink-drops, port-drops, veth-drops, softnet-drops) say
// where undelivered frames went. The sender and the sink run in a
// process of their own for both switches (runCmpPeer) since this
// benchmark's first report: before, they ran inside the benchmark's
// process, which in upcalld's runs was upcalld's, so that upcalld was
// offered less (in the VM the sender reached 1431-3550 frames/s of 4000,
// against ~4000 in ovs-vswitchd's runs) and its collector paid for the
// sender's garbage; those early figures are not comparable with these.
// In the VM (2 vCPUs under TCG) a separate sender can still fall short
// in a round where upcalld takes both CPUs (measured: median sent/s 4018
// and 4007 over 3 rounds, but 3051 and 2058 in single rounds): sent/s
// says so per run. On netdev they account for every
// undelivered frame: ovs-vswitchd's are dropped by its ingress port's
// AF_PACKET socket, whose receive buffer (the default 212992 bytes, a
// few hundred frames) overflows while its thread sets up flows inline,
// and which its own counters (lost, port dropped) do not show;
// upcalld's are the upcalls its datapath's queues had no room for (lost:
// 1024 per handler) and those its overloaded handlers shed (queue half
// full: misses from unknown sources). The sender and the sink lose none.
//
//	/tmp/daemon.test -test.run '^$' -test.bench '^BenchmarkIntegrationVsOVSSat$/^netdev$' -test.benchtime 1x   # host, as root
func BenchmarkIntegrationVsOVSSat(b *testing.B) {
	for _, dp := range []struct {
		name        string
		open        func(testing.TB) odp.Datapath
		flows, rate int
	}{{"system", openKernel, 2000, 4000}, {"netdev", openUserdp, 10000, 100000}} {
		b.Run(dp.name, func(b *testing.B) {
			for _, w := range []string{"macs", "tuples", "pipeline"} {
				b.Run(w, func(b *testing.B) {
					c := cmpCase{dpType: dp.name, workload: w, flows: envInt("OVSSAT_FLOWS", dp.flows), rate: envInt("OVSSAT_RATE", dp.rate)}
					b.Run("upcalld", func(b *testing.B) { c.run(b, false, func(n *cmpNet) cmpSwitch { return c.upcalld(b, n, dp.open) }) })
					b.Run("ovs", func(b *testing.B) { c.run(b, dp.name == "netdev", func(n *cmpNet) cmpSwitch { return c.ovs(b, n) }) })
				})
			}
		})
	}
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// cmpCase is one workload on one kind of datapath.
type cmpCase struct {
	dpType, workload string
	flows, rate      int
}

// cmpNet is the sender and the sink, and their veths' switch ends (in
// sw, or the test's namespace when nil).
type cmpNet struct {
	src, dst       *testenv.Netns
	srcV, dstV     *testenv.Veth
	srcMAC, dstMAC [6]byte
	sw             *testenv.Netns
}

// cmpHost is newHost with the veth's other end in sw (nil: here).
func cmpHost(tb testing.TB, ip string, sw *testenv.Netns) (*testenv.Netns, *testenv.Veth) {
	if sw == nil {
		return newHost(tb, ip)
	}
	ns := testenv.NewNetns(tb)
	ns.MustRun(tb, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1")
	v := testenv.NewVeth(tb, ns, sw)
	ns.AddAddr(tb, v.Name, ip+"/24")
	for _, side := range []struct {
		ns   *testenv.Netns
		name string
	}{{ns, v.Name}, {sw, v.PeerName}} {
		if err := side.ns.Do(func() error { return disableOffloads(side.name) }); err != nil {
			tb.Fatal(err)
		}
	}
	return ns, v
}

// cmpSwitch is the switch under test, as the measurement sees it.
type cmpSwitch struct {
	// lost returns the datapath's lost upcalls so far.
	lost func() uint64
	// flows returns the datapath's flow count.
	flows func() int
	// portDrops returns the frames the datapath's two ports dropped so
	// far (received or sent: its port statistics).
	portDrops func() uint64
	// extra reports the switch's own metrics once the traffic is done.
	extra func(b *testing.B)
}

// vethDrops is the sum of the dropped counters (rx and tx) of the four
// veth ends.
func (n *cmpNet) vethDrops(tb testing.TB) uint64 {
	var total uint64
	add := func(l netlink.Link) {
		if st := l.Attrs().Statistics; st != nil {
			total += st.RxDropped + st.TxDropped
		}
	}
	for _, v := range []struct {
		ns   *testenv.Netns
		name string
	}{{n.src, n.srcV.Name}, {n.dst, n.dstV.Name}} {
		add(v.ns.Link(tb, v.name))
	}
	for _, name := range []string{n.srcV.PeerName, n.dstV.PeerName} {
		if n.sw != nil {
			add(n.sw.Link(tb, name))
			continue
		}
		l, err := netlink.LinkByName(name)
		if err != nil {
			tb.Fatalf("link %s: %v", name, err)
		}
		add(l)
	}
	return total
}

// socketDropsRE is a packet socket's line in `ss -0 -m -n -a`: the
// device it is bound to and its drop count (skmem's d: frames its
// receive buffer had no room for).
var socketDropsRE = regexp.MustCompile(`\*:(\S+)\s.*skmem:\(.*,d(\d+)\)`)

// socketDrops is the drops of the packet sockets bound to the switch's
// two veth ends (a userspace switch's receive sockets; none on the
// kernel datapath), from ss in the switch's namespace.
func (n *cmpNet) socketDrops(tb testing.TB) uint64 {
	var out string
	var err error
	if n.sw != nil {
		out, err = n.sw.Run("ss", "-0", "-m", "-n", "-a")
	} else {
		var b []byte
		b, err = exec.Command("ss", "-0", "-m", "-n", "-a").Output()
		out = string(b)
	}
	if err != nil {
		tb.Fatalf("ss: %v", err)
	}
	var total uint64
	for _, m := range socketDropsRE.FindAllStringSubmatch(out, -1) {
		if m[1] == n.srcV.PeerName || m[1] == n.dstV.PeerName {
			v, _ := strconv.ParseUint(m[2], 10, 64)
			total += v
		}
	}
	return total
}

// softnetDrops is the kernel's backlog drops over all CPUs (the second
// column of /proc/net/softnet_stat: frames netif_rx found no room for).
func softnetDrops(tb testing.TB) uint64 {
	data, err := os.ReadFile("/proc/net/softnet_stat")
	if err != nil {
		tb.Fatalf("reading softnet_stat: %v", err)
	}
	var total uint64
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) > 1 {
			v, _ := strconv.ParseUint(f[1], 16, 64)
			total += v
		}
	}
	return total
}

// sinkDrops returns the frames the sink's socket dropped since the last
// call (PACKET_STATISTICS resets on read).
func sinkDrops(fd int) uint64 {
	st, err := unix.GetsockoptTpacketStats(fd, unix.SOL_PACKET, unix.PACKET_STATISTICS)
	if err != nil {
		return 0
	}
	return uint64(st.Drops)
}

// rules returns the workload's rules, with in1 and out2 as the names of
// ports 1 and 2 ("" for macs: the learning switch).
func (c *cmpCase) rules(n *cmpNet, in1, out2 string) string {
	var s strings.Builder
	switch c.workload {
	case "tuples":
		s.WriteString(tupleRules(c.flows, out2))
	case "pipeline":
		fmt.Fprintf(&s, "table=0,priority=10,in_port=%s,dl_vlan=0xffff,actions=mod_vlan_vid:10,resubmit(,1)\n", in1)
		s.WriteString("table=0,priority=0,actions=drop\n")
		fmt.Fprintf(&s, "table=1,priority=10,dl_vlan=10,dl_dst=%s,actions=strip_vlan,output:%s\n", fmtMAC(n.dstMAC), out2)
		s.WriteString("table=1,priority=0,actions=drop\n")
	}
	return s.String()
}

// frame is the workload's i-th frame, carrying its sequence number.
func (c *cmpCase) frame(n *cmpNet, i int) []byte {
	src, sport := n.srcMAC, uint16(1000)
	switch c.workload {
	case "macs":
		src = [6]byte{0x02, 0xaa}
		binary.BigEndian.PutUint32(src[2:], uint32(i+1))
	case "tuples":
		sport = uint16(1024 + i)
	case "pipeline":
		src = [6]byte{0x02, 0xab}
		binary.BigEndian.PutUint32(src[2:], uint32(i+1))
		sport = uint16(1024 + i%30000)
	}
	f := udpFrame(src, n.dstMAC, ip4(10, 9, 0, 1), ip4(10, 9, 0, 2), sport, 9, 0)
	// The payload (8 bytes after the UDP header) carries a mark and i.
	binary.BigEndian.PutUint32(f[42:], 0x0cf0cf0c)
	binary.BigEndian.PutUint32(f[46:], uint32(i))
	return f
}

// run builds the network, starts the switch, learns the sink, sends the
// workload and reports.
func (c *cmpCase) run(b *testing.B, ownNS bool, start func(*cmpNet) cmpSwitch) {
	testenv.RequireRoot(b)
	n := &cmpNet{}
	if ownNS {
		n.sw = testenv.NewNetns(b)
	}
	n.src, n.srcV = cmpHost(b, hostIP(0), n.sw)
	n.dst, n.dstV = cmpHost(b, hostIP(1), n.sw)
	n.srcMAC = [6]byte(n.src.MAC(b, n.srcV.Name))
	n.dstMAC = [6]byte(n.dst.MAC(b, n.dstV.Name))
	sw := start(n)

	sink := rawSinkOn(b, n.dst, n.dstV.Name)
	// The sink speaks first, so that both switches know where it is.
	fd, sa := rawSenderOn(b, n.dst, n.dstV.Name)
	hello := udpFrame(n.dstMAC, mac{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, ip4(10, 9, 0, 2), ip4(10, 9, 0, 255), 9, 9, 0)
	for range 3 {
		unix.Sendto(fd, hello, 0, sa)
		time.Sleep(100 * time.Millisecond)
	}
	fd, sa = rawSenderOn(b, n.src, n.srcV.Name)
	frames := make([][]byte, c.flows)
	for i := range frames {
		frames[i] = c.frame(n, i)
	}
	lost0 := sw.lost()
	sinkDrops(sink)
	var port0 uint64
	if sw.portDrops != nil {
		port0 = sw.portDrops()
	}
	veth0, softnet0, sock0 := n.vethDrops(b), softnetDrops(b), n.socketDrops(b)
	b.ResetTimer()
	// The sender and the sink run in a process of their own (this test
	// binary again, in peer mode), so that upcalld's process holds only
	// upcalld and both switches are offered the same load.
	res, err := runCmpPeer(fd, sa.Ifindex, sink, c.rate, frames)
	if err != nil {
		b.Fatalf("%s/%s: the traffic process: %v", c.dpType, c.workload, err)
	}
	b.StopTimer()
	var lat []time.Duration
	var end time.Duration
	got := 0
	for i, a := range res.arrived {
		if a >= 0 {
			got++
			lat = append(lat, a-res.sent[i])
			end = max(end, a)
		}
	}
	sendErrs := res.sendErrs
	if got == 0 {
		b.Fatalf("%s/%s: no frame of %d reached the sink (%d send errors)", c.dpType, c.workload, c.flows, sendErrs)
	}
	slices.Sort(lat)
	q := func(p float64) time.Duration { return lat[min(len(lat)-1, int(p*float64(len(lat))))] }
	b.ReportMetric(float64(got)/end.Seconds(), "setup/s")
	b.ReportMetric(float64(q(0.5).Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(q(0.99).Nanoseconds()), "p99-ns")
	b.ReportMetric(float64(c.flows-got), "undelivered")
	b.ReportMetric(float64(got), "delivered")
	b.ReportMetric(float64(sw.lost()-lost0), "lost")
	b.ReportMetric(float64(sw.flows()), "megaflows")
	b.ReportMetric(float64(c.rate), "offered/s")
	b.ReportMetric(float64(sendErrs), "send-errors")
	b.ReportMetric(float64(c.flows)/res.sentEnd.Seconds(), "sent/s")
	b.ReportMetric(float64(sinkDrops(sink)), "sink-drops")
	if sw.portDrops != nil {
		b.ReportMetric(float64(sw.portDrops()-port0), "port-drops")
	}
	b.ReportMetric(float64(n.vethDrops(b)-veth0), "veth-drops")
	b.ReportMetric(float64(n.socketDrops(b)-sock0), "socket-drops")
	b.ReportMetric(float64(softnetDrops(b)-softnet0), "softnet-drops")
	if sw.extra != nil {
		sw.extra(b)
	}
}

// rawSinkOn opens an AF_PACKET socket in ns that receives what ifname
// receives (and sends), with reads that time out after 50 ms; it is
// closed when the test ends.
func rawSinkOn(tb testing.TB, ns *testenv.Netns, ifname string) int {
	fd := packetSocketIn(tb, ns)
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: header.Htons(unix.ETH_P_ALL), Ifindex: ns.Index(tb, ifname)}); err != nil {
		tb.Fatalf("binding the sink to %s: %v", ifname, err)
	}
	unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 8<<20)
	tv := unix.NsecToTimeval(int64(50 * time.Millisecond))
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		tb.Fatal(err)
	}
	return fd
}

// upcalld starts a daemon on a new datapath with the two ports.
func (c *cmpCase) upcalld(b *testing.B, n *cmpNet, open func(testing.TB) odp.Datapath) cmpSwitch {
	dp := open(b)
	cfg := Config{Datapath: dp, Ports: []string{n.srcV.PeerName, n.dstV.PeerName}, Handlers: 2, Logger: discardLogger(),
		IdleTimeout: time.Minute, FlowLimit: 200000}
	if r := c.rules(n, n.srcV.PeerName, n.dstV.PeerName); r != "" {
		cfg.Rules = mustRules(b, r)
	}
	d, _ := startDaemon(b, cfg)
	d.Latency().Reset()
	shed0 := d.Status().Shed
	return cmpSwitch{
		lost: func() uint64 {
			d.pollDatapath(context.Background())
			return d.Status().Lost
		},
		flows: func() int { return len(dumpFlows(b, dp)) },
		portDrops: func() uint64 {
			ports, err := dp.Ports(context.Background())
			if err != nil {
				b.Fatalf("listing ports: %v", err)
			}
			var total uint64
			for _, p := range ports {
				total += p.Stats.RxDropped + p.Stats.TxDropped
			}
			return total
		},
		extra: func(b *testing.B) {
			b.ReportMetric(float64(d.Latency().Quantile(0.5).Nanoseconds()), "handler-p50-ns")
			b.ReportMetric(float64(d.Latency().Quantile(0.99).Nanoseconds()), "handler-p99-ns")
			b.ReportMetric(float64(d.Status().Shed-shed0), "shed")
		},
	}
}

// ovs starts a private ovs-vswitchd with a bridge of the two ports.
func (c *cmpCase) ovs(b *testing.B, n *cmpNet) cmpSwitch {
	o := startOVS(b, n.sw)
	dpType := c.dpType
	o.vsctl("add-br", "br0", "--", "set", "bridge", "br0", "datapath_type="+dpType,
		"other_config:max-idle=60000", "other_config:mac-table-size=100000")
	o.vsctl("add-port", "br0", n.srcV.PeerName, "--", "set", "interface", n.srcV.PeerName, "ofport_request=1")
	o.vsctl("add-port", "br0", n.dstV.PeerName, "--", "set", "interface", n.dstV.PeerName, "ofport_request=2")
	if r := c.rules(n, "1", "2"); r != "" {
		file := filepath.Join(o.Dir, "flows.txt")
		if err := os.WriteFile(file, []byte(r), 0o644); err != nil {
			b.Fatal(err)
		}
		o.ofctl("del-flows", "br0")
		o.ofctl("add-flows", "br0", file)
	}
	dpName := "system@ovs-system"
	if dpType == "netdev" {
		dpName = "netdev@ovs-netdev"
	}
	lostRE := regexp.MustCompile(`lost:(\d+)`)
	dropRE := regexp.MustCompile(`[RT]X packets:\d+ errors:\d+ dropped:(\d+)`)
	return cmpSwitch{
		lost: func() uint64 {
			m := lostRE.FindStringSubmatch(o.appctl("dpctl/show", dpName))
			if m == nil {
				b.Fatalf("no lost count in dpctl/show %s", dpName)
			}
			v, _ := strconv.ParseUint(m[1], 10, 64)
			return v
		},
		flows: func() int {
			return strings.Count(o.appctl("dpctl/dump-flows", dpName), "\n")
		},
		portDrops: func() uint64 {
			var total uint64
			for _, m := range dropRE.FindAllStringSubmatch(o.appctl("dpctl/show", "-s", dpName), -1) {
				v, _ := strconv.ParseUint(m[1], 10, 64)
				total += v
			}
			return total
		},
		extra: func(b *testing.B) {
			show := o.appctl("upcall/show")
			b.Logf("ovs-appctl upcall/show:\n%s", show)
			// The most flows its revalidators' dumps saw: more than the
			// count after the traffic when they deleted flows meanwhile.
			if m := maxFlowsRE.FindStringSubmatch(show); m != nil {
				v, _ := strconv.ParseFloat(m[1], 64)
				b.ReportMetric(v, "megaflows-max")
			}
		},
	}
}

// maxFlowsRE is the most flows ovs-vswitchd's revalidators saw, in
// `ovs-appctl upcall/show` ("flows : (current N) (avg N) (max N) ...").
var maxFlowsRE = regexp.MustCompile(`flows\s*:.*\(max (\d+)\)`)

// ovsInstance is a private Open vSwitch (testenv.StartOVS: in ns, or
// here when ns is nil, stopped with its datapaths when the test ends)
// whose commands fail the benchmark when they fail.
type ovsInstance struct {
	tb testing.TB
	*testenv.OVS
}

func startOVS(tb testing.TB, ns *testenv.Netns) *ovsInstance {
	return &ovsInstance{tb: tb, OVS: testenv.StartOVS(tb, ns)}
}

func (o *ovsInstance) must(out string, err error) string {
	o.tb.Helper()
	if err != nil {
		o.tb.Fatal(err)
	}
	return out
}

func (o *ovsInstance) vsctl(args ...string) string { return o.must(o.Vsctl(args...)) }

func (o *ovsInstance) ofctl(cmd, br string, args ...string) string {
	return o.must(o.Ofctl(cmd, br, args...))
}

func (o *ovsInstance) appctl(args ...string) string { return o.must(o.Appctl(args...)) }
