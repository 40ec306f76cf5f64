package userdp

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"
	"testing"
	"unsafe"

	"github.com/ovsdp/ovsdp/flowkeys"
	"github.com/ovsdp/ovsdp/internal/header"
	"github.com/ovsdp/ovsdp/odp"
)

func TestCompileFast(t *testing.T) {
	key := flowkeys.Key{EthType: header.EtherTypeIPv4}
	for _, c := range []struct {
		acts string
		want fastProg
	}{
		{"2", fastProg{kind: fastOutput, port: 2}},
		{"dec_ttl(le_1(drop)),7", fastProg{kind: fastDecTTLOutput, port: 7}},
		{"dec_ttl(le_1(3)),7", fastProg{kind: fastDecTTLOutput, port: 7}},
		{"2,3", fastProg{}},
		{"dec_ttl(le_1(drop))", fastProg{}},
		{"dec_ttl(le_1(drop)),2,3", fastProg{}},
		{"trunc(100),2", fastProg{}},
		{"drop", fastProg{}},
		{"clone(2)", fastProg{}},
		{"ct(zone=1),recirc(7),2", fastProg{}},
		{"ct(zone=1),2", fastProg{}},
		{"recirc(7)", fastProg{}},
	} {
		as, err := odp.ParseActions(c.acts)
		if err != nil {
			t.Fatalf("%s: %v", c.acts, err)
		}
		prog, err := compileActions(as, &key)
		if err != nil {
			t.Fatalf("%s: %v", c.acts, err)
		}
		if got := newFlowActions(as, prog).fast; got != c.want {
			t.Errorf("%s: fast form %+v, want %+v", c.acts, got, c.want)
		}
	}
	as, _ := odp.ParseActions("ct(commit,zone=1),recirc(7)")
	prog, err := compileActions(as, &key)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := newFlowActions(as, prog).fast, (fastProg{kind: fastCTRecirc, port: 7, ct: prog[0].ct}); got != want || got.ct == nil {
		t.Errorf("ct,recirc: fast form %+v, want %+v", got, want)
	}
}

// fastOutcome is what executing a packet's actions left behind: the
// packet's state and frame, the worker's counters, and the frames queued
// on the output port (and whether each is the packet's own buffer).
type fastOutcome struct {
	ctx      pktCtx
	frame    []byte
	counters workerCounters
	queued   [][]byte
	stolen   []bool
}

// fastState is the part of a packet's state that output and dec_ttl
// read or change, besides its key and frame.
type fastState struct {
	keyValid, hValid, steal, noEth bool
	l3off, off, n                  int
	cutlen                         uint32
	proto                          uint16
}

func fastStateOf(c *pktCtx) fastState {
	return fastState{c.keyValid, c.hValid, c.steal, c.noEth, c.l3off, c.f.Off, c.f.Len, c.cutlen, c.proto}
}

// TestRunFastMatchesRun runs packets in every combination of the states
// runFast distinguishes through the fast form of their flow's actions
// (falling back to run when it declines, as lookupAndRun does) and
// through run alone, and requires the same outcome. A declined fast form
// must have changed nothing, and the common state must take it.
func TestRunFastMatchesRun(t *testing.T) {
	w, _, base := pipelineFixture(t, DefaultCacheEntries)
	const hugePort = maxPortNumber + 1
	filler := bytes.Repeat([]byte{0xee}, 60)
	// collect records what the worker queued on port and empties its
	// queues and counters.
	collect := func(c *pktCtx, port uint32) fastOutcome {
		o := fastOutcome{ctx: *c, frame: clone(c.f.Bytes()), counters: w.counters}
		if int(port) < len(w.txq) {
			q := &w.txq[port]
			for _, p := range q.pkts[:q.n] {
				o.queued = append(o.queued, clone(p))
				o.stolen = append(o.stolen, len(p) > 0 && unsafe.SliceData(p) == &c.f.Buf[c.f.Off])
			}
		}
		for _, p := range w.dirty {
			q := &w.txq[p]
			clear(q.pkts[:q.n])
			q.n = 0
		}
		w.dirty = w.dirty[:0]
		w.counters = workerCounters{}
		return o
	}
	var cases, taken int
	for _, ttl := range []byte{0, 1, 2, 64, 255} {
		for _, proto := range []uint16{header.EtherTypeIPv4, header.EtherTypeIPv6, header.EtherTypeVLAN} {
			for _, cut := range []int{0, 60 - 14 - 20, 60 - 14 - 19} { // whole; the IPv4 header just fits; one byte short
				for _, kind := range []fastKind{fastOutput, fastDecTTLOutput} {
					for _, port := range []uint32{2, 3, hugePort} {
						for flags := 0; flags < 1<<7; flags++ {
							cases++
							name := fmt.Sprintf("ttl=%d proto=%#x cut=%d kind=%d port=%d flags=%07b", ttl, proto, cut, kind, port, flags)
							frame := clone(base)
							frame[14+8] = ttl
							fixIPv4(frame, 14)
							frame = frame[:len(frame)-cut]
							acts := odp.Actions{odp.Output{Port: port}}
							if kind == fastDecTTLOutput {
								acts = odp.Actions{odp.DecTTL{LE1: odp.Actions{odp.Output{Port: 2}}}, odp.Output{Port: port}}
							}
							var key flowkeys.Key
							md := flowkeys.Metadata{InPort: 1}
							if err := flowkeys.Extract(frame, &md, &key); err != nil {
								t.Fatalf("%s: %v", name, err)
							}
							prog, err := compileActions(acts, &key)
							if err != nil {
								t.Fatalf("%s: %v", name, err)
							}
							fa := newFlowActions(acts, prog)
							if fa.fast.kind != kind {
								t.Fatalf("%s: fast form %+v", name, fa.fast)
							}
							c0 := pktCtx{key: key, keyValid: true, l3off: 14, proto: proto, steal: true, acts: fa}
							if flags&1 != 0 {
								c0.noEth = true
							}
							if flags&2 != 0 {
								c0.cutlen = 4
							}
							if flags&4 != 0 {
								c0.steal = false
							}
							if flags&8 != 0 {
								c0.keyValid = false
							}
							if flags&16 != 0 {
								c0.key.IPTTL = 0
							}
							if flags&32 != 0 {
								c0.l3off = 0 // not known: run parses
							}
							tunnels := flags&64 != 0
							if tunnels {
								w.dp.tunnels.Add(1)
							}
							runOne := func(fast bool, prefill bool) (fastOutcome, bool) {
								buf := make([]byte, BufferSize(1500))
								copy(buf[DefaultHeadroom:], frame)
								c := c0
								c.f = frameBuf{Buf: buf, Off: DefaultHeadroom, Len: len(frame)}
								if prefill && port != hugePort {
									w.output(port, filler, false)
								}
								took := false
								if fast {
									before, beforeKey := clone(c.f.Bytes()), c.key
									took = w.runFast(&c, fa.fast, c.f.Bytes())
									if !took && (!bytes.Equal(before, c.f.Bytes()) || c.key != beforeKey || w.counters != (workerCounters{})) {
										t.Errorf("%s: runFast declined after changing the packet or the counters", name)
									}
								}
								if !took {
									w.run(&c, fa.prog)
								}
								return collect(&c, port), took
							}
							for _, prefill := range []bool{false, true} {
								want, _ := runOne(false, prefill)
								got, took := runOne(true, prefill)
								if took {
									taken++
								}
								common := flags == 0 && cut != 60-14-19 && ttl > 1 && proto == header.EtherTypeIPv4
								if tunnels && took {
									// The fixture has no tunnel port, so run's result
									// is the same; but with one, output encapsulates.
									t.Errorf("%s prefill=%v: the fast form was taken with a tunnel port in the datapath", name, prefill)
								}
								if common && !took {
									t.Errorf("%s prefill=%v: the fast form was not taken", name, prefill)
								}
								if !bytes.Equal(got.frame, want.frame) {
									t.Errorf("%s prefill=%v: frame\n got %x\nwant %x", name, prefill, got.frame, want.frame)
								}
								if got.ctx.key != want.ctx.key {
									t.Errorf("%s prefill=%v: key TTL %d, want %d", name, prefill, got.ctx.key.IPTTL, want.ctx.key.IPTTL)
								}
								if g, w := fastStateOf(&got.ctx), fastStateOf(&want.ctx); g != w {
									t.Errorf("%s prefill=%v: packet state %+v, want %+v", name, prefill, g, w)
								}
								if got.counters != want.counters {
									t.Errorf("%s prefill=%v: counters %+v, want %+v", name, prefill, got.counters, want.counters)
								}
								if len(got.queued) != len(want.queued) {
									t.Errorf("%s prefill=%v: %d frames queued, want %d", name, prefill, len(got.queued), len(want.queued))
									continue
								}
								for i := range got.queued {
									if !bytes.Equal(got.queued[i], want.queued[i]) || got.stolen[i] != want.stolen[i] {
										t.Errorf("%s prefill=%v: queued frame %d: %x (own buffer %v), want %x (%v)", name, prefill, i,
											got.queued[i], got.stolen[i], want.queued[i], want.stolen[i])
									}
								}
							}
							if tunnels {
								w.dp.tunnels.Add(-1)
							}
						}
					}
				}
			}
		}
	}
	if taken == 0 {
		t.Fatalf("the fast form was never taken in %d cases", cases)
	}
	t.Logf("%d cases, the fast form taken %d times", cases*2, taken)
}

// capPort is a port that keeps copies of the frames written to it.
type capPort struct {
	sinkPort
	frames [][]byte
}

func (p *capPort) WriteBatch(pkts [][]byte) (int, error) {
	for _, b := range pkts {
		p.frames = append(p.frames, clone(b))
	}
	return len(pkts), nil
}

// ctRecircFixture is a datapath with firewall-style ct, recirc flows
// (with and without NAT, and one that recirculates until the limit) on
// capturing ports 1-3, and a worker to push frames through. With slow,
// every flow's fastCTRecirc form is dropped, so run executes it.
func ctRecircFixture(t *testing.T, slow bool) (*worker, []*capPort) {
	dp, err := New("ctfast", WithoutLocalPort())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dp.Close() })
	ports := make([]*capPort, 4)
	for i := 1; i <= 3; i++ {
		ports[i] = &capPort{sinkPort: *newSinkPort(fmt.Sprintf("c%d", i))}
		if _, err := dp.AttachPort(ports[i], uint32(i)); err != nil {
			t.Fatal(err)
		}
	}
	const udp = "eth_type(0x0800),ipv4(proto=17/0xff),udp(src=0/0)"
	const tcp = ipTCP
	for _, f := range [][2]string{
		{"recirc_id(0),in_port(1)," + anyEth + udp, "ct(commit,zone=1),recirc(1)"},
		{"recirc_id(1),in_port(1),ct_state(+new+trk)," + anyEth + udp, "2"},
		{"recirc_id(1),in_port(1),ct_state(+est+trk)," + anyEth + udp, "3"},
		{"recirc_id(0),in_port(2)," + anyEth + udp, "ct(zone=1),recirc(2)"},
		{"recirc_id(2),in_port(2),ct_state(+est+rpl+trk)," + anyEth + udp, "1"},
		{"recirc_id(0),in_port(1)," + anyEth + tcp, "ct(commit,zone=2,nat(src=10.9.9.9)),recirc(3)"},
		{"recirc_id(3),in_port(1)," + anyEth + tcp, "2"},
		{"recirc_id(0),in_port(3)," + anyEth + udp, "ct(zone=3),recirc(5)"},
		{"recirc_id(5),in_port(3)," + anyEth + udp, "ct(zone=3),recirc(5)"},
	} {
		if _, err := dp.PutFlow(t.Context(), parseFlow(t, f[0], f[1]), odp.PutCreate); err != nil {
			t.Fatal(err)
		}
	}
	if n := countFastForms(dp, slow, fastCTRecirc); n != 5 {
		t.Fatalf("%d flows have the fast form fastCTRecirc, want 5", n)
	}
	w := newWorker(dp, DefaultCacheEntries)
	w.now = dp.nowMs()
	return w, ports
}

// TestCTRecircFastMatchesRun sends the same packets through a datapath
// whose ct, recirc flows take the fast form fastCTRecirc and through one
// whose flows run the compiled list, and requires the same frames out
// of each port, drop counters, flow statistics and connections.
func TestCTRecircFastMatchesRun(t *testing.T) {
	reply := udpFrame(2, 1, 2000)
	binary.BigEndian.PutUint16(reply[14+22:], 1000)
	fixIPv4(reply, 14)
	// A first fragment too short to hold 8 bytes: reassembly drops it
	// (the ct action's error).
	frag := udpFrame(1, 2, 1000)[:14+20+4]
	binary.BigEndian.PutUint16(frag[14+2:], 20+4)
	binary.BigEndian.PutUint16(frag[14+6:], 0x2000) // more fragments
	binary.BigEndian.PutUint16(frag[14+10:], 0)
	binary.BigEndian.PutUint16(frag[14+10:], refIPv4Check(frag[14:]))
	// IPv4 total lengths past the frame, below a header, and short of
	// the frame (padding): the ct action's payload from each.
	totLen := func(tot uint16) []byte {
		f := udpFrame(1, 2, 1000)
		binary.BigEndian.PutUint16(f[14+2:], tot)
		binary.BigEndian.PutUint16(f[14+10:], 0)
		binary.BigEndian.PutUint16(f[14+10:], refIPv4Check(f[14:34]))
		return f
	}
	n := uint16(len(udpFrame(1, 2, 1000)) - 14)
	frames := []struct {
		in uint32
		f  []byte
	}{
		{1, totLen(n + 1)},
		{1, totLen(19)},
		{1, totLen(28)},
		{1, totLen(n)},
		{1, udpFrame(1, 2, 1000)}, // new, committed: port 2
		{1, udpFrame(1, 2, 1000)}, // still new (no reply yet)
		{2, reply},                // the reply: port 1
		{1, udpFrame(1, 2, 1000)}, // established: port 3
		{1, udpFrame(1, 2, 1000)},
		{2, reply},
		{1, udpFrame(1, 2, 1001)},                     // another connection
		{1, ctTCP(1, 2, 40000, 80, 0x02, 1, 0)},       // SYN, source-NATed
		{1, ctTCP(1, 2, 40000, 80, 0x10, 2, 1)},       // out of window: invalid, still forwarded
		{3, udpFrame(1, 2, 1000)},                     // recirculates until the limit
		{2, udpFrame(2, 1, 3000)},                     // not a reply: misses
		{1, udpFrame(1, 2, 1000)[:14+20+4]},           // truncated UDP header
		{1, append(udpFrame(1, 2, 1000), 0, 0, 0, 0)}, // link-layer padding
		{1, frag},
	}
	type result struct {
		out   [4][][]byte
		drops DropStats
		stats []string
		conns int
	}
	runAll := func(slow bool) result {
		w, ports := ctRecircFixture(t, slow)
		buf := make([]byte, BufferSize(1500))
		for _, fr := range frames {
			copy(buf[DefaultHeadroom:], fr.f)
			w.process(buf, DefaultHeadroom, len(fr.f), fr.in)
			w.flush()
		}
		var r result
		for i := 1; i <= 3; i++ {
			r.out[i] = ports[i].frames
		}
		r.drops = w.dp.Drops()
		w.dp.table.each(func(f *megaflow) bool {
			s := f.stats()
			r.stats = append(r.stats, fmt.Sprintf("%v: %d packets %d bytes", f.acts.Load().odp, s.Packets, s.Bytes))
			return true
		})
		slices.Sort(r.stats)
		r.conns = w.dp.Conntrack().Count()
		return r
	}
	want, got := runAll(true), runAll(false)
	comparePortFrames(t, &got.out, &want.out)
	if got.drops != want.drops {
		t.Errorf("drops %+v, want %+v", got.drops, want.drops)
	}
	if !slices.Equal(got.stats, want.stats) {
		t.Errorf("flow statistics\n got %q\nwant %q", got.stats, want.stats)
	}
	if got.conns != want.conns {
		t.Errorf("%d connections, want %d", got.conns, want.conns)
	}
	// The run covers what it is meant to.
	if len(want.out[1]) < 2 || len(want.out[2]) < 2 || len(want.out[3]) < 2 || want.drops.RecircLimit == 0 || want.drops.ActionErrors == 0 || want.conns < 3 {
		t.Fatalf("the packets did not take the paths meant: out %d %d %d, drops %+v, %d connections",
			len(want.out[1]), len(want.out[2]), len(want.out[3]), want.drops, want.conns)
	}
}

// countFastForms counts dp's flows whose fast form is one of kinds and,
// when slow, drops that form from each of them, so that run executes
// their actions instead.
func countFastForms(dp *Datapath, slow bool, kinds ...fastKind) int {
	n := 0
	dp.table.each(func(f *megaflow) bool {
		a := *f.acts.Load()
		if slices.Contains(kinds, a.fast.kind) {
			n++
			if slow {
				a.fast = fastProg{}
				f.acts.Store(&a)
			}
		}
		return true
	})
	return n
}

// comparePortFrames reports the differences between the frames ports 1
// to 3 sent in two runs of the same packets.
func comparePortFrames(t *testing.T, got, want *[4][][]byte) {
	t.Helper()
	for i := 1; i <= 3; i++ {
		if len(got[i]) != len(want[i]) {
			t.Errorf("port %d: %d frames, want %d", i, len(got[i]), len(want[i]))
			continue
		}
		for j := range got[i] {
			if !bytes.Equal(got[i][j], want[i][j]) {
				t.Errorf("port %d frame %d:\n got %x\nwant %x", i, j, got[i][j], want[i][j])
			}
		}
	}
}
