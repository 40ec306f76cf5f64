package userdp

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ovsdp/ovsdp/internal/header"
	"github.com/ovsdp/ovsdp/internal/monoclock"
	"github.com/ovsdp/ovsdp/odp"
)

// harness is a userspace datapath with in-memory ports 1..n; frames
// output to port i arrive on recv[i].
type harness struct {
	t     testing.TB
	dp    *Datapath
	peers map[uint32]*MemPort
	recv  map[uint32]chan []byte
}

func newHarness(t testing.TB, nports int, opts ...Option) *harness {
	t.Helper()
	dp, err := New("tdp", append([]Option{WithoutLocalPort()}, opts...)...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { dp.Close() })
	h := &harness{t: t, dp: dp, peers: map[uint32]*MemPort{}, recv: map[uint32]chan []byte{}}
	for i := 1; i <= nports; i++ {
		name := fmt.Sprintf("m%d", i)
		p, err := dp.AddPort(context.Background(), odp.PortSpec{Name: name, Type: PortMemory})
		if err != nil {
			t.Fatalf("AddPort %s: %v", name, err)
		}
		if p.Number != uint32(i) {
			t.Fatalf("AddPort %s: number %d, want %d", name, p.Number, i)
		}
		peer := dp.MemoryPeer(name)
		if peer == nil {
			t.Fatalf("MemoryPeer(%s) = nil", name)
		}
		h.peers[p.Number] = peer
		ch := make(chan []byte, 4096)
		h.recv[p.Number] = ch
		go func() {
			bufs := [][]byte{make([]byte, 2048)}
			sizes := []int{0}
			for {
				n, err := peer.ReadBatch(bufs, sizes, 0)
				if err != nil {
					return
				}
				for i := 0; i < n; i++ {
					ch <- append([]byte(nil), bufs[i][:sizes[i]]...)
				}
			}
		}()
	}
	return h
}

// flow parses "KEY" (with masks) and "ACTIONS".
func parseFlow(t testing.TB, key, acts string) *odp.Flow {
	t.Helper()
	k, m, err := odp.ParseMaskedKey(key)
	if err != nil {
		t.Fatalf("ParseMaskedKey(%q): %v", key, err)
	}
	a, err := odp.ParseActions(acts)
	if err != nil {
		t.Fatalf("ParseActions(%q): %v", acts, err)
	}
	return &odp.Flow{Key: k, Mask: m, Actions: a}
}

func (h *harness) put(key, acts string) {
	h.t.Helper()
	if _, err := h.dp.PutFlow(context.Background(), parseFlow(h.t, key, acts), odp.PutCreate); err != nil {
		h.t.Fatalf("PutFlow(%s, %s): %v", key, acts, err)
	}
}

func (h *harness) send(port uint32, frames ...[]byte) {
	h.t.Helper()
	if n, err := h.peers[port].WriteBatch(frames); err != nil || n != len(frames) {
		h.t.Fatalf("send on port %d: %d of %d, %v", port, n, len(frames), err)
	}
}

// expect receives one frame on port or fails.
func (h *harness) expect(port uint32) []byte {
	h.t.Helper()
	select {
	case f := <-h.recv[port]:
		return f
	case <-time.After(5 * time.Second):
		h.t.Fatalf("no frame on port %d", port)
		return nil
	}
}

// expectNone fails if a frame arrives on port within a short time.
func (h *harness) expectNone(port uint32) {
	h.t.Helper()
	select {
	case f := <-h.recv[port]:
		h.t.Fatalf("unexpected frame on port %d: % x", port, f)
	case <-time.After(50 * time.Millisecond):
	}
}

// execute runs actions on frame as if received on in_port 1.
func (h *harness) execute(frame []byte, acts string) error {
	h.t.Helper()
	a, err := odp.ParseActions(acts)
	if err != nil {
		h.t.Fatalf("ParseActions(%q): %v", acts, err)
	}
	return h.dp.Execute(context.Background(), &odp.Packet{Data: frame, Key: odp.FlowKey{odp.InPort(1)}, Actions: a})
}

// waitStats waits until the datapath has seen n lookups (hit+missed).
func (h *harness) waitStats(n uint64) odp.DatapathStats {
	h.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		info, _ := h.dp.Info(context.Background())
		if info.Stats.Hit+info.Stats.Missed >= n || time.Now().After(deadline) {
			return info.Stats
		}
		time.Sleep(time.Millisecond)
	}
}

// udpFrame is an Ethernet/IPv4/UDP frame from 10.0.0.1:1000 to
// 10.0.0.2:2000 with correct checksums.
func udpFrame(src, dst byte, sport uint16) []byte {
	f := make([]byte, 14+20+8+18)
	copy(f[0:6], []byte{0, 0, 0, 0, 0, dst})
	copy(f[6:12], []byte{0, 0, 0, 0, 0, src})
	binary.BigEndian.PutUint16(f[12:], header.EtherTypeIPv4)
	ip := f[14:]
	ip[0] = 0x45
	binary.BigEndian.PutUint16(ip[2:], 20+8+18)
	ip[8] = 64
	ip[9] = header.IPProtoUDP
	copy(ip[12:], []byte{10, 0, 0, src})
	copy(ip[16:], []byte{10, 0, 0, dst})
	u := ip[20:]
	binary.BigEndian.PutUint16(u[0:], sport)
	binary.BigEndian.PutUint16(u[2:], 2000)
	binary.BigEndian.PutUint16(u[4:], 8+18)
	for i := range u[8:] {
		u[8+i] = byte(i)
	}
	fixIPv4(f, 14)
	return f
}

// anyEth matches any Ethernet addresses (a flow without eth() matches
// only packets without an Ethernet header, as in the kernel).
const anyEth = "eth(src=00:00:00:00:00:00/00:00:00:00:00:00,dst=00:00:00:00:00:00/00:00:00:00:00:00),"

// anyIPv4 is an IPv4 attribute that matches every IPv4 packet.
const anyIPv4 = ",ipv4(src=0.0.0.0/0.0.0.0)"

func TestForwardAndStats(t *testing.T) {
	h := newHarness(t, 2)
	h.put("in_port(1),"+anyEth+"eth_type(0x0800),ipv4(dst=10.0.0.2/255.255.255.0)", "2")
	f := udpFrame(1, 2, 1000)
	h.send(1, f, f, f)
	for i := 0; i < 3; i++ {
		if got := h.expect(2); string(got) != string(f) {
			t.Fatalf("frame %d changed:\n got % x\nwant % x", i, got, f)
		}
	}
	st := h.waitStats(3)
	if st.Hit != 3 || st.Missed != 0 || st.Flows != 1 || st.Masks != 1 {
		t.Errorf("datapath stats %+v, want 3 hits, 1 flow, 1 mask", st)
	}
	if st.CacheHits != 2 {
		t.Errorf("cache hits %d, want 2 (the first lookup fills the cache)", st.CacheHits)
	}
	var flows []*odp.Flow
	if err := h.dp.DumpFlows(context.Background(), odp.DumpOptions{}, func(f *odp.Flow) error { flows = append(flows, f); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(flows) != 1 {
		t.Fatalf("dump: %d flows", len(flows))
	}
	fs := flows[0].Stats
	if fs.Packets != 3 || fs.Bytes != 3*uint64(len(f)) || fs.Used == 0 {
		t.Errorf("flow stats %+v, want 3 packets, %d bytes, used set", fs, 3*len(f))
	}
	if now := monoclock.Millis(); fs.Used > now || fs.Used+10000 < now {
		t.Errorf("used %d ms, CLOCK_MONOTONIC now %d ms", fs.Used, now)
	}
	if got := odp.FormatKey(flows[0].Key, flows[0].Mask, false); !containsAll(got, "in_port(1)", "eth_type(0x0800)", "ipv4(dst=10.0.0.0/255.255.255.0") {
		t.Errorf("dumped flow %s", got)
	}
	if flows[0].Actions.String() != "2" {
		t.Errorf("dumped actions %s", flows[0].Actions)
	}

	// A packet that matches no flow, with no handler: missed and lost.
	h.send(2, udpFrame(2, 1, 1000))
	st = h.waitStats(4)
	if st.Missed != 1 || st.Lost != 1 {
		t.Errorf("after a miss without handler: %+v, want missed 1, lost 1", st)
	}
	h.expectNone(1)
}

func containsAll(s string, subs ...string) bool {
	for _, x := range subs {
		found := false
		for i := 0; i+len(x) <= len(s); i++ {
			if s[i:i+len(x)] == x {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

func TestFlowOperations(t *testing.T) {
	h := newHarness(t, 2, WithRebalanceInterval(0))
	ctx := context.Background()
	dp := h.dp
	u1 := odp.UFID{1}
	f1 := parseFlow(t, "in_port(1),"+anyEth+"eth_type(0x0800),ipv4(dst=10.0.0.2/255.255.255.255)", "2")
	f1.UFID = u1

	if _, err := dp.PutFlow(ctx, f1, 0); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("put with no flags: %v, want EINVAL", err)
	}
	if _, err := dp.PutFlow(ctx, f1, odp.PutModify); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("modify a missing flow: %v, want ErrNotExist", err)
	}
	if _, err := dp.PutFlow(ctx, f1, odp.PutCreate); err != nil {
		t.Fatalf("create: %v", err)
	}
	if _, err := dp.PutFlow(ctx, f1, odp.PutCreate); !errors.Is(err, os.ErrExist) || !errors.Is(err, syscall.EEXIST) {
		t.Errorf("create twice: %v, want EEXIST", err)
	}
	// Another UFID, but the key hits the installed flow: EEXIST as in the kernel.
	f1b := *f1
	f1b.UFID = odp.UFID{2}
	if _, err := dp.PutFlow(ctx, &f1b, odp.PutCreate); !errors.Is(err, os.ErrExist) {
		t.Errorf("create an overlapping flow with another UFID: %v, want EEXIST", err)
	}
	// May-create with another UFID and a key that differs from the flow
	// its key hits: ENOENT, as the kernel's ovs_flow_cmp fails.
	f1c := *parseFlow(t, "in_port(1),"+anyEth+"eth_type(0x0800),ipv4(dst=10.0.0.2/255.255.255.255,ttl=64/255)", "2")
	f1c.UFID = odp.UFID{3}
	if _, err := dp.PutFlow(ctx, &f1c, odp.PutCreate|odp.PutModify); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("may-create over a flow with another mask: %v, want ENOENT", err)
	}

	// Traffic, then modify: the old stats come back, and zero-stats clears.
	frame := udpFrame(1, 2, 1000)
	h.send(1, frame, frame)
	h.expect(2)
	h.expect(2)
	h.waitStats(2)
	f1m := *f1
	f1m.Actions = odp.Actions{odp.Output{Port: 1}}
	st, err := dp.PutFlow(ctx, &f1m, odp.PutModify|odp.PutZeroStats)
	if err != nil || st.Packets != 2 {
		t.Fatalf("modify: stats %+v, %v; want 2 packets", st, err)
	}
	got, err := dp.GetFlow(ctx, odp.FlowID{UFID: u1})
	if err != nil {
		t.Fatal(err)
	}
	if got.Stats.Packets != 0 || got.Actions.String() != "1" || got.UFID != u1 {
		t.Errorf("after modify: %+v, actions %s", got.Stats, got.Actions)
	}
	h.send(1, frame)
	h.expect(1) // new actions in force

	// A flow without UFID, identified by its key.
	f2 := parseFlow(t, "in_port(2),eth(src=00:00:00:00:00:01,dst=00:00:00:00:00:02),eth_type(0x0806),arp(sip=1.1.1.1,tip=2.2.2.2,op=1,sha=00:00:00:00:00:01,tha=00:00:00:00:00:00)", "1")
	if _, err := dp.PutFlow(ctx, f2, odp.PutCreate); err != nil {
		t.Fatal(err)
	}
	if _, err := dp.PutFlow(ctx, f2, odp.PutCreate); !errors.Is(err, os.ErrExist) {
		t.Errorf("create keyed flow twice: %v", err)
	}
	if _, err := dp.PutFlow(ctx, f2, odp.PutCreate|odp.PutModify); err != nil {
		t.Errorf("may-create an existing keyed flow: %v", err)
	}
	if g, err := dp.GetFlow(ctx, odp.FlowID{Key: f2.Key}); err != nil || !g.UFID.IsZero() {
		t.Errorf("get by key: %v, %v", g, err)
	}
	if _, err := dp.GetFlow(ctx, odp.FlowID{Key: f1.Key}); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("get a UFID flow by key: %v, want ENOENT (the kernel looks keys up among keyed flows only)", err)
	}
	if _, err := dp.GetFlow(ctx, odp.FlowID{}); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("get with no id: %v, want EINVAL", err)
	}
	info, _ := dp.Info(ctx)
	if info.Stats.Flows != 2 || info.Stats.Masks != 2 {
		t.Errorf("stats %+v, want 2 flows and 2 masks", info.Stats)
	}

	// Delete.
	if _, err := dp.DelFlow(ctx, odp.FlowID{UFID: u1}); err != nil {
		t.Errorf("delete: %v", err)
	}
	if _, err := dp.DelFlow(ctx, odp.FlowID{UFID: u1}); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("delete twice: %v, want ENOENT", err)
	}
	if _, err := dp.GetFlow(ctx, odp.FlowID{UFID: u1}); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("get a deleted flow: %v", err)
	}
	h.send(1, frame)
	h.expectNone(1) // the cached flow is gone too
	h.expectNone(2)

	// Invalid keys and unsupported actions.
	const ip4Key = "in_port(1)," + anyEth + "eth_type(0x0800),ipv4(src=1.2.3.4/255.255.255.255)"
	for _, c := range []struct {
		key, acts string
		want      error
	}{
		{"in_port(1),ipv4(src=1.2.3.4)", "2", syscall.EINVAL}, // ipv4 without eth_type
		{ip4Key, "ct(commit,helper=ftp)", syscall.EINVAL},
		{ip4Key, "push_eth(src=00:00:00:00:00:01,dst=00:00:00:00:00:02),2", syscall.EINVAL}, // has an Ethernet header
		{ip4Key, "lb_output(1)", odp.ErrUnsupported},
		{ip4Key, "set(tunnel(tun_id=0x1,ttl=64,flags(key))),2", syscall.EINVAL},                                    // no destination
		{"in_port(1)," + anyEth + "eth_type(0x0806),arp(sip=0.0.0.0/0.0.0.0)", "set(ipv4(ttl=3))", syscall.EINVAL}, // not IPv4
		{"in_port(1)," + anyEth + "eth_type(0x0800),ipv4(proto=17/0xff),udp(dst=53/0xffff)", "set(tcp(src=1))", syscall.EINVAL},
		{ip4Key, "drop,2", syscall.EINVAL}, // drop not last
		{ip4Key, "trunc(10),2", syscall.EINVAL},
		{ip4Key, "push_vlan(tpid=0x9100,vid=1,pcp=0),2", syscall.EINVAL},
		{ip4Key, "hash(alg7(0)),2", syscall.EINVAL},
	} {
		f := parseFlow(t, c.key, c.acts)
		_, err := dp.PutFlow(ctx, f, odp.PutCreate)
		if !errors.Is(err, c.want) {
			t.Errorf("put %s actions %s: %v, want %v", c.key, c.acts, err, c.want)
		}
		if c.want == odp.ErrUnsupported && err != nil && !containsAll(err.Error(), c.acts[:2]) {
			t.Errorf("error %q does not name the action %s", err, c.acts)
		}
	}

	// Flush.
	if err := dp.FlushFlows(ctx); err != nil {
		t.Fatal(err)
	}
	n := 0
	dp.DumpFlows(ctx, odp.DumpOptions{}, func(*odp.Flow) error { n++; return nil })
	info, _ = dp.Info(ctx)
	if n != 0 || info.Stats.Flows != 0 || info.Stats.Masks != 0 {
		t.Errorf("after flush: %d dumped, stats %+v", n, info.Stats)
	}
}

func TestDumpTerseAndStop(t *testing.T) {
	h := newHarness(t, 1)
	ctx := context.Background()
	for i := 0; i < 50; i++ {
		f := parseFlow(t, fmt.Sprintf("in_port(1),"+anyEth+"eth_type(0x0800),ipv4(dst=10.1.0.%d/255.255.255.255)", i), "1")
		f.UFID = odp.UFID{byte(i + 1)}
		if _, err := h.dp.PutFlow(ctx, f, odp.PutCreate); err != nil {
			t.Fatal(err)
		}
	}
	seen := map[odp.UFID]bool{}
	err := h.dp.DumpFlows(ctx, odp.DumpOptions{Terse: true}, func(f *odp.Flow) error {
		if f.Key != nil || f.Mask != nil || f.Actions != nil {
			t.Errorf("terse dump has key/mask/actions: %+v", f)
		}
		seen[f.UFID] = true
		return nil
	})
	if err != nil || len(seen) != 50 {
		t.Fatalf("terse dump: %d flows, %v", len(seen), err)
	}
	stop := errors.New("stop")
	n := 0
	err = h.dp.DumpFlows(ctx, odp.DumpOptions{}, func(f *odp.Flow) error {
		n++
		if n == 10 {
			return stop
		}
		return nil
	})
	if err != stop || n != 10 {
		t.Errorf("dump stopped by fn: %d flows, %v", n, err)
	}
}

func TestPorts(t *testing.T) {
	h := newHarness(t, 2)
	ctx := context.Background()
	ports, _ := h.dp.Ports(ctx)
	if len(ports) != 2 || ports[0].Name != "m1" || ports[1].Number != 2 || ports[1].Type != PortMemory {
		t.Fatalf("ports %+v", ports)
	}
	if _, err := h.dp.AddPort(ctx, odp.PortSpec{Name: "m1", Type: PortMemory}); !errors.Is(err, os.ErrExist) {
		t.Errorf("add a port name twice: %v", err)
	}
	if _, err := h.dp.AddPort(ctx, odp.PortSpec{Name: "x", Type: PortMemory, Number: 2}); !errors.Is(err, syscall.EBUSY) {
		t.Errorf("add a port number twice: %v", err)
	}
	if _, err := h.dp.AddPort(ctx, odp.PortSpec{Name: "v", Type: "erspan"}); !errors.Is(err, odp.ErrUnsupported) {
		t.Errorf("add an erspan port: %v", err)
	}
	p, err := h.dp.AddPort(ctx, odp.PortSpec{Name: "m9", Type: PortMemory, Number: 9})
	if err != nil || p.Number != 9 {
		t.Fatalf("add port 9: %+v %v", p, err)
	}
	h.put("in_port(1),"+anyEth+"eth_type(0x0800)"+anyIPv4, "9")
	h.send(1, udpFrame(1, 2, 1))
	h.waitStats(1)
	ports, _ = h.dp.Ports(ctx)
	if ports[0].Stats.RxPackets != 1 || ports[2].Stats.TxPackets != 1 {
		t.Errorf("port stats %+v / %+v", ports[0].Stats, ports[2].Stats)
	}
	if err := h.dp.SetPort(ctx, odp.PortSpec{Number: 9, Options: map[string]string{"a": "b"}}); err != nil {
		t.Errorf("set port: %v", err)
	}
	if err := h.dp.SetPort(ctx, odp.PortSpec{Number: 9, Type: odp.PortInternal}); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("set port type: %v", err)
	}
	if err := h.dp.DelPort(ctx, 9); err != nil {
		t.Fatal(err)
	}
	if err := h.dp.DelPort(ctx, 9); !errors.Is(err, os.ErrNotExist) || !errors.Is(err, syscall.ENODEV) {
		t.Errorf("delete twice: %v", err)
	}
	// Output to the deleted port: counted, nothing breaks.
	h.send(1, udpFrame(1, 2, 1))
	h.waitStats(2)
	deadline := time.Now().Add(5 * time.Second)
	for h.dp.Drops().NoPort != 1 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if d := h.dp.Drops(); d.NoPort != 1 {
		t.Errorf("drops %+v, want one to a missing port", d)
	}
}

func TestUpcallMiss(t *testing.T) {
	h := newHarness(t, 2)
	ctx := context.Background()
	rs, err := h.dp.Upcalls(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	f := udpFrame(1, 2, 1000)
	h.send(1, f)
	ups := make([]odp.Upcall, 4)
	got := 0
	var up odp.Upcall
	for _, r := range rs {
		c, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		n, _ := r.Recv(c, ups)
		cancel()
		if n > 0 {
			got += n
			up = ups[0]
		}
	}
	if got != 1 {
		t.Fatalf("%d upcalls, want 1", got)
	}
	if up.Kind != odp.UpcallMiss || up.Port != 1 || string(up.Packet) != string(f) {
		t.Errorf("upcall %v port %d packet % x", up.Kind, up.Port, up.Packet)
	}
	ks := odp.FormatKey(up.Key, nil, false)
	if !containsAll(ks, "in_port(1)", "ipv4(src=10.0.0.1,dst=10.0.0.2,proto=17", "udp(src=1000,dst=2000)") {
		t.Errorf("upcall key %s", ks)
	}
	// Install the flow the handler decided and execute the packet.
	k, err := odp.ToFlowKeysExact(up.Key)
	if err != nil {
		t.Fatal(err)
	}
	_ = k
	if _, err := h.dp.PutFlow(ctx, &odp.Flow{Key: up.Key, Actions: odp.Actions{odp.Output{Port: 2}}}, odp.PutCreate); err != nil {
		t.Fatalf("put the upcall's exact flow: %v", err)
	}
	if err := h.dp.Execute(ctx, &odp.Packet{Data: up.Packet, Key: up.Key, Actions: odp.Actions{odp.Output{Port: 2}}}); err != nil {
		t.Fatal(err)
	}
	h.expect(2)
	h.send(1, f)
	h.expect(2)
	// A closed receiver returns an error.
	rs[0].Close()
	if _, err := rs[0].Recv(ctx, ups); !errors.Is(err, ErrReceiverClosed) {
		t.Errorf("recv after close: %v", err)
	}
}

func TestUpcallQueueOverflowIsLost(t *testing.T) {
	h := newHarness(t, 1, WithUpcallQueueLen(4))
	ctx := context.Background()
	rs, err := h.dp.Upcalls(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	var frames [][]byte
	for i := 0; i < 20; i++ {
		frames = append(frames, udpFrame(1, 2, uint16(i)))
	}
	h.send(1, frames...) // nobody reads the queue meanwhile
	st := h.waitStats(20)
	if st.Missed != 20 || st.Lost != 16 {
		t.Errorf("stats %+v, want 20 missed, 16 lost", st)
	}
	bl := rs[0].(interface{ Backlog() (int, int, error) })
	if q, c, err := bl.Backlog(); q != 4 || c != 4 || err != nil {
		t.Errorf("Backlog of the full queue = %d, %d, %v; want 4 of 4", q, c, err)
	}
	ups := make([]odp.Upcall, 10)
	n, err := rs[0].Recv(ctx, ups)
	if err != nil || n != 4 {
		t.Errorf("Recv: %d, %v; want the 4 queued", n, err)
	}
	if q, c, err := bl.Backlog(); q != 0 || c != 4 || err != nil {
		t.Errorf("Backlog once read = %d, %d, %v; want 0 of 4", q, c, err)
	}
	for i := 0; i < n; i++ {
		if want := udpFrame(1, 2, uint16(i)); string(ups[i].Packet) != string(want) {
			t.Errorf("upcall %d has the wrong packet", i)
		}
	}
}

// An upcall PID is a kernel notion: Execute refuses it instead of
// ignoring it.
func TestExecuteRefusesUpcallPID(t *testing.T) {
	dp, err := New("upid", WithoutLocalPort())
	if err != nil {
		t.Fatal(err)
	}
	defer dp.Close()
	key, err := odp.ParseKey("in_port(0)")
	if err != nil {
		t.Fatal(err)
	}
	err = dp.Execute(context.Background(), &odp.Packet{Data: make([]byte, 60), Key: key, UpcallPID: 7})
	if !errors.Is(err, syscall.EINVAL) || !strings.Contains(err.Error(), "upcall PID 7") {
		t.Errorf("err = %v, want EINVAL naming the upcall PID", err)
	}
}
