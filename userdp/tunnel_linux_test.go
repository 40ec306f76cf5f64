package userdp

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/ovsdp/ovsdp/odp"
	"github.com/ovsdp/ovsdp/testenv"
)

// tunnelTopo is a userspace datapath with a tunnel port talking to a
// Linux tunnel netdevice:
//
//	nsH (host, 192.168.77.1) --veth-- nsU (the datapath's ports: the veth end, the tunnel)
//	nsU (10.78.0.1) --veth underlay-- nsK (10.78.0.2, Linux's vxlan device, 192.168.77.2)
type tunnelTopo struct {
	h, u, k *testenv.Netns
	dp      *Datapath
	local   odp.Port // the netdev port to nsH
	tun     odp.Port // the tunnel port
}

// newTunnelTopo builds the namespaces and the datapath, with the tunnel
// port of type typ and options opts opened in nsU.
func newTunnelTopo(t *testing.T, typ odp.PortType, opts map[string]string) *tunnelTopo {
	t.Helper()
	testenv.RequireRoot(t)
	tt := &tunnelTopo{h: testenv.NewNetns(t), u: testenv.NewNetns(t), k: testenv.NewNetns(t)}
	hv := testenv.NewVeth(t, tt.h, tt.u)
	uv := testenv.NewVeth(t, tt.u, tt.k)
	tt.h.AddAddr(t, hv.Name, "192.168.77.1/24")
	// The inner MTU leaves room for the outer headers on the 1500-byte
	// underlay (the host's stack does not fragment what a raw socket
	// sends).
	tt.h.SetMTU(t, hv.Name, 1400)
	// Checksums complete on the underlay: a raw socket cannot see the
	// offload state of a packet from another namespace, whose inner
	// checksum a veth with tx checksumming leaves unfinished.
	tt.k.TxChecksumOff(t, uv.PeerName)
	tt.u.TxChecksumOff(t, uv.Name)
	tt.u.AddAddr(t, uv.Name, "10.78.0.1/24")
	tt.k.AddAddr(t, uv.PeerName, "10.78.0.2/24")
	tt.u.AddAddr(t, uv.Name, "fd78::1/64")
	tt.k.AddAddr(t, uv.PeerName, "fd78::2/64")
	dp, err := New(testenv.NewName(), WithoutLocalPort())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dp.Close() })
	tt.dp = dp
	ctx := context.Background()
	if err := tt.u.Do(func() (err error) {
		if tt.local, err = dp.AddPort(ctx, odp.PortSpec{Name: hv.PeerName, Type: odp.PortNetdev}); err != nil {
			return err
		}
		tt.tun, err = dp.AddPort(ctx, odp.PortSpec{Name: "tun0", Type: typ, Options: opts})
		return err
	}); err != nil {
		t.Fatalf("ports in namespace %s: %v", tt.u, err)
	}
	return tt
}

// put installs a flow.
func (tt *tunnelTopo) put(t *testing.T, key, acts string) {
	t.Helper()
	f := parseFlow(t, key, acts)
	if _, err := tt.dp.PutFlow(context.Background(), f, odp.PutCreate); err != nil {
		t.Fatalf("put %s %s: %v", key, acts, err)
	}
}

// putBoth installs flows for ARP and IPv4 packets from port in.
func (tt *tunnelTopo) putBoth(t *testing.T, in uint32, acts string) {
	t.Helper()
	tt.put(t, "in_port("+itoa(in)+"),"+anyEth+"eth_type(0x0806),arp(sip=0.0.0.0/0.0.0.0)", acts)
	tt.put(t, "in_port("+itoa(in)+"),"+anyEth+"eth_type(0x0800)"+anyIPv4, acts)
}

// linuxVXLANMiss creates Linux's vxlan device vx0 (vx with the name,
// MTU 1400, port 4789 and learning set) in nsK with 192.168.77.2, makes
// it send to the datapath's tunnel port, and returns the tunnel
// attribute of the miss that causes, with the upcall receiver.
func (tt *tunnelTopo) linuxVXLANMiss(t *testing.T, vx *netlink.Vxlan) (odp.Tunnel, odp.UpcallReceiver) {
	t.Helper()
	vx.LinkAttrs = netlink.LinkAttrs{Name: "vx0", MTU: 1400}
	vx.Port, vx.Learning = 4789, true
	return tt.linuxDeviceMiss(t, vx)
}

// linuxDeviceMiss creates Linux's tunnel device dev in namespace k with
// the address 192.168.77.2, and returns the tunnel attribute of the
// first miss from the tunnel port: an ARP request of a ping from k.
func (tt *tunnelTopo) linuxDeviceMiss(t *testing.T, dev netlink.Link) (odp.Tunnel, odp.UpcallReceiver) {
	t.Helper()
	name := dev.Attrs().Name
	if err := tt.k.Handle().LinkAdd(dev); err != nil {
		t.Fatalf("creating a %s device in namespace %s: %v", dev.Type(), tt.k, err)
	}
	tt.k.AddAddr(t, name, "192.168.77.2/24")
	tt.k.LinkUp(t, name)
	ups, err := tt.dp.Upcalls(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	go tt.k.Ping("192.168.77.1", time.Second) // ARP from vx0, through the tunnel
	var u [1]odp.Upcall
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for {
		if _, err := ups[0].Recv(ctx, u[:]); err != nil {
			t.Fatalf("no upcall from the tunnel port: %v", err)
		}
		if u[0].Port != tt.tun.Number {
			continue // the host's own IPv6 chatter on the netdev port
		}
		for _, a := range u[0].Key {
			if v, ok := a.(odp.Tunnel); ok {
				return v, ups[0]
			}
		}
		t.Fatalf("upcall from the tunnel port with key %s: no tunnel attribute", odp.FormatKey(u[0].Key, nil, false))
	}
}

// TestNamespaceTunnelLinuxVXLAN: ping and TCP pass between a host behind
// the userspace datapath's vxlan port and Linux's own vxlan netdevice
// (the host kernel has the vxlan module), over IPv4 and IPv6 underlays,
// with and without UDP checksums (Linux's vxlan takes none over IPv6
// with udp6zerocsumrx); the upcall of a decapsulated packet carries the
// tunnel key the kernel gives it: Linux's vxlan sends TTL 64 (a unicast
// remote without a TTL: the route's hop limit), TOS 0, a UDP checksum,
// a source port from the local port range.
func TestNamespaceTunnelLinuxVXLAN(t *testing.T) {
	for _, c := range []struct {
		name   string
		vx     *netlink.Vxlan
		key    string // the decapsulated tunnel key, %d for tp_src
		tunnel string // set(tunnel) to Linux's device, %s for the flags
	}{
		{"ipv4", &netlink.Vxlan{VxlanId: 42, SrcAddr: net.IPv4(10, 78, 0, 2), Group: net.IPv4(10, 78, 0, 1), UDPCSum: true},
			"tunnel(tun_id=0x2a,src=10.78.0.2,dst=10.78.0.1,ttl=64,tp_src=%d,tp_dst=4789,flags(csum|key))",
			"tun_id=0x2a,dst=10.78.0.2,ttl=64,flags(%skey)"},
		{"ipv6", &netlink.Vxlan{VxlanId: 43, SrcAddr: net.ParseIP("fd78::2"), Group: net.ParseIP("fd78::1"), UDP6ZeroCSumRx: true},
			"tunnel(tun_id=0x2b,ipv6_src=fd78::2,ipv6_dst=fd78::1,ttl=64,tp_src=%d,tp_dst=4789,flags(csum|key))",
			"tun_id=0x2b,ipv6_dst=fd78::2,ttl=64,flags(%skey)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			tt := newTunnelTopo(t, odp.PortVXLAN, nil)
			tun, ups := tt.linuxVXLANMiss(t, c.vx)
			ups.Close()
			if got, want := odp.FormatKey(odp.FlowKey{tun}, nil, false), fmt.Sprintf(c.key, tun.TPSrc); got != want {
				t.Errorf("tunnel key %s, want %s", got, want)
			}
			if tun.TPSrc < 32768 || tun.TPSrc > 60999 {
				t.Errorf("vxlan source port %d outside the local port range", tun.TPSrc)
			}
			tt.pingAndTCP(t, "vxlan", c.tunnel, []string{"csum|", ""})
		})
	}
}

// pingAndTCP installs the flows host <-> tunnel (set(tunnel(tunnel)),
// %s in it for each of flags) and checks ping both ways and TCP through
// Linux's device, then that the tunnel port counted packets both ways
// and no receive error.
func (tt *tunnelTopo) pingAndTCP(t *testing.T, kind, tunnel string, flags []string) {
	t.Helper()
	for _, fl := range flags {
		tt.dp.FlushFlows(context.Background())
		tt.putBoth(t, tt.local.Number, fmt.Sprintf("set(tunnel("+tunnel+")),%d", fl, tt.tun.Number))
		tt.putBoth(t, tt.tun.Number, itoa(tt.local.Number))
		if err := tt.h.Ping("192.168.77.2", 10*time.Second); err != nil {
			t.Fatalf("flags(%skey): ping through the %s tunnel: %v", fl, kind, err)
		}
		if err := tt.k.Ping("192.168.77.1", 10*time.Second); err != nil {
			t.Fatalf("flags(%skey): ping from Linux's %s device: %v", fl, kind, err)
		}
		testenv.TCPTransfer(t, tt.h, tt.k, "192.168.77.2:5001", 256<<10)
		testenv.TCPTransfer(t, tt.k, tt.h, "192.168.77.1:5002", 256<<10)
	}
	st := tt.dp.portByNumber(tt.tun.Number).port.Stats()
	if st.RxPackets == 0 || st.TxPackets == 0 || st.RxErrors != 0 {
		t.Errorf("tunnel port stats %+v: want packets both ways and no errors", st)
	}
}

// TestNamespaceTnlPushPopLinuxVXLAN: Open vSwitch's native tunnelling
// with tnl_push and tnl_pop, the underlay being a netdev port of the
// datapath: a host behind the datapath talks to Linux's vxlan device
// (ping and TCP) through flows of the form ovs-vswitchd installs in its
// userspace datapath.
func TestNamespaceTnlPushPopLinuxVXLAN(t *testing.T) {
	testenv.RequireRoot(t)
	h, u, k := testenv.NewNetns(t), testenv.NewNetns(t), testenv.NewNetns(t)
	hv := testenv.NewVeth(t, h, u)
	uv := testenv.NewVeth(t, u, k)
	h.AddAddr(t, hv.Name, "192.168.79.1/24")
	h.SetMTU(t, hv.Name, 1400)
	k.TxChecksumOff(t, uv.PeerName)
	k.AddAddr(t, uv.PeerName, "10.79.0.2/24")
	uMAC, kMAC := u.MAC(t, uv.Name), k.MAC(t, uv.PeerName)
	k.AddNeigh(t, uv.PeerName, "10.79.0.1", uMAC.String())
	vx := &netlink.Vxlan{LinkAttrs: netlink.LinkAttrs{Name: "vx0", MTU: 1400}, VxlanId: 123, Port: 4789,
		SrcAddr: net.IPv4(10, 79, 0, 2), Group: net.IPv4(10, 79, 0, 1), Learning: true}
	if err := k.Handle().LinkAdd(vx); err != nil {
		t.Fatalf("creating a vxlan device in namespace %s: %v", k, err)
	}
	k.AddAddr(t, "vx0", "192.168.79.2/24")
	k.LinkUp(t, "vx0")

	dp, err := New(testenv.NewName(), WithoutLocalPort())
	if err != nil {
		t.Fatal(err)
	}
	defer dp.Close()
	ctx := context.Background()
	var hp, up, tp odp.Port
	if err := u.Do(func() (err error) {
		if hp, err = dp.AddPort(ctx, odp.PortSpec{Name: hv.PeerName, Type: odp.PortNetdev}); err != nil {
			return err
		}
		if up, err = dp.AddPort(ctx, odp.PortSpec{Name: uv.Name, Type: odp.PortNetdev}); err != nil {
			return err
		}
		tp, err = dp.AddPort(ctx, odp.PortSpec{Name: "vxlan_sys_4789", Type: odp.PortVXLAN})
		return err
	}); err != nil {
		t.Fatalf("ports in namespace %s: %v", u, err)
	}
	tt := &tunnelTopo{dp: dp}
	push := fmt.Sprintf("tnl_push(tnl_port(%d),header(size=50,type=4,eth(dst=%s,src=%s,dl_type=0x0800),"+
		"ipv4(src=10.79.0.1,dst=10.79.0.2,proto=17,tos=0,ttl=64,frag=0x4000),udp(src=0,dst=4789,csum=0x0),"+
		"vxlan(flags=0x8000000,vni=0x7b)),out_port(%d)),%d", tp.Number, kMAC, uMAC, up.Number, up.Number)
	tt.putBoth(t, hp.Number, push)
	tt.put(t, "in_port("+itoa(up.Number)+"),"+anyEth+"eth_type(0x0800),ipv4(proto=17,frag=no),udp(dst=4789)", fmt.Sprintf("tnl_pop(%d)", tp.Number))
	tt.putBoth(t, tp.Number, itoa(hp.Number))
	if err := h.Ping("192.168.79.2", 10*time.Second); err != nil {
		t.Fatalf("ping through tnl_push/tnl_pop: %v", err)
	}
	if err := k.Ping("192.168.79.1", 10*time.Second); err != nil {
		t.Fatalf("ping from Linux's vxlan device through tnl_pop/tnl_push: %v", err)
	}
	testenv.TCPTransfer(t, h, k, "192.168.79.2:5002", 256<<10)
	testenv.TCPTransfer(t, k, h, "192.168.79.1:5003", 256<<10)
}

// TestNamespaceTunnelRouteMark: the outer packet's route is looked up
// with the packet's skb mark, as the kernel's tunnels do (flowi4_mark
// and flowi6_mark = skb->mark, in geneve_get_v4_rt/_v6_dst,
// vxlan_get_route/vxlan6_get_route and the GRE route lookup, and so in
// their fill_metadata_dst): with an ip rule sending fwmark 7 to another
// table, a packet marked by set(skb_mark(7)) leaves through that
// table's route, with its source address (in the outer header and the
// egress tunnel key of userspace(tunnel_out_port)), and unmarked ones
// through the main table's, before and after (the route cache is keyed
// by the mark too). Over IPv4 and IPv6 underlays.
func TestNamespaceTunnelRouteMark(t *testing.T) {
	for _, c := range []struct {
		name                 string
		v6                   bool
		addrA, peerA, netA   string // underlay A: the main table's route
		addrB, peerB, netB   string // underlay B: table 100, for fwmark 7
		dst, remote, setDest string
	}{
		{"ipv4", false, "10.71.1.1", "10.71.1.2", "/24", "10.71.2.1", "10.71.2.2", "/24", "10.81.0.2", "10.81.0.0/24", "dst=10.81.0.2"},
		{"ipv6", true, "fd71:1::1", "fd71:1::2", "/64", "fd71:2::1", "fd71:2::2", "/64", "fd81::2", "fd81::/64", "ipv6_dst=fd81::2"},
	} {
		t.Run(c.name, func(t *testing.T) {
			testenv.RequireRoot(t)
			u, a, b := testenv.NewNetns(t), testenv.NewNetns(t), testenv.NewNetns(t)
			va, vb := testenv.NewVeth(t, u, a), testenv.NewVeth(t, u, b)
			u.AddAddr(t, va.Name, c.addrA+c.netA)
			a.AddAddr(t, va.PeerName, c.peerA+c.netA)
			u.AddAddr(t, vb.Name, c.addrB+c.netB)
			b.AddAddr(t, vb.PeerName, c.peerB+c.netB)
			u.AddNeigh(t, va.Name, c.peerA, a.MAC(t, va.PeerName).String())
			u.AddNeigh(t, vb.Name, c.peerB, b.MAC(t, vb.PeerName).String())
			fam := "-4"
			if c.v6 {
				fam = "-6"
			}
			u.MustRun(t, "ip", fam, "route", "add", c.remote, "via", c.peerA, "dev", va.Name)
			u.MustRun(t, "ip", fam, "route", "add", c.remote, "via", c.peerB, "dev", vb.Name, "table", "100")
			u.MustRun(t, "ip", fam, "rule", "add", "fwmark", "7", "table", "100")
			capA, capB := a.Capture(t, va.PeerName), b.Capture(t, vb.PeerName)

			dp := memPortDatapath(t)
			ctx := context.Background()
			var tun odp.Port
			if err := u.Do(func() (err error) {
				tun, err = dp.AddPort(ctx, odp.PortSpec{Name: "gnv0", Type: odp.PortGeneve})
				return err
			}); err != nil {
				t.Fatalf("the geneve port in namespace %s: %v", u, err)
			}
			ups, err := dp.Upcalls(ctx, 1)
			if err != nil {
				t.Fatal(err)
			}
			for i, mark := range []uint32{0, 7, 0} {
				src, via, other := c.addrA, capA, capB
				if mark == 7 {
					src, via, other = c.addrB, capB, capA
				}
				if err := dp.FlushFlows(ctx); err != nil {
					t.Fatal(err)
				}
				acts := fmt.Sprintf("set(tunnel(tun_id=0x9,%s,ttl=64)),userspace(pid=0,tunnel_out_port=%d),%d", c.setDest, tun.Number, tun.Number)
				if mark != 0 {
					acts = fmt.Sprintf("set(skb_mark(%d)),", mark) + acts
				}
				f := parseFlow(t, "in_port(1),"+anyEth+"eth_type(0x0800)"+anyIPv4, acts)
				if _, err := dp.PutFlow(ctx, f, odp.PutCreate); err != nil {
					t.Fatalf("put %s: %v", acts, err)
				}
				if _, err := dp.MemoryPeer("m1").WriteBatch([][]byte{udpFrame(1, 2, uint16(1000+i))}); err != nil {
					t.Fatal(err)
				}
				// The egress key's source: the route's for the mark.
				rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
				var u1 [1]odp.Upcall
				_, err := ups[0].Recv(rctx, u1[:])
				cancel()
				if err != nil {
					t.Fatalf("packet %d (mark %d): no userspace upcall: %v", i, mark, err)
				}
				if e := u1[0].EgressTunnel; e == nil {
					t.Errorf("packet %d (mark %d): no egress tunnel key", i, mark)
				} else if got := egressSource(e, c.v6); got != src {
					t.Errorf("packet %d (mark %d): egress key source %s, want %s (the route of table %s)", i, mark, got, src, map[bool]string{true: "100", false: "main"}[mark == 7])
				}
				// The outer packet: out of the mark's route, from its address.
				isOuter := func(fr testenv.Frame) bool { return outerSource(fr.Data, c.v6, c.dst) != "" }
				fr, err := via.WaitFor(5*time.Second, isOuter)
				if err != nil {
					t.Fatalf("packet %d (mark %d): no outer packet to %s on the route's underlay: %v", i, mark, c.dst, err)
				}
				if got := outerSource(fr.Data, c.v6, c.dst); got != src {
					t.Errorf("packet %d (mark %d): outer source %s, want %s", i, mark, got, src)
				}
				if fr, err := other.WaitFor(100*time.Millisecond, isOuter); err == nil {
					t.Errorf("packet %d (mark %d): an outer packet from %s took the other underlay too", i, mark, outerSource(fr.Data, c.v6, c.dst))
				}
			}
		})
	}
}

// memPortDatapath is a datapath, closed when the test ends, with the
// memory port m1 as port 1.
func memPortDatapath(t *testing.T) *Datapath {
	t.Helper()
	dp, err := New(testenv.NewName(), WithoutLocalPort())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dp.Close() })
	if _, err := dp.AddPort(context.Background(), odp.PortSpec{Name: "m1", Type: PortMemory}); err != nil {
		t.Fatal(err)
	}
	return dp
}

// egressSource is the source address of an egress tunnel key.
func egressSource(e *odp.Tunnel, v6 bool) string {
	if v6 {
		return net.IP(e.IPv6Src[:]).String()
	}
	return net.IP(e.IPv4Src[:]).String()
}

// outerSource returns the source address of frame if it is an IPv4 (or,
// with v6, IPv6) packet to dst, else "".
func outerSource(frame []byte, v6 bool, dst string) string {
	if len(frame) < 14 {
		return ""
	}
	ip := frame[14:]
	switch {
	case !v6 && binary.BigEndian.Uint16(frame[12:]) == 0x0800 && len(ip) >= 20 && net.IP(ip[16:20]).String() == dst:
		return net.IP(ip[12:16]).String()
	case v6 && binary.BigEndian.Uint16(frame[12:]) == 0x86dd && len(ip) >= 40 && net.IP(ip[24:40]).String() == dst:
		return net.IP(ip[8:24]).String()
	}
	return ""
}

// TestNamespaceTunnelOuterTooLong: outer packets longer than the
// underlay's MTU of 1400, for frames the PMTU check lets through (GRE
// has none; a frame without DF is not answered), go as Linux's IP
// output sends them: an IPv4 one without DF in fragments, one with DF
// not at all (a tx drop, as iptunnel_xmit_stats counts ip_fragment's
// refusal), an IPv6 one not at all (a tx error, as ip6tunnel_xmit
// counts it: the tunnel skb is not ignore_df, so ip6_fragment refuses).
func TestNamespaceTunnelOuterTooLong(t *testing.T) {
	testenv.RequireRoot(t)
	u, k := testenv.NewNetns(t), testenv.NewNetns(t)
	v := testenv.NewVeth(t, u, k)
	u.SetMTU(t, v.Name, 1400)
	k.SetMTU(t, v.PeerName, 1400)
	u.AddAddr(t, v.Name, "10.72.0.1/24")
	k.AddAddr(t, v.PeerName, "10.72.0.2/24")
	u.AddAddr(t, v.Name, "fd72::1/64")
	k.AddAddr(t, v.PeerName, "fd72::2/64")
	u.AddNeigh(t, v.Name, "10.72.0.2", k.MAC(t, v.PeerName).String())
	u.AddNeigh(t, v.Name, "fd72::2", k.MAC(t, v.PeerName).String())
	capK := k.Capture(t, v.PeerName)
	dp := memPortDatapath(t)
	ctx := context.Background()
	ports := map[odp.PortType]odp.Port{}
	if err := u.Do(func() error {
		for _, typ := range []odp.PortType{odp.PortGRE, odp.PortGeneve} {
			p, err := dp.AddPort(ctx, odp.PortSpec{Name: string(typ) + "0", Type: typ})
			if err != nil {
				return err
			}
			ports[typ] = p
		}
		return nil
	}); err != nil {
		t.Fatalf("tunnel ports in namespace %s: %v", u, err)
	}
	// 1428-byte inner IPv4 packets without DF.
	frame := udpFrame(1, 2, 1000)
	frame = append(frame[:14+28:14+28], make([]byte, 1400)...)
	binary.BigEndian.PutUint16(frame[14+2:], uint16(len(frame)-14))
	binary.BigEndian.PutUint16(frame[14+24:], uint16(len(frame)-14-20))
	fixIPv4(frame, 14)
	for _, c := range []struct {
		name, tunnel string
		typ          odp.PortType
		frags        int // the outer fragments the underlay must see; 0: none
		dropped      bool
	}{
		{"gre without DF", "tun_id=0x7,dst=10.72.0.2,ttl=64,flags(key)", odp.PortGRE, 2, false},
		{"gre with DF", "tun_id=0x7,dst=10.72.0.2,ttl=64,flags(df|key)", odp.PortGRE, 0, true},
		{"geneve over IPv6", "tun_id=0x7,ipv6_dst=fd72::2,ttl=64,flags(key)", odp.PortGeneve, 0, false},
	} {
		tun := ports[c.typ]
		before := dp.portByNumber(tun.Number).port.Stats()
		if err := dp.FlushFlows(ctx); err != nil {
			t.Fatal(err)
		}
		f := parseFlow(t, "in_port(1),"+anyEth+"eth_type(0x0800)"+anyIPv4, fmt.Sprintf("set(tunnel(%s)),%d", c.tunnel, tun.Number))
		if _, err := dp.PutFlow(ctx, f, odp.PutCreate); err != nil {
			t.Fatal(err)
		}
		if _, err := dp.MemoryPeer("m1").WriteBatch([][]byte{frame}); err != nil {
			t.Fatal(err)
		}
		outer := func(fr testenv.Frame) bool {
			return outerSource(fr.Data, false, "10.72.0.2") == "10.72.0.1" || outerSource(fr.Data, true, "fd72::2") == "fd72::1"
		}
		seen := 0
		for {
			wait := 2 * time.Second
			if seen >= c.frags {
				wait = 300 * time.Millisecond
			}
			fr, err := capK.WaitFor(wait, outer)
			if err != nil {
				break
			}
			if len(fr.Data) > 14+1400 {
				t.Errorf("%s: a %d-byte frame crossed the 1400-byte underlay", c.name, len(fr.Data))
			}
			seen++
		}
		if seen != c.frags {
			t.Errorf("%s: the underlay saw %d outer packets or fragments, want %d", c.name, seen, c.frags)
		}
		var st odp.PortStats
		for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if st = dp.portByNumber(tun.Number).port.Stats(); st != before {
				break
			}
		}
		switch {
		case c.frags > 0 && st.TxPackets != before.TxPackets+1:
			t.Errorf("%s: stats %+v, want one more packet sent than %+v", c.name, st, before)
		case c.frags == 0 && c.dropped && (st.TxDropped != before.TxDropped+1 || st.TxErrors != before.TxErrors):
			t.Errorf("%s: stats %+v, want one more tx drop than %+v", c.name, st, before)
		case c.frags == 0 && !c.dropped && (st.TxErrors != before.TxErrors+1 || st.TxDropped != before.TxDropped):
			t.Errorf("%s: stats %+v, want one more tx error than %+v", c.name, st, before)
		}
	}
}
