package userdp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/ovsdp/ovsdp/odp"
	"github.com/ovsdp/ovsdp/testenv"
)

// fwdTopo is the forwarding benchmark's topology:
//
//	namespace S (sender) --veth-- namespace M (bridge or datapath) --veth-- namespace R (receiver)
//
// S sends 64-byte UDP frames (60 bytes + FCS) to R's MAC address through
// M, which forwards them either by a Linux bridge or by a userspace
// datapath with one port on each of M's veth ends. The frames are
// addressed to fwdDstMAC, a host beyond R's veth end and not R's own
// address: R's veth end counts them (rx_packets), and its stack drops
// them as the first thing IPv4 does with a frame for another host
// (PACKET_OTHERHOST), at a few tens of ns. Frames to R's own address,
// with R having no addresses or routes, cost R's stack a route lookup
// that fails and a dst entry made and freed (RCU) per frame, about 300 ns
// that the kernel charges to whoever transmitted into R (the bridge's
// sender, userdp's forwarding thread, ovs-vswitchd's): a cost of the
// receiver, not of the forwarder, and not a fixed one (perf showed
// ip_route_input_slow, dst_alloc, dst_destroy, call_rcu).
type fwdTopo struct {
	s, m, r *testenv.Netns
	sv, rv  *testenv.Veth    // sv: Name in S, PeerName in M; rv: Name in R, PeerName in M
	rMAC    net.HardwareAddr // the frames' destination, fwdDstMAC
	br      netlink.Link     // the bridge in M (no ports while not in use)
	tx      NetdevPort       // the sender, on S's veth end (sendmmsg)
	frames  [][]byte         // one batch of frames from S to R
	dpName  string
	dpPorts []NetdevPort // the netdev ports of the last datapathOn
	ovs     *testenv.OVS // started by the first ovsOn
	owner   testing.TB   // the test newFwdTopo built it for (OVS stops when it ends)
}

// fwdDstMAC is the destination of the forwarded frames (see fwdTopo).
var fwdDstMAC = net.HardwareAddr{0x02, 0xfd, 0, 0, 0, 0x02}

// newFwdTopo builds the topology with both middle ends free (neither
// enslaved to the bridge nor attached to a datapath).
func newFwdTopo(t testing.TB) *fwdTopo {
	t.Helper()
	testenv.RequireRoot(t)
	f := &fwdTopo{s: testenv.NewNetns(t), m: testenv.NewNetns(t), r: testenv.NewNetns(t), dpName: testenv.NewName(), owner: t}
	// No IPv6 anywhere: no router solicitations or DAD frames from the
	// veth ends mixed with the measured traffic (and no misses in the
	// datapath, whose flows match IPv4 only).
	for _, ns := range []*testenv.Netns{f.s, f.m, f.r} {
		if err := ns.Do(func() error {
			for _, c := range []string{"all", "default"} {
				if err := writeSysctl("net/ipv6/conf/"+c+"/disable_ipv6", "1"); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatalf("namespace %s: %v", ns, err)
		}
	}
	f.sv = testenv.NewVeth(t, f.s, f.m)
	f.rv = testenv.NewVeth(t, f.r, f.m)
	f.rMAC = fwdDstMAC
	sMAC := f.s.MAC(t, f.sv.Name)

	// The bridge, up, with the host's br_netfilter hooks (present on
	// these machines) turned off in M, so that the baseline is the plain
	// bridge and not the bridge plus netfilter.
	if err := f.m.Do(func() error {
		for _, c := range []string{"iptables", "ip6tables", "arptables"} {
			err := writeSysctl("net/bridge/bridge-nf-call-"+c, "0")
			if err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatalf("namespace %s: %v", f.m, err)
	}
	// Without multicast snooping: with it, the bridge joins the
	// multicast router discovery group and its IGMP report reaches R.
	brName := testenv.NewName()
	snoop := false
	if err := f.m.Handle().LinkAdd(&netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: brName}, MulticastSnooping: &snoop}); err != nil {
		t.Fatalf("creating bridge %s in namespace %s: %v", brName, f.m, err)
	}
	t.Cleanup(func() {
		if l, err := f.m.Handle().LinkByName(brName); err == nil {
			if err := f.m.Handle().LinkDel(l); err != nil {
				t.Errorf("deleting bridge %s: %v", brName, err)
			}
		}
	})
	f.m.LinkUp(t, brName)
	f.br = f.m.Link(t, brName)

	// The sender sends untagged frames: it needs no egress VLAN program,
	// whose cost would add to every frame sent.
	if err := f.s.Do(func() (err error) {
		if f.tx, err = OpenNetdev(f.sv.Name, NetdevOptions{Mode: NetdevMmsg}); err == nil {
			a := afPacketOf(t, f.tx)
			a.vlanTx.detach()
			a.vlanTx = nil
		}
		return err
	}); err != nil {
		t.Fatalf("sender port in namespace %s: %v", f.s, err)
	}
	// Close detaches the port's egress program in the calling thread's
	// namespace: close it in S.
	t.Cleanup(func() { f.s.Do(f.tx.Close) })

	f.frames = fwdFrames(f.rMAC, sMAC)
	return f
}

// writeSysctl writes /proc/sys/NAME in the calling thread's namespace.
func writeSysctl(name, val string) error {
	if err := os.WriteFile(filepath.Join("/proc/sys", name), []byte(val), 0o644); err != nil {
		return fmt.Errorf("sysctl %s=%s: %w", name, val, err)
	}
	return nil
}

// rxPackets returns rx_packets of R's veth end, read in R.
func (f *fwdTopo) rxPackets(t testing.TB) uint64 {
	t.Helper()
	l, err := f.r.Handle().LinkByIndex(f.rv.Index)
	if err != nil {
		t.Fatalf("reading statistics of %s in namespace %s: %v", f.rv.Name, f.r, err)
	}
	st := l.Attrs().Statistics
	if st == nil {
		t.Fatalf("no statistics for %s in namespace %s", f.rv.Name, f.r)
	}
	return st.RxPackets
}

// bridgeOn enslaves both middle ends to the bridge and adds R's MAC to
// the forwarding database as a static entry on R's side, so the bridge
// forwards to it without flooding. The returned function undoes it.
func (f *fwdTopo) bridgeOn(t testing.TB) (off func()) {
	t.Helper()
	h := f.m.Handle()
	ends := []int{f.sv.PeerIndex, f.rv.PeerIndex}
	for _, idx := range ends {
		l, err := h.LinkByIndex(idx)
		if err != nil {
			t.Fatalf("middle end %d in namespace %s: %v", idx, f.m, err)
		}
		if err := h.LinkSetMasterByIndex(l, f.br.Attrs().Index); err != nil {
			t.Fatalf("enslaving %s to the bridge: %v", l.Attrs().Name, err)
		}
	}
	fdb := &netlink.Neigh{LinkIndex: f.rv.PeerIndex, Family: unix.AF_BRIDGE, Flags: netlink.NTF_MASTER,
		State: netlink.NUD_NOARP, HardwareAddr: f.rMAC}
	if err := h.NeighAdd(fdb); err != nil {
		t.Fatalf("bridge fdb add %s dev %s master static: %v", f.rMAC, f.rv.PeerName, err)
	}
	return func() {
		for _, idx := range ends {
			l, err := h.LinkByIndex(idx)
			if err == nil {
				err = h.LinkSetNoMaster(l)
			}
			if err != nil {
				t.Fatalf("releasing middle end %d from the bridge: %v", idx, err)
			}
		}
	}
}

// hasStaticFDB reports whether the bridge's forwarding database has R's
// MAC address as a static entry on R's side.
func (f *fwdTopo) hasStaticFDB(t testing.TB) bool {
	t.Helper()
	ns, err := f.m.Handle().NeighList(f.rv.PeerIndex, unix.AF_BRIDGE)
	if err != nil {
		t.Fatalf("listing the bridge's fdb: %v", err)
	}
	for _, n := range ns {
		if bytes.Equal(n.HardwareAddr, f.rMAC) && n.State&netlink.NUD_NOARP != 0 {
			return true
		}
	}
	return false
}

// datapathOn creates a userspace datapath in M (no local port) with the
// two middle ends as netdev ports of backend mode and two flows that
// forward every IPv4 frame from one to the other, and back. The returned
// function closes it.
func (f *fwdTopo) datapathOn(t testing.TB, mode NetdevMode) (dp *Datapath, off func()) {
	t.Helper()
	ctx := context.Background()
	var ports [2]odp.Port
	f.dpPorts = f.dpPorts[:0]
	err := f.m.Do(func() error {
		var err error
		if dp, err = New(f.dpName, WithoutLocalPort()); err != nil {
			return err
		}
		for i, name := range []string{f.sv.PeerName, f.rv.PeerName} {
			p, err := OpenNetdev(name, NetdevOptions{Mode: mode})
			if err == nil {
				if ports[i], err = dp.AttachPort(p, 0); err != nil {
					p.Close()
				} else {
					f.dpPorts = append(f.dpPorts, p)
				}
			}
			if err != nil {
				dp.Close()
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("datapath (%v ports) in namespace %s: %v", mode, f.m, err)
	}
	// Closing detaches the ports' egress programs in the calling thread's
	// namespace: close it in M.
	closeDP := func() {
		if err := f.m.Do(dp.Close); err != nil {
			t.Errorf("closing the datapath: %v", err)
		}
	}
	for _, d := range [][2]odp.Port{{ports[0], ports[1]}, {ports[1], ports[0]}} {
		fl := parseFlow(t, "in_port("+itoa(d[0].Number)+"),"+anyEth+"eth_type(0x0800)"+anyIPv4, itoa(d[1].Number))
		fl.Key, fl.Mask = odp.AddTCPFlags(fl.Key, fl.Mask)
		if _, err := dp.PutFlow(ctx, fl, odp.PutCreate); err != nil {
			closeDP()
			t.Fatalf("put flow %d -> %d: %v", d[0].Number, d[1].Number, err)
		}
	}
	return dp, closeDP
}

// fwdBridge is the Open vSwitch bridge of ovsOn.
const fwdBridge = "br0"

// ovsOn makes Open vSwitch forward between M's two ends: on first use it
// starts a private ovsdb-server and ovs-vswitchd in M (testenv.StartOVS,
// stopped when the topology's test ends) with a bridge of datapath_type=netdev (the
// userspace datapath; fail_mode=secure, so it forwards by nothing but
// its flows) and the OpenFlow flows in_port=1,actions=output:2 and
// in_port=2,actions=output:1. Each call adds S's side as OpenFlow port 1
// and R's as port 2: default (AF_PACKET) ports, or with afxdp AF_XDP
// ports (type=afxdp, one queue, xdp-mode=best-effort: native XDP where
// the driver has it, as veth does). The returned function removes the
// ports again.
func (f *fwdTopo) ovsOn(t testing.TB, afxdp bool) (off func()) {
	t.Helper()
	if f.ovs == nil {
		o := testenv.StartOVS(f.owner, f.m)
		if _, err := o.Vsctl("add-br", fwdBridge, "--", "set", "bridge", fwdBridge, "datapath_type=netdev", "fail_mode=secure"); err != nil {
			t.Fatalf("%v%s", err, o.LogTail())
		}
		if _, err := o.Ofctl("del-flows", fwdBridge); err != nil {
			t.Fatal(err)
		}
		for _, fl := range []string{"in_port=1,actions=output:2", "in_port=2,actions=output:1"} {
			if _, err := o.Ofctl("add-flow", fwdBridge, fl); err != nil {
				t.Fatal(err)
			}
		}
		f.ovs = o
	}
	var args []string
	for i, name := range []string{f.sv.PeerName, f.rv.PeerName} {
		args = append(args, "--", "add-port", fwdBridge, name, "--", "set", "interface", name, fmt.Sprintf("ofport_request=%d", i+1))
		if afxdp {
			args = append(args, "type=afxdp", "options:n_rxq=1", "options:xdp-mode=best-effort")
		}
	}
	if _, err := f.ovs.Vsctl(args[1:]...); err != nil {
		t.Fatalf("%v%s", err, f.ovs.LogTail())
	}
	off = func() {
		if _, err := f.ovs.Vsctl("del-port", fwdBridge, f.sv.PeerName, "--", "del-port", fwdBridge, f.rv.PeerName); err != nil {
			t.Fatalf("%v%s", err, f.ovs.LogTail())
		}
	}
	for i, name := range []string{f.sv.PeerName, f.rv.PeerName} {
		ofport, err1 := f.ovs.Vsctl("get", "interface", name, "ofport")
		ifErr, err2 := f.ovs.Vsctl("get", "interface", name, "error")
		if err := errors.Join(err1, err2); err != nil {
			off()
			t.Fatal(err)
		}
		if ofport, ifErr = strings.TrimSpace(ofport), strings.TrimSpace(ifErr); ofport != itoa(uint32(i+1)) || ifErr != "[]" {
			off()
			t.Fatalf("Open vSwitch interface %s (afxdp %v): ofport %s, error %s: want ofport %d and no error%s", name, afxdp, ofport, ifErr, i+1, f.ovs.LogTail())
		}
	}
	return off
}

// sendN sends n frames from S in batches of 64 and returns how many the
// sender's socket accepted. With paced, it sends each batch once R has
// counted the one before (or a few seconds have passed). The pace keeps a forwarder that
// polls its socket now and then (ovs-vswitchd's default ports: the
// socket's receive buffer holds about 270 of these frames) from
// dropping frames in a burst: this checks where frames go, not how fast.
func (f *fwdTopo) sendN(t testing.TB, n int, paced bool) int {
	t.Helper()
	base := f.rxPackets(t)
	sent := 0
	for sent < n {
		k, err := f.tx.WriteBatch(f.frames[:min(len(f.frames), n-sent)])
		if err != nil {
			t.Fatalf("sending from %s: %v", f.sv.Name, err)
		}
		sent += k
		deadline := time.Now().Add(5 * time.Second)
		for paced && f.rxPackets(t)-base < uint64(sent) && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
	}
	return sent
}

// waitRx waits until R's veth end has counted want frames more than base
// (or a few seconds have passed), then a little longer to see any extra
// frames, and returns the count above base.
func (f *fwdTopo) waitRx(t testing.TB, base uint64, want int) uint64 {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for f.rxPackets(t)-base < uint64(want) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond)
	return f.rxPackets(t) - base
}

// TestForwardVethSetup checks the topology of BenchmarkForwardVeth: in
// every setup (the bridge, userdp with ring and with AF_XDP ports,
// ovs-vswitchd with default and with AF_XDP ports), frames sent from S
// arrive at R, each exactly once and unchanged; the bridge forwards by a
// static fdb entry, the datapath forwards them all by its flows (hits,
// no misses), Open vSwitch by its OpenFlow flow. Needs root and Open
// vSwitch (it fails without them).
func TestForwardVethSetup(t *testing.T) {
	f := newFwdTopo(t)
	capture := f.r.Capture(t, f.rv.Name)
	const n = 1000
	check := func(t *testing.T) {
		t.Helper()
		base := f.rxPackets(t)
		sent := f.sendN(t, n, true)
		if got := f.waitRx(t, base, sent); got != uint64(sent) {
			t.Errorf("R's veth end counted %d frames, want the %d sent from S", got, sent)
		}
		fr, err := capture.WaitFor(5*time.Second, func(fr testenv.Frame) bool {
			return !fr.Outgoing && len(fr.Data) >= 12 && bytes.Equal(fr.Data[:6], f.rMAC)
		})
		if err != nil {
			t.Fatalf("no frame to R's MAC captured in R: %v", err)
		}
		found := false
		for _, s := range f.frames {
			found = found || bytes.Equal(fr.Data, s)
		}
		if !found {
			t.Errorf("R received % x, which is none of the frames sent", fr.Data)
		}
		// Drain the capture for the next setup: every frame R sees must
		// be one that S sent.
		for {
			x, err := capture.Next(50 * time.Millisecond)
			if err != nil {
				break
			}
			if sentByS := len(x.Data) == len(f.frames[0]) && bytes.Equal(x.Data[:12], f.frames[0][:12]); x.Outgoing || !sentByS {
				t.Errorf("R saw a frame S did not send (outgoing %v): % x", x.Outgoing, x.Data)
			}
		}
	}
	for round := 0; round < 2; round++ {
		t.Run(fmt.Sprintf("bridge%d", round), func(t *testing.T) {
			off := f.bridgeOn(t)
			defer off()
			if !f.hasStaticFDB(t) {
				t.Errorf("bridge fdb has no static entry for %s on %s", f.rMAC, f.rv.PeerName)
			}
			check(t)
		})
		for _, mode := range []NetdevMode{NetdevRing, NetdevXDP} {
			t.Run(fmt.Sprintf("userdp-%v%d", mode, round), func(t *testing.T) {
				dp, off := f.datapathOn(t, mode)
				defer off()
				check(t)
				info, err := dp.Info(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				if info.Stats.Hit != n || info.Stats.Missed != 0 || info.Stats.Lost != 0 {
					t.Errorf("datapath stats %+v: want %d hits, no misses, none lost", info.Stats, n)
				}
			})
		}
		for _, afxdp := range []bool{false, true} {
			t.Run(fmt.Sprintf("ovs-afxdp=%v%d", afxdp, round), func(t *testing.T) {
				off := f.ovsOn(t, afxdp)
				defer off()
				check(t)
				// Every frame went by the flow from port 1 to 2.
				out, err := f.ovs.Ofctl("dump-flows", fwdBridge, "in_port=1")
				if err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(out, "actions=output:2") {
					t.Errorf("ovs-ofctl dump-flows in_port=1: %s: want the flow to port 2", out)
				}
			})
		}
	}
	// With neither, nothing arrives: the counts above came through M.
	base := f.rxPackets(t)
	f.sendN(t, n, false)
	time.Sleep(200 * time.Millisecond)
	if got := f.rxPackets(t) - base; got != 0 {
		t.Errorf("with M forwarding nothing, R counted %d frames", got)
	}
}
