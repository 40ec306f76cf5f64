package userdp

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/ovsdp/ovsdp/conntrack"
	"github.com/ovsdp/ovsdp/flowkeys"
	"github.com/ovsdp/ovsdp/internal/header"
	"github.com/ovsdp/ovsdp/internal/header/headertest"
	"github.com/ovsdp/ovsdp/odp"
)

// trackerTuple is the tuple the ct action gives the tracker for frame
// (received on port 1): the flow key extracted as process extracts it,
// the L4 bytes and length as the ct action finds them (ipPayload), and
// the tracker's own conversion (conntrack.FromKey). ok is false when
// the tracker would not look a TCP or UDP tuple up for it (not IP, a
// fragment, another protocol, a malformed L4 header).
func trackerTuple(frame []byte) (conntrack.Tuple, bool) {
	var k flowkeys.Key
	if err := flowkeys.ExtractPort(frame, 1, &k); err != nil {
		return conntrack.Tuple{}, false
	}
	var h pktHeaders
	if err := parseHeaders(frame, &h); err != nil {
		return conntrack.Tuple{}, false
	}
	l4, l3len := ipPayload(frame, &h)
	var p conntrack.Packet
	if err := conntrack.FromKey(&k, l4, l3len, &p); err != nil || p.Malformed {
		return conntrack.Tuple{}, false
	}
	if p.Tuple.Proto != header.IPProtoTCP && p.Tuple.Proto != header.IPProtoUDP {
		return conntrack.Tuple{}, false
	}
	return p.Tuple, true
}

// checkCTTupleOf: when ctTupleOf takes a frame, its tuple is the
// tracker's.
func checkCTTupleOf(t *testing.T, frame []byte) (taken bool) {
	t.Helper()
	var tp conntrack.Tuple
	if !ctTupleOf(frame, &tp) {
		return false
	}
	want, ok := trackerTuple(frame)
	if !ok {
		t.Fatalf("ctTupleOf took a frame the tracker has no TCP or UDP tuple for (%v): % x", tp, frame)
	}
	if tp != want {
		t.Fatalf("ctTupleOf: %v, the tracker's %v: % x", tp, want, frame)
	}
	return true
}

// ctTupleFrames are TestCTTupleOfMatchesTracker's frames (and
// FuzzCTTupleOf's seeds): those ctTupleOf must take, and others.
func ctTupleFrames() (take, other map[string][]byte) {
	mac1, mac2 := headertest.MAC("02:00:00:00:00:01"), headertest.MAC("02:00:00:00:00:02")
	v4 := func(h headertest.IPv4Hdr, l4 []byte) []byte {
		h.Src, h.Dst = headertest.IP4("10.0.0.1"), headertest.IP4("10.0.0.2")
		return headertest.Eth(mac2, mac1, header.EtherTypeIPv4, headertest.IPv4(h, l4))
	}
	v6 := func(next uint8, l4 []byte) []byte {
		return headertest.Eth(mac2, mac1, header.EtherTypeIPv6, headertest.IPv6(headertest.IP6("2001:db8::1"), headertest.IP6("2001:db8::2"), next, 64, 0, 0, l4))
	}
	udp := headertest.UDP(1000, 53, []byte("query"))
	tcp := headertest.TCP(40000, 80, 1, 0, uint8(header.TCPFlagSyn), nil)
	padded := v4(headertest.IPv4Hdr{Proto: header.IPProtoUDP, TTL: 64}, headertest.UDP(7, 8, nil))
	padded = append(padded, make([]byte, 60-len(padded))...) // Ethernet padding past the IP length
	take = map[string][]byte{
		"udpFrame":          udpFrame(1, 2, 1000),
		"ctTCP":             ctTCP(1, 2, 40000, 80, 0x02, 1, 0),
		"ipv4 udp":          v4(headertest.IPv4Hdr{Proto: header.IPProtoUDP, TTL: 64}, udp),
		"ipv4 options tcp":  v4(headertest.IPv4Hdr{Proto: header.IPProtoTCP, TTL: 64, Options: []byte{1, 1, 1, 0}}, tcp),
		"ipv4 DF":           v4(headertest.IPv4Hdr{Proto: header.IPProtoUDP, TTL: 64, DF: true}, udp),
		"ipv4 padded":       padded,
		"ipv6 udp":          v6(header.IPProtoUDP, udp),
		"ipv6 tcp":          v6(header.IPProtoTCP, tcp),
		"tcp with data":     v4(headertest.IPv4Hdr{Proto: header.IPProtoTCP, TTL: 64}, headertest.TCP(1, 2, 3, 4, uint8(header.TCPFlagAck), []byte("data"))),
		"udp, no payload":   v4(headertest.IPv4Hdr{Proto: header.IPProtoUDP, TTL: 64}, headertest.UDP(9, 9, nil)),
		"ipv6 udp, padded?": append(v6(header.IPProtoUDP, udp), 0, 0),
	}
	short := v4(headertest.IPv4Hdr{Proto: header.IPProtoUDP, TTL: 64, TotalLen: 20 + 4}, udp)
	longLen := v4(headertest.IPv4Hdr{Proto: header.IPProtoUDP, TTL: 64, TotalLen: 200}, udp)
	badDoff := v4(headertest.IPv4Hdr{Proto: header.IPProtoTCP, TTL: 64}, headertest.TCP(1, 2, 3, 4, uint8(header.TCPFlagAck), nil))
	badDoff[14+20+12] = 15 << 4 // a 60-byte header in 20 bytes
	hopByHop := v6(0, append([]byte{header.IPProtoUDP, 0, 0, 0, 0, 0, 0, 0}, udp...))
	other = map[string][]byte{
		"empty":               nil,
		"short ethernet":      make([]byte, 13),
		"ipv4 first fragment": v4(headertest.IPv4Hdr{Proto: header.IPProtoUDP, TTL: 64, MF: true}, udp),
		"ipv4 later fragment": v4(headertest.IPv4Hdr{Proto: header.IPProtoUDP, TTL: 64, FragOff: 3}, udp),
		"vlan":                headertest.Eth(mac2, mac1, header.EtherTypeIPv4, headertest.IPv4(headertest.IPv4Hdr{Src: headertest.IP4("10.0.0.1"), Dst: headertest.IP4("10.0.0.2"), Proto: header.IPProtoUDP, TTL: 64}, udp), [2]uint16{header.EtherTypeVLAN, 5}),
		"icmp":                v4(headertest.IPv4Hdr{Proto: header.IPProtoICMP, TTL: 64}, headertest.ICMP(8, 0, 1, nil)),
		"udp cut by length":   short,
		"length past frame":   longLen,
		"tcp data offset 15":  badDoff,
		"ipv6 hop-by-hop":     hopByHop,
		"ihl 4":               v4(headertest.IPv4Hdr{Proto: header.IPProtoUDP, TTL: 64, IHL: 4}, udp),
		"arp":                 headertest.Eth(mac2, mac1, header.EtherTypeARP, headertest.ARP(1, mac1, headertest.IP4("10.0.0.1"), mac2, headertest.IP4("10.0.0.2"))),
	}
	return take, other
}

// TestCTTupleOfMatchesTracker: ctTupleOf takes untagged TCP and UDP
// over IPv4 (with options, DF, Ethernet padding) and IPv6, with the
// tracker's own tuple for each (trackerTuple: the key, L4 bytes and
// conversion of the ct action), and leaves fragments, VLAN tags, other
// protocols, cut or impossible headers and extension headers to the
// lookup itself (a frame it leaves is only not prefetched; one it took
// wrongly would be prefetched wrongly, still harmless, but is refused
// here).
func TestCTTupleOfMatchesTracker(t *testing.T) {
	take, other := ctTupleFrames()
	for name, f := range take {
		if !checkCTTupleOf(t, f) {
			t.Errorf("%s: not taken", name)
		}
	}
	for name, f := range other {
		if checkCTTupleOf(t, f) {
			t.Errorf("%s: taken", name)
		}
	}
}

// FuzzCTTupleOf: on any frame ctTupleOf does not panic, and a tuple it
// gives is the tracker's (checkCTTupleOf).
func FuzzCTTupleOf(f *testing.F) {
	take, other := ctTupleFrames()
	for _, m := range []map[string][]byte{take, other} {
		for _, fr := range m {
			f.Add(fr)
		}
	}
	f.Fuzz(func(t *testing.T, frame []byte) { checkCTTupleOf(t, frame) })
}

// recordPort is a port that keeps a copy of every frame written to it.
type recordPort struct {
	name   string
	mu     sync.Mutex
	frames [][]byte
	done   chan struct{}
}

func newRecordPort(name string) *recordPort {
	return &recordPort{name: name, done: make(chan struct{})}
}

func (p *recordPort) Name() string       { return p.name }
func (p *recordPort) Type() odp.PortType { return PortMemory }
func (p *recordPort) MTU() int           { return 1500 }
func (p *recordPort) Stats() odp.PortStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return odp.PortStats{TxPackets: uint64(len(p.frames))}
}
func (p *recordPort) Close() error { close(p.done); return nil }
func (p *recordPort) WriteBatch(pkts [][]byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, b := range pkts {
		p.frames = append(p.frames, slices.Clone(b))
	}
	return len(pkts), nil
}
func (p *recordPort) ReadBatch(bufs [][]byte, sizes []int, offset int) (int, error) {
	<-p.done
	return 0, ErrPortClosed
}

// ctOrderFixture is a firewall on in-memory ports: UDP from port 1
// through ct(zone=1) and a recirculation, its established packets to
// port 2, its new ones committed (with source NAT for source ports
// 1,280 to 1,535) and out to port 3, its invalid ones dropped; TCP from
// port 1 straight to port 2, without ct. Ports 2 and 3 record what they
// are sent.
func ctOrderFixture(t *testing.T) (*worker, *recordPort, *recordPort) {
	// A small exact-match cache, which 300 connections miss: the
	// receive loop's prefetch turns on (processBatch).
	dp, err := New("ctorder", WithoutLocalPort(), WithCacheEntries(64))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dp.Close() })
	if _, err := dp.AttachPort(newSinkPort("in"), 1); err != nil {
		t.Fatal(err)
	}
	est, fresh := newRecordPort("est"), newRecordPort("new")
	for n, p := range map[uint32]Port{2: est, 3: fresh} {
		if _, err := dp.AttachPort(p, n); err != nil {
			t.Fatal(err)
		}
	}
	const udp = "eth_type(0x0800),ipv4(proto=17/0xff),udp(src=0/0)"
	const newUDP = "recirc_id(1),in_port(1),ct_state(+new-est+trk)," + anyEth + "eth_type(0x0800),ipv4(proto=17/0xff),"
	for _, f := range []*odp.Flow{
		parseFlow(t, "recirc_id(0),in_port(1),"+anyEth+udp, "ct(zone=1),recirc(1)"),
		parseFlow(t, "recirc_id(1),in_port(1),ct_state(+est+trk),"+anyEth+udp, "2"),
		parseFlow(t, newUDP+"udp(src=0/0xfc00)", "ct(commit,zone=1),3"),
		parseFlow(t, newUDP+"udp(src=1024/0xff00)", "ct(commit,zone=1),3"),
		parseFlow(t, newUDP+"udp(src=1280/0xff00)", "ct(commit,zone=1,nat(src=10.9.0.1)),3"),
		parseFlow(t, "recirc_id(0),in_port(1),"+anyEth+"eth_type(0x0800),ipv4(proto=6/0xff),tcp(src=0/0),tcp_flags(0/0)", "2"),
	} {
		if _, err := dp.PutFlow(t.Context(), f, odp.PutCreate); err != nil {
			t.Fatal(err)
		}
	}
	w := newWorker(dp, 64)
	w.now = dp.nowMs()
	return w, est, fresh
}

// ctOrderFrames are frames from port 1: UDP of 300 connections (source
// ports 1,000 to 1,299 from 10.0.0.1 to port 2000 of 10.0.0.2), the
// first packet of each first, then packets of either direction (the
// source-NATed ones, 1,280 up, only in the original direction), with
// TCP frames among them, shuffled.
func ctOrderFrames() [][]byte {
	rng := rand.New(rand.NewPCG(7, 8))
	var frames [][]byte
	for i := range 300 {
		frames = append(frames, udpFrame(1, 2, uint16(1000+i)))
	}
	rng.Shuffle(len(frames), func(i, j int) { frames[i], frames[j] = frames[j], frames[i] })
	for i := range 3000 {
		if i%7 == 3 {
			frames = append(frames, ctTCP(1, 2, uint16(30000+i), 80, 0x10, uint32(i), 1))
			continue
		}
		sport := uint16(1000 + rng.IntN(300))
		if sport >= 1280 || rng.IntN(2) == 0 {
			frames = append(frames, udpFrame(1, 2, sport))
			continue
		}
		reply := udpFrame(2, 1, 2000)
		binary.BigEndian.PutUint16(reply[14+22:], sport)
		fixIPv4(reply, 14)
		frames = append(frames, reply)
	}
	return frames
}

// TestCTPrefetchBurstKeepsOrder: the same frames through three workers
// of three datapaths alike (ctOrderFixture): one by one (process),
// with every group of conntrack.MaxBurst prefetched first (prefetchCT,
// then process), and as the receive loop runs them (processBatch,
// prefetching while the ConnCache misses). The frames each port got,
// in order and byte for byte (NAT included), the connections tracked
// and the flows' counters must be the same.
func TestCTPrefetchBurstKeepsOrder(t *testing.T) {
	frames := ctOrderFrames()
	type result struct {
		est, fresh [][]byte
		conns      []string
		flows      []string
	}
	run := func(mode string) result {
		w, est, fresh := ctOrderFixture(t)
		bufs := make([][]byte, conntrack.MaxBurst)
		sizes := make([]int, conntrack.MaxBurst)
		for i := range bufs {
			bufs[i] = make([]byte, BufferSize(1500))
		}
		prefetched := 0
		for from := 0; from < len(frames); from += conntrack.MaxBurst {
			n := min(conntrack.MaxBurst, len(frames)-from)
			for i := range n {
				sizes[i] = copy(bufs[i][DefaultHeadroom:], frames[from+i])
			}
			switch mode {
			case "batch":
				if w.ctPrefetchOn {
					prefetched++
				}
				w.processBatch(bufs, sizes, n, 1)
			default:
				if mode == "prefetch" && w.ctPrefetch != nil {
					var tp conntrack.Tuple
					for i := range n {
						if ctTupleOf(bufs[i][DefaultHeadroom:DefaultHeadroom+sizes[i]], &tp) {
							prefetched++
						}
					}
					w.prefetchCT(bufs[:n], sizes[:n])
				}
				for i := range n {
					w.process(bufs[i], DefaultHeadroom, sizes[i], 1)
				}
			}
			w.flush()
		}
		if mode == "prefetch" && prefetched < len(frames)/2 {
			t.Fatalf("only %d of %d frames prefetched", prefetched, len(frames))
		}
		if groups := (len(frames) + conntrack.MaxBurst - 1) / conntrack.MaxBurst; mode == "batch" && prefetched < groups/2 {
			t.Fatalf("processBatch prefetched %d of %d groups", prefetched, groups)
		}
		var r result
		r.est, r.fresh = est.frames, fresh.frames
		w.dp.Conntrack().Dump(conntrack.Filter{}, func(e *conntrack.Entry) error {
			r.conns = append(r.conns, fmt.Sprintf("%v %v zone %d status %#x", e.Orig, e.Reply, e.Zone, e.Status))
			return nil
		})
		slices.Sort(r.conns)
		w.dp.DumpFlows(t.Context(), odp.DumpOptions{}, func(f *odp.Flow) error {
			r.flows = append(r.flows, fmt.Sprintf("%s %d packets %d bytes", odp.FormatKey(f.Key, f.Mask, false), f.Stats.Packets, f.Stats.Bytes))
			return nil
		})
		slices.Sort(r.flows)
		return r
	}
	one := run("one by one")
	if len(one.est) < 1000 || len(one.fresh) < 300 || len(one.conns) != 300 {
		t.Fatalf("fixture: %d established and %d new frames out, %d connections (want 1,000+, 300+, 300)", len(one.est), len(one.fresh), len(one.conns))
	}
	natted := 0
	for _, f := range one.fresh {
		if bytes.Equal(f[14+12:14+16], []byte{10, 9, 0, 1}) {
			natted++
		}
	}
	if natted < 20 {
		t.Fatalf("%d new frames source-NATed, want 20 or more", natted)
	}
	for _, mode := range []string{"prefetch", "batch"} {
		r := run(mode)
		for name, p := range map[string][2][][]byte{"established": {one.est, r.est}, "new": {one.fresh, r.fresh}} {
			if len(p[0]) != len(p[1]) {
				t.Fatalf("%s: %d %s frames, one by one %d", mode, len(p[1]), name, len(p[0]))
			}
			for i := range p[0] {
				if !bytes.Equal(p[0][i], p[1][i]) {
					t.Fatalf("%s: %s frame %d differs:\n% x\none by one\n% x", mode, name, i, p[1][i], p[0][i])
				}
			}
		}
		if !slices.Equal(one.conns, r.conns) {
			t.Fatalf("%s: connections differ:\n%v\none by one\n%v", mode, r.conns, one.conns)
		}
		if !slices.Equal(one.flows, r.flows) {
			t.Fatalf("%s: flows differ:\n%v\none by one\n%v", mode, r.flows, one.flows)
		}
	}
}

// TestCTPrefetchGate: processBatch turns the prefetch on after a group
// whose frames mostly missed the worker's ConnCache (a group of 32
// connections it has not met) and off after one that hit it (one
// connection), and a prefetched group of frames allocates nothing.
func TestCTPrefetchGate(t *testing.T) {
	w, _, frames := ctPipelineConns(t, 64)
	bufs := make([][]byte, conntrack.MaxBurst)
	sizes := make([]int, conntrack.MaxBurst)
	for i := range bufs {
		bufs[i] = make([]byte, BufferSize(1500))
	}
	group := func(conn func(i int) int) {
		for i := range bufs {
			sizes[i] = copy(bufs[i][DefaultHeadroom:], frames[conn(i)])
		}
		w.processBatch(bufs, sizes, len(bufs), 1)
		w.flush()
	}
	group(func(int) int { return 0 })
	if w.ctPrefetch == nil || w.ctPrefetchOn {
		t.Fatalf("after one connection's group: prefetcher %p, on %v (want one, off)", w.ctPrefetch, w.ctPrefetchOn)
	}
	round := 0
	spread := func(i int) int { return (i + round*conntrack.MaxBurst) % len(frames) }
	group(spread)
	if !w.ctPrefetchOn {
		t.Fatal("after a group of 32 connections: prefetch off")
	}
	if raceDetector {
		return
	}
	if a := testing.AllocsPerRun(100, func() { round++; w.ctPrefetchOn = true; group(spread) }); a != 0 {
		t.Errorf("a prefetched group of 32 connections allocates %v times", a)
	}
	group(func(int) int { return 5 })
	if w.ctPrefetchOn {
		t.Fatal("after one connection's group again: prefetch on")
	}
}

// BenchmarkPipelineCTConnsBurst is BenchmarkPipelineCTConns's measure
// over 50,000 established UDP connections, every packet of a different
// one (each connection once per round of 50,000, shuffled), with the
// frames run as the receive loop runs them (processBatch, in batches
// of 32): the ConnCache (4,096 entries) misses, and every packet's ct
// lookup reads its bucket and connection from memory. The no-ct path
// forwards the same frames the same way.
func BenchmarkPipelineCTConnsBurst(b *testing.B) {
	// A sub-benchmark, so that a pattern for another one
	// (scripts/pipeline-instructions.sh's old 'BenchmarkPipeline/^cache$')
	// does not build this fixture of 100,000 executes.
	b.Run("conns=50000", benchPipelineCTConnsBurst)
}

func benchPipelineCTConnsBurst(b *testing.B) {
	w, sink, frames, w0 := ctConnsFixtures(b, 50000)
	bufs := make([][]byte, pipelineBatch)
	sizes := make([]int, pipelineBatch)
	for i := range bufs {
		bufs[i] = make([]byte, BufferSize(1500))
	}
	pump := func(w *worker, from, to int) {
		for i := from; i < to; i += pipelineBatch {
			n := min(pipelineBatch, to-i)
			for j := range n {
				sizes[j] = copy(bufs[j][DefaultHeadroom:], frames[(i+j)%len(frames)])
			}
			w.processBatch(bufs, sizes, n, 1)
			w.flush()
		}
	}
	benchCTAgainstNoCT(b, sink,
		func(from, to int) { pump(w, from, to) },
		func(from, to int) { pump(w0, from, to) })
}
