//go:build integration && linux && !genl_stub

package genl

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"runtime"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ovsdp/ovsdp/odp"
	"github.com/ovsdp/ovsdp/testenv"
)

// kernelClient fails the test (never skips) unless the openvswitch module
// is there, and dials a client, for the kernel commands one by one.
func kernelClient(t testing.TB) *client {
	t.Helper()
	testenv.RequireRoot(t)
	testenv.RequireKernelModule(t, "openvswitch")
	c, err := newClient()
	if err != nil {
		t.Fatalf("newClient: %v", err)
	}
	t.Cleanup(func() { c.close() })
	return c
}

// dpName returns a short unique datapath name (IFNAMSIZ is 16).
func dpName() string { return fmt.Sprintf("gdp%06d", rand.IntN(1000000)) }

// newKernelDP creates a datapath (with Create, on a socket of its own)
// deleted when the test ends.
func newKernelDP(t testing.TB) *Datapath {
	t.Helper()
	d, err := Create(DatapathSpec{Name: dpName()})
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	t.Cleanup(func() {
		if err := d.Delete(); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Errorf("delete datapath: %v", err)
		}
		d.Close()
	})
	return d
}

func TestIntegrationDatapathLifecycle(t *testing.T) {
	testenv.RequireRoot(t)
	testenv.RequireKernelModule(t, "openvswitch")
	ctx := context.Background()
	name := dpName()
	d, err := Create(DatapathSpec{Name: name})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	defer d.Delete()
	info, err := d.c.getDatapathByIndex(d.Index())
	if err != nil {
		t.Fatal(err)
	}
	// Debian's 6.1 kernel checks features and has per-CPU dispatch.
	if info.UpcallMode() != UpcallModePerCPU || info.UserFeatures&FeatureUnaligned == 0 {
		t.Errorf("negotiated features %#x (mode %s), want unaligned|dispatch-upcall-per-cpu", info.UserFeatures, info.UpcallMode())
	}
	t.Logf("negotiated user features %#x: %s", info.UserFeatures, info.UpcallMode())
	if _, err := Create(DatapathSpec{Name: name}); !errors.Is(err, os.ErrExist) {
		t.Errorf("second create: %v, want ErrExist", err)
	}
	byName, err := Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer byName.Close()
	if di, err := byName.Info(ctx); err != nil || byName.Index() != d.Index() || di.Name != name || di.Features != info.UserFeatures || di.UpcallMode != UpcallModePerCPU || !info.HasMegaflowStats || !info.HasMasksCacheSize {
		t.Errorf("Open(%s): index %d, info %+v, %v; created %+v", name, byName.Index(), di, err, info)
	}
	c, err := Dial()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	all, err := c.Datapaths()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, d := range all {
		found = found || d.Name == name
	}
	if !found {
		t.Errorf("dump of %d datapaths lacks %s", len(all), name)
	}
	if err := d.SetMasksCacheSize(ctx, 512); err != nil {
		t.Fatal(err)
	}
	if di, err := d.Info(ctx); err != nil || di.MasksCacheSize != 512 || di.Features != info.UserFeatures {
		t.Errorf("after SetMasksCacheSize(512): %+v, %v; want size 512 and the features %#x kept", di, err, info.UserFeatures)
	}
	if err := byName.Delete(); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Info(ctx); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Info after delete: %v, want ErrNotExist", err)
	}
	if _, err := Open(name); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Open after delete: %v, want ErrNotExist", err)
	}

	// Exact features: what was asked for, or the kernel's refusal.
	exact := FeatureUnaligned | FeatureVportPIDs
	e, err := Create(DatapathSpec{Name: name, Features: exact, ExactFeatures: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	defer e.Delete()
	if ei, err := e.Info(ctx); err != nil || ei.Features != exact || ei.UpcallMode != UpcallModePerVport {
		t.Errorf("Create with exact features %#x: %+v, %v", exact, ei, err)
	}
	u, err := Create(DatapathSpec{Name: dpName(), Features: featureProbeUnknown, ExactFeatures: true})
	if err == nil {
		u.Delete()
		u.Close()
		t.Errorf("Create with the unknown feature bit %#x succeeded", featureProbeUnknown)
	} else if !errors.Is(err, unix.EOPNOTSUPP) && !errors.Is(err, unix.EINVAL) {
		t.Errorf("Create with an unknown feature bit: %v, want EOPNOTSUPP or EINVAL", err)
	}
}

func TestIntegrationVportLifecycle(t *testing.T) {
	c := kernelClient(t)
	d := newKernelDP(t)
	w, err := c.watchVports()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	veth := testenv.NewVeth(t, nil, testenv.NewNetns(t))
	for _, tc := range []struct {
		name string
		typ  VportType
		opts *VportOptions
	}{
		{veth.Name, VportNetdev, nil},
		{"gint0", VportInternal, nil},
		{"gvx0", VportVXLAN, &VportOptions{DstPort: 4790}},
		{"ggnv0", VportGeneve, &VportOptions{DstPort: 6082}},
		{"ggre0", VportGRE, nil},
	} {
		t.Run(tc.typ.String(), func(t *testing.T) {
			v, err := c.newVport(d.Index(), vportSpec{Name: tc.name, Type: tc.typ, Options: tc.opts})
			if err != nil {
				t.Fatal(err)
			}
			if v.Name != tc.name || v.Type != tc.typ || v.PortNo == 0 || v.DPIndex != d.Index() {
				t.Errorf("new: %+v", v)
			}
			if tc.opts != nil && v.Options.DstPort != tc.opts.DstPort {
				t.Errorf("dst_port %d, want %d", v.Options.DstPort, tc.opts.DstPort)
			}
			ev := nextEvent(t, w, tc.name)
			if ev.Kind != VportAdded {
				t.Errorf("event %v, want added", ev.Kind)
			}
			got, err := c.getVport(d.Index(), v.PortNo)
			if err != nil || got.Name != tc.name {
				t.Fatalf("get by number: %+v %v", got, err)
			}
			if got, err = c.getVportByName(tc.name); err != nil || got.PortNo != v.PortNo {
				t.Fatalf("get by name: %+v %v", got, err)
			}
			set, err := c.setVport(d.Index(), vportSpec{PortNo: v.PortNo, UpcallPIDs: []uint32{1234}})
			if err != nil {
				t.Fatal(err)
			}
			if len(set.UpcallPIDs) != 1 || set.UpcallPIDs[0] != 1234 {
				t.Errorf("upcall PIDs after set: %v", set.UpcallPIDs)
			}
			if ev := nextEvent(t, w, tc.name); ev.Kind != VportChanged {
				t.Errorf("event %v, want changed", ev.Kind)
			}
			ps, err := d.Ports(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if len(ps) != 2 || ps[0].Number != 0 || ps[0].Type != odp.PortInternal || ps[1].Name != tc.name || string(ps[1].Type) != tc.typ.String() {
				t.Errorf("ports %+v", ps)
			}
			if _, err := c.delVport(d.Index(), v.PortNo); err != nil {
				t.Fatal(err)
			}
			if ev := nextEvent(t, w, tc.name); ev.Kind != VportDeleted {
				t.Errorf("event %v, want deleted", ev.Kind)
			}
			if _, err := c.getVport(d.Index(), v.PortNo); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("get after delete: %v", err)
			}
		})
	}
	// Through odp.Datapath, with options as text.
	p, err := d.AddPort(context.Background(), odp.PortSpec{Name: "gvx1", Type: odp.PortVXLAN, Options: map[string]string{"dst_port": "4791"}})
	if err != nil {
		t.Fatal(err)
	}
	if p.Options["dst_port"] != "4791" {
		t.Errorf("AddPort = %+v", p)
	}
	if err := d.DelPort(context.Background(), p.Number); err != nil {
		t.Fatal(err)
	}
}

// nextEvent returns the next vport notification about name.
func nextEvent(t *testing.T, w *VportWatcher, name string) VportEvent {
	t.Helper()
	type res struct {
		ev  VportEvent
		err error
	}
	for {
		ch := make(chan res, 1)
		go func() { ev, err := w.Recv(); ch <- res{ev, err} }()
		select {
		case r := <-ch:
			if r.err != nil {
				t.Fatalf("vport notification: %v", r.err)
			}
			if r.ev.Vport.Name == name {
				return r.ev
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("no vport notification about %s within 5 s", name)
		}
	}
}

// testFlows are flows in the kernel's attribute order, so that the text
// read back is the text written. The kernel keeps 8 bits of the ARP
// opcode (it shares the IP protocol field), hence op=1/0xff; it rejects
// a userspace action with PID 0.
var testFlows = []struct{ key, actions string }{
	{"in_port(1),eth(src=00:00:00:00:00:01,dst=00:00:00:00:00:02),eth_type(0x0800),ipv4(src=10.0.0.1,dst=10.0.0.0/255.255.255.0,proto=6,tos=0,ttl=64,frag=no),tcp(src=80,dst=8080),tcp_flags(0/0)",
		"set(ipv4(ttl=63)),push_vlan(vid=10,pcp=0),2"},
	{"in_port(2),eth(src=00:00:00:00:00:03,dst=00:00:00:00:00:04),eth_type(0x86dd),ipv6(src=2001:db8::1,dst=2001:db8::2,label=0,proto=17,tclass=0,hlimit=64,frag=no),udp(src=53,dst=5353)",
		"1"},
	{"in_port(2),eth(src=00:00:00:00:00:03,dst=00:00:00:00:00:04),eth_type(0x0800),ipv4(src=10.9.0.1,dst=10.9.0.2,proto=17,tos=0,ttl=64,frag=no),udp(src=53,dst=5353)",
		"userspace(pid=1,userdata(01020304)),1"},
	{"in_port(1),eth(src=00:00:00:00:00:05,dst=ff:ff:ff:ff:ff:ff),eth_type(0x0806),arp(sip=10.0.0.1,tip=10.0.0.2,op=1/0xff,sha=00:00:00:00:00:05,tha=00:00:00:00:00:00)",
		"drop"},
	{"in_port(3),eth(src=00:00:00:00:00:06,dst=00:00:00:00:00:07),eth_type(0x0800),ipv4(src=192.168.1.1,dst=192.168.1.2,proto=1,tos=0,ttl=64,frag=no),icmp(type=8,code=0)",
		"set(skb_mark(0x5)),1,2"},
	{"skb_priority(0x7),in_port(1),skb_mark(0x9),eth(src=00:00:00:00:00:08,dst=00:00:00:00:00:09),eth_type(0x8100),vlan(vid=10,pcp=3),encap(eth_type(0x0800),ipv4(src=10.1.0.1,dst=10.1.0.2,proto=17,tos=0,ttl=64,frag=no),udp(src=1000,dst=2000))",
		"pop_vlan,2"},
	{"recirc_id(0),in_port(4),ct_state(-trk),eth(src=00:00:00:00:00:0a,dst=00:00:00:00:00:0b),eth_type(0x0800),ipv4(frag=no)",
		"ct(zone=5),recirc(0x1)"},
}

// flowText is a flow's key/mask and actions as ovs-dpctl prints them.
func flowText(f *odp.Flow) string {
	return odp.FormatKey(f.Key, f.Mask, false) + " actions:" + odp.FormatActions(f.Actions)
}

func TestIntegrationFlows(t *testing.T) {
	c := kernelClient(t)
	d := newKernelDP(t)
	idx := d.Index()
	written := map[odp.UFID]string{}
	for i, tf := range testFlows {
		key, mask, err := odp.ParseMaskedKey(tf.key)
		if err != nil {
			t.Fatalf("flow %d: %v", i, err)
		}
		acts, err := odp.ParseActions(tf.actions)
		if err != nil {
			t.Fatalf("flow %d: %v", i, err)
		}
		f := &odp.Flow{UFID: odp.UFID{byte(i + 1), 0xaa}, Key: key, Mask: mask, Actions: acts}
		want := flowText(f)
		if _, err := c.putFlow(idx, f, odp.PutCreate, flowOptions{}); err != nil {
			t.Errorf("put %s: %v", want, err)
			continue
		}
		written[f.UFID] = want
		got, err := c.getFlow(idx, odp.FlowID{UFID: f.UFID}, flowOptions{})
		if err != nil {
			t.Errorf("get %s: %v", f.UFID, err)
			continue
		}
		if g := flowText(got); g != want {
			t.Errorf("flow read back differs:\nwrote %s\nread  %s", want, g)
		}
		if _, err := c.putFlow(idx, f, odp.PutCreate, flowOptions{}); !errors.Is(err, os.ErrExist) {
			t.Errorf("second create: %v, want ErrExist", err)
		}
	}
	if len(written) == 0 {
		t.Fatal("no flow was accepted")
	}
	// A flow without a UFID is found by its key (flows with one only by
	// their UFID).
	{
		key, mask, _ := odp.ParseMaskedKey("in_port(7),eth(),eth_type(0x0800),ipv4(src=10.7.0.1,frag=no)")
		acts, _ := odp.ParseActions("1")
		if _, err := c.putFlow(idx, &odp.Flow{Key: key, Mask: mask, Actions: acts}, odp.PutCreate, flowOptions{}); err != nil {
			t.Fatal(err)
		}
		got, err := c.getFlow(idx, odp.FlowID{Key: key}, flowOptions{})
		if err != nil || odp.FormatKey(got.Key, got.Mask, false) != odp.FormatKey(key, mask, false) {
			t.Errorf("get by key: %v %v", got, err)
		}
		if _, err := c.delFlow(idx, odp.FlowID{Key: key}, flowOptions{}); err != nil {
			t.Errorf("delete by key: %v", err)
		}
	}
	// Full and terse dumps.
	full := map[odp.UFID]string{}
	if err := c.dumpFlows(idx, flowOptions{}, func(f *odp.Flow) error { full[f.UFID] = flowText(f); return nil }); err != nil {
		t.Fatal(err)
	}
	for u, want := range written {
		if full[u] != want {
			t.Errorf("dump of %s:\nwrote %s\ndump  %s", u, want, full[u])
		}
	}
	terse := 0
	err := c.dumpFlows(idx, flowOptions{UFIDFlags: Terse}, func(f *odp.Flow) error {
		terse++
		if f.Key != nil || f.Mask != nil || f.Actions != nil {
			t.Errorf("terse dump of %s has key/mask/actions", f.UFID)
		}
		if _, ok := written[f.UFID]; !ok {
			t.Errorf("terse dump: unknown UFID %s", f.UFID)
		}
		return nil
	})
	if err != nil || terse != len(written) {
		t.Errorf("terse dump: %d flows, %v; want %d", terse, err, len(written))
	}
	// Modify the first flow's actions, clearing its stats.
	u1 := odp.UFID{1, 0xaa}
	key, mask, _ := odp.ParseMaskedKey(testFlows[0].key)
	newActs, _ := odp.ParseActions("3")
	if _, err := c.putFlow(idx, &odp.Flow{UFID: u1, Key: key, Mask: mask, Actions: newActs}, odp.PutModify|odp.PutZeroStats, flowOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := c.getFlow(idx, odp.FlowID{UFID: u1}, flowOptions{})
	if err != nil || odp.FormatActions(got.Actions) != "3" {
		t.Errorf("after modify: %v, %v", got, err)
	}
	// Create-or-modify of an existing flow modifies it (the kernel's
	// OVS_FLOW_CMD_NEW without NLM_F_CREATE).
	mayActs, _ := odp.ParseActions("2")
	if _, err := c.putFlow(idx, &odp.Flow{UFID: u1, Key: key, Mask: mask, Actions: mayActs}, odp.PutCreate|odp.PutModify, flowOptions{}); err != nil {
		t.Fatalf("create-or-modify of an existing flow: %v", err)
	}
	if got, err := c.getFlow(idx, odp.FlowID{UFID: u1}, flowOptions{}); err != nil || odp.FormatActions(got.Actions) != "2" {
		t.Errorf("after create-or-modify: %v, %v", got, err)
	}
	missing := odp.UFID{0xee}
	if _, err := c.putFlow(idx, &odp.Flow{UFID: missing, Key: key, Mask: mask, Actions: newActs}, odp.PutModify, flowOptions{}); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("modify of a missing flow: %v, want ErrNotExist", err)
	}
	if _, err := c.delFlow(idx, odp.FlowID{UFID: u1}, flowOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.getFlow(idx, odp.FlowID{UFID: u1}, flowOptions{}); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("get after delete: %v", err)
	}
	if err := c.flushFlows(idx); err != nil {
		t.Fatal(err)
	}
	n := 0
	c.dumpFlows(idx, flowOptions{}, func(*odp.Flow) error { n++; return nil })
	if n != 0 {
		t.Errorf("%d flows after flush", n)
	}
	info, err := d.Info(context.Background())
	if err != nil || info.Stats.Flows != 0 || info.UpcallMode != UpcallModePerCPU {
		t.Errorf("Info = %+v, %v", info, err)
	}
	// A kernel rejection keeps the kernel's message (trunc needs >= 14).
	bad, _ := odp.ParseActions("trunc(13)")
	_, err = c.putFlow(idx, &odp.Flow{Key: key, Mask: mask, Actions: bad}, odp.PutCreate, flowOptions{Probe: true})
	var ge *Error
	if !errors.As(err, &ge) {
		t.Errorf("trunc(13): %v, want a kernel error", err)
	} else {
		t.Logf("trunc(13) rejected: %v", err)
	}
}

// udpFrame builds an Ethernet/IPv4/UDP frame.
func udpFrame(src, dst net.HardwareAddr) []byte {
	f := append(append(append([]byte{}, dst...), src...), 0x08, 0x00)
	ip := []byte{0x45, 0, 0, 28, 0, 0, 0, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2}
	var sum uint32
	for i := 0; i < 20; i += 2 {
		sum += uint32(ip[i])<<8 | uint32(ip[i+1])
	}
	for sum > 0xffff {
		sum = sum&0xffff + sum>>16
	}
	ip[10], ip[11] = byte(^sum>>8), byte(^sum)
	f = append(f, ip...)
	return append(f, 0x04, 0xd2, 0x16, 0x2e, 0, 8, 0, 0)
}

// netdevDP is a new kernel datapath with a netdev port on a veth whose
// peer is in a new namespace.
func netdevDP(t *testing.T) (*Datapath, *testenv.Netns, *testenv.Veth, odp.Port) {
	t.Helper()
	d := newKernelDP(t)
	ns := testenv.NewNetns(t)
	veth := testenv.NewVeth(t, nil, ns)
	port, err := d.AddPort(context.Background(), odp.PortSpec{Name: veth.Name, Type: odp.PortNetdev})
	if err != nil {
		t.Fatal(err)
	}
	return d, ns, veth, port
}

func TestIntegrationUpcallsAndExecute(t *testing.T) {
	d, ns, veth, port := netdevDP(t)
	ctx := context.Background()
	rs, err := d.Upcalls(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	mac := ns.MAC(t, veth.PeerName)
	dst := net.HardwareAddr{0x02, 0, 0, 0, 0, 0x99}
	frame := udpFrame(mac, dst)

	// recv waits for an upcall of the given kind on any handler.
	recv := func(kind odp.UpcallKind) odp.Upcall {
		t.Helper()
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		ch := make(chan odp.Upcall, len(rs))
		for _, r := range rs {
			go func() {
				ups := make([]odp.Upcall, 4)
				for {
					n, err := r.Recv(ctx, ups)
					if err != nil {
						return
					}
					for _, u := range ups[:n] {
						if u.Kind == kind && bytes.Equal(u.Packet, frame) {
							ch <- u
							return
						}
					}
				}
			}()
		}
		for range 5 {
			ns.SendFrame(t, veth.PeerName, frame)
			select {
			case u := <-ch:
				return u
			case <-time.After(time.Second):
			}
		}
		t.Fatalf("no %v upcall within 5 s", kind)
		return odp.Upcall{}
	}

	// A miss: no flows.
	u := recv(odp.UpcallMiss)
	if u.Port != port.Number {
		t.Errorf("miss on port %d, want %d", u.Port, port.Number)
	}
	keyText := odp.FormatKey(u.Key, nil, false)
	for _, want := range []string{"in_port(" + fmt.Sprint(port.Number) + ")", "eth(src=" + mac.String() + ",dst=02:00:00:00:00:99)", "eth_type(0x0800)", "ipv4(src=10.0.0.1,dst=10.0.0.2,proto=17", "udp(src=1234,dst=5678)"} {
		if !strings.Contains(keyText, want) {
			t.Errorf("miss key %s lacks %s", keyText, want)
		}
	}

	// A userspace action with userdata.
	userdata := []byte{0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4}
	key, mask, err := odp.ParseMaskedKey(fmt.Sprintf("in_port(%d),eth(),eth_type(0x0800),ipv4(frag=no)", port.Number))
	if err != nil {
		t.Fatal(err)
	}
	acts := odp.Actions{odp.Userspace{PID: rs[0].(*UpcallSocket).PID(), Userdata: userdata}}
	if _, err := d.PutFlow(ctx, &odp.Flow{UFID: odp.UFID{9}, Key: key, Mask: mask, Actions: acts}, odp.PutCreate); err != nil {
		t.Fatal(err)
	}
	u = recv(odp.UpcallAction)
	if !bytes.Equal(u.Userdata, userdata) {
		t.Errorf("userdata %x, want %x", u.Userdata, userdata)
	}
	f, err := d.GetFlow(ctx, odp.FlowID{UFID: odp.UFID{9}})
	if err != nil || f.Stats.Packets == 0 {
		t.Errorf("flow stats after traffic: %+v, %v", f, err)
	}
	info, _ := d.Info(ctx)
	if info.Stats.Missed == 0 || info.Stats.Hit == 0 {
		t.Errorf("datapath stats did not move: %+v", info.Stats)
	}

	// Execute with an output action delivers into the namespace.
	capt := ns.Capture(t, veth.PeerName)
	out := udpFrame(net.HardwareAddr{0x02, 0, 0, 0, 0, 0x55}, mac)
	inKey, err := odp.ParseKey("in_port(0)")
	if err != nil {
		t.Fatal(err)
	}
	err = d.Execute(ctx, &odp.Packet{Data: out, Key: inKey, Actions: odp.Actions{odp.Output{Port: port.Number}}, MRU: 1500, Hash: 0x1234})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := capt.WaitFor(5*time.Second, func(fr testenv.Frame) bool { return bytes.Equal(fr.Data, out) }); err != nil {
		t.Errorf("executed packet not received in the namespace: %v", err)
	}
	for _, r := range rs {
		if s := r.(*UpcallSocket); s.Malformed() != 0 {
			t.Errorf("socket %d: %d malformed upcalls", s.PID(), s.Malformed())
		}
	}
}

func TestIntegrationMetersAndZoneLimits(t *testing.T) {
	c := kernelClient(t)
	d := newKernelDP(t)
	ctx := context.Background()
	if fams := c.families(); fams[familyMeter] == 0 || fams[familyCTLimit] == 0 {
		t.Fatalf("Debian's 6.1 kernel has ovs_meter and ovs_ct_limit; families %v", fams)
	}
	mf, err := d.MeterFeatures(ctx)
	if err != nil || mf.MaxMeters == 0 || mf.MaxBands == 0 {
		t.Fatalf("MeterFeatures = %+v, %v", mf, err)
	}
	t.Logf("meter features: %+v", mf)
	if err := d.SetMeter(ctx, odp.MeterInfo{ID: 3, KBPS: true, Bands: []odp.MeterBand{{Type: odp.MeterBandDrop, Rate: 1000, Burst: 100}}}, false); err != nil {
		t.Fatal(err)
	}
	m, err := d.GetMeter(ctx, 3)
	if err != nil || len(m.Bands) != 1 {
		t.Fatalf("GetMeter = %+v, %v", m, err)
	}
	if _, err := d.DelMeter(ctx, 3); err != nil {
		t.Fatal(err)
	}
	if _, err := d.GetMeter(ctx, 3); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("GetMeter after delete: %v", err)
	}
	if err := d.SetZoneLimits(ctx, []ZoneLimit{{Zone: DefaultZone, Limit: 100}, {Zone: 7, Limit: 5}}); err != nil {
		t.Fatal(err)
	}
	ls, err := d.ZoneLimits(ctx, 7)
	if err != nil || len(ls) != 1 || ls[0].Zone != 7 || ls[0].Limit != 5 {
		t.Fatalf("ZoneLimits(7) = %+v, %v", ls, err)
	}
	all, err := d.ZoneLimits(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sort.Slice(all, func(i, j int) bool { return all[i].Zone < all[j].Zone })
	if len(all) < 2 || all[0].Zone != DefaultZone || all[0].Limit != 100 {
		t.Errorf("ZoneLimits() = %+v", all)
	}
	if err := d.DelZoneLimits(ctx, 7); err != nil {
		t.Fatal(err)
	}
}

func TestIntegrationModuleMessages(t *testing.T) {
	// Errors name the missing datapath.
	c := kernelClient(t)
	_, err := c.getDatapath("gdp-none")
	if !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "gdp-none") {
		t.Errorf("GetDatapath(missing) = %v", err)
	}
}

// benchFlows builds n distinct flows (exact IPv4 source, /32).
func benchFlows(tb testing.TB, n int) []*odp.Flow {
	acts, err := odp.ParseActions("2")
	if err != nil {
		tb.Fatal(err)
	}
	fs := make([]*odp.Flow, n)
	for i := range fs {
		key, mask, err := odp.ParseMaskedKey(fmt.Sprintf("in_port(1),eth(),eth_type(0x0800),ipv4(src=10.%d.%d.%d,frag=no)", i>>16&255, i>>8&255, i&255))
		if err != nil {
			tb.Fatal(err)
		}
		fs[i] = &odp.Flow{UFID: odp.UFID{byte(i), byte(i >> 8), byte(i >> 16), 0x77}, Key: key, Mask: mask, Actions: acts}
	}
	return fs
}

// BenchmarkIntegrationFlows installs GENL_BENCH_FLOWS flows (default
// 10,000) one request at a time (PutFlow) and batched (PutFlows), and
// dumps them in full and terse, reporting flows/s for each. The
// one-at-a-time install is the baseline for the batched one; make bench
// also sets these rates beside ovs-dpctl's add-flows and dump-flows of
// the same number of flows in the same VM run (cmd/dpctl's benchmark).
func BenchmarkIntegrationFlows(b *testing.B) {
	n := 10000
	if s := os.Getenv("GENL_BENCH_FLOWS"); s != "" {
		if _, err := fmt.Sscan(s, &n); err != nil || n <= 0 {
			b.Fatalf("GENL_BENCH_FLOWS=%q: want a positive number of flows", s)
		}
	}
	c := kernelClient(b)
	d := newKernelDP(b)
	fs := benchFlows(b, n)
	var install, batched, dump, terse time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		for _, f := range fs {
			if _, err := c.putFlow(d.Index(), f, odp.PutCreate, flowOptions{}); err != nil {
				b.Fatal(err)
			}
		}
		t1 := time.Now()
		got := 0
		if err := c.dumpFlows(d.Index(), flowOptions{}, func(*odp.Flow) error { got++; return nil }); err != nil {
			b.Fatal(err)
		}
		t2 := time.Now()
		if err := c.dumpFlows(d.Index(), flowOptions{UFIDFlags: Terse}, func(*odp.Flow) error { got++; return nil }); err != nil {
			b.Fatal(err)
		}
		t3 := time.Now()
		if got != 2*n {
			b.Fatalf("dumps saw %d flows, want %d", got, 2*n)
		}
		install += t1.Sub(t0)
		dump += t2.Sub(t1)
		terse += t3.Sub(t2)
		b.StopTimer()
		if err := c.flushFlows(d.Index()); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		t4 := time.Now()
		errs, err := c.putFlows(d.Index(), fs, odp.PutCreate, flowOptions{})
		if err != nil {
			b.Fatal(err)
		}
		for _, e := range errs {
			if e != nil {
				b.Fatal(e)
			}
		}
		batched += time.Since(t4)
		b.StopTimer()
		if err := c.flushFlows(d.Index()); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(n*b.N)/batched.Seconds(), "batched-install-flows/s")
	b.ReportMetric(float64(n*b.N)/install.Seconds(), "install-flows/s")
	b.ReportMetric(float64(n*b.N)/dump.Seconds(), "dump-flows/s")
	b.ReportMetric(float64(n*b.N)/terse.Seconds(), "terse-dump-flows/s")
}

// TestIntegrationLargeDump installs 100,000 flows (batched) and dumps
// them, terse and full, checking that the full dump streams: the heap
// stays far below what holding every decoded flow would take. It takes
// about 8 minutes under TCG; with -short it uses 10,000 flows.
func TestIntegrationLargeDump(t *testing.T) {
	n := 100000
	if testing.Short() {
		n = 10000
	}
	c := kernelClient(t)
	d := newKernelDP(t)
	key, mask, err := odp.ParseMaskedKey("in_port(1),eth(),eth_type(0x0800),ipv4(src=10.0.0.0,frag=no)")
	if err != nil {
		t.Fatal(err)
	}
	kb, err := odp.MarshalKey(key)
	if err != nil {
		t.Fatal(err)
	}
	src := bytes.Index(kb, []byte{10, 0, 0, 0})
	if src < 0 {
		t.Fatalf("no IPv4 source in the encoded key % x", kb)
	}
	acts, _ := odp.ParseActions("2")
	fs := make([]*odp.Flow, 0, 1000)
	start := time.Now()
	for i := 0; i < n; i++ {
		b := append([]byte(nil), kb...)
		b[src+1], b[src+2], b[src+3] = byte(i>>16), byte(i>>8), byte(i)
		k, err := odp.UnmarshalKey(b)
		if err != nil {
			t.Fatal(err)
		}
		fs = append(fs, &odp.Flow{Key: k, Mask: mask, Actions: acts})
		if len(fs) == cap(fs) || i == n-1 {
			errs, err := c.putFlows(d.Index(), fs, odp.PutCreate, flowOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for j, e := range errs {
				if e != nil {
					t.Fatalf("flow %d: %v", i-len(fs)+1+j, e)
				}
			}
			fs = fs[:0]
		}
	}
	t.Logf("installed %d flows in %v", n, time.Since(start))
	start = time.Now()
	count := 0
	if err := c.dumpFlows(d.Index(), flowOptions{UFIDFlags: Terse}, func(*odp.Flow) error { count++; return nil }); err != nil {
		t.Fatal(err)
	}
	// Without UFIDs the terse flags do not apply: keys still come.
	if count != n {
		t.Fatalf("terse dump: %d flows, want %d", count, n)
	}
	t.Logf("terse dump in %v", time.Since(start))
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	base, peak := ms.HeapAlloc, ms.HeapAlloc
	count = 0
	start = time.Now()
	err = c.dumpFlows(d.Index(), flowOptions{}, func(f *odp.Flow) error {
		count++
		if count%10000 == 0 {
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapAlloc)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if count != n {
		t.Fatalf("full dump: %d flows, want %d", count, n)
	}
	t.Logf("full dump in %v, heap grew by at most %d KiB", time.Since(start), (peak-base)>>10)
	// 100,000 decoded flows take over 100 MiB; a streaming dump holds a
	// datagram's worth at a time (plus garbage not yet collected).
	if peak-base > 64<<20 {
		t.Errorf("heap grew by %d MiB during the dump: it does not stream", (peak-base)>>20)
	}
}

// TestIntegrationExecuteUpcallPID: OVS_PACKET_ATTR_UPCALL_PID came in
// 2025 (Linux 6.17). On a kernel without it (Debian's 6.1: its ovs_packet
// family knows attributes up to 11) the kernel would ignore the
// attribute and send the upcall by per-CPU dispatch, so Execute refuses
// the packet with errors.ErrUnsupported. On a kernel with it, a userspace
// action's upcall goes to the packet's upcall PID, not the action's.
func TestIntegrationExecuteUpcallPID(t *testing.T) {
	c := kernelClient(t)
	d := newKernelDP(t)
	ctx := context.Background()
	rs, err := d.Upcalls(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	a, b := rs[0].(*UpcallSocket), rs[1].(*UpcallSocket)
	inKey, err := odp.ParseKey("in_port(0)")
	if err != nil {
		t.Fatal(err)
	}
	frame := udpFrame(net.HardwareAddr{0x02, 0, 0, 0, 0, 0x55}, net.HardwareAddr{0x02, 0, 0, 0, 0, 0x66})
	err = d.Execute(ctx, &odp.Packet{Data: frame, Key: inKey, UpcallPID: b.PID(),
		Actions: odp.Actions{odp.Userspace{PID: a.PID(), Userdata: []byte{1, 2, 3, 4}}}})
	t.Logf("ovs_packet maxattr %d; execute with an upcall PID: %v", c.packetMaxAttr, err)
	if c.packetMaxAttr < packetAttrUpcallPID {
		if !errors.Is(err, errors.ErrUnsupported) {
			t.Fatalf("execute with an upcall PID on a kernel without it: %v, want errors.ErrUnsupported", err)
		}
		return
	}
	if err != nil {
		t.Fatalf("execute with upcall PID %d: %v", b.PID(), err)
	}
	got := make(chan string, 2)
	for name, r := range map[string]*UpcallSocket{"the action's": a, "the packet's": b} {
		go func() {
			ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
			defer cancel()
			ups := make([]odp.Upcall, 4)
			n, _ := r.Recv(ctx, ups)
			for _, u := range ups[:n] {
				if u.Kind == odp.UpcallAction && bytes.Equal(u.Packet, frame) && bytes.Equal(u.Userdata, []byte{1, 2, 3, 4}) {
					got <- name
					return
				}
			}
			got <- ""
		}()
	}
	var on []string
	for range 2 {
		if s := <-got; s != "" {
			on = append(on, s)
		}
	}
	if len(on) != 1 || on[0] != "the packet's" {
		t.Errorf("the upcall arrived on %q, want only the packet's upcall PID socket", on)
	}
}

// TestIntegrationExecuteBatch executes several packets in one
// ExecuteBatch (one sendmsg): each good one is delivered into the
// namespace, in order, and the one whose actions the kernel rejects
// (trunc below the Ethernet header length) fails alone with EINVAL.
func TestIntegrationExecuteBatch(t *testing.T) {
	d, ns, veth, port := netdevDP(t)
	ctx := context.Background()
	mac := ns.MAC(t, veth.PeerName)
	inKey, err := odp.ParseKey("in_port(0)")
	if err != nil {
		t.Fatal(err)
	}
	capt := ns.Capture(t, veth.PeerName)
	const n, bad = 12, 5
	pkts := make([]*odp.Packet, n)
	for i := range pkts {
		out := udpFrame(net.HardwareAddr{0x02, 0, 0, 0, 0x77, byte(i)}, mac)
		acts := odp.Actions{odp.Output{Port: port.Number}}
		if i == bad {
			acts = odp.Actions{odp.Trunc{MaxLen: 13}, odp.Output{Port: port.Number}}
		}
		pkts[i] = &odp.Packet{Data: out, Key: inKey, Actions: acts, MRU: 1500}
	}
	errs, err := d.ExecuteBatch(ctx, pkts)
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range errs {
		if (i == bad) != (e != nil) || (i == bad && !errors.Is(e, unix.EINVAL)) {
			t.Errorf("packet %d: %v", i, e)
		}
	}
	var got []int
	for len(got) < n-1 {
		f, err := capt.WaitFor(5*time.Second, func(fr testenv.Frame) bool {
			return len(fr.Data) > 12 && bytes.Equal(fr.Data[6:11], []byte{0x02, 0, 0, 0, 0x77})
		})
		if err != nil {
			t.Fatalf("after %v: %v", got, err)
		}
		got = append(got, int(f.Data[11]))
	}
	want := []int{0, 1, 2, 3, 4, 6, 7, 8, 9, 10, 11}
	if !slices.Equal(got, want) {
		t.Errorf("received packets %v, want %v (in order, the rejected one missing)", got, want)
	}
	if f, err := capt.WaitFor(300*time.Millisecond, func(fr testenv.Frame) bool {
		return len(fr.Data) > 12 && bytes.Equal(fr.Data[6:11], []byte{0x02, 0, 0, 0, 0x77})
	}); err == nil {
		t.Errorf("an extra executed packet arrived: %x", f.Data[:12])
	}
	// The socket is in step afterwards.
	if _, err := d.Info(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestIntegrationEgressTunnelKeyERSPAN: Linux 6.1 keeps ERSPAN metadata
// of set(tunnel) as the tunnel info's options and puts them in the egress
// tunnel key of userspace(tunnel_out_port) to a geneve port (what
// userdp's egress key does, TestUserspaceEgressTunnelKey).
func TestIntegrationEgressTunnelKeyERSPAN(t *testing.T) {
	d, _, _, port := netdevDP(t)
	ctx := context.Background()
	gnv, err := d.AddPort(ctx, odp.PortSpec{Name: "gnv_es", Type: odp.PortGeneve, Options: map[string]string{"dst_port": "6082"}})
	if err != nil {
		t.Fatal(err)
	}
	rs, err := d.Upcalls(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	acts, err := odp.ParseActions("set(tunnel(tun_id=0x2a,dst=127.0.0.2,ttl=64,erspan(ver=1,idx=0x7),flags(key))),userspace(pid=" +
		itoa(uint64(rs[0].(*UpcallSocket).PID())) + ",tunnel_out_port=" + itoa(uint64(gnv.Number)) + ")")
	if err != nil {
		t.Fatal(err)
	}
	key, err := odp.ParseKey("in_port(" + itoa(uint64(port.Number)) + ")")
	if err != nil {
		t.Fatal(err)
	}
	frame := udpFrame(net.HardwareAddr{2, 0, 0, 0, 0, 1}, net.HardwareAddr{2, 0, 0, 0, 0, 2})
	if err := d.Execute(ctx, &odp.Packet{Data: frame, Key: key, Actions: acts, MRU: 1500}); err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	// The port's own traffic (its peer's IPv6 DAD or router
	// solicitations) may come as misses first: the action upcall is the
	// one this test waits for.
	ups := make([]odp.Upcall, 4)
	var u *odp.Upcall
	for u == nil {
		n, err := rs[0].Recv(rctx, ups)
		if err != nil || n == 0 {
			t.Fatalf("no action upcall: %v", err)
		}
		for i := range ups[:n] {
			if ups[i].Kind == odp.UpcallAction {
				u = &ups[i]
				break
			}
		}
	}
	if u.EgressTunnel == nil {
		t.Fatalf("the action upcall has no egress key: want one")
	}
	got := odp.FormatKey(odp.FlowKey{*u.EgressTunnel}, nil, false)
	t.Logf("egress key: %s", got)
	if !strings.Contains(got, "erspan(ver=1,idx=0x7)") || !strings.Contains(got, "tp_dst=6082") {
		t.Errorf("egress key %s: want erspan(ver=1,idx=0x7) and tp_dst=6082", got)
	}
}

// TestIntegrationGeneveOutputERSPAN: what Linux 6.1's geneve vport sends
// for set(tunnel) with ERSPAN metadata: the Geneve header's option length
// is the tunnel info's options_len (12 bytes: 3 words) though the
// options are not copied (no TUNNEL_GENEVE_OPT). userdp's geneve ports
// send the same header with those bytes zero (TestTunnelEncapERSPAN).
func TestIntegrationGeneveOutputERSPAN(t *testing.T) {
	d := newKernelDP(t)
	ctx := context.Background()
	ns := testenv.NewNetns(t)
	veth := testenv.NewVeth(t, nil, ns)
	testenv.Current(t).AddAddr(t, veth.Name, "10.88.0.1/24")
	ns.AddAddr(t, veth.PeerName, "10.88.0.2/24")
	gnv, err := d.AddPort(ctx, odp.PortSpec{Name: "gnv_eo", Type: odp.PortGeneve, Options: map[string]string{"dst_port": "6083"}})
	if err != nil {
		t.Fatal(err)
	}
	acts, err := odp.ParseActions("set(tunnel(tun_id=0x2a,dst=10.88.0.2,ttl=64,erspan(ver=1,idx=0x7),flags(key)))," + itoa(uint64(gnv.Number)))
	if err != nil {
		t.Fatal(err)
	}
	key, err := odp.ParseKey("in_port(0)")
	if err != nil {
		t.Fatal(err)
	}
	capt := ns.Capture(t, veth.PeerName)
	frame := udpFrame(net.HardwareAddr{2, 0, 0, 0, 0, 1}, net.HardwareAddr{2, 0, 0, 0, 0, 2})
	for range 5 {
		if err := d.Execute(ctx, &odp.Packet{Data: frame, Key: key, Actions: acts, MRU: 1500}); err != nil {
			t.Fatal(err)
		}
		fr, err := capt.WaitFor(time.Second, func(fr testenv.Frame) bool {
			b := fr.Data
			return len(b) > 14+20+8+8 && b[12] == 8 && b[13] == 0 && b[14+9] == 17 &&
				int(b[14+20+2])<<8|int(b[14+20+3]) == 6083
		})
		if err != nil {
			continue
		}
		g := fr.Data[14+20+8:]
		t.Logf("outer frame: % x", fr.Data)
		if optLen := int(g[0] & 0x3f); optLen != 3 {
			t.Errorf("Geneve option length %d words, want 3 (options_len 12): header % x", optLen, g[:8])
		}
		if inner := g[8+12:]; len(inner) < len(frame) || string(inner[:len(frame)]) != string(frame) {
			t.Errorf("the inner frame does not follow 12 option bytes: % x", g)
		}
		return
	}
	t.Fatal("no geneve packet in the namespace")
}
