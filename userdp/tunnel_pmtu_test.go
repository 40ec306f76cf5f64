package userdp

import (
	"bytes"
	"context"
	"encoding/binary"
	"strings"
	"testing"
	"time"

	"github.com/ovsdp/ovsdp/internal/header"
	ht "github.com/ovsdp/ovsdp/internal/header/headertest"
	"github.com/ovsdp/ovsdp/odp"
)

var (
	pmtuMACA = ht.MAC("02:00:00:00:00:0a")
	pmtuMACB = ht.MAC("02:00:00:00:00:0b")
)

// pmtuFrame4 is an Ethernet/IPv4 frame of h with an ICMP echo request
// of n payload bytes (or, with icmpType set, that ICMP type).
func pmtuFrame4(h ht.IPv4Hdr, icmpType uint8, n int) []byte {
	if h.Proto == 0 {
		h.Proto = header.IPProtoICMP
	}
	body := bytes.Repeat([]byte{0x5a}, n)
	var l4 []byte
	if h.Proto == header.IPProtoICMP {
		l4 = ht.ICMP(icmpType, 0, 0x12340001, body)
	} else {
		l4 = ht.UDP(1000, 2000, body)
	}
	return ht.Eth(pmtuMACB, pmtuMACA, header.EtherTypeIPv4, ht.IPv4(h, l4))
}

// pmtuFrame6 is an Ethernet/IPv6 frame with next header next and l4.
func pmtuFrame6(src, dst string, next uint8, l4 []byte) []byte {
	return ht.Eth(pmtuMACB, pmtuMACA, header.EtherTypeIPv6, ht.IPv6(ht.IP6(src), ht.IP6(dst), next, 61, 0, 0, l4))
}

// icmp6 is an ICMPv6 message of type typ with n bytes after its header
// (its checksum left zero: the reply does not read it).
func icmp6(typ uint8, n int) []byte {
	b := make([]byte, 8+n)
	b[0] = typ
	return b
}

// TestPMTUReplyIPv4 checks the ICMP "fragmentation needed" built for a
// too long IPv4 frame with DF byte for byte against
// iptunnel_pmtud_build_icmp: the Ethernet and IP addresses swapped, TOS
// 0, ID 0, DF, the original TTL, type 3 code 4 with the MTU, the
// original packet cut to 548 bytes, both checksums right.
func TestPMTUReplyIPv4(t *testing.T) {
	frame := pmtuFrame4(ht.IPv4Hdr{Src: ht.IP4("192.168.50.1"), Dst: ht.IP4("192.168.50.2"), TTL: 61, TOS: 0x28, DF: true, ID: 77}, 8, 1400)
	dst := make([]byte, pmtuReplyMax)
	n := pmtuReply(dst, frame, 14, header.EtherTypeIPv4, 1350)
	orig := frame[14:]
	want := ht.Eth(pmtuMACA, pmtuMACB, header.EtherTypeIPv4,
		ht.IPv4(ht.IPv4Hdr{Src: ht.IP4("192.168.50.2"), Dst: ht.IP4("192.168.50.1"), Proto: header.IPProtoICMP, TTL: 61, DF: true},
			ht.ICMP(3, 4, 1350, orig[:548])))
	if got := dst[:n]; !bytes.Equal(got, want) {
		t.Errorf("reply (%d bytes)\n got %x\nwant %x", n, got, want)
	}
	if n != 14+20+8+548 {
		t.Errorf("reply of %d bytes, want 590", n)
	}
	// A short packet is quoted whole.
	small := pmtuFrame4(ht.IPv4Hdr{Src: ht.IP4("192.168.50.1"), Dst: ht.IP4("192.168.50.2"), TTL: 64, DF: true}, 8, 100)
	if n := pmtuReply(dst, small, 14, header.EtherTypeIPv4, 600); n != 14+20+8+len(small)-14 {
		t.Errorf("reply to a %d-byte packet: %d bytes", len(small)-14, n)
	}
}

// TestPMTUReplyIPv6 checks the ICMPv6 "packet too big" against
// iptunnel_pmtud_build_icmpv6: addresses swapped, the original hop
// limit, type 2 with the MTU, the packet cut to 1232 bytes, the
// checksum right.
func TestPMTUReplyIPv6(t *testing.T) {
	frame := pmtuFrame6("fd50::1", "fd50::2", header.IPProtoUDP, ht.UDP(1000, 2000, bytes.Repeat([]byte{7}, 1400)))
	dst := make([]byte, pmtuReplyMax)
	n := pmtuReply(dst, frame, 14, header.EtherTypeIPv6, 1330)
	msg := make([]byte, 8, 8+1232)
	msg[0] = 2
	binary.BigEndian.PutUint32(msg[4:], 1330)
	msg = append(msg, frame[14:14+1232]...)
	ip := ht.IPv6(ht.IP6("fd50::2"), ht.IP6("fd50::1"), header.IPProtoICMPv6, 61, 0, 0, msg)
	ht.FillL4Checksum(ip[40:], header.IPProtoICMPv6, header.IPv6(ip).PseudoHeaderSum(header.IPProtoICMPv6, len(msg)))
	want := ht.Eth(pmtuMACA, pmtuMACB, header.EtherTypeIPv6, ip)
	if got := dst[:n]; !bytes.Equal(got, want) {
		t.Errorf("reply (%d bytes)\n got %x\nwant %x", n, got, want)
	}
	if n != pmtuReplyMax {
		t.Errorf("reply of %d bytes, want %d", n, pmtuReplyMax)
	}
}

// TestPMTUReplyConditions: the frames the kernel answers and those it
// sends on instead (iptunnel_pmtud_check_icmp and _icmpv6).
func TestPMTUReplyConditions(t *testing.T) {
	a, b := ht.IP4("192.168.50.1"), ht.IP4("192.168.50.2")
	v4 := func(h ht.IPv4Hdr) []byte {
		if h.Src == ([4]byte{}) {
			h.Src = a
		}
		if h.Dst == ([4]byte{}) {
			h.Dst = b
		}
		h.TTL = 64
		return pmtuFrame4(h, 8, 700)
	}
	frag6 := func(off uint16) []byte {
		fh := make([]byte, 8)
		fh[0] = header.IPProtoUDP
		binary.BigEndian.PutUint16(fh[2:], off<<3|1)
		return pmtuFrame6("fd50::1", "fd50::2", 44, append(fh, make([]byte, 1400)...))
	}
	hbh := make([]byte, 8)
	hbh[0] = header.IPProtoICMPv6
	for _, tc := range []struct {
		name   string
		frame  []byte
		proto  uint16
		mtu    int
		answer bool
	}{
		{"ipv4 DF", v4(ht.IPv4Hdr{DF: true}), header.EtherTypeIPv4, 576, true},
		{"ipv4 DF, mtu 575", v4(ht.IPv4Hdr{DF: true}), header.EtherTypeIPv4, 575, false},
		{"ipv4 without DF", v4(ht.IPv4Hdr{}), header.EtherTypeIPv4, 1000, false},
		{"ipv4 DF and MF", v4(ht.IPv4Hdr{DF: true, MF: true}), header.EtherTypeIPv4, 1000, false},
		{"ipv4 DF, a later fragment", v4(ht.IPv4Hdr{DF: true, FragOff: 10}), header.EtherTypeIPv4, 1000, false},
		{"ipv4 from loopback", v4(ht.IPv4Hdr{DF: true, Src: ht.IP4("127.0.0.2")}), header.EtherTypeIPv4, 1000, false},
		{"ipv4 from zero-net", v4(ht.IPv4Hdr{DF: true, Src: ht.IP4("0.1.2.3")}), header.EtherTypeIPv4, 1000, false},
		{"ipv4 from multicast", v4(ht.IPv4Hdr{DF: true, Src: ht.IP4("224.0.0.5")}), header.EtherTypeIPv4, 1000, false},
		{"ipv4 from broadcast", v4(ht.IPv4Hdr{DF: true, Src: ht.IP4("255.255.255.255")}), header.EtherTypeIPv4, 1000, false},
		{"ipv4 to multicast", v4(ht.IPv4Hdr{DF: true, Dst: ht.IP4("239.1.1.1")}), header.EtherTypeIPv4, 1000, false},
		{"ipv4 to broadcast", v4(ht.IPv4Hdr{DF: true, Dst: ht.IP4("255.255.255.255")}), header.EtherTypeIPv4, 1000, false},
		{"ipv4 UDP", pmtuFrame4(ht.IPv4Hdr{Src: a, Dst: b, DF: true, Proto: header.IPProtoUDP, TTL: 9}, 0, 700), header.EtherTypeIPv4, 600, true},
		{"ipv4 ICMP error", pmtuFrame4(ht.IPv4Hdr{Src: a, Dst: b, DF: true, TTL: 9}, 3, 700), header.EtherTypeIPv4, 600, false},
		{"ipv4 ICMP time exceeded", pmtuFrame4(ht.IPv4Hdr{Src: a, Dst: b, DF: true, TTL: 9}, 11, 700), header.EtherTypeIPv4, 600, false},
		{"ipv4 as a VLAN frame", v4(ht.IPv4Hdr{DF: true}), header.EtherTypeVLAN, 1000, false},
		{"ipv6 UDP", pmtuFrame6("fd50::1", "fd50::2", header.IPProtoUDP, ht.UDP(1, 2, make([]byte, 1400))), header.EtherTypeIPv6, 1280, true},
		{"ipv6 mtu 1279", pmtuFrame6("fd50::1", "fd50::2", header.IPProtoUDP, ht.UDP(1, 2, make([]byte, 1400))), header.EtherTypeIPv6, 1279, false},
		{"ipv6 from ::", pmtuFrame6("::", "fd50::2", header.IPProtoUDP, ht.UDP(1, 2, make([]byte, 1400))), header.EtherTypeIPv6, 1300, false},
		{"ipv6 from ::1", pmtuFrame6("::1", "fd50::2", header.IPProtoUDP, ht.UDP(1, 2, make([]byte, 1400))), header.EtherTypeIPv6, 1300, false},
		{"ipv6 from multicast", pmtuFrame6("ff02::1", "fd50::2", header.IPProtoUDP, ht.UDP(1, 2, make([]byte, 1400))), header.EtherTypeIPv6, 1300, false},
		{"ipv6 echo request", pmtuFrame6("fd50::1", "fd50::2", header.IPProtoICMPv6, icmp6(128, 1400)), header.EtherTypeIPv6, 1300, true},
		{"ipv6 ICMPv6 error", pmtuFrame6("fd50::1", "fd50::2", header.IPProtoICMPv6, icmp6(1, 1400)), header.EtherTypeIPv6, 1300, false},
		{"ipv6 redirect", pmtuFrame6("fd50::1", "fd50::2", header.IPProtoICMPv6, icmp6(137, 1400)), header.EtherTypeIPv6, 1300, false},
		{"ipv6 ICMPv6 error after hop-by-hop", pmtuFrame6("fd50::1", "fd50::2", 0, append(hbh, icmp6(2, 1400)...)), header.EtherTypeIPv6, 1300, false},
		{"ipv6 first fragment", frag6(0), header.EtherTypeIPv6, 1300, true},
		{"ipv6 later fragment", frag6(100), header.EtherTypeIPv6, 1300, false},
		{"ipv6 truncated extension header", pmtuFrame6("fd50::1", "fd50::2", 0, []byte{58, 0}), header.EtherTypeIPv6, 1300, false},
		{"arp", ht.Eth(pmtuMACB, pmtuMACA, header.EtherTypeARP, make([]byte, 700)), header.EtherTypeARP, 600, false},
	} {
		dst := make([]byte, pmtuReplyMax)
		if got := pmtuReply(dst, tc.frame, 14, tc.proto, tc.mtu) > 0; got != tc.answer {
			t.Errorf("%s (mtu %d): answered %v, want %v", tc.name, tc.mtu, got, tc.answer)
		}
	}
	// Truncated headers are never answered (nor read past).
	f := v4(ht.IPv4Hdr{DF: true})
	for n := 0; n < 14+20; n++ {
		if pmtuReply(make([]byte, pmtuReplyMax), f[:n], 14, header.EtherTypeIPv4, 600) != 0 {
			t.Errorf("a frame cut to %d bytes was answered", n)
		}
	}
}

// TestTunnelPMTUReply runs a too long frame through a geneve and a vxlan
// port (the fake tunnel's route has MTU 1400): with DF it is not sent,
// it counts as a tx error, and the "fragmentation needed" comes back as
// a miss from the tunnel port with the egress metadata's addresses
// swapped (the route's source address as the destination); without DF,
// through a GRE port (no such check), or given to Execute (pkt_type
// PACKET_HOST in the kernel), it is sent as it is.
func TestTunnelPMTUReply(t *testing.T) {
	big := pmtuFrame4(ht.IPv4Hdr{Src: ht.IP4("192.168.50.1"), Dst: ht.IP4("192.168.50.2"), TTL: 64, DF: true}, 8, 1400)
	noDF := pmtuFrame4(ht.IPv4Hdr{Src: ht.IP4("192.168.50.1"), Dst: ht.IP4("192.168.50.2"), TTL: 64}, 8, 1400)
	fits := pmtuFrame4(ht.IPv4Hdr{Src: ht.IP4("192.168.50.1"), Dst: ht.IP4("192.168.50.2"), TTL: 64, DF: true}, 8, 1400-50-28)
	for _, tc := range []struct {
		name    string
		kind    tunnelKind
		tunnel  string
		frame   []byte
		execute bool
		mtu     int    // the reply's MTU, 0 for no reply
		key     string // the reply's tunnel key
	}{
		{"geneve", tunnelGeneve, "tun_id=0x5,dst=192.0.2.2,ttl=64,flags(df|key)", big, false, 1400 - 50,
			"tunnel(tun_id=0x5,src=192.0.2.2,dst=10.1.1.1,ttl=64,flags(df|key))"},
		{"geneve with options", tunnelGeneve, "tun_id=0x5,dst=192.0.2.2,ttl=64,geneve({class=0x102,type=0x80,len=4,0xa1b2c3d4}),flags(key)", big, false, 1400 - 58,
			"tunnel(tun_id=0x5,src=192.0.2.2,dst=10.1.1.1,ttl=64,geneve({class=0x102,type=0x80,len=4,0xa1b2c3d4}),flags(key))"},
		{"vxlan, source given", tunnelVXLAN, "tun_id=0x2a,src=10.9.9.9,dst=192.0.2.2,tos=0x10,ttl=9,flags(csum|key)", big, false, 1400 - 50,
			"tunnel(tun_id=0x2a,src=192.0.2.2,dst=10.9.9.9,tos=0x10,ttl=9,flags(csum|key))"},
		{"geneve, fits", tunnelGeneve, "tun_id=0x5,dst=192.0.2.2,ttl=64,flags(key)", fits, false, 0, ""},
		{"geneve, no DF", tunnelGeneve, "tun_id=0x5,dst=192.0.2.2,ttl=64,flags(key)", noDF, false, 0, ""},
		{"gre", tunnelGRE, "tun_id=0x5,dst=192.0.2.2,ttl=64,flags(key)", big, false, 0, ""},
		{"geneve, executed", tunnelGeneve, "tun_id=0x5,dst=192.0.2.2,ttl=64,flags(key)", big, true, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ft := newFakeTunnel(tc.kind, 6081, false)
			ft.routeMTU = 1400
			acts := "set(tunnel(" + tc.tunnel + ")),2"
			dp := tunnelFixtureActs(t, ft, acts)
			ups, err := dp.Upcalls(t.Context(), 1)
			if err != nil {
				t.Fatal(err)
			}
			if tc.execute {
				a, err := odp.ParseActions(acts)
				if err != nil {
					t.Fatal(err)
				}
				if err := dp.Execute(t.Context(), &odp.Packet{Data: tc.frame, Key: odp.FlowKey{odp.InPort(1)}, Actions: a}); err != nil {
					t.Fatal(err)
				}
			} else if _, err := dp.MemoryPeer("m1").WriteBatch([][]byte{tc.frame}); err != nil {
				t.Fatal(err)
			}
			if tc.mtu == 0 {
				sendAndCaptureWait(t, ft)
				if st := ft.stats.Snapshot(); st.TxErrors != 0 {
					t.Errorf("tx errors %d, want 0", st.TxErrors)
				}
				return
			}
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			defer cancel()
			var u [1]odp.Upcall
			if _, err := ups[0].Recv(ctx, u[:]); err != nil {
				t.Fatalf("no reply: %v", err)
			}
			got := odp.FormatKey(u[0].Key, nil, false)
			for _, want := range []string{tc.key, "in_port(2)", "ipv4(src=192.168.50.2,dst=192.168.50.1,proto=1,tos=0,ttl=64,frag=no)",
				"icmp(type=3,code=4)"} {
				if !strings.Contains(got, want) {
					t.Errorf("the reply's key %s lacks %s", got, want)
				}
			}
			if m := binary.BigEndian.Uint16(u[0].Packet[14+20+6:]); int(m) != tc.mtu {
				t.Errorf("the reply says MTU %d, want %d", m, tc.mtu)
			}
			if p := ft.packets(); len(p) != 0 {
				t.Errorf("the frame was sent too (%d outer packets)", len(p))
			}
			// geneve_xmit counts the -EMSGSIZE as a tx error;
			// vxlan_encap_bypass the reply as sent and received.
			st := ft.stats.Snapshot()
			if tc.kind == tunnelVXLAN {
				if st.TxErrors != 0 || st.TxPackets != 1 || st.RxPackets != 1 || st.TxBytes != uint64(len(u[0].Packet)) || st.RxBytes != st.TxBytes {
					t.Errorf("stats %+v, want 1 packet of %d bytes sent and received", st, len(u[0].Packet))
				}
			} else if st.TxErrors != 1 || st.TxPackets != 0 {
				t.Errorf("stats %+v, want 1 tx error", st)
			}
		})
	}
}

// sendAndCaptureWait waits for ft's first outer packet.
func sendAndCaptureWait(t *testing.T, ft *fakeTunnel) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if len(ft.packets()) > 0 {
			return
		}
	}
	t.Fatal("the tunnel port sent nothing")
}
