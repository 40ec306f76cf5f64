package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ovsdp/ovsdp/flowkeys"
	"github.com/ovsdp/ovsdp/flowkeys/flowkeystest"
	"github.com/ovsdp/ovsdp/odp"
	"github.com/ovsdp/ovsdp/policy"
	"github.com/ovsdp/ovsdp/userdp"
)

// missRules are the rule sets the miss-path fuzz target starts from (the
// fuzzer mutates them; text that does not parse means the learning
// switch alone, as an empty rule file does).
var missRules = []string{
	"",
	"priority=100,ip,actions=drop\npriority=0,actions=normal",
	"priority=100,tcp,nw_dst=10.0.0.0/8,tp_dst=80,actions=dec_ttl,output:2\npriority=0,actions=normal",
	"arp,arp_spa=1.2.3.4,nw_proto=2,actions=flood\nipv6,actions=all\npriority=0,actions=drop",
	"dl_vlan=0xffff,actions=mod_vlan_vid:5,controller(userdata=01.02.ff)\ndl_vlan=7,actions=strip_vlan,normal",
	"icmp6,icmp_type=128,ipv6_src=fe80::/10,actions=strip_vlan,controller\nicmp,actions=mod_nw_tos:8,2",
	"udp,tp_src=0x100/0xff00,dl_dst=01:00:00:00:00:00/01:00:00:00:00:00,actions=mod_tp_dst:53,mod_nw_tos:8,3",
	"tcp,actions=mod_tp_src:7,2\nudp,actions=mod_tp_dst:53,2",
	"ip,nw_ttl=1,nw_tos=4,actions=mod_nw_ttl:3,mod_nw_src:1.1.1.1,mod_nw_dst:2.2.2.2,mod_dl_src:00:00:00:00:00:01,2",
	"tcp6,tp_src=1,actions=mod_tp_src:9,1,2\nipv6,ipv6_dst=2001:db8::1/ffff::ff,actions=3\ndl_type=0x8847,actions=2",
	"ip,actions=ct(zone=3,table=1)\nipv6,actions=ct(commit,nat(dst=[2001:db8::1]:80)),2\npriority=0,actions=ct_clear,normal\ntable=1,ct_state=+trk,actions=2",
	"group_id=1,type=select,bucket=mod_nw_ttl:3,2,bucket=3\ngroup_id=2,type=all,bucket=group:1,bucket=mod_vlan_vid:4,1\nip,actions=group:2\npriority=0,actions=group:1",
}

// logCapture is a slog handler that keeps the messages and attributes
// of the records at warning level and above.
type logCapture struct {
	mu   sync.Mutex
	recs []string
}

func (c *logCapture) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }
func (c *logCapture) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Message)
	r.Attrs(func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
		return true
	})
	c.mu.Lock()
	c.recs = append(c.recs, b.String())
	c.mu.Unlock()
	return nil
}

// wait waits (d at most) until c holds n records and returns a copy of
// them.
func (c *logCapture) wait(n int, d time.Duration) []string {
	deadline := time.Now().Add(d)
	for {
		c.mu.Lock()
		recs := append([]string(nil), c.recs...)
		c.mu.Unlock()
		if len(recs) >= n || time.Now().After(deadline) {
			return recs
		}
		time.Sleep(time.Millisecond)
	}
}

func (c *logCapture) WithAttrs([]slog.Attr) slog.Handler { return c }
func (c *logCapture) WithGroup(string) slog.Handler      { return c }

// FuzzMissPath runs random frames through the whole miss path of the
// daemon on a userspace datapath with in-memory ports 1-3:
// flowkeys.Extract gives the key of the miss upcall as a datapath sends
// it (odp.KeyFromFlowKeys), the daemon's handler decides (the policy's
// rules and learning switch), builds the megaflow, which the datapath
// validates (odp.ToFlowKeys, the kernel's rules) and puts, and executes
// the packet. The invariant, for every frame the kernel would send as a
// miss (at least an Ethernet header, and a key Extract accepts): either
// exactly one megaflow is installed, it asks for every bit the decision
// read (no broader than the decision), its key and mask match the
// frame, and the frame injected into the datapath's port then hits it
// (a lookup by the datapath's own extraction, counted on the flow); or
// no flow is installed, for a reason that leaves no valid megaflow (the
// upcall's key cannot be read, the decision cannot be expressed as a
// flow, the flow limit), the miss is counted in
// upcalld_megaflows_refused_total or upcalld_flow_limit_hits_total and
// a warning naming the error is logged. A megaflow that the datapath
// refuses (EINVAL) is a failure: the daemon built an invalid flow. Each frame gets a fresh datapath
// and daemon, so that a failure reproduces from its input alone.
//
// Run it with: go test -run '^$' -fuzz '^FuzzMissPath$' -parallel 1 ./cmd/upcalld/internal/daemon
func FuzzMissPath(f *testing.F) {
	for i, p := range flowkeystest.Corpus() {
		f.Add(p.Data, missRules[i%len(missRules)])
	}
	for _, r := range missRules {
		f.Add(mplsFrame(macN(1), macN(2), 100<<12|64, 200<<12|63), r)
		f.Add(udpFrame(macN(1), macN(2), ip4(10, 0, 0, 1), ip4(10, 0, 0, 2), 1000, 80, 0), r)
	}
	f.Fuzz(func(t *testing.T, frame []byte, rules string) {
		if len(frame) < 14 || len(frame) > 2048 {
			return // no datapath sends such a miss (and in-memory ports carry at most 2 KiB here)
		}
		var k flowkeys.Key
		if err := flowkeys.Extract(frame, &flowkeys.Metadata{InPort: 1}, &k); err != nil {
			return // the kernel drops the frame (malformed NSH): no upcall
		}
		checkMiss(t, frame, &k, rules)
	})
}

// checkMiss is FuzzMissPath's check of one frame with key k.
func checkMiss(t *testing.T, frame []byte, k *flowkeys.Key, rules string) {
	ctx := context.Background()
	dp, err := userdp.New(fmt.Sprintf("fz%d", dpSeq.Add(1)), userdp.WithoutLocalPort())
	if err != nil {
		t.Fatal(err)
	}
	defer dp.Close()
	for i := 1; i <= 3; i++ {
		if _, err := dp.AddPort(ctx, odp.PortSpec{Name: fmt.Sprintf("m%d", i), Type: userdp.PortMemory, Options: map[string]string{"queue": "64", "mtu": "2048"}}); err != nil {
			t.Fatal(err)
		}
	}
	rs, err := policy.ParseRules("fuzz.rules", strings.NewReader(rules))
	if err != nil {
		rs = nil // the learning switch alone
	}
	logs := &logCapture{}
	reg := prometheus.NewRegistry()
	d, err := New(Config{Datapath: dp, Rules: rs, Handlers: 1, Logger: slog.New(logs), Registry: reg, RevalidateInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Setup(ctx); err != nil {
		t.Fatal(err)
	}
	up := odp.Upcall{Kind: odp.UpcallMiss, Port: 1, Packet: frame, Key: odp.KeyFromFlowKeys(k)}
	h := newHandlerState(0, 1)
	d.handleOne(ctx, h, &up, shedNone, time.Now())

	// A refusal is sound only when no valid megaflow exists for the
	// decision (inexpressible), the key cannot be read, or the flow
	// limit is reached; a megaflow the datapath refuses (put) or
	// actions that do not encode are the daemon's bugs.
	if bad := counterOf(t, reg, "upcalld_megaflows_refused_total", "put") + counterOf(t, reg, "upcalld_megaflows_refused_total", "actions"); bad != 0 {
		t.Fatalf("frame %x (key %s): the daemon built a flow the datapath refuses: %q",
			frame, odp.FormatKey(up.Key, nil, true), logs.recs)
	}
	refused := counterSum(t, reg, "upcalld_megaflows_refused_total") + counterSum(t, reg, "upcalld_flow_limit_hits_total")
	var flows []*odp.Flow
	if err := dp.DumpFlows(ctx, odp.DumpOptions{}, func(f *odp.Flow) error { flows = append(flows, f); return nil }); err != nil {
		t.Fatal(err)
	}
	st := d.Status()
	switch {
	case len(flows) == 0:
		if refused != 1 || st.Installed != 0 {
			t.Fatalf("no flow installed for %x (key %s): %v refusals counted (want 1), status %+v, log %q",
				frame, odp.FormatKey(up.Key, nil, true), refused, st, logs.recs)
		}
		if len(logs.recs) == 0 || !strings.Contains(strings.Join(logs.recs, "\n"), "err=") {
			t.Fatalf("no flow installed for %x and no warning with the reason logged", frame)
		}
		return
	case len(flows) != 1 || st.Installed != 1 || refused != 0:
		t.Fatalf("frame %x: %d flows, %d installed, %v refused; want one installed", frame, len(flows), st.Installed, refused)
	}
	var r *record
	d.flows.each(func(rec *record) { r = rec })
	if r == nil {
		t.Fatalf("frame %x: a flow in the datapath but no record in the daemon", frame)
	}
	fk, fm, err := odp.ToFlowKeys(r.keyAttrs, r.maskAttrs)
	if err != nil {
		t.Fatalf("frame %x: the installed megaflow %s does not convert: %v", frame, odp.FormatKey(r.keyAttrs, r.maskAttrs, true), err)
	}
	want := r.mask
	want.VLANTCI, want.CVLANTCI = 0, 0 // the datapath makes them exact anyway
	if isICMP(k) {
		// ICMP type and code live in the 16-bit port fields, and the
		// icmp and icmpv6 attributes carry their low bytes only: the
		// high bytes are zero in every ICMP packet's key, so a decision
		// that read them loses nothing when they are not matched.
		want.TpSrc &= 0xff
		want.TpDst &= 0xff
	}
	if k.IPFrag == flowkeys.FragLater && fm.IPFrag&flowkeys.FragLater != 0 {
		// A later fragment has no L4 header: its ports and TCP flags
		// are zero in every key, and its flows carry no L4 attribute.
		// A flow that matches later fragments only loses nothing when
		// it does not match them.
		want.TpSrc, want.TpDst, want.TCPFlags = 0, 0, 0
	}
	fmw, kw, fkw := fm.Words(), k.Words(), fk.Words()
	for i, w := range want.Words() {
		if w&^fmw[i] != 0 {
			t.Fatalf("frame %x: the megaflow %s is broader than the decision: mask word %d is %#x, the decision read %#x",
				frame, odp.FormatKey(r.keyAttrs, r.maskAttrs, true), i, fmw[i], w)
		}
		if kw[i]&fmw[i] != fkw[i] {
			t.Fatalf("frame %x: the megaflow %s does not match the frame's key %s (word %d)",
				frame, odp.FormatKey(r.keyAttrs, r.maskAttrs, true), odp.FormatKey(up.Key, nil, true), i)
		}
	}
	// The datapath's own lookup: the frame, received on port 1, hits
	// the flow.
	peer := dp.MemoryPeer("m1")
	if n, err := peer.WriteBatch([][]byte{frame}); n != 1 {
		t.Fatalf("injecting the frame of %d bytes: %v (port stats %+v)", len(frame), err, peer.Stats())
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		f, err := dp.GetFlow(ctx, r.id)
		if err != nil {
			t.Fatalf("frame %x: getting the installed flow: %v", frame, err)
		}
		if f.Stats.Packets == 1 {
			break
		}
		if time.Now().After(deadline) {
			info, _ := dp.Info(ctx)
			t.Fatalf("frame %x (key %s): the installed megaflow %s did not match the frame within 5s (datapath stats %+v)",
				frame, odp.FormatKey(up.Key, nil, true), odp.FormatKey(r.keyAttrs, r.maskAttrs, true), info.Stats)
		}
		time.Sleep(50 * time.Microsecond)
	}
}

// isICMP reports whether k is an ICMP or ICMPv6 packet with its header
// (not a later fragment).
func isICMP(k *flowkeys.Key) bool {
	return k.IPFrag != flowkeys.FragLater &&
		(k.EthType == flowkeys.EthTypeIPv4 && k.IPProto == 1 || k.EthType == flowkeys.EthTypeIPv6 && k.IPProto == 58)
}

// counterOf is the value of a counter with label reason=reason in reg.
func counterOf(t *testing.T, reg *prometheus.Registry, name, reason string) float64 {
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "reason" && l.GetValue() == reason {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// counterSum is the sum of a counter family's values in reg.
func counterSum(t *testing.T, reg *prometheus.Registry, name string) float64 {
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var s float64
	for _, mf := range mfs {
		if mf.GetName() == name {
			for _, m := range mf.GetMetric() {
				s += m.GetCounter().GetValue()
			}
		}
	}
	return s
}

// TestMissPathPortSet: a port rewrite under a rule that matches no port
// gets a megaflow the datapath takes (the kernel's validate_tp_port
// wants a nonzero port in the flow's masked key), for a packet with both
// ports, one and none (then no port set, as Open vSwitch).
func TestMissPathPortSet(t *testing.T) {
	for _, p := range [][2]uint16{{1000, 80}, {1000, 0}, {0, 80}, {0, 0}} {
		frame := udpFrame(macN(1), macN(2), ip4(10, 0, 0, 1), ip4(10, 0, 0, 2), p[0], p[1], 0)
		var k flowkeys.Key
		if err := flowkeys.Extract(frame, &flowkeys.Metadata{InPort: 1}, &k); err != nil {
			t.Fatal(err)
		}
		checkMiss(t, frame, &k, "udp,actions=mod_tp_dst:53,2")
	}
}
