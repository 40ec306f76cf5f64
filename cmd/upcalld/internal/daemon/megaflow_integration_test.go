//go:build integration

package daemon

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ovsdp/ovsdp/flowkeys"
	"github.com/ovsdp/ovsdp/odp"
	"github.com/ovsdp/ovsdp/testenv"
)

// truncatedMPLSResult is what a datapath did with an MPLS frame whose
// label stack has no bottom-of-stack entry (see pinTruncatedMPLS).
type truncatedMPLSResult struct {
	upcallKey   string // the miss upcall's key, verbose text
	upcallAttrs odp.FlowKey
	exactPut    error  // put of the upcall's key, exact
	maskedPut   error  // put of the upcall's key with an L2 + eth_type mask
	megaflowPut error  // put of odp.MegaflowFromFlowKeys's flow
	dump        string // the megaflow as dumped, verbose text
	packets     uint64 // the megaflow's packets after the frames
}

// pinTruncatedMPLS sends, from a namespace over a veth into a port of
// the datapath made by open (no daemon: the test reads the upcalls), an
// MPLS frame with two label stack entries and no bottom of stack, and
// records what the datapath did: the miss upcall's key; whether the
// upcall's key can be put as an exact flow, or with the mask a policy
// that reads the Ethernet type gives; whether the megaflow the daemon
// now builds (odp.MegaflowFromFlowKeys) can be put; and, after the same
// frame and then an MPLS frame with a whole stack are sent again,
// whether they hit that flow (no upcall, the flow's packet count).
func pinTruncatedMPLS(t *testing.T, open func(testing.TB) odp.Datapath) truncatedMPLSResult {
	testenv.RequireRoot(t)
	ctx := context.Background()
	ns := testenv.NewNetns(t)
	ns.MustRun(t, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1")
	v := testenv.NewVeth(t, ns, nil)
	dp := open(t)
	port, err := dp.AddPort(ctx, odp.PortSpec{Name: v.PeerName, Type: odp.PortNetdev})
	if err != nil {
		t.Fatalf("AddPort %s: %v", v.PeerName, err)
	}
	rxs, err := dp.Upcalls(ctx, 1)
	if err != nil {
		t.Fatalf("Upcalls: %v", err)
	}
	t.Cleanup(func() { rxs[0].Close() })
	fd, sa := rawSenderOn(t, ns, v.Name)
	src, dst := macN(0x51), macN(0x52)
	frame := mplsFrame(src, dst, 100<<12|64, 200<<12|63) // no bottom of stack
	whole := mplsFrame(src, dst, 300<<12|0x100|64)       // one label, bottom of stack
	send := func(f []byte) {
		t.Helper()
		if err := unix.Sendto(fd, f, 0, sa); err != nil {
			t.Fatalf("sending: %v", err)
		}
	}
	// recv returns the miss upcall of f, or nil if none comes within d.
	recv := func(f []byte, d time.Duration) *odp.Upcall {
		t.Helper()
		rctx, cancel := context.WithTimeout(ctx, d)
		defer cancel()
		ups := make([]odp.Upcall, 8)
		for {
			n, err := rxs[0].Recv(rctx, ups)
			for i := 0; i < n; i++ {
				if ups[i].Kind == odp.UpcallMiss && bytes.Equal(ups[i].Packet, f) {
					return &ups[i]
				}
			}
			if err != nil {
				if rctx.Err() != nil {
					return nil
				}
				t.Fatalf("Recv: %v", err)
			}
		}
	}

	var res truncatedMPLSResult
	send(frame)
	up := recv(frame, 10*time.Second)
	if up == nil {
		t.Fatalf("%s: no miss upcall for the frame within 10s", dp.Type())
	}
	res.upcallKey = odp.FormatKey(up.Key, nil, true)
	res.upcallAttrs = append(odp.FlowKey(nil), up.Key...)
	var k flowkeys.Key
	if err := flowkeys.Extract(frame, &flowkeys.Metadata{InPort: port.Number}, &k); err != nil {
		t.Fatalf("Extract: %v", err)
	}
	if ours := odp.FormatKey(odp.KeyFromFlowKeys(&k), nil, true); ours != res.upcallKey {
		t.Errorf("%s: upcall key\n%s\nExtract's\n%s", dp.Type(), res.upcallKey, ours)
	}
	if m, ok := up.Key.Find(odp.KeyMPLS).(odp.MPLS); !ok || len(m) != 0 {
		t.Errorf("%s: upcall key %s: want a 0-byte mpls attribute", dp.Type(), res.upcallKey)
	}

	var mask flowkeys.Key // what a rule on dl_type with normal reads
	mask.RecircID, mask.InPort, mask.EthType = ^uint32(0), 0xffff, 0xffff
	mask.EthSrc, mask.EthDst = [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	drop := odp.Actions{}
	_, res.exactPut = dp.PutFlow(ctx, &odp.Flow{UFID: odp.UFID{1}, Key: up.Key, Actions: drop}, odp.PutCreate)
	_, res.maskedPut = dp.PutFlow(ctx, &odp.Flow{UFID: odp.UFID{2}, Key: up.Key, Mask: odp.MaskFromFlowKeys(&mask, &k), Actions: drop}, odp.PutCreate)
	key, fmask, err := odp.MegaflowFromFlowKeys(&k, &mask)
	if err != nil {
		t.Fatalf("MegaflowFromFlowKeys: %v", err)
	}
	ufid := odp.UFID{3}
	_, res.megaflowPut = dp.PutFlow(ctx, &odp.Flow{UFID: ufid, Key: key, Mask: fmask, Actions: drop}, odp.PutCreate)
	if res.megaflowPut != nil {
		return res
	}
	f, err := dp.GetFlow(ctx, odp.FlowID{UFID: ufid})
	if err != nil {
		t.Fatalf("%s: GetFlow: %v", dp.Type(), err)
	}
	res.dump = odp.FormatKey(f.Key, f.Mask, true)
	for _, fr := range [][]byte{frame, whole} {
		send(fr)
		if up := recv(fr, 2*time.Second); up != nil {
			t.Errorf("%s: a miss upcall for a frame the megaflow matches: key %s", dp.Type(), odp.FormatKey(up.Key, nil, true))
		}
	}
	if f, err = dp.GetFlow(ctx, odp.FlowID{UFID: ufid}); err != nil {
		t.Fatalf("%s: GetFlow: %v", dp.Type(), err)
	}
	res.packets = f.Stats.Packets
	return res
}

// TestIntegrationMPLSWithoutBottomOfStack pins what the kernel (Linux
// 6.1) does with an MPLS frame whose label stack has no bottom-of-stack
// entry, and checks that the userspace datapath does the same:
// key_extract leaves the label count at 0, so the miss upcall's key has
// a 0-byte mpls attribute (__ovs_nla_put_key) — Extract's key gives the
// same bytes; a flow with that key, exact or masked, is EINVAL
// (ovs_key_from_nlattrs wants 1 to 3 labels); the megaflow the daemon
// builds (one label in the key, no mpls in the mask) is accepted, dumps
// the same on both datapaths, and matches the frame and MPLS frames with
// a whole stack (no upcall, both counted on the flow).
func TestIntegrationMPLSWithoutBottomOfStack(t *testing.T) {
	testenv.RequireKernelModule(t, "openvswitch")
	kern := pinTruncatedMPLS(t, openKernel)
	user := pinTruncatedMPLS(t, openUserdp)
	t.Logf("kernel: upcall key %s; exact put: %v; masked put: %v; megaflow put: %v; dump %s; %d packets",
		kern.upcallKey, kern.exactPut, kern.maskedPut, kern.megaflowPut, kern.dump, kern.packets)
	// The kernel's behaviour.
	if !errors.Is(kern.exactPut, syscall.EINVAL) || !errors.Is(kern.maskedPut, syscall.EINVAL) {
		t.Errorf("kernel: puts of the upcall's key: exact %v, masked %v; want EINVAL for both", kern.exactPut, kern.maskedPut)
	}
	if kern.megaflowPut != nil {
		t.Fatalf("kernel: put of the megaflow: %v", kern.megaflowPut)
	}
	if !strings.Contains(kern.dump, "eth_type(0x8847),mpls((bad key length 0))") || kern.packets != 2 {
		t.Errorf("kernel: megaflow dumped as %s with %d packets; want the masked key's 0-byte mpls, 2 packets", kern.dump, kern.packets)
	}
	// Ours, the same.
	if user.upcallKey != kern.upcallKey {
		t.Errorf("upcall keys differ:\nkernel %s\nuserdp %s", kern.upcallKey, user.upcallKey)
	}
	if !errors.Is(user.exactPut, syscall.EINVAL) || !errors.Is(user.maskedPut, syscall.EINVAL) || user.megaflowPut != nil {
		t.Errorf("userdp puts: exact %v, masked %v, megaflow %v; want EINVAL, EINVAL, ok", user.exactPut, user.maskedPut, user.megaflowPut)
	}
	if user.dump != kern.dump || user.packets != kern.packets {
		t.Errorf("megaflow dumps differ:\nkernel %s (%d packets)\nuserdp %s (%d packets)", kern.dump, kern.packets, user.dump, user.packets)
	}
	// The odp rules agree with the kernel.
	if _, _, err := odp.ToFlowKeys(kern.upcallAttrs, nil); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("odp.ToFlowKeys of the kernel's upcall key: %v, want EINVAL", err)
	}
}

// TestIntegrationDaemonMegaflows: the daemon, on the kernel datapath and
// on the userspace one, installs a megaflow for an MPLS frame without a
// bottom-of-stack entry (under a policy that reads the Ethernet type),
// for an NSH frame and for a frame whose inner VLAN tag is cut short
// (under the learning switch, which does not), and the next such frame
// is no upcall. Before odp.MegaflowFromFlowKeys every such frame was a
// miss and a failed put: the MPLS flow's key had a 0-byte mpls
// attribute, the NSH flow's mask an all-zero nsh nest without an exact
// Ethernet type mask, the cut tag's key the upcall's eth_type(0) with a
// vlan attribute, all EINVAL.
func TestIntegrationDaemonMegaflows(t *testing.T) {
	testenv.RequireKernelModule(t, "openvswitch")
	nsh := corpusFrame(t, "nsh/md1")
	for _, dpc := range []struct {
		name string
		open func(testing.TB) odp.Datapath
	}{{"system", openKernel}, {"netdev", openUserdp}} {
		for _, c := range []struct {
			name, rules, want string
			frame             []byte
		}{
			{"mpls-no-bos", "priority=100,ip,actions=drop\npriority=0,actions=normal\n", "eth_type(0x8847)",
				mplsFrame(macN(0x61), macN(0x62), 100<<12|64)},
			{"nsh", "", "eth(src=02:00:00:00:00:01,dst=02:00:00:00:00:02) actions",
				nsh},
			// (A frame whose outer tag is cut short does not cross
			// a veth: skb_vlan_untag drops it.)
			{"vlan-inner-cut", "", "eth(src=02:00:00:00:00:01,dst=02:00:00:00:00:02),eth_type(0x8100),vlan(vid=100",
				cutTagFrames()["vlan-inner-cut"]},
		} {
			t.Run(dpc.name+"/"+c.name, func(t *testing.T) {
				cfg := Config{}
				if c.rules != "" {
					cfg.Rules = mustRules(t, c.rules)
				}
				tp := newTopo(t, 2, dpc.open, cfg)
				fd, sa := tp.rawSender(0)
				waitHandled := func(n uint64) Status {
					deadline := time.Now().Add(10 * time.Second)
					for {
						st := tp.d.Status()
						if st.Handled+st.Failed >= n || time.Now().After(deadline) {
							return st
						}
						time.Sleep(5 * time.Millisecond)
					}
				}
				if err := unix.Sendto(fd, c.frame, 0, sa); err != nil {
					t.Fatal(err)
				}
				if st := waitHandled(1); st.Handled != 1 || st.Failed != 0 {
					t.Fatalf("after the first frame: %+v, want 1 handled, 0 failed", st)
				}
				flows := dumpFlows(t, tp.dp)
				if len(flows) != 1 || !strings.Contains(flows[0], c.want) {
					t.Fatalf("flows %q: want one with %s", flows, c.want)
				}
				if err := unix.Sendto(fd, c.frame, 0, sa); err != nil {
					t.Fatal(err)
				}
				time.Sleep(500 * time.Millisecond)
				if st := tp.d.Status(); st.Handled != 1 || st.Failed != 0 {
					t.Errorf("after the second frame: %+v, want still 1 handled (a flow hit)", st)
				}
			})
		}
	}
}
