package userdp

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ovsdp/ovsdp/flowkeys"
	"github.com/ovsdp/ovsdp/internal/header"
	"github.com/ovsdp/ovsdp/odp"
)

// fakeTunnel is a tunnel port without sockets: it records what the
// datapath sends (whole outer packets) and receives nothing.
type fakeTunnel struct {
	name  string
	cfg   tunnelConfig
	src   [4]byte
	stats Counters
	// routeMTU is the MTU route gives (0: not known).
	routeMTU int

	mu    sync.Mutex
	sent  [][]byte
	marks []uint32 // the skb mark of each packet sent through writeMarked
	done  chan struct{}
	once  sync.Once
}

func newFakeTunnel(kind tunnelKind, dstPort uint16, gbp bool) *fakeTunnel {
	return &fakeTunnel{name: "ftun", cfg: tunnelConfig{kind: kind, dstPort: dstPort, gbp: gbp}, src: [4]byte{10, 1, 1, 1}, done: make(chan struct{})}
}

func (f *fakeTunnel) Name() string       { return f.name }
func (f *fakeTunnel) Type() odp.PortType { return odp.PortType(f.cfg.kind.String()) }
func (f *fakeTunnel) MTU() int           { return 1500 }
func (f *fakeTunnel) ReadBatch(bufs [][]byte, sizes []int, off int) (int, error) {
	<-f.done
	return 0, ErrPortClosed
}
func (f *fakeTunnel) WriteBatch(pkts [][]byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, p := range pkts {
		if len(f.sent) < 16 {
			f.sent = append(f.sent, append([]byte(nil), p...))
		}
	}
	f.stats.tx(len(pkts), 0)
	return len(pkts), nil
}
func (f *fakeTunnel) Stats() odp.PortStats { return f.stats.Snapshot() }
func (f *fakeTunnel) Close() error         { f.once.Do(func() { close(f.done) }); return nil }
func (f *fakeTunnel) tunnelConfig() *tunnelConfig {
	return &f.cfg
}
func (f *fakeTunnel) writeMarked(pkts [][]byte, marks []uint32) (int, error) {
	f.mu.Lock()
	if len(f.marks) < 64 {
		f.marks = append(f.marks, marks...)
	}
	f.mu.Unlock()
	return f.WriteBatch(pkts)
}
func (f *fakeTunnel) route(ti *tunnelInfo, mark uint32, now time.Time, p *encapParams) error {
	p.src, p.src6 = f.src, [16]byte{0xfd, 15: 1}
	p.mtu = f.routeMTU
	return nil
}
func (f *fakeTunnel) ipv6Reader() Port                 { return nil }
func (f *fakeTunnel) counters() *Counters              { return &f.stats }
func (f *fakeTunnel) defaultHopLimit() uint8           { return 64 }
func (f *fakeTunnel) localPortRange() (uint16, uint32) { return 32768, 61000 }

func (f *fakeTunnel) packets() [][]byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([][]byte(nil), f.sent...)
}

// tunnelFixture is a datapath with a memory port 1 and the fake tunnel
// port 2, and a flow from 1 to the tunnel with the set(tunnel) given.
func tunnelFixture(t testing.TB, ft *fakeTunnel, setTunnel string) *Datapath {
	t.Helper()
	acts := "2"
	if setTunnel != "" {
		acts = "set(tunnel(" + setTunnel + ")),2"
	}
	return tunnelFixtureActs(t, ft, acts)
}

// tunnelFixtureActs is tunnelFixture with the flow's actions given.
func tunnelFixtureActs(t testing.TB, ft *fakeTunnel, acts string) *Datapath {
	t.Helper()
	dp, err := New("tdp", WithoutLocalPort())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dp.Close() })
	if _, err := dp.AddPort(context.Background(), odp.PortSpec{Name: "m1", Type: PortMemory}); err != nil {
		t.Fatal(err)
	}
	if p, err := dp.AttachPort(ft, 2); err != nil || p.Number != 2 {
		t.Fatalf("attaching the tunnel port: %+v, %v", p, err)
	}
	f := parseFlow(t, "in_port(1),"+anyEth+"eth_type(0x0800)"+anyIPv4, acts)
	if _, err := dp.PutFlow(context.Background(), f, odp.PutCreate); err != nil {
		t.Fatalf("put %s: %v", acts, err)
	}
	return dp
}

// sendAndCapture sends frame into port 1 and returns the first outer
// packet the tunnel port sent.
func sendAndCapture(t *testing.T, dp *Datapath, ft *fakeTunnel, frame []byte) []byte {
	t.Helper()
	if _, err := dp.MemoryPeer("m1").WriteBatch([][]byte{frame}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if p := ft.packets(); len(p) > 0 {
			return p[0]
		}
	}
	t.Fatalf("the tunnel port sent nothing (stats %+v)", ft.Stats())
	return nil
}

func mustHex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestTunnelEncapBytes: the outer headers of each tunnel type, byte for
// byte (the UDP source port, a hash, aside; the checksums checked), and
// decapsulation gives back the metadata and the frame.
func TestTunnelEncapBytes(t *testing.T) {
	for _, c := range []struct {
		name     string
		kind     tunnelKind
		port     uint16
		gbp      bool
		tunnel   string
		ip, tail string // the outer IPv4 header without its checksum (bytes 10-11 zero); what follows UDP (or IP for gre)
		want     string // the decapsulated metadata as odp prints it
	}{
		{"geneve", tunnelGeneve, 6081, false,
			"tun_id=0x5,dst=10.1.1.2,tos=0x10,ttl=17,geneve({class=0x102,type=0x80,len=4,0xa1b2c3d4}),flags(df|csum|key)",
			"4510 0068 0000 4000 1111 0000 0a010101 0a010102", "0240 6558 000005 00 0102 80 01 a1b2c3d4",
			"tunnel(tun_id=0x5,src=10.1.1.1,dst=10.1.1.2,tos=0x10,ttl=17,tp_src=SPORT,tp_dst=6081,geneve({class=0x102,type=0x80,len=4,0xa1b2c3d4}),flags(csum|key))"},
		{"geneve-oam-nocsum", tunnelGeneve, 7000, false,
			"tun_id=0xabcdef,src=10.9.9.9,dst=10.1.1.2,ttl=64,flags(oam|key)",
			"4500 0060 0000 0000 4011 0000 0a090909 0a010102", "0080 6558 abcdef 00",
			"tunnel(tun_id=0xabcdef,src=10.9.9.9,dst=10.1.1.2,ttl=64,tp_src=SPORT,tp_dst=7000,flags(oam|key))"},
		{"vxlan", tunnelVXLAN, 4789, false,
			"tun_id=0x2a,dst=10.1.1.2,ttl=0,flags(key)",
			"4500 0060 0000 0000 4011 0000 0a010101 0a010102", "08000000 00002a00",
			"tunnel(tun_id=0x2a,src=10.1.1.1,dst=10.1.1.2,ttl=64,tp_src=SPORT,tp_dst=4789,flags(key))"},
		{"vxlan-gbp", tunnelVXLAN, 4789, true,
			"tun_id=0x2a,dst=10.1.1.2,ttl=64,tp_dst=4790,vxlan(gbp(id=10,flags=0x48)),flags(csum|key)",
			"4500 0060 0000 0000 4011 0000 0a010101 0a010102", "8848000a 00002a00",
			"tunnel(tun_id=0x2a,src=10.1.1.1,dst=10.1.1.2,ttl=64,tp_src=SPORT,tp_dst=4790,vxlan(gbp(id=10,flags=0x48)),flags(csum|key))"},
		{"gre-key", tunnelGRE, 0, false,
			"tun_id=0x7,dst=10.1.1.2,tos=0x1,ttl=0,flags(key)",
			"4500 0058 0000 0000 402f 0000 0a010101 0a010102", "2000 6558 00000007",
			"tunnel(tun_id=0x7,src=10.1.1.1,dst=10.1.1.2,ttl=64,flags(key))"},
		{"gre-nokey", tunnelGRE, 0, false,
			"dst=10.1.1.2,ttl=9,flags()",
			"4500 0054 0000 0000 092f 0000 0a010101 0a010102", "0000 6558",
			"tunnel(src=10.1.1.1,dst=10.1.1.2,ttl=9,flags(0))"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ft := newFakeTunnel(c.kind, c.port, c.gbp)
			if c.port == 4789 {
				// vxlan's tp_dst of the metadata replaces the port's.
				ft.cfg.dstPort = 4789
			}
			dp := tunnelFixture(t, ft, c.tunnel)
			frame := udpFrame(1, 2, 1000)
			got := sendAndCapture(t, dp, ft, frame)
			ip := mustHex(t, c.ip)
			if !bytes.Equal(got[:10], ip[:10]) || !bytes.Equal(got[12:20], ip[12:20]) {
				t.Errorf("outer IPv4 header % x, want % x (checksum aside)", got[:20], ip)
			}
			if header.IPv4(got[:20]).CalculateChecksum() != header.IPv4(got).Checksum() {
				t.Errorf("bad IPv4 checksum in % x", got[:20])
			}
			hl := 20
			var sport uint16
			if c.kind != tunnelGRE {
				u := header.UDP(got[20:])
				sport = header.Ports(u).Source()
				dport := c.port
				if strings.Contains(c.tunnel, "tp_dst=") {
					dport = 4790
				}
				if header.Ports(u).Destination() != dport || int(u.Length()) != len(got)-20 {
					t.Errorf("UDP header % x: want destination %d and length %d", got[20:28], dport, len(got)-20)
				}
				if cs := u.Checksum(); strings.Contains(c.tunnel, "csum") != (cs != 0) ||
					cs != 0 && header.Checksum(got[20:], header.IPv4(got).PseudoHeaderSum(17, len(got)-20)) != 0 {
					t.Errorf("UDP checksum %#04x for %s", cs, c.tunnel)
				}
				if c.kind == tunnelVXLAN && (sport < 32768 || sport > 60999) {
					t.Errorf("vxlan source port %d outside 32768-60999", sport)
				}
				hl += 8
			}
			tail := mustHex(t, c.tail)
			if !bytes.Equal(got[hl:hl+len(tail)], tail) {
				t.Errorf("tunnel header % x, want % x", got[hl:hl+len(tail)], tail)
			}
			if !bytes.Equal(got[hl+len(tail):], frame) {
				t.Errorf("inner frame % x, want % x", got[hl+len(tail):], frame)
			}
			var md flowkeys.Tunnel
			var opts [256]byte
			rcfg := ft.cfg
			if c.kind != tunnelGRE {
				rcfg.dstPort = header.Ports(got[20:]).Destination()
			}
			off, n, _, err := decapTunnel(got, &rcfg, &md, &opts)
			if err != nil {
				t.Fatalf("decapsulating what was sent: %v", err)
			}
			if !bytes.Equal(got[off:off+n], frame) {
				t.Errorf("decapsulated frame % x, want % x", got[off:off+n], frame)
			}
			k := flowkeys.Key{}
			mdd := flowkeys.Metadata{Tunnel: md}
			if err := flowkeys.Extract(frame, &mdd, &k); err != nil {
				t.Fatal(err)
			}
			tk := odp.KeyFromFlowKeys(&k) // the Geneve options from the key's TunOpts
			var s string
			for _, a := range tk {
				if _, ok := a.(odp.Tunnel); ok {
					s = odp.FormatKey(odp.FlowKey{a}, nil, false)
				}
			}
			if want := strings.Replace(c.want, "SPORT", itoa(uint32(sport)), 1); s != want {
				t.Errorf("decapsulated metadata\n %s, want\n %s", s, want)
			}
		})
	}
}

// TestTunnelEncapERSPAN: ERSPAN metadata (no port encapsulates ERSPAN)
// through each tunnel port, as Linux's devices use it: vxlan and gre send
// the very packet they send without it; geneve sizes its option field
// from the tunnel info's options_len (12 bytes: opt_len 3) but copies
// options only with TUNNEL_GENEVE_OPT (geneve_build_header), so the
// packet has 12 more bytes, zero here.
func TestTunnelEncapERSPAN(t *testing.T) {
	frame := udpFrame(1, 2, 1000)
	for _, kind := range []tunnelKind{tunnelGeneve, tunnelVXLAN, tunnelGRE} {
		t.Run(kind.String(), func(t *testing.T) {
			var sent [2][]byte
			for i, md := range []string{"", ",erspan(ver=2,dir=1,hwid=0x5)"} {
				ft := newFakeTunnel(kind, 6081, false)
				dp := tunnelFixture(t, ft, "tun_id=0x2a,dst=10.1.1.2,ttl=64"+md+",flags(key)")
				sent[i] = sendAndCapture(t, dp, ft, frame)
			}
			plain, got := sent[0], sent[1]
			if kind != tunnelGeneve {
				if !bytes.Equal(got, plain) {
					t.Errorf("with ERSPAN metadata\n% x\nwithout\n% x", got, plain)
				}
				return
			}
			const hl = 20 + 8 // outer IPv4 and UDP
			want := append(append([]byte(nil), plain[:hl+8]...), make([]byte, 12)...)
			want = append(want, plain[hl+8:]...)
			want[hl] = 3                                                  // opt_len in words
			binary.BigEndian.PutUint16(want[2:], uint16(len(want)))       // IP total length
			binary.BigEndian.PutUint16(want[20+4:], uint16(len(want)-20)) // UDP length
			copy(want[10:12], got[10:12])                                 // the IP checksum, checked below
			copy(want[20:22], got[20:22])                                 // the UDP source port, a hash
			if !bytes.Equal(got, want) {
				t.Errorf("geneve with ERSPAN metadata\n% x\nwant\n% x", got, want)
			}
			if header.IPv4(got[:20]).CalculateChecksum() != header.IPv4(got).Checksum() {
				t.Errorf("bad IPv4 checksum in % x", got[:20])
			}
		})
	}
}

// TestTunnelSetPortOptions: a tunnel port's options cannot change (the
// kernel's tunnel vports have no set_options: EOPNOTSUPP).
func TestTunnelSetPortOptions(t *testing.T) {
	ft := newFakeTunnel(tunnelGeneve, 6081, false)
	dp := tunnelFixture(t, ft, "")
	err := dp.SetPort(context.Background(), odp.PortSpec{Number: 2, Options: map[string]string{"dst_port": "7000"}})
	if !errors.Is(err, syscall.EOPNOTSUPP) {
		t.Errorf("set-if dst_port on a geneve port: %v, want EOPNOTSUPP", err)
	}
	if err := dp.SetPort(context.Background(), odp.PortSpec{Number: 2}); err != nil {
		t.Errorf("set-if without options: %v", err)
	}
}

// TestTunnelNoMetadataDrops: output to a tunnel port without
// set(tunnel) sends nothing and counts a tx drop, as the kernel.
func TestTunnelNoMetadataDrops(t *testing.T) {
	ft := newFakeTunnel(tunnelGeneve, 6081, false)
	dp := tunnelFixture(t, ft, "")
	dp.MemoryPeer("m1").WriteBatch([][]byte{udpFrame(1, 2, 1000)})
	for deadline := time.Now().Add(5 * time.Second); ft.Stats().TxDropped == 0 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	if st := ft.Stats(); st.TxDropped != 1 || len(ft.packets()) != 0 {
		t.Errorf("stats %+v, %d packets sent: want one tx drop and nothing sent", st, len(ft.packets()))
	}
}

// TestTunnelEncapNoAllocs: extract, lookup, set(tunnel) and output to a
// tunnel port allocate nothing per packet.
func TestTunnelEncapNoAllocs(t *testing.T) {
	ft := newFakeTunnel(tunnelGeneve, 6081, false)
	dp := tunnelFixture(t, ft, "tun_id=0x5,dst=10.1.1.2,ttl=64,geneve({class=0x102,type=0x80,len=4,0xa1b2c3d4}),flags(csum|key)")
	w := newWorker(dp, DefaultCacheEntries)
	var bufs [pipelineBatch][]byte
	for i := range bufs {
		bufs[i] = make([]byte, BufferSize(1500))
	}
	frame := udpFrame(1, 2, 1000)
	pumpFrames(w, &bufs, frame, 0, 2*pipelineBatch) // warm up the queues
	n := 0
	allocs := testing.AllocsPerRun(1000, func() { pumpFrames(w, &bufs, frame, n, n+1); n++ })
	w.flush()
	if allocs != 0 {
		t.Errorf("extract+lookup+set(tunnel)+encapsulate+output allocates %.1f times per packet", allocs)
	}
	if st := ft.Stats(); st.TxPackets < 1000 {
		t.Errorf("the tunnel port sent %d packets, want every one", st.TxPackets)
	}
	// And decapsulating what it sent, then extracting, looking up and
	// running a flow for the tunnel port.
	if _, err := dp.PutFlow(t.Context(), parseFlow(t, "in_port(2),"+anyEth+"eth_type(0x0800)"+anyIPv4, "drop"), odp.PutCreate); err != nil {
		t.Fatal(err)
	}
	before, _ := dp.Info(t.Context())
	pkt := ft.packets()[0]
	buf := make([]byte, len(pkt))
	md := flowkeys.Metadata{InPort: 2}
	allocs = testing.AllocsPerRun(1000, func() {
		copy(buf, pkt)
		off, n, _, err := decapTunnel(buf, &ft.cfg, &md.Tunnel, &w.tunOpts)
		if err != nil {
			t.Fatal(err)
		}
		w.processTunnel(buf, off, n, &md)
	})
	w.flush()
	if allocs != 0 {
		t.Errorf("decapsulate+extract+lookup allocates %.1f times per packet", allocs)
	}
	after, _ := dp.Info(t.Context())
	if n := after.Stats.Hit - before.Stats.Hit; n < 1000 || after.Stats.Missed != before.Stats.Missed {
		t.Errorf("%d hits and %d misses from the tunnel port, want every packet a hit", n, after.Stats.Missed-before.Stats.Missed)
	}
}

// outer builds an outer IPv4 packet of protocol proto around payload.
func outer(tos uint8, proto uint8, payload []byte) []byte {
	p := make([]byte, 20+len(payload))
	p[0], p[1], p[8], p[9] = 0x45, tos, 64, proto
	binary.BigEndian.PutUint16(p[2:], uint16(len(p)))
	copy(p[12:], []byte{10, 2, 2, 2, 10, 1, 1, 1})
	copy(p[20:], payload)
	header.IPv4(p).SetChecksum(header.IPv4(p[:20]).CalculateChecksum())
	return p
}

// udpOuter builds an outer UDP packet to port dport around payload, with
// a checksum when csum.
func udpOuter(tos uint8, dport uint16, csum bool, payload []byte) []byte {
	u := make([]byte, 8+len(payload))
	binary.BigEndian.PutUint16(u, 5555)
	binary.BigEndian.PutUint16(u[2:], dport)
	binary.BigEndian.PutUint16(u[4:], uint16(len(u)))
	copy(u[8:], payload)
	p := outer(tos, 17, u)
	if csum {
		cs := header.Checksum(p[20:], header.IPv4(p).PseudoHeaderSum(17, len(u)))
		binary.BigEndian.PutUint16(p[26:], cs)
	}
	return p
}

// TestTunnelDecapDrops: what the kernel's tunnel receive drops is
// dropped, with the reason; what it accepts gives its metadata.
func TestTunnelDecapDrops(t *testing.T) {
	inner := udpFrame(1, 2, 1000)
	ect := append([]byte(nil), inner...)
	ect[15] = 0x02 // ECT(0)
	fixIPv4(ect, 14)
	gen := func(hdr string, f []byte) []byte { return append(mustHex(t, hdr), f...) }
	geneve, vxlan, gre := &tunnelConfig{kind: tunnelGeneve, dstPort: 6081}, &tunnelConfig{kind: tunnelVXLAN, dstPort: 4789}, &tunnelConfig{kind: tunnelGRE}
	vxlanGBP := &tunnelConfig{kind: tunnelVXLAN, dstPort: 4789, gbp: true}
	badCsum := udpOuter(0, 6081, true, gen("0000 6558 000001 00", inner))
	badCsum[26] ^= 0xff
	for _, c := range []struct {
		name string
		cfg  *tunnelConfig
		pkt  []byte
		want string // the error, or the metadata as flowkeys.Tunnel prints with %+v
	}{
		{"short", geneve, []byte{0x45, 0}, "outer IPv4 header: 2 bytes"},
		{"not UDP", geneve, outer(0, 6, gen("0000 6558 000001 00", inner)), "outer IP protocol 6 is not UDP"},
		{"other port", geneve, udpOuter(0, 6082, false, gen("0000 6558 000001 00", inner)), "UDP port 6082 is not the port's 6081"},
		{"bad UDP checksum", geneve, badCsum, "bad UDP checksum"},
		{"geneve version 1", geneve, udpOuter(0, 6081, false, gen("4000 6558 000001 00", inner)), "Geneve version 1"},
		{"geneve IPv4 payload", geneve, udpOuter(0, 6081, false, gen("0000 0800 000001 00", inner[14:])), "Geneve protocol 0x0800 is not Ethernet"},
		{"geneve options past the end", geneve, udpOuter(0, 6081, false, mustHex(t, "3f00 6558 000001 00")), "Geneve options of 252 bytes in 0"},
		{"geneve ok, critical", geneve, udpOuter(0, 6081, true, gen("0140 6558 000001 00 0102 80 00", inner)),
			"Flags:3077 TOS:0 TTL:64 TpSrc:5555 TpDst:6081 GBP:0"},
		{"vxlan without the VNI flag", vxlan, udpOuter(0, 4789, false, gen("00000000 00000100", inner)), "lack the VNI flag"},
		{"vxlan reserved flags", vxlan, udpOuter(0, 4789, false, gen("08000001 00000100", inner)), "VXLAN reserved bits set"},
		{"vxlan reserved VNI byte", vxlan, udpOuter(0, 4789, false, gen("08000000 00000101", inner)), "VXLAN reserved bits set"},
		{"vxlan gbp bits without the extension", vxlan, udpOuter(0, 4789, false, gen("8800000a 00000100", inner)), "VXLAN reserved bits set"},
		{"vxlan gbp", vxlanGBP, udpOuter(0, 4789, false, gen("8848000a 00000100", inner)), "Flags:4100 TOS:0 TTL:64 TpSrc:5555 TpDst:4789 GBP:4718602"},
		{"vxlan gbp bits without G", vxlanGBP, udpOuter(0, 4789, false, gen("0808000a 00000100", inner)), "Flags:4 TOS:0 TTL:64 TpSrc:5555 TpDst:4789 GBP:0"},
		{"gre routing", gre, outer(0, 47, gen("4000 6558", inner)), "version or routing bits"},
		{"gre version 1", gre, outer(0, 47, gen("0001 6558", inner)), "version or routing bits"},
		{"gre IPv4 payload", gre, outer(0, 47, gen("0000 0800", inner[14:])), "GRE protocol 0x0800 is not Ethernet"},
		{"gre key", gre, outer(0, 47, gen("2000 6558 01020304", inner)), "Flags:4 TOS:0 TTL:64 TpSrc:0 TpDst:0 GBP:0"},
		{"gre with a checksum", gre, outer(0, 47, gen("8000 6558 0000 0000", inner)), "bad GRE checksum"},
		{"outer CE, inner not ECT", geneve, udpOuter(3, 6081, false, gen("0000 6558 000001 00", inner)), "not ECN-capable"},
		{"outer CE, inner ECT", geneve, udpOuter(3, 6081, false, gen("0000 6558 000001 00", ect)), "Flags:4 TOS:3 TTL:64 TpSrc:5555 TpDst:6081 GBP:0"},
		{"short inner frame", geneve, udpOuter(0, 6081, false, mustHex(t, "0000 6558 000001 00 0102")), "inner Ethernet frame: 2 bytes"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var md flowkeys.Tunnel
			var opts [256]byte
			off, n, nopts, err := decapTunnel(c.pkt, c.cfg, &md, &opts)
			if err != nil {
				if !errors.Is(err, errTunnelDrop) || !strings.Contains(err.Error(), c.want) {
					t.Errorf("dropped with %q, want %q", err, c.want)
				}
				return
			}
			if !bytes.Equal(md.Opts, opts[:nopts]) {
				t.Errorf("metadata options % x, want the %d bytes copied: % x", md.Opts, nopts, opts[:nopts])
			}
			got := md
			got.IPv4Src, got.IPv4Dst, got.ID, got.Proto, got.Opts = [4]byte{}, [4]byte{}, 0, 0, nil
			s := strings.TrimPrefix(strings.TrimSuffix(strings.Replace(
				strings.Replace(fmtTunnel(got), "IPv6Src:[0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0] IPv6Dst:[0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0] ", "", 1),
				"Proto:0 ID:0 IPv4Src:[0 0 0 0] IPv4Dst:[0 0 0 0] ", "", 1), "}"), "{")
			if s != c.want {
				t.Errorf("metadata %s, want %s", s, c.want)
			}
			if md.IPv4Src != [4]byte{10, 2, 2, 2} || md.IPv4Dst != [4]byte{10, 1, 1, 1} || md.Proto != flowkeys.TunProtoIPv4 {
				t.Errorf("outer addresses %v -> %v (proto %d)", md.IPv4Src, md.IPv4Dst, md.Proto)
			}
			if c.name == "outer CE, inner ECT" {
				f := c.pkt[off : off+n]
				if ih := header.IPv4(f[14:34]); f[15] != 0x03 || ih.CalculateChecksum() != ih.Checksum() {
					t.Errorf("inner TOS %#x (checksum ok: %v): want CE with a fixed checksum", f[15], ih.CalculateChecksum() == ih.Checksum())
				}
			}
		})
	}
}

// TestSetTunnelValidation: set(tunnel) as the kernel validates it.
func TestSetTunnelValidation(t *testing.T) {
	h := newHarness(t, 1)
	key := "in_port(1)," + anyEth + "eth_type(0x0800)" + anyIPv4
	for _, c := range []struct {
		acts string
		want error
	}{
		{"set(tunnel(tun_id=0x1,dst=1.1.1.1,ttl=64,flags(key))),1", nil},
		{"set(tunnel(tun_id=0x1,src=1.1.1.2,ttl=64,flags(key))),1", syscall.EINVAL},
		{"set(tunnel(tun_id=0x1,dst=0.0.0.0,ttl=64,flags(key))),1", syscall.EINVAL},
		{"set(tunnel(tun_id=0x1,dst=1.1.1.1,flags(key))),1", syscall.EINVAL},
		{"set(tunnel(tun_id=0x1,dst=1.1.1.1,ttl=64,geneve({class=0x1,type=0x2,len=8,0xa}),flags(key))),1", nil},
		{"set(tunnel(tun_id=0x1,ipv6_dst=::1,ttl=64,flags(key))),1", nil},
		{"set(tunnel(tun_id=0x1,ipv6_dst=::,ttl=64,flags(key))),1", syscall.EINVAL},
		{"set(tunnel(tun_id=0x1,src=1.1.1.1,ipv6_dst=::1,ttl=64,flags(key))),1", syscall.EINVAL},
		// ERSPAN metadata as the kernel takes it; one option block.
		{"set(tunnel(tun_id=0x1,dst=1.1.1.1,ttl=64,erspan(ver=1,idx=0x7),flags(key))),1", nil},
		{"set(tunnel(dst=1.1.1.1,ttl=64,erspan(ver=2,dir=1,hwid=0x3))),1", nil},
		{"set(tunnel(dst=1.1.1.1,ttl=64,geneve({class=0x1,type=0x2,len=4,0xa}),erspan(ver=1,idx=0x7))),1", syscall.EINVAL},
		{"set(tunnel(dst=1.1.1.1,ttl=64,vxlan(gbp(id=1,flags=0)),erspan(ver=1,idx=0x7))),1", syscall.EINVAL},
		// GTP-U is no kernel attribute.
		{"set(tunnel(dst=1.1.1.1,ttl=64,gtpu(flags=0x30,msgtype=255))),1", odp.ErrUnsupported},
	} {
		_, err := h.dp.PutFlow(t.Context(), parseFlow(t, key, c.acts), odp.PutCreate)
		if (c.want == nil) != (err == nil) || c.want != nil && !errors.Is(err, c.want) {
			t.Errorf("put %s: %v, want %v", c.acts, err, c.want)
		}
		h.dp.FlushFlows(t.Context())
	}
	// Geneve options whose lengths do not add up.
	for _, o := range [][]byte{{0, 1, 2, 1}, {0, 1, 2}, {0, 1, 2, 0, 0, 1, 2, 2, 0, 0, 0, 0}} {
		_, err := compileSetTunnel(odp.Tunnel{Present: odp.TunnelHasIPv4Dst | odp.TunnelHasTTL | odp.TunnelHasGeneve, IPv4Dst: [4]byte{1, 1, 1, 1}, TTL: 1, Geneve: o}, "set")
		if !errors.Is(err, syscall.EINVAL) {
			t.Errorf("Geneve options % x: %v, want EINVAL", o, err)
		}
	}
	ti, err := compileSetTunnel(odp.Tunnel{Present: odp.TunnelHasIPv4Dst | odp.TunnelHasTTL | odp.TunnelHasGeneve, IPv4Dst: [4]byte{1, 1, 1, 1}, TTL: 1,
		Geneve: []byte{0, 1, 0x80, 0}}, "set")
	if err != nil || ti.flags&kernelTunnelCritOpt == 0 || ti.geneve[1]&0x40 == 0 {
		t.Errorf("a critical option: %v, flags %#x, header % x: want TUNNEL_CRIT_OPT and the C bit", err, ti.flags, ti.geneve)
	}
	a, _ := odp.ParseActions("set_masked(tunnel(tun_id=0x1/0xff,dst=1.1.1.1,ttl=64,flags(key)))")
	if len(a) == 1 {
		if _, err := compileActions(a, &flowkeys.Key{EthType: 0x800}); !errors.Is(err, syscall.EINVAL) {
			t.Errorf("set_masked(tunnel): %v, want EINVAL", err)
		}
	}
}

// TestTunnelPortOptions: the port options dpctl gives system@ tunnels.
func TestTunnelPortOptions(t *testing.T) {
	for _, c := range []struct {
		kind tunnelKind
		opts map[string]string
		want string // the config, or the error
	}{
		{tunnelGeneve, nil, "{kind:1 dstPort:6081 gbp:false} map[dst_port:6081]"},
		{tunnelVXLAN, map[string]string{"dst_port": "8472", "exts": "gbp"}, "{kind:2 dstPort:8472 gbp:true} map[dst_port:8472 exts:gbp]"},
		{tunnelGRE, nil, "{kind:3 dstPort:0 gbp:false} map[]"},
		{tunnelGRE, map[string]string{"dst_port": "1"}, "option dst_port is for vxlan and geneve ports, not gre"},
		{tunnelGeneve, map[string]string{"exts": "gbp"}, "option exts is for vxlan ports, not geneve"},
		{tunnelVXLAN, map[string]string{"exts": "gpe"}, `option exts="gpe": the only extension is gbp`},
		{tunnelVXLAN, map[string]string{"dst_port": "0"}, `option dst_port="0": want a UDP port number 1-65535`},
		{tunnelVXLAN, map[string]string{"dst_port": "70000"}, `option dst_port="70000"`},
		{tunnelVXLAN, map[string]string{"remote_ip": "1.1.1.1"}, `unknown vxlan port option "remote_ip"`},
	} {
		cfg, shown, err := parseTunnelOptions("t0", c.kind, c.opts)
		got := fmtConfig(cfg, shown)
		if err != nil {
			got = err.Error()
			if !errors.Is(err, syscall.EINVAL) {
				t.Errorf("%v: error %v does not wrap EINVAL", c.opts, err)
			}
		}
		if !strings.Contains(got, c.want) {
			t.Errorf("%s %v: %s, want %s", c.kind, c.opts, got, c.want)
		}
	}
}

// fmtTunnel prints t's fields, without Opts when it has none.
func fmtTunnel(t flowkeys.Tunnel) string {
	return strings.Replace(fmt.Sprintf("%+v", t), " Opts:[]", "", 1)
}

func fmtConfig(c tunnelConfig, shown map[string]string) string {
	return fmt.Sprintf("%+v %v", c, shown)
}

// TestTnlPushPop: Open vSwitch's userspace tunnel actions. tnl_push with
// a header as Open vSwitch prints it (tests/tunnel-push-pop.at's vxlan
// header) gives the outer packet byte for byte, its lengths, checksum
// and UDP source port filled in; tnl_pop of that packet on the vxlan
// port gives back the inner frame, received on the tunnel port with the
// outer header's metadata.
func TestTnlPushPop(t *testing.T) {
	h := newHarness(t, 3)
	ft := newFakeTunnel(tunnelVXLAN, 4789, false)
	if _, err := h.dp.AttachPort(ft, 4); err != nil {
		t.Fatal(err)
	}
	const hdr = "header(size=50,type=4,eth(dst=f8:bc:12:44:34:b6,src=aa:55:aa:55:00:00,dl_type=0x0800)," +
		"ipv4(src=1.1.2.88,dst=1.1.2.92,proto=17,tos=0,ttl=64,frag=0x4000),udp(src=0,dst=4789,csum=0x0),vxlan(flags=0x8000000,vni=0x7b))"
	h.put("in_port(1),"+anyEth+"eth_type(0x0800)"+anyIPv4, "tnl_push(tnl_port(4),"+hdr+",out_port(100)),2")
	h.put("in_port(3),"+anyEth+"eth_type(0x0800)"+anyIPv4, "tnl_pop(4)")
	ups, err := h.dp.Upcalls(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	frame := udpFrame(1, 2, 1000)
	h.send(1, frame)
	got := h.expect(2)
	want := mustHex(t, "f8bc124434b6 aa55aa550000 0800 4500 0060 0000 4000 4011 0000 01010258 0101025c 0000 12b5 004c 0000 08000000 00007b00")
	want = append(want, frame...)
	if len(got) != len(want) {
		t.Fatalf("tnl_push gave %d bytes, want %d", len(got), len(want))
	}
	sport := binary.BigEndian.Uint16(got[34:])
	if sport < 32768 || sport >= 61000 {
		t.Errorf("UDP source port %d outside 32768-60999", sport)
	}
	ih := header.IPv4(got[14:34])
	if ih.CalculateChecksum() != ih.Checksum() {
		t.Errorf("bad outer IPv4 checksum %#04x", ih.Checksum())
	}
	copy(want[24:26], got[24:26])
	copy(want[34:36], got[34:36])
	if !bytes.Equal(got, want) {
		t.Errorf("tnl_push output\n% x, want\n% x", got, want)
	}

	h.send(3, got)
	var u [1]odp.Upcall
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := ups[0].Recv(ctx, u[:]); err != nil {
		t.Fatalf("no miss after tnl_pop: %v", err)
	}
	if u[0].Port != 4 || !bytes.Equal(u[0].Packet, frame) {
		t.Errorf("miss on port %d with % x: want port 4 with the inner frame % x", u[0].Port, u[0].Packet, frame)
	}
	var tun string
	for _, a := range u[0].Key {
		if _, ok := a.(odp.Tunnel); ok {
			tun = odp.FormatKey(odp.FlowKey{a}, nil, false)
		}
	}
	if w := "tunnel(tun_id=0x7b,src=1.1.2.88,dst=1.1.2.92,ttl=64,tp_src=" + itoa(uint32(sport)) + ",tp_dst=4789,flags(key))"; tun != w {
		t.Errorf("tunnel key after tnl_pop %s, want %s", tun, w)
	}

	// A bad outer IPv4 checksum, or a tnl_pop on a port that is not a
	// tunnel, drops.
	bad := append([]byte(nil), got...)
	bad[24] ^= 0xff
	before := h.dp.Drops().ActionErrors
	h.send(3, bad)
	for deadline := time.Now().Add(5 * time.Second); h.dp.Drops().ActionErrors < before+1 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	h.dp.FlushFlows(context.Background())
	h.put("in_port(1),"+anyEth+"eth_type(0x0800)"+anyIPv4, "tnl_pop(2)")
	h.send(1, frame)
	for deadline := time.Now().Add(5 * time.Second); h.dp.Drops().ActionErrors < before+2 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	if n := h.dp.Drops().ActionErrors - before; n != 2 {
		t.Errorf("%d action errors, want 2 (a bad checksum, a port that is no tunnel)", n)
	}
}

// TestTnlPushValidation: headers tnl_push cannot use are refused.
func TestTnlPushValidation(t *testing.T) {
	eth := mustHex(t, "f8bc124434b6 aa55aa550000 0800")
	ip := mustHex(t, "4500 0000 0000 4000 4011 0000 01010258 0101025c")
	udp := mustHex(t, "0000 12b5 0000 0000 08000000 00007b00")
	for _, c := range []struct {
		name string
		a    odp.TunnelPush
		want error
	}{
		{"ok", odp.TunnelPush{TnlType: odp.VportVXLAN, Header: append(append(append([]byte(nil), eth...), ip...), udp...)}, nil},
		{"short", odp.TunnelPush{TnlType: odp.VportVXLAN, Header: eth}, syscall.EINVAL},
		{"no UDP", odp.TunnelPush{TnlType: odp.VportVXLAN, Header: append(append([]byte(nil), eth...), ip...)}, syscall.EINVAL},
		{"gre type, UDP header", odp.TunnelPush{TnlType: odp.VportGRE, Header: append(append(append([]byte(nil), eth...), ip...), udp...)}, syscall.EINVAL},
		{"gtpu", odp.TunnelPush{TnlType: odp.VportGTPU, Header: append(append(append([]byte(nil), eth...), ip...), udp...)}, odp.ErrUnsupported},
	} {
		_, err := compileTnlPush(c.a, "a")
		if (c.want == nil) != (err == nil) || c.want != nil && !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
}

// BenchmarkTunnelEncap is the per-packet path into a geneve tunnel port
// with a Geneve option and a UDP checksum: extract, lookup,
// set(tunnel), encapsulate (the fake port does not send).
func BenchmarkTunnelEncap(b *testing.B) {
	ft := newFakeTunnel(tunnelGeneve, 6081, false)
	dp := tunnelFixture(b, ft, "tun_id=0x5,dst=10.1.1.2,ttl=64,geneve({class=0x102,type=0x80,len=4,0xa1b2c3d4}),flags(csum|key)")
	w := newWorker(dp, DefaultCacheEntries)
	var bufs [pipelineBatch][]byte
	for i := range bufs {
		bufs[i] = make([]byte, BufferSize(1500))
	}
	frame := udpFrame(1, 2, 1000)
	b.ReportAllocs()
	b.ResetTimer()
	pumpFrames(w, &bufs, frame, 0, b.N)
	w.flush()
}

// TestUserspaceEgressTunnelKey: userspace(tunnel_out_port=2) gives the
// upcall the egress tunnel key as the kernel's output_userspace and the
// port's fill_metadata_dst do: set(tunnel)'s metadata with the route's
// source address and the port's UDP ports; nothing without set(tunnel),
// for a port that is not a tunnel, or IPv6 metadata on a GRE port.
func TestUserspaceEgressTunnelKey(t *testing.T) {
	type egressCase struct {
		name, acts, want string // want: the key, tp_src=SPORT for the hashed source port
		kind             tunnelKind
		dstPort          uint16
		lo, hi           int // the source port's range
		wantNoKey        bool
	}
	for _, tc := range []egressCase{
		{name: "geneve", kind: tunnelGeneve, dstPort: 6081,
			acts: "set(tunnel(tun_id=0x2a,dst=192.0.2.2,ttl=64,tp_dst=4789,geneve({class=0x102,type=0x80,len=4,0xdeadbeef}),flags(df|key))),userspace(pid=0,tunnel_out_port=2)",
			want: "tunnel(tun_id=0x2a,src=10.1.1.1,dst=192.0.2.2,ttl=64,tp_src=SPORT,tp_dst=6081,geneve({class=0x102,type=0x80,len=4,0xdeadbeef}),flags(df|key))", lo: 1, hi: 65535},
		{name: "vxlan with tp_dst and gbp", kind: tunnelVXLAN, dstPort: 4789,
			acts: "set(tunnel(tun_id=0x5,src=10.9.9.9,dst=192.0.2.2,tos=0x10,ttl=9,tp_dst=5000,vxlan(gbp(id=10,flags=0x8)),flags(csum|key))),userspace(pid=0,tunnel_out_port=2)",
			want: "tunnel(tun_id=0x5,src=10.9.9.9,dst=192.0.2.2,tos=0x10,ttl=9,tp_src=SPORT,tp_dst=5000,vxlan(gbp(id=10,flags=0x8)),flags(csum|key))", lo: 32768, hi: 60999},
		{name: "vxlan default port", kind: tunnelVXLAN, dstPort: 4789,
			acts: "set(tunnel(dst=192.0.2.2,ttl=64)),userspace(pid=0,tunnel_out_port=2)",
			want: "tunnel(src=10.1.1.1,dst=192.0.2.2,ttl=64,tp_src=SPORT,tp_dst=4789,flags(0))", lo: 32768, hi: 60999},
		{name: "gre", kind: tunnelGRE,
			acts: "set(tunnel(tun_id=0x7,dst=192.0.2.2,ttl=64,tp_src=99,flags(key))),userspace(pid=0,tunnel_out_port=2)",
			want: "tunnel(tun_id=0x7,src=10.1.1.1,dst=192.0.2.2,ttl=64,tp_src=99,flags(key))"},
		{name: "ipv6 geneve", kind: tunnelGeneve, dstPort: 6081,
			acts: "set(tunnel(ipv6_dst=fd00::2,ttl=64)),userspace(pid=0,tunnel_out_port=2)",
			want: "tunnel(ipv6_src=fd00::1,ipv6_dst=fd00::2,ttl=64,tp_src=SPORT,tp_dst=6081,flags(0))", lo: 1, hi: 65535},
		// ERSPAN metadata: dev_fill_metadata_dst keeps the options.
		{name: "geneve with erspan", kind: tunnelGeneve, dstPort: 6081, lo: 1, hi: 65535, acts: "set(tunnel(tun_id=0x2a,dst=192.0.2.2,ttl=64,erspan(ver=1,idx=0x7),flags(key))),userspace(pid=0,tunnel_out_port=2)", want: "tunnel(tun_id=0x2a,src=10.1.1.1,dst=192.0.2.2,ttl=64,tp_src=SPORT,tp_dst=6081,erspan(ver=1,idx=0x7),flags(key))"},
		{name: "gre with erspan v2", kind: tunnelGRE, acts: "set(tunnel(dst=192.0.2.2,ttl=64,erspan(ver=2,dir=1,hwid=0x3))),userspace(pid=0,tunnel_out_port=2)", want: "tunnel(src=10.1.1.1,dst=192.0.2.2,ttl=64,erspan(ver=2,dir=1,hwid=0x3),flags(0))"},
		{name: "ipv6 gre", kind: tunnelGRE, acts: "set(tunnel(ipv6_dst=fd00::2,ttl=64)),userspace(pid=0,tunnel_out_port=2)", wantNoKey: true},
		{name: "no set(tunnel)", kind: tunnelGeneve, dstPort: 6081, acts: "userspace(pid=0,tunnel_out_port=2)", wantNoKey: true},
		{name: "not a tunnel port", kind: tunnelGeneve, dstPort: 6081, acts: "set(tunnel(dst=192.0.2.2,ttl=64)),userspace(pid=0,tunnel_out_port=1)", wantNoKey: true},
		{name: "no tunnel_out_port", kind: tunnelGeneve, dstPort: 6081, acts: "set(tunnel(dst=192.0.2.2,ttl=64)),userspace(pid=0)", wantNoKey: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ft := newFakeTunnel(tc.kind, tc.dstPort, false)
			dp := tunnelFixtureActs(t, ft, tc.acts)
			rs, err := dp.Upcalls(t.Context(), 1)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := dp.MemoryPeer("m1").WriteBatch([][]byte{udpFrame(1, 2, 1000)}); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			defer cancel()
			ups := make([]odp.Upcall, 1)
			if n, err := rs[0].Recv(ctx, ups); err != nil || n != 1 {
				t.Fatalf("Recv: %d, %v", n, err)
			}
			u := ups[0]
			if u.Kind != odp.UpcallAction {
				t.Fatalf("upcall kind %v, want an action upcall", u.Kind)
			}
			if tc.wantNoKey {
				if u.EgressTunnel != nil {
					t.Errorf("egress key %s, want none", odp.FormatKey(odp.FlowKey{*u.EgressTunnel}, nil, false))
				}
				return
			}
			if u.EgressTunnel == nil {
				t.Fatal("no egress tunnel key")
			}
			got := odp.FormatKey(odp.FlowKey{*u.EgressTunnel}, nil, false)
			want := tc.want
			if tc.hi > 0 {
				sp := int(u.EgressTunnel.TPSrc)
				if sp < tc.lo || sp > tc.hi {
					t.Errorf("tp_src %d outside %d-%d", sp, tc.lo, tc.hi)
				}
				want = strings.Replace(want, "SPORT", fmt.Sprint(sp), 1)
			}
			if got != want {
				t.Errorf("egress key\n got %s\nwant %s", got, want)
			}
			// The key survives the netlink round trip (what genl
			// decodes from the kernel's attribute).
			b, err := odp.MarshalKey(odp.FlowKey{*u.EgressTunnel})
			if err != nil {
				t.Fatal(err)
			}
			k, err := odp.UnmarshalKey(b)
			if err != nil || odp.FormatKey(k, nil, false) != got {
				t.Errorf("round trip: %v, %v", k, err)
			}
		})
	}
}

// TestTunnelTxMark: an outer packet goes to the tunnel port with the skb
// mark the packet had when output (set(skb_mark), which the port routes
// and sends it with), and 0 without one.
func TestTunnelTxMark(t *testing.T) {
	for _, tc := range []struct {
		acts string
		want uint32
	}{
		{"set(skb_mark(0x2a)),set(tunnel(dst=192.0.2.2,ttl=64)),2", 0x2a},
		{"set(tunnel(dst=192.0.2.2,ttl=64)),2", 0},
	} {
		ft := newFakeTunnel(tunnelGeneve, 6081, false)
		dp := tunnelFixtureActs(t, ft, tc.acts)
		sendAndCapture(t, dp, ft, udpFrame(1, 2, 1000))
		ft.mu.Lock()
		marks := append([]uint32(nil), ft.marks...)
		ft.mu.Unlock()
		if len(marks) != 1 || marks[0] != tc.want {
			t.Errorf("%s: the port got marks %v, want [%#x]", tc.acts, marks, tc.want)
		}
	}
}
