package userdp

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"net/netip"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/ovsdp/ovsdp/conntrack"
	"github.com/ovsdp/ovsdp/flowkeys"
	"github.com/ovsdp/ovsdp/internal/header"
	"github.com/ovsdp/ovsdp/odp"
)

// ctTCP is an Ethernet/IPv4/TCP frame 10.0.0.src:sport → 10.0.0.dst:dport
// with the given flags, sequence numbers and correct checksums.
func ctTCP(src, dst byte, sport, dport uint16, flags uint8, seq, ack uint32) []byte {
	f := make([]byte, 14+20+20)
	copy(f[0:6], []byte{0, 0, 0, 0, 0, dst})
	copy(f[6:12], []byte{0, 0, 0, 0, 0, src})
	binary.BigEndian.PutUint16(f[12:], header.EtherTypeIPv4)
	ip := f[14:]
	ip[0] = 0x45
	binary.BigEndian.PutUint16(ip[2:], 40)
	ip[8], ip[9] = 64, header.IPProtoTCP
	copy(ip[12:], []byte{10, 0, 0, src})
	copy(ip[16:], []byte{10, 0, 0, dst})
	th := ip[20:]
	binary.BigEndian.PutUint16(th[0:], sport)
	binary.BigEndian.PutUint16(th[2:], dport)
	binary.BigEndian.PutUint32(th[4:], seq)
	binary.BigEndian.PutUint32(th[8:], ack)
	th[12], th[13] = 5<<4, flags
	binary.BigEndian.PutUint16(th[14:], 65535)
	fixIPv4(f, 14)
	return f
}

// answer is a zeroed frame of an Ethernet header and n bytes going back
// to where frame came from.
func answer(frame []byte, etherType uint16, n int) []byte {
	f := make([]byte, 14+n)
	copy(f[0:6], frame[6:12])
	copy(f[6:12], frame[0:6])
	binary.BigEndian.PutUint16(f[12:], etherType)
	return f
}

const ipTCP = "eth_type(0x0800),ipv4(proto=6/0xff),tcp(src=0/0),tcp_flags(0/0)"

// TestCTStatefulFirewall: port 1 may open TCP to port 2, port 2 may not
// open to port 1, replies flow; ct_state is matched after recirculation.
func TestCTStatefulFirewall(t *testing.T) {
	h := newHarness(t, 2)
	h.put("recirc_id(0),in_port(1),"+anyEth+ipTCP, "ct(zone=1),recirc(1)")
	h.put("recirc_id(0),in_port(2),"+anyEth+ipTCP, "ct(zone=1),recirc(2)")
	h.put("recirc_id(1),in_port(1),ct_state(+new+trk),"+anyEth+ipTCP, "ct(commit,zone=1),2")
	h.put("recirc_id(1),in_port(1),ct_state(-new+est+trk),"+anyEth+ipTCP, "2")
	h.put("recirc_id(2),in_port(2),ct_state(-new+est+trk),"+anyEth+ipTCP, "1")
	h.put("recirc_id(2),in_port(2),ct_state(+new+trk),"+anyEth+ipTCP, "drop")

	h.synAndSynAck()
	// Out of window before the handshake completes: invalid, matched
	// by neither flow (a miss).
	h.send(2, ctTCP(2, 1, 80, 40000, 0x10, 5001+1<<20, 1001))
	h.expectNone(1)
	ack := ctTCP(1, 2, 40000, 80, 0x10, 1001, 5001)
	h.send(1, ack)
	h.expectFrame(2, ack)
	// Port 2 opening a connection of its own is dropped.
	h.send(2, ctTCP(2, 1, 2222, 22, 0x02, 7, 0))
	h.expectNone(1)
	// Established and assured: openvswitch's liberal window tracking
	// lets the same out-of-window segment through, as the kernel does.
	late := ctTCP(2, 1, 80, 40000, 0x10, 5001+1<<20, 1001)
	h.send(2, late)
	h.expectFrame(1, late)
	tr := h.dp.Conntrack()
	if tr.Count() != 1 {
		t.Fatalf("%d connections, want 1", tr.Count())
	}
}

// synAndSynAck sends a SYN from port 1 (port 40000 to 80, sequence 1000)
// and its SYN-ACK back from port 2 (sequence 5000), each expected on the
// other port.
func (h *harness) synAndSynAck() {
	h.t.Helper()
	syn := ctTCP(1, 2, 40000, 80, 0x02, 1000, 0)
	h.send(1, syn)
	h.expectFrame(2, syn)
	synack := ctTCP(2, 1, 80, 40000, 0x12, 5000, 1001)
	h.send(2, synack)
	h.expectFrame(1, synack)
}

// TestCTSNATRewrite: ct(commit,nat(src=...)) rewrites the packet (with
// correct checksums) and the key; the reply is rewritten back.
func TestCTSNATRewrite(t *testing.T) {
	h := newHarness(t, 2)
	h.put("recirc_id(0),in_port(1),"+anyEth+ipTCP, "ct(commit,nat(src=192.168.0.100:5000-5000)),2")
	h.put("recirc_id(0),in_port(2),"+anyEth+ipTCP, "ct(nat),1")
	syn := ctTCP(1, 2, 40000, 80, 0x02, 1000, 0)
	h.send(1, syn)
	got := h.expect(2)
	ip := got[14:]
	if !bytes.Equal(ip[12:16], []byte{192, 168, 0, 100}) || binary.BigEndian.Uint16(ip[20:]) != 5000 {
		t.Fatalf("SNATed SYN % x", got)
	}
	checkIPv4(t, got, 14)
	// The reply to the mapped address comes back to 10.0.0.1:40000.
	synack := ctTCP(2, 1, 80, 5000, 0x12, 5000, 1001)
	copy(synack[14+16:], []byte{192, 168, 0, 100})
	fixIPv4(synack, 14)
	h.send(2, synack)
	back := h.expect(1)
	if !bytes.Equal(back[14+16:14+20], []byte{10, 0, 0, 1}) || binary.BigEndian.Uint16(back[14+22:]) != 40000 {
		t.Fatalf("reply rewritten to % x", back)
	}
	checkIPv4(t, back, 14)
	// A second host's connection finds the single port taken: dropped.
	h.send(1, ctTCP(3, 2, 40000, 80, 0x02, 1, 0))
	h.expectNone(2)
}

// TestCTKeyAfterRecirc: the key a recirculated miss carries has the ct
// fields the tracker set (state, zone, mark, original tuple).
func TestCTKeyAfterRecirc(t *testing.T) {
	h := newHarness(t, 2)
	rs, err := h.dp.Upcalls(t.Context(), 1)
	if err != nil {
		t.Fatal(err)
	}
	f := udpFrame(1, 2, 1000)
	h.mustExecute(f, "ct(commit,zone=7,mark=0x5/0xff),recirc(9)")
	ups := make([]odp.Upcall, 1)
	n, err := rs[0].Recv(t.Context(), ups)
	if err != nil || n != 1 {
		t.Fatalf("recv: %d %v", n, err)
	}
	k, err := odp.ToFlowKeysExact(ups[0].Key)
	if err != nil {
		t.Fatal(err)
	}
	if k.CTState != 0x21 || k.CTZone != 7 || k.CTMark != 5 || k.CTOrigProto != header.IPProtoUDP ||
		k.CTOrigIPv4Src != [4]byte{10, 0, 0, 1} || k.CTOrigTpSrc != 1000 || k.CTOrigTpDst != 2000 {
		t.Fatalf("recirculated key: state %#x zone %d mark %d orig %d %v:%d→%v:%d", k.CTState, k.CTZone, k.CTMark,
			k.CTOrigProto, k.CTOrigIPv4Src, k.CTOrigTpSrc, k.CTOrigIPv4Dst, k.CTOrigTpDst)
	}
	// A push_vlan after ct makes the key be extracted again: the ct
	// fields, the original tuple included, are metadata and stay.
	h.mustExecute(f, "ct(zone=7),push_vlan(vid=5,pcp=0),recirc(9)")
	if n, err = rs[0].Recv(t.Context(), ups); err != nil || n != 1 {
		t.Fatalf("recv: %d %v", n, err)
	}
	if k, _ = odp.ToFlowKeysExact(ups[0].Key); k.CTZone != 7 || k.CTOrigIPv4Src != [4]byte{10, 0, 0, 1} || k.CTOrigTpDst != 2000 {
		t.Fatalf("after push_vlan: zone %d orig %v:%d→%v:%d", k.CTZone, k.CTOrigIPv4Src, k.CTOrigTpSrc, k.CTOrigIPv4Dst, k.CTOrigTpDst)
	}
	// ct_clear then recirc: the fields are gone.
	h.mustExecute(f, "ct(zone=7),ct_clear,recirc(9)")
	if n, err = rs[0].Recv(t.Context(), ups); err != nil || n != 1 {
		t.Fatalf("recv: %d %v", n, err)
	}
	if k, _ = odp.ToFlowKeysExact(ups[0].Key); k.CTState != 0 || k.CTZone != 0 || k.CTOrigProto != 0 {
		t.Fatalf("after ct_clear: state %#x zone %d", k.CTState, k.CTZone)
	}
}

func TestCTValidation(t *testing.T) {
	h := newHarness(t, 2)
	const ip4 = "in_port(1)," + anyEth + "eth_type(0x0800),ipv4(src=1.2.3.4/255.255.255.255)"
	for _, c := range []struct {
		key, acts string
		want      error
	}{
		{ip4, "ct(commit),2", nil},
		{ip4, "ct(mark=0x1/0xff),2", syscall.EINVAL},
		{ip4, "ct(commit,helper=ftp),2", syscall.EINVAL}, // the kernel without the helper loaded
		{ip4, "ct(commit,timeout=nosuch),2", nil},        // ignored, as the kernel ignores a policy it cannot find
		{ip4, "ct(nat(src=10.0.0.1)),2", syscall.EINVAL},
		{"in_port(1)," + anyEth + "eth_type(0x0806)", "ct(commit),2", syscall.EINVAL},
	} {
		_, err := h.dp.PutFlow(t.Context(), parseFlow(t, c.key, c.acts), odp.PutCreate)
		if (c.want == nil) != (err == nil) || c.want != nil && !errors.Is(err, c.want) {
			t.Errorf("put %s: %v, want %v", c.acts, err, c.want)
		}
		h.dp.FlushFlows(t.Context())
	}
}

// ctPipelineFixture is pipelineFixture's datapath with a firewall's
// established path instead: ct(zone=1),recirc(1), then
// ct_state(+est+trk) → 2, with the frame's UDP connection committed and
// answered already.
func ctPipelineFixture(tb testing.TB) (*worker, *sinkPort, []byte) {
	w, sink, frames := ctPipelineConns(tb, 1)
	return w, sink, frames[0]
}

// ctPipelineConns is ctPipelineFixture with n connections (source
// ports 1000 up), each committed and answered: their frames.
func ctPipelineConns(tb testing.TB, n int) (*worker, *sinkPort, [][]byte) {
	w, sink, _ := pipelineFixture(tb, DefaultCacheEntries)
	dp := w.dp
	if err := dp.FlushFlows(tb.Context()); err != nil {
		tb.Fatal(err)
	}
	const udp = "eth_type(0x0800),ipv4(proto=17/0xff),udp(src=0/0)"
	for _, f := range []*odp.Flow{
		parseFlow(tb, "recirc_id(0),in_port(1),"+anyEth+udp, "ct(zone=1),recirc(1)"),
		parseFlow(tb, "recirc_id(1),in_port(1),ct_state(+est+trk),"+anyEth+udp, "2"),
	} {
		if _, err := dp.PutFlow(tb.Context(), f, odp.PutCreate); err != nil {
			tb.Fatal(err)
		}
	}
	commit, _ := odp.ParseActions("ct(commit,zone=1)")
	answer, _ := odp.ParseActions("ct(zone=1)")
	frames := make([][]byte, n)
	for i := range frames {
		sport := uint16(1000 + i)
		frames[i] = udpFrame(1, 2, sport)
		reply := udpFrame(2, 1, 2000)
		binary.BigEndian.PutUint16(reply[14+22:], sport)
		fixIPv4(reply, 14)
		for _, c := range []struct {
			f    []byte
			acts odp.Actions
		}{{frames[i], commit}, {reply, answer}} {
			if err := dp.Execute(tb.Context(), &odp.Packet{Data: c.f, Key: odp.FlowKey{odp.InPort(2)}, Actions: c.acts}); err != nil {
				tb.Fatal(err)
			}
		}
	}
	return w, sink, frames
}

func TestPipelineCTNoAllocs(t *testing.T) {
	w, sink, frame := ctPipelineFixture(t)
	bufs := pipelineBufs()
	n := 0
	allocs := testing.AllocsPerRun(1000, func() { pumpFrames(w, bufs, frame, n, n+1); n++ })
	w.flush()
	if allocs != 0 {
		t.Errorf("extract+lookup+ct+recirc+lookup+output allocates %.1f times per packet", allocs)
	}
	if got := sink.tx.Load(); got < 1000 {
		t.Fatalf("sink got %d frames: the established path did not forward", got)
	}
}

// BenchmarkPipelineCT is BenchmarkPipeline's path through an
// established connection: extract, lookup, ct, recirculation, lookup,
// output. In the same run, interleaved in chunks of 4,096 packets so
// that both see the same load, it runs BenchmarkPipeline/cache's path
// (extract, lookup, dec_ttl, output), and reports both from the CPU
// time of its thread: cpu-ns/packet (ct), no-ct-cpu-ns/packet, and
// x-of-no-ct, the ct path's speed as a fraction of the other's (the
// issue asks for at least 0.5).
func BenchmarkPipelineCT(b *testing.B) {
	w, sink, frame := ctPipelineFixture(b)
	w0, _, frame0 := pipelineFixture(b, DefaultCacheEntries)
	bufs := pipelineBufs()
	benchCTAgainstNoCT(b, sink,
		func(from, to int) { pumpFrames(w, bufs, frame, from, to); w.flush() },
		func(from, to int) { pumpFrames(w0, bufs, frame0, from, to); w0.flush() })
}

// benchCTAgainstNoCT is BenchmarkPipelineCT's measure: packets from to
// to-1 through ct and through noct (each flushing its worker),
// interleaved in chunks of 4,096, each timed by its thread's CPU time;
// sink must have had every packet of the ct path.
func benchCTAgainstNoCT(b *testing.B, sink *sinkPort, ct, noct func(from, to int)) {
	const chunk = 4096
	b.ReportAllocs()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	b.ResetTimer()
	var tct, tnoct time.Duration
	for done := 0; done < b.N; done += chunk {
		n := min(chunk, b.N-done)
		t0 := threadCPU()
		ct(done, done+n)
		t1 := threadCPU()
		noct(done, done+n)
		tct += t1 - t0
		tnoct += threadCPU() - t1
	}
	b.StopTimer()
	b.ReportMetric(float64(tct.Nanoseconds())/float64(b.N), "cpu-ns/packet")
	b.ReportMetric(float64(tnoct.Nanoseconds())/float64(b.N), "no-ct-cpu-ns/packet")
	if tct > 0 {
		b.ReportMetric(float64(tnoct)/float64(tct), "x-of-no-ct")
	}
	if sink.tx.Load() < uint64(b.N) {
		b.Fatalf("sink got %d of %d frames", sink.tx.Load(), b.N)
	}
}

// icmpNATHarness is a datapath that source-NATs UDP from port 1 to
// port 2 (to snat) and passes ICMP (icmp: "icmp" or "icmpv6") back
// through ct(nat).
func icmpNATHarness(t *testing.T, ethType, ip, icmp, snat string) *harness {
	h := newHarness(t, 2)
	proto := map[string]string{"icmp": "1", "icmpv6": "58"}[icmp]
	l3 := anyEth + "eth_type(" + ethType + ")," + ip
	h.put("recirc_id(0),in_port(1),"+l3+"(proto=17/0xff),udp(src=0/0)", "ct(commit,nat(src="+snat+")),2")
	h.put("recirc_id(0),in_port(2),"+l3+"(proto="+proto+"/0xff),"+icmp+"(type=0/0,code=0/0)", "ct(nat),1")
	return h
}

// TestCTNATRelatedICMPError: an ICMP error about a source-NATed UDP
// packet is related to its connection; ct(nat) rewrites the outer
// destination and the embedded packet back to the original addresses
// and port, with every checksum correct.
func TestCTNATRelatedICMPError(t *testing.T) {
	h := icmpNATHarness(t, "0x0800", "ipv4", "icmp", "192.168.0.100:7000")
	h.send(1, udpFrame(1, 2, 1000))
	out := h.expect(2)
	if !bytes.Equal(out[14+12:14+16], []byte{192, 168, 0, 100}) || binary.BigEndian.Uint16(out[34:]) != 7000 {
		t.Fatalf("SNATed packet % x", out)
	}
	// 10.0.0.2 answers port unreachable to the mapped address.
	inner := out[14 : 14+28]
	f := answer(out, header.EtherTypeIPv4, 20+8+len(inner))
	ip := f[14:]
	ip[0], ip[8], ip[9] = 0x45, 64, header.IPProtoICMP
	binary.BigEndian.PutUint16(ip[2:], uint16(20+8+len(inner)))
	copy(ip[12:], []byte{10, 0, 0, 2})
	copy(ip[16:], []byte{192, 168, 0, 100})
	ic := ip[20:]
	ic[0], ic[1] = 3, 3
	copy(ic[8:], inner)
	binary.BigEndian.PutUint16(ic[2:], refCsum(ic))
	binary.BigEndian.PutUint16(ip[10:], refIPv4Check(ip))
	h.send(2, f)
	got := h.expect(1)
	gip := got[14:]
	if !bytes.Equal(gip[16:20], []byte{10, 0, 0, 1}) {
		t.Fatalf("outer destination % x, want 10.0.0.1", gip[16:20])
	}
	gin := gip[28:]
	if !bytes.Equal(gin[12:16], []byte{10, 0, 0, 1}) || binary.BigEndian.Uint16(gin[20:]) != 1000 {
		t.Fatalf("inner packet % x: want source 10.0.0.1:1000", gin[:28])
	}
	if c := refCsum(gip[20:]); c != 0 {
		t.Errorf("ICMP checksum does not verify (%#04x)", c)
	}
	if c := refIPv4Check(gin); c != binary.BigEndian.Uint16(gin[10:]) {
		t.Errorf("inner IPv4 checksum %#04x, want %#04x", binary.BigEndian.Uint16(gin[10:]), c)
	}
	checkIPv4(t, got, 14)
}

// TestCTDNAT: a virtual IP in front of a server; the reply comes from
// the virtual IP.
func TestCTDNAT(t *testing.T) {
	h := newHarness(t, 2)
	h.put("recirc_id(0),in_port(1),"+anyEth+ipTCP, "ct(commit,nat(dst=10.0.0.3)),2")
	h.put("recirc_id(0),in_port(2),"+anyEth+ipTCP, "ct(nat),1")
	syn := ctTCP(1, 99, 40000, 80, 0x02, 1, 0) // to the VIP 10.0.0.99
	h.send(1, syn)
	got := h.expect(2)
	if !bytes.Equal(got[14+16:14+20], []byte{10, 0, 0, 3}) {
		t.Fatalf("DNAT to % x", got[14+16:14+20])
	}
	checkIPv4(t, got, 14)
	sa := ctTCP(3, 1, 80, 40000, 0x12, 100, 2)
	h.send(2, sa)
	back := h.expect(1)
	if !bytes.Equal(back[14+12:14+16], []byte{10, 0, 0, 99}) {
		t.Fatalf("reply from % x, want the VIP", back[14+12:14+16])
	}
	checkIPv4(t, back, 14)
}

// TestCTNATRelatedICMPv6Error is TestCTNATRelatedICMPError over IPv6
// (packet too big about a source-NATed UDP packet).
func TestCTNATRelatedICMPv6Error(t *testing.T) {
	h := icmpNATHarness(t, "0x86dd", "ipv6", "icmpv6", "[fd00::100]")
	src, dst, mapped := netip.MustParseAddr("fd00::1").As16(), netip.MustParseAddr("fd00::2").As16(), netip.MustParseAddr("fd00::100").As16()
	f := testIPv6(newRand(t), header.IPProtoUDP, 16)
	copy(f[14+8:], src[:])
	copy(f[14+24:], dst[:])
	binary.BigEndian.PutUint16(f[54:], 1000)
	binary.BigEndian.PutUint16(f[56:], 53)
	fixIPv6(f, 14, 54)
	h.send(1, f)
	out := h.expect(2)
	if !bytes.Equal(out[14+8:14+24], mapped[:]) {
		t.Fatalf("SNATed source % x", out[14+8:14+24])
	}
	checkIPv6(t, out, 14, 54, header.IPProtoUDP)
	inner := out[14:]
	e := answer(out, header.EtherTypeIPv6, 40+8+len(inner))
	ip := e[14:]
	ip[0] = 0x60
	binary.BigEndian.PutUint16(ip[4:], uint16(8+len(inner)))
	ip[6], ip[7] = header.IPProtoICMPv6, 64
	copy(ip[8:], dst[:])
	copy(ip[24:], mapped[:])
	ip[40] = 2 // packet too big
	binary.BigEndian.PutUint32(ip[44:], 1280)
	copy(ip[48:], inner)
	fixIPv6(e, 14, 54)
	h.send(2, e)
	got := h.expect(1)
	if !bytes.Equal(got[14+24:14+40], src[:]) {
		t.Fatalf("outer destination % x, want fd00::1", got[14+24:14+40])
	}
	gin := got[14+48:]
	if !bytes.Equal(gin[8:24], src[:]) || binary.BigEndian.Uint16(gin[40:]) != 1000 {
		t.Fatalf("inner packet % x: want source [fd00::1]:1000", gin[:48])
	}
	checkIPv6(t, got, 14, 54, header.IPProtoICMPv6)
	if want := refL4Check(gin[8:24], gin[24:40], header.IPProtoUDP, gin[40:], 6); binary.BigEndian.Uint16(gin[46:]) != want {
		t.Errorf("inner UDP checksum %#04x, want %#04x", binary.BigEndian.Uint16(gin[46:]), want)
	}
}

// TestRecircLookupsHitCache: after the first packet of an established
// connection, both lookups of every packet (before ct and after the
// recirculation, whose cache hash is derived from the first's) are
// exact-match cache hits, and a packet given to Execute whose actions
// recirculate is forwarded by the same flows.
func TestRecircLookupsHitCache(t *testing.T) {
	w, sink, frame := ctPipelineFixture(t)
	bufs := pipelineBufs()
	pumpFrames(w, bufs, frame, 0, 1)
	w.flush()
	hits0, tx0 := w.dp.counters.cacheHits.Load(), sink.tx.Load()
	const n = 100
	pumpFrames(w, bufs, frame, 1, 1+n)
	w.flush()
	if got := w.dp.counters.cacheHits.Load() - hits0; got != 2*n {
		t.Errorf("%d packets: %d cache hits, want %d (two lookups each)", n, got, 2*n)
	}
	if got := sink.tx.Load() - tx0; got != n {
		t.Errorf("%d packets forwarded, want %d", got, n)
	}
	a, err := odp.ParseActions("ct(zone=1),recirc(1)")
	if err != nil {
		t.Fatal(err)
	}
	if err := w.dp.Execute(t.Context(), &odp.Packet{Data: frame, Key: odp.FlowKey{odp.InPort(1)}, Actions: a}); err != nil {
		t.Fatal(err)
	}
	if got := sink.tx.Load() - tx0; got != n+1 {
		t.Errorf("the executed packet was not forwarded after its recirculation (%d frames)", got-n)
	}
}

// TestIPv4PayloadMatchesHeaders: the ct action's shortcut to the L4
// bytes (pktCtx.ipv4Payload) gives what parsing the headers again and
// ipPayload give, for IPv4 frames with and without options, padded,
// cut short, and with header and total lengths that disagree; where it
// declines, the ct action takes the parsing path.
func TestIPv4PayloadMatchesHeaders(t *testing.T) {
	base := udpFrame(1, 2, 1000)
	taken := 0
	for ihl := 0; ihl < 16; ihl++ {
		for _, tot := range []int{0, 19, 20, 27, 28, 36, len(base) - 14, len(base) - 13, 200} {
			for _, cut := range []int{0, 1, 8, len(base) - 34, len(base) - 20} {
				f := append([]byte(nil), base...)
				f = append(f, make([]byte, 8)...) // padding past the IP packet
				f = f[:len(f)-cut]
				if len(f) < 15 {
					continue
				}
				f[14] = 0x40 | byte(ihl)
				if len(f) >= 18 {
					binary.BigEndian.PutUint16(f[16:], uint16(tot))
				}
				var key flowkeys.Key
				l3, err := flowkeys.ExtractPortL3(f, 1, &key)
				if err != nil {
					continue
				}
				c := &pktCtx{f: frameBuf{Buf: f, Len: len(f)}, key: key, keyValid: true, l3off: l3}
				c.proto = keyProtocol(&c.key)
				l4, n, ok := c.ipv4Payload()
				if !ok {
					continue
				}
				taken++
				h, err := c.headers()
				if err != nil {
					t.Fatalf("ihl %d tot %d cut %d: the shortcut took a frame headers refuses: %v", ihl, tot, cut, err)
				}
				wl4, wn := ipPayload(c.f.Bytes(), h)
				if !bytes.Equal(l4, wl4) || n != wn || (l4 == nil) != (wl4 == nil) {
					t.Errorf("ihl %d tot %d cut %d: shortcut %d bytes (l3 %d), ipPayload %d bytes (l3 %d)", ihl, tot, cut, len(l4), n, len(wl4), wn)
				}
			}
		}
	}
	if taken == 0 {
		t.Fatal("the shortcut took no frame")
	}
}

// TestPipelineCTCachedConnFlushed: the worker's ConnCache remembers the
// established connection of ctPipelineFixture's frame, and a flush
// (dpctl flush-conntrack) ends it at once: the next packet is +new, so
// the +est flow no longer forwards it; committed again and not yet
// answered, still +new; answered, +est and forwarded again.
func TestPipelineCTCachedConnFlushed(t *testing.T) {
	w, sink, frame := ctPipelineFixture(t)
	bufs := pipelineBufs()
	n := 0
	pump := func(k int) uint64 {
		t.Helper()
		before := sink.tx.Load()
		pumpFrames(w, bufs, frame, n, n+k)
		w.flush()
		n += k
		return sink.tx.Load() - before
	}
	if got := pump(10); got != 10 {
		t.Fatalf("established: %d of 10 forwarded", got)
	}
	tr := w.dp.Conntrack()
	if tr.Flush(conntrack.Filter{}) != 1 {
		t.Fatal("flush found no connection")
	}
	if got := pump(3); got != 0 {
		t.Fatalf("after flush-conntrack: %d of 3 forwarded (a deleted connection was used)", got)
	}
	reply := udpFrame(2, 1, 2000)
	binary.BigEndian.PutUint16(reply[14+22:], 1000)
	fixIPv4(reply, 14)
	for _, c := range []struct {
		f    []byte
		acts string
	}{{frame, "ct(commit,zone=1)"}, {nil, ""}, {reply, "ct(zone=1)"}} {
		if c.f == nil {
			if got := pump(3); got != 0 {
				t.Fatalf("committed again, unanswered: %d of 3 forwarded", got)
			}
			continue
		}
		a, _ := odp.ParseActions(c.acts)
		if err := w.dp.Execute(t.Context(), &odp.Packet{Data: c.f, Key: odp.FlowKey{odp.InPort(2)}, Actions: a}); err != nil {
			t.Fatal(err)
		}
	}
	if got := pump(3); got != 3 {
		t.Fatalf("answered again: %d of 3 forwarded", got)
	}
}

// BenchmarkPipelineCTConns is BenchmarkPipelineCT over 1,000
// established UDP connections whose packets come in a shuffled order
// (each connection once per round of 1,000), closer to real traffic
// than one connection: informational, the goal stays on
// BenchmarkPipelineCT. The no-ct path forwards the same frames (its
// flow matches the destination only), interleaved in chunks of 4,096.
func BenchmarkPipelineCTConns(b *testing.B) {
	w, sink, frames, w0 := ctConnsFixtures(b, 1000)
	bufs := pipelineBufs()
	benchCTAgainstNoCT(b, sink,
		func(from, to int) { pumpEach(w, bufs, frames, from, to); w.flush() },
		func(from, to int) { pumpEach(w0, bufs, frames, from, to); w0.flush() })
}

// ctConnsFixtures are BenchmarkPipelineCTConns's worker through ct
// over n connections (ctPipelineConns), its sink and the connections'
// frames in a shuffled order, and a worker without ct (pipelineFixture)
// for the same frames.
func ctConnsFixtures(b *testing.B, n int) (w *worker, sink *sinkPort, frames [][]byte, w0 *worker) {
	w, sink, frames = ctPipelineConns(b, n)
	w0, _, _ = pipelineFixture(b, DefaultCacheEntries)
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(frames), func(i, j int) { frames[i], frames[j] = frames[j], frames[i] })
	return w, sink, frames, w0
}

// pumpEach is pumpFrames with frame number i being frames[i%len(frames)].
func pumpEach(w *worker, bufs *[pipelineBatch][]byte, frames [][]byte, from, to int) {
	for i := from; i < to; i++ {
		buf := bufs[i%pipelineBatch]
		f := frames[i%len(frames)]
		copy(buf[DefaultHeadroom:], f)
		w.process(buf, DefaultHeadroom, len(f), 1)
		if i%pipelineBatch == pipelineBatch-1 {
			w.flush()
		}
	}
}

// pipelineBufs is a batch of receive buffers for pumpFrames.
func pipelineBufs() *[pipelineBatch][]byte {
	var bufs [pipelineBatch][]byte
	for i := range bufs {
		bufs[i] = make([]byte, BufferSize(1500))
	}
	return &bufs
}
