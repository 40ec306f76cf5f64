//go:build linux

package crosscheck

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/ovsdp/ovsdp/flowkeys"
	"github.com/ovsdp/ovsdp/internal/header/headertest"
	"github.com/ovsdp/ovsdp/odp"
	"github.com/ovsdp/ovsdp/testenv"
)

// tunnelCase is a tunnel type with the metadata both sides send.
type tunnelCase struct {
	name, typ string
	opts      map[string]string
	tunnel    string // set(tunnel(...)), DST for the peer's underlay address
	ipv6      bool   // an IPv6 underlay
	// dropped: what each side sends is dropped by the other's tunnel
	// receive (neither sees a miss from its tunnel port).
	dropped bool
	// fragments: the hosts keep a 1500-byte MTU, so that full-sized
	// packets make outer packets too long for the underlay.
	fragments bool
	// pmtu: a full-sized ping with DF from each host is answered by its
	// own side's tunnel port with "fragmentation needed" and this MTU
	// (skb_tunnel_check_pmtu: the underlay's MTU less the
	// encapsulation's headroom); 0 for no such check.
	pmtu int
}

// tunnelCases are the interop test's tunnels.
var tunnelCases = []tunnelCase{
	{"geneve-option", "geneve", map[string]string{"dst_port": "6081"},
		"tun_id=0x5,dst=DST,ttl=64,geneve({class=0x102,type=0x80,len=4,0xa1b2c3d4}),flags(df|csum|key)", false, false, false, 0},
	{"vxlan", "vxlan", map[string]string{"dst_port": "4789"}, "tun_id=0x2a,dst=DST,ttl=64,flags(key)", false, false, false, 0},
	{"vxlan-gbp", "vxlan", map[string]string{"dst_port": "4789", "exts": "gbp"},
		"tun_id=0x2a,dst=DST,ttl=64,vxlan(gbp(id=10,flags=0x40)),flags(csum|key)", false, false, false, 0},
	{"gre-key", "gre", nil, "tun_id=0x7,dst=DST,ttl=32,flags(key)", false, false, false, 0},
	// TOS, OAM, a non-critical option, no checksum.
	{"geneve-oam-tos", "geneve", nil,
		"tun_id=0x6,dst=DST,tos=0x10,ttl=17,geneve({class=0xffff,type=0x1,len=8,0x1122334455667788}),flags(oam|key)", false, false, false, 0},
	// TTL 0: the route's hop limit.
	{"vxlan-ttl0", "vxlan", nil, "tun_id=0x3,dst=DST,tos=0x28,ttl=0,flags(key)", false, false, false, 0},
	// TOS 1 and TTL 0 inherit the inner packet's; no key.
	{"gre-inherit", "gre", nil, "dst=DST,tos=0x1,ttl=0,flags()", false, false, false, 0},
	// IPv6 underlays.
	{"geneve-ipv6", "geneve", nil, "tun_id=0x9,ipv6_dst=DST,tos=0x8,ttl=64,geneve({class=0x102,type=0x80,len=4,0xa1b2c3d4}),flags(csum|key)", true, false, false, 0},
	{"vxlan-ipv6-nocsum", "vxlan", nil, "tun_id=0x2b,ipv6_dst=DST,ttl=0,flags(key)", true, false, false, 0},
	// Dropped on receive: a GRE checksum on a gre port (the kernel's
	// gretap has none configured), a zero UDP checksum over IPv6 on a
	// geneve port (use_udp6_rx_checksums).
	{"gre-csum-dropped", "gre", nil, "tun_id=0x7,dst=DST,ttl=32,flags(csum|key)", false, true, false, 0},
	{"geneve-ipv6-nocsum-dropped", "geneve", nil, "tun_id=0x9,ipv6_dst=DST,ttl=64,flags(key)", true, true, false, 0},
	// Outer packets longer than the underlay's MTU.
	{"vxlan-fragments", "vxlan", nil, "tun_id=0x2a,dst=DST,ttl=64,flags(csum|key)", false, false, true, 1450},
	{"geneve-option-pmtu", "geneve", nil, "tun_id=0x5,dst=DST,ttl=64,geneve({class=0x102,type=0x80,len=4,0xa1b2c3d4}),flags(df|csum|key)", false, false, true, 1442},
	{"vxlan-ipv6-pmtu", "vxlan", nil, "tun_id=0x2b,ipv6_dst=DST,ttl=64,flags(csum|key)", true, false, true, 1430},
}

// TestNamespaceTunnelNetdevPair is the interop test between two
// userspace datapaths, on the host (no openvswitch module needed).
func TestNamespaceTunnelNetdevPair(t *testing.T) {
	testenv.RequireRoot(t)
	for _, c := range tunnelCases {
		t.Run(c.name, func(t *testing.T) { tunnelInterop(t, NetdevOpener, c) })
	}
}

// tunnelSide is one datapath of the interop test.
type tunnelSide struct {
	name        string
	host, under *testenv.Netns
	dp          odp.Datapath
	ups         []odp.UpcallReceiver
	local, tun  odp.Port
	underIP     string // the underlay address
	hostIP      string
}

func tunnelInterop(t *testing.T, openA Opener, c tunnelCase) {
	typ, opts, tunnel := odp.PortType(c.typ), c.opts, c.tunnel
	ctx := context.Background()
	k := &tunnelSide{name: "A", host: testenv.NewNetns(t), under: testenv.NewNetns(t), underIP: "10.80.0.1", hostIP: "192.168.80.1"}
	u := &tunnelSide{name: "netdev@ B", host: testenv.NewNetns(t), under: testenv.NewNetns(t), underIP: "10.80.0.2", hostIP: "192.168.80.2"}
	uv := testenv.NewVeth(t, k.under, u.under)
	plen := "/24"
	if c.ipv6 {
		k.underIP, u.underIP, plen = "fd80::1", "fd80::2", "/64"
	}
	k.under.AddAddr(t, uv.Name, k.underIP+plen)
	u.under.AddAddr(t, uv.PeerName, u.underIP+plen)
	// Whole checksums on the underlay: the userspace tunnel port reads
	// it with a raw socket, which cannot see offload state.
	k.under.TxChecksumOff(t, uv.Name)
	u.under.TxChecksumOff(t, uv.PeerName)
	for _, s := range []*tunnelSide{k, u} {
		s := s
		hv := testenv.NewVeth(t, s.host, s.under)
		s.host.AddAddr(t, hv.Name, s.hostIP+"/24")
		if !c.fragments {
			s.host.SetMTU(t, hv.Name, 1400)
		}
		open := NetdevOpener
		if s == k {
			open = openA
		}
		if err := s.under.Do(func() error {
			dp, cleanup, err := open(testenv.NewName())
			if err != nil {
				return err
			}
			t.Cleanup(cleanup)
			s.dp = dp
			if s.ups, err = dp.Upcalls(ctx, 1); err != nil {
				return err
			}
			if s.local, err = dp.AddPort(ctx, odp.PortSpec{Name: hv.PeerName, Type: odp.PortNetdev}); err != nil {
				return err
			}
			s.tun, err = dp.AddPort(ctx, odp.PortSpec{Name: testenv.NewName(), Type: typ, Options: opts})
			return err
		}); err != nil {
			t.Fatalf("%s in namespace %s: %v", s.name, s.under, err)
		}
	}
	peer := map[*tunnelSide]*tunnelSide{k: u, u: k}
	put := func(s *tunnelSide, in uint32, acts string) {
		t.Helper()
		for _, m := range []string{"eth_type(0x0806),arp(sip=0.0.0.0/0.0.0.0)", "eth_type(0x0800),ipv4(src=0.0.0.0/0.0.0.0)"} {
			fs := FlowSpec{Key: fmt.Sprintf("in_port(%d),eth(src=00:00:00:00:00:00/00:00:00:00:00:00,dst=00:00:00:00:00:00/00:00:00:00:00:00),%s", in, m), Actions: acts}
			if err := putFlowText(ctx, s.dp, fs, 0); err != nil {
				t.Fatalf("%s: %v", s.name, err)
			}
		}
	}
	// Only host -> tunnel: what comes from the tunnel misses.
	for _, s := range []*tunnelSide{k, u} {
		put(s, s.local.Number, fmt.Sprintf("set(tunnel(%s)),%d", strings.Replace(tunnel, "DST", peer[s].underIP, 1), s.tun.Number))
	}
	if c.dropped {
		// Capture on each side's underlay end: the other side's outer
		// packets must arrive there (and then be dropped), so that a
		// side that sent nothing cannot pass.
		caps := map[*tunnelSide]*testenv.Capture{k: k.under.Capture(t, uv.Name), u: u.under.Capture(t, uv.PeerName)}
		for _, s := range []*tunnelSide{k, u} {
			go peer[s].host.Ping(s.hostIP, 2*time.Second)
		}
		wait := 3 * time.Second // the pings run meanwhile; then the other side's queue is checked
		for _, s := range []*tunnelSide{k, u} {
			tun, err := tunnelUpcallWithin(s, wait)
			wait = 200 * time.Millisecond
			if err == nil {
				t.Errorf("%s received %s, want it dropped", s.name, odp.FormatKey(odp.FlowKey{tun}, nil, false))
			}
		}
		for _, s := range []*tunnelSide{k, u} {
			if _, err := caps[s].WaitFor(time.Second, func(f testenv.Frame) bool { return !f.Outgoing && isOuterFrom(f.Data, c, peer[s].underIP) }); err != nil {
				t.Errorf("%s's underlay saw no %s packet from %s (so nothing was sent to drop): %v", s.name, c.typ, peer[s].underIP, err)
			}
		}
		return
	}
	keys := map[*tunnelSide]odp.Tunnel{}
	for _, s := range []*tunnelSide{k, u} {
		go peer[s].host.Ping(s.hostIP, 2*time.Second) // its ARP request crosses the tunnel to s
		tun, err := tunnelUpcall(s)
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		keys[s] = tun
	}
	// The same metadata was sent each way: the keys agree but for the
	// addresses, swapped, and the UDP source port, a hash of the inner
	// packet.
	norm := func(s *tunnelSide) string {
		x := odp.FormatKey(odp.FlowKey{keys[s]}, nil, false)
		x = strings.ReplaceAll(x, "src="+peer[s].underIP+",", "src=PEER,")
		x = strings.ReplaceAll(x, "dst="+s.underIP+",", "dst=SELF,")
		return regexp.MustCompile(`tp_src=\d+`).ReplaceAllString(x, "tp_src=N")
	}
	if norm(k) != norm(u) {
		t.Errorf("decapsulated tunnel keys differ:\n  A (from B's encapsulation): %s\n  B (from A's encapsulation): %s",
			odp.FormatKey(odp.FlowKey{keys[k]}, nil, false), odp.FormatKey(odp.FlowKey{keys[u]}, nil, false))
	}
	t.Logf("A's key: %s; B's key: %s", odp.FormatKey(odp.FlowKey{keys[k]}, nil, false), odp.FormatKey(odp.FlowKey{keys[u]}, nil, false))
	if typ == odp.PortVXLAN {
		for _, s := range []*tunnelSide{k, u} {
			if p := keys[s].TPSrc; p < 32768 || p > 60999 {
				t.Errorf("%s received a vxlan source port %d outside the local port range", s.name, p)
			}
		}
	}

	checkEgressKeys(t, c, k, u, peer)
	if opts := geneveOptsOf(c.tunnel); opts != "" {
		checkGeneveOptionFlows(t, c, opts, k, u, peer)
	}

	for _, s := range []*tunnelSide{k, u} {
		put(s, s.tun.Number, fmt.Sprint(s.local.Number))
	}
	for _, s := range []*tunnelSide{k, u} {
		if err := s.host.Ping(peer[s].hostIP, 10*time.Second); err != nil {
			t.Fatalf("ping from behind %s: %v", s.name, err)
		}
	}
	if c.pmtu > 0 {
		checkPMTUReplies(t, c, k, u, peer)
	}
	for _, s := range []*tunnelSide{k, u} {
		testenv.TCPTransfer(t, s.host, peer[s].host, peer[s].hostIP+":5001", 128<<10)
		if c.fragments {
			// 1500-byte inner packets: 1550-byte outer ones.
			if out, err := s.host.Run("ping", "-c", "2", "-s", "1472", "-W", "5", peer[s].hostIP); err != nil {
				t.Errorf("full-sized ping from behind %s: %v\n%s", s.name, err, out)
			}
		}
	}
}

// checkPMTUReplies pings from each host with DF and 1500-byte packets:
// its own side's tunnel port must answer with "fragmentation needed" and
// the MTU c.pmtu (ping prints it), both datapaths alike.
func checkPMTUReplies(t *testing.T, c tunnelCase, k, u *tunnelSide, peer map[*tunnelSide]*tunnelSide) {
	t.Helper()
	re := regexp.MustCompile(`Frag needed and DF set \(mtu = (\d+)\)`)
	for _, s := range []*tunnelSide{k, u} {
		out, _ := s.host.Run("ping", "-c", "1", "-M", "do", "-s", "1472", "-W", "3", peer[s].hostIP)
		m := re.FindStringSubmatch(out)
		if m == nil || m[1] != fmt.Sprint(c.pmtu) {
			t.Errorf("a 1500-byte ping with DF from behind %s got no \"fragmentation needed\" with mtu %d:\n%s", s.name, c.pmtu, out)
		}
	}
}

// geneveOptsOf returns the Geneve options of a set(tunnel(...)) text,
// what is inside its geneve(...), or "".
func geneveOptsOf(tunnel string) string {
	m := regexp.MustCompile(`geneve\((\{[^)]*\})\)`).FindStringSubmatch(tunnel)
	if m == nil {
		return ""
	}
	return m[1]
}

// checkGeneveOptionFlows: flows from the tunnel port that match the
// Geneve option value the peer sends forward, on both datapaths, and
// flows for another value do not. First each side gets, from its
// tunnel port to its host, only flows whose option value differs from
// the peer's in its last hex digit: a ping from behind the peer fails,
// and the receiving side reports a miss whose key has the options (so
// the packets arrived with them and matched no flow). Then flows with
// the peer's exact options: pings pass both ways. The flows match the
// tunnel's options, ID and destination (the other tunnel fields
// wildcarded).
func checkGeneveOptionFlows(t *testing.T, c tunnelCase, opts string, k, u *tunnelSide, peer map[*tunnelSide]*tunnelSide) {
	t.Helper()
	ctx := context.Background()
	other := regexp.MustCompile(`([0-9a-f])\}`).ReplaceAllStringFunc(opts, func(x string) string {
		if x[0] == 'f' {
			return "e}"
		}
		return "f}"
	})
	if other == opts {
		t.Fatalf("options %s have no value to change", opts)
	}
	dst := "dst"
	if c.ipv6 {
		dst = "ipv6_dst"
	}
	tunID := regexp.MustCompile(`tun_id=0x[0-9a-f]+,`).FindString(c.tunnel)
	putOpt := func(s *tunnelSide, o string) {
		t.Helper()
		for _, m := range []string{"eth_type(0x0806),arp(sip=0.0.0.0/0.0.0.0)", "eth_type(0x0800),ipv4(src=0.0.0.0/0.0.0.0)"} {
			key := fmt.Sprintf("tunnel(%s%s=%s,ttl=0/0,geneve(%s),flags(+key)),in_port(%d),eth(src=00:00:00:00:00:00/00:00:00:00:00:00,dst=00:00:00:00:00:00/00:00:00:00:00:00),%s",
				tunID, dst, s.underIP, o, s.tun.Number, m)
			if err := putFlowText(ctx, s.dp, FlowSpec{Key: key, Actions: fmt.Sprint(s.local.Number)}, 0); err != nil {
				t.Fatalf("%s: %v", s.name, err)
			}
		}
	}
	for _, s := range []*tunnelSide{k, u} {
		putOpt(s, other)
	}
	megaflows := map[*tunnelSide]string{}
	for _, s := range []*tunnelSide{k, u} {
		drainUpcalls(s)
		if err := peer[s].host.Ping(s.hostIP, 2*time.Second); err == nil {
			t.Errorf("ping from behind %s to behind %s passed with flows for options %s only, want it to fail (the peer sends %s)", peer[s].name, s.name, other, opts)
		}
		tun, key, err := tunnelMissWithin(s, time.Second)
		if err != nil {
			t.Errorf("%s: with flows for options %s only: %v", s.name, other, err)
			continue
		}
		if got := odp.FormatKey(odp.FlowKey{tun}, nil, false); !strings.Contains(got, "geneve("+opts+")") {
			t.Errorf("%s: the miss's tunnel key %s lacks the options %s", s.name, got, opts)
		}
		megaflows[s] = putOptionMegaflow(t, s, key, opts)
	}
	if megaflows[k] != megaflows[u] {
		t.Errorf("the megaflows from the misses dump differently:\n  A: %s\n  B: %s", megaflows[k], megaflows[u])
	}
	for _, s := range []*tunnelSide{k, u} {
		putOpt(s, opts)
	}
	// Both datapaths dump the flows they were given alike (each with
	// its own address as the destination).
	dumps := map[*tunnelSide]string{}
	for _, s := range []*tunnelSide{k, u} {
		var lines []string
		if err := s.under.Do(func() error { // a dump opens its socket in the namespace
			return s.dp.DumpFlows(ctx, odp.DumpOptions{}, func(f *odp.Flow) error {
				if x := odp.FormatKey(f.Key, f.Mask, false); strings.Contains(x, "geneve(") {
					lines = append(lines, strings.ReplaceAll(x, "="+s.underIP+",", "=SELF,"))
				}
				return nil
			})
		}); err != nil {
			t.Fatalf("%s: dump-flows: %v", s.name, err)
		}
		sort.Strings(lines)
		dumps[s] = strings.Join(lines, "\n")
	}
	if dumps[k] != dumps[u] || strings.Count(dumps[k], "geneve(") != 4 {
		t.Errorf("the flows on the options dump differently (want 4 each, alike):\nA:\n%s\nB:\n%s", dumps[k], dumps[u])
	}
	for _, s := range []*tunnelSide{k, u} {
		if err := s.host.Ping(peer[s].hostIP, 10*time.Second); err != nil {
			t.Errorf("ping from behind %s with flows for the options %s: %v", s.name, opts, err)
		}
	}
}

// putOptionMegaflow puts on s, as upcalld does for a miss (its key
// through odp.ToFlowKeysExact, the decision's mask, then
// odp.MegaflowFromFlowKeys), a megaflow for the miss key whose mask is
// in_port, recirc_id, the Ethernet type and the Geneve options (bytes,
// length and flag, as upcalld's megaflowMask makes them): the datapath
// must take it, and dump it with the options opts (as text). It is
// deleted again; putOptionMegaflow returns its dump.
func putOptionMegaflow(t *testing.T, s *tunnelSide, key odp.FlowKey, opts string) string {
	t.Helper()
	k, err := odp.ToFlowKeysExact(key)
	if err != nil {
		t.Errorf("%s: the miss's key %s: %v", s.name, odp.FormatKey(key, nil, false), err)
		return ""
	}
	var m flowkeys.Key
	m.InPort, m.RecircID, m.EthType = 0xffff, ^uint32(0), 0xffff
	m.TunOptsLen, m.TunFlags = 0xff, odp.KernelTunnelGeneveOpt
	for i := range k.TunOptsBytes() {
		m.TunOpts[i] = 0xff
	}
	fkey, fmask, err := odp.MegaflowFromFlowKeys(&k, &m)
	if err != nil {
		t.Errorf("%s: megaflow for %s: %v", s.name, odp.FormatKey(key, nil, false), err)
		return ""
	}
	ufid := odp.UFID{0x6e, 0x65, 0x76, 0x65, byte(s.tun.Number)}
	f := &odp.Flow{UFID: ufid, Key: fkey, Mask: fmask, Actions: odp.Actions{odp.Output{Port: s.local.Number}}}
	ctx := context.Background()
	if _, err := s.dp.PutFlow(ctx, f, odp.PutCreate); err != nil {
		t.Errorf("%s: put of the megaflow %s: %v", s.name, odp.FormatKey(fkey, fmask, false), err)
		return ""
	}
	got, err := s.dp.GetFlow(ctx, odp.FlowID{UFID: ufid})
	if err != nil {
		t.Errorf("%s: get of the megaflow: %v", s.name, err)
		return ""
	}
	text := odp.FormatKey(got.Key, got.Mask, false)
	if !strings.Contains(text, "geneve("+opts+")") {
		t.Errorf("%s: the megaflow dumps as %s, without its options %s", s.name, text, opts)
	} else {
		t.Logf("%s: megaflow from the miss: %s", s.name, text)
	}
	// It overlaps the flows the test puts next (a create finds an
	// existing flow that matches its key: EEXIST, as the kernel).
	if _, err := s.dp.DelFlow(ctx, odp.FlowID{UFID: ufid}); err != nil {
		t.Errorf("%s: deleting the megaflow: %v", s.name, err)
	}
	return text
}

// drainUpcalls reads and drops what s's upcall queue holds.
func drainUpcalls(s *tunnelSide) {
	var ups [64]odp.Upcall
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		n, err := s.ups[0].Recv(ctx, ups[:])
		cancel()
		if err != nil || n == 0 {
			return
		}
	}
}

// isOuterFrom reports whether frame is an outer packet of c's tunnel
// from src as the dropped cases send it: GRE with the checksum flag, or
// UDP to the geneve port over IPv6 with a zero checksum.
func isOuterFrom(frame []byte, c tunnelCase, src string) bool {
	const eth = 14
	if len(frame) < eth+40+8 {
		return false
	}
	ip := net.ParseIP(src)
	switch et := binary.BigEndian.Uint16(frame[12:]); {
	case et == 0x0800 && ip.To4() != nil:
		h := frame[eth:]
		hl := int(h[0]&0xf) * 4
		if !bytes.Equal(h[12:16], ip.To4()) || len(h) < hl+4 {
			return false
		}
		return c.typ == "gre" && h[9] == 47 && binary.BigEndian.Uint16(h[hl:])&0x8000 != 0
	case et == 0x86dd && ip.To4() == nil:
		h := frame[eth:]
		if !bytes.Equal(h[8:24], ip.To16()) || h[6] != 17 {
			return false
		}
		udp := h[40:]
		return c.typ == "geneve" && binary.BigEndian.Uint16(udp[2:]) == 6081 && binary.BigEndian.Uint16(udp[6:]) == 0
	}
	return false
}

// checkEgressKeys executes on each side one UDP packet with
// set(tunnel(...)),userspace(tunnel_out_port=T) for its tunnel port T
// and compares the egress tunnel keys of the two action upcalls: the
// same but for the addresses (each its own route's source, the peer's
// as the destination) and the UDP source port (a hash: only that it is
// in the port's range). Each key must name its own underlay address as
// the source: the route lookup filled it in.
func checkEgressKeys(t *testing.T, c tunnelCase, k, u *tunnelSide, peer map[*tunnelSide]*tunnelSide) {
	t.Helper()
	ctx := context.Background()
	keys := map[*tunnelSide]string{}
	for _, s := range []*tunnelSide{k, u} {
		pr, ok := s.ups[0].(pider)
		if !ok {
			t.Fatalf("%s: the upcall receiver %T has no PID", s.name, s.ups[0])
		}
		acts, err := odp.ParseActions(fmt.Sprintf("set(tunnel(%s)),userspace(pid=%d,userdata(0102),tunnel_out_port=%d)",
			strings.Replace(c.tunnel, "DST", peer[s].underIP, 1), pr.PID(), s.tun.Number))
		if err != nil {
			t.Fatal(err)
		}
		pkt := &odp.Packet{Data: udp4(headertest.IPv4Hdr{}, 5000, 7300, "egress key"), Key: odp.FlowKey{odp.InPort(s.local.Number)}, Actions: acts}
		if err := s.dp.Execute(ctx, pkt); err != nil {
			t.Fatalf("%s: executing %s: %v", s.name, odp.FormatActions(acts), err)
		}
		eg, err := egressUpcall(s)
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		x := odp.FormatKey(odp.FlowKey{*eg}, nil, false)
		t.Logf("%s's egress tunnel key: %s", s.name, x)
		if !strings.Contains(x, "src="+s.underIP+",") {
			t.Errorf("%s's egress key %s does not have its underlay address %s as the source", s.name, x, s.underIP)
		}
		lo, hi := uint16(1), uint16(65535)
		if c.typ == "vxlan" {
			lo, hi = 32768, 60999
		}
		if c.typ != "gre" && (eg.TPSrc < lo || eg.TPSrc > hi) {
			t.Errorf("%s's egress key has the UDP source port %d outside %d-%d", s.name, eg.TPSrc, lo, hi)
		}
		x = strings.ReplaceAll(x, "src="+s.underIP+",", "src=SELF,")
		x = strings.ReplaceAll(x, "dst="+peer[s].underIP+",", "dst=PEER,")
		keys[s] = regexp.MustCompile(`tp_src=\d+`).ReplaceAllString(x, "tp_src=N")
	}
	if keys[k] != keys[u] {
		t.Errorf("egress tunnel keys differ:\n  A: %s\n  B: %s", keys[k], keys[u])
	}
}

// egressUpcall waits for an action upcall on s and returns its egress
// tunnel key (an error if it has none).
func egressUpcall(s *tunnelSide) (*odp.Tunnel, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var ups [8]odp.Upcall
	for {
		n, err := s.ups[0].Recv(ctx, ups[:])
		if err != nil {
			return nil, fmt.Errorf("no action upcall: %w", err)
		}
		for _, up := range ups[:n] {
			if up.Kind != odp.UpcallAction {
				continue
			}
			if up.EgressTunnel == nil {
				return nil, fmt.Errorf("an action upcall without an egress tunnel key (userdata %x)", up.Userdata)
			}
			return up.EgressTunnel, nil
		}
	}
}

// tunnelUpcall waits for a miss from s's tunnel port and returns its
// tunnel attribute.
func tunnelUpcall(s *tunnelSide) (odp.Tunnel, error) { return tunnelUpcallWithin(s, 10*time.Second) }

// tunnelUpcallWithin is tunnelUpcall waiting at most d.
func tunnelUpcallWithin(s *tunnelSide, d time.Duration) (odp.Tunnel, error) {
	tun, _, err := tunnelMissWithin(s, d)
	return tun, err
}

// tunnelMissWithin is tunnelUpcallWithin that also returns the miss's
// whole key.
func tunnelMissWithin(s *tunnelSide, d time.Duration) (odp.Tunnel, odp.FlowKey, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var ups [8]odp.Upcall
	for {
		n, err := s.ups[0].Recv(ctx, ups[:])
		if err != nil {
			return odp.Tunnel{}, nil, fmt.Errorf("no miss from the tunnel port: %w", err)
		}
		for _, up := range ups[:n] {
			if up.Port != s.tun.Number {
				continue
			}
			for _, a := range up.Key {
				if v, ok := a.(odp.Tunnel); ok {
					return v, up.Key, nil
				}
			}
			return odp.Tunnel{}, nil, fmt.Errorf("miss from the tunnel port without a tunnel attribute: %s", odp.FormatKey(up.Key, nil, false))
		}
	}
}
