package userdp

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/ovsdp/ovsdp/flowkeys"
	"github.com/ovsdp/ovsdp/internal/header"
	"github.com/ovsdp/ovsdp/internal/header/headertest"
	"github.com/ovsdp/ovsdp/odp"
)

var (
	fragMAC1 = headertest.MAC("02:00:00:00:00:01")
	fragMAC2 = headertest.MAC("02:00:00:00:00:02")
)

// fragDatagram is a UDP datagram from port 1's host to port 2's with n
// bytes of payload, and its fragments (data sizes given) in Ethernet
// frames.
func fragDatagram(v6 bool, n int, id uint32, sizes ...int) (whole []byte, frags [][]byte) {
	pl := make([]byte, n)
	for i := range pl {
		pl[i] = byte(i)
	}
	var ps []headertest.Piece
	off := 0
	for _, s := range sizes {
		ps = append(ps, headertest.Piece{Off: off, Len: s})
		off += s
	}
	var ips [][]byte
	et := uint16(header.EtherTypeIPv4)
	if v6 {
		et = header.EtherTypeIPv6
		whole = headertest.IPv6(headertest.IP6("fd00::1"), headertest.IP6("fd00::2"), header.IPProtoUDP, 64, 0, 0, headertest.UDP(5000, 53, pl))
		ips = headertest.Fragment6(whole, id, ps...)
	} else {
		whole = headertest.IPv4(headertest.IPv4Hdr{Src: headertest.IP4("10.0.0.1"), Dst: headertest.IP4("10.0.0.2"), Proto: header.IPProtoUDP, TTL: 64, ID: uint16(id)},
			headertest.UDP(5000, 53, pl))
		ips = headertest.Fragment4(whole, ps...)
	}
	for _, ip := range ips {
		frags = append(frags, headertest.Eth(fragMAC2, fragMAC1, et, ip))
	}
	return headertest.Eth(fragMAC2, fragMAC1, et, whole), frags
}

// fragReply is a UDP datagram back from port 2's host.
func fragReply(v6 bool) []byte {
	if v6 {
		return headertest.Eth(fragMAC1, fragMAC2, header.EtherTypeIPv6, headertest.IPv6(headertest.IP6("fd00::2"), headertest.IP6("fd00::1"), header.IPProtoUDP, 64, 0, 0, headertest.UDP(53, 5000, []byte("reply"))))
	}
	return headertest.Eth(fragMAC1, fragMAC2, header.EtherTypeIPv4, headertest.IPv4(headertest.IPv4Hdr{Src: headertest.IP4("10.0.0.2"), Dst: headertest.IP4("10.0.0.1"), Proto: header.IPProtoUDP, TTL: 64},
		headertest.UDP(53, 5000, []byte("reply"))))
}

// TestCTFragments sends fragmented datagrams through ct, v4 and v6: out
// of order, they are reassembled, tracked (the reply is +est+rpl) and
// output as the original fragments, in offset order, byte for byte; an
// output that is not the last sends the kernel's slow-path pieces of the
// MRU instead; an overlapping fragment drops its datagram, and the
// reassembler's counters say so. Before reassembly, a ct action on a
// fragment dropped it.
func TestCTFragments(t *testing.T) {
	for _, v6 := range []bool{false, true} {
		t.Run(fmt.Sprintf("v6=%v", v6), func(t *testing.T) {
			// Before ct, any fragment (IPv6's later fragments have
			// protocol 44 in the key, as the kernel's); after it, the
			// reassembled UDP datagram.
			frag, ip := "eth_type(0x0800),ipv4(proto=0/0)", "eth_type(0x0800),ipv4(proto=17/0xff),udp(src=0/0,dst=0/0)"
			if v6 {
				frag, ip = "eth_type(0x86dd),ipv6(proto=0/0)", "eth_type(0x86dd),ipv6(proto=17/0xff),udp(src=0/0,dst=0/0)"
			}
			h := newHarness(t, 3)
			h.put("recirc_id(0),in_port(1),"+anyEth+frag, "ct(commit,zone=7),recirc(1)")
			h.put("recirc_id(1),in_port(1),ct_state(+new+trk),"+anyEth+ip, "2")
			h.put("recirc_id(0),in_port(2),"+anyEth+frag, "ct(zone=7),recirc(2)")
			h.put("recirc_id(2),in_port(2),ct_state(+est+rpl+trk),"+anyEth+ip, "1")
			h.put("recirc_id(0),in_port(3),"+anyEth+frag, "ct(zone=8),recirc(3)")
			h.put("recirc_id(3),in_port(3),"+anyEth+ip, "2,2")

			_, frags := fragDatagram(v6, 3000, 0x77, 1480, 1480, 48)
			if v6 {
				_, frags = fragDatagram(v6, 3000, 0x77, 1448, 1448, 112)
			}
			h.send(1, frags[2], frags[0], frags[1])
			for i, want := range frags {
				if got := h.expect(2); !bytes.Equal(got, want) {
					t.Fatalf("fragment %d out:\n%x\nwant\n%x", i, got, want)
				}
			}
			h.expectNone(2)
			reply := fragReply(v6)
			h.send(2, reply)
			h.expectFrame(1, reply)

			// Irregular sizes through "2,2": the first output is a clone
			// (pieces of the MRU, 1480 or 1448 bytes of data), the second
			// the original fragments.
			_, frags = fragDatagram(v6, 3000, 0x78, 800, 1480, 728)
			piece := 1480
			if v6 {
				piece = 1448
				_, frags = fragDatagram(v6, 3000, 0x78, 800, 1448, 760)
			}
			h.send(3, frags...)
			hl := 14 + 20
			if v6 {
				hl = 14 + 48
			}
			for i, n := range []int{piece, piece, 3008 - 2*piece} {
				if got := h.expect(2); len(got)-hl != n {
					t.Fatalf("clone's fragment %d: %d bytes of data, want %d", i, len(got)-hl, n)
				}
			}
			for i, want := range frags {
				if got := h.expect(2); !bytes.Equal(got, want) {
					t.Fatalf("fragment %d of the last output:\n%x\nwant\n%x", i, got, want)
				}
			}

			// Overlapping: the datagram is dropped.
			_, frags = fragDatagram(v6, 3000, 0x79, 1448, 1448, 112)
			_, bad := fragDatagram(v6, 3000, 0x79, 1000, 1400)
			h.send(1, frags[0], bad[1], frags[1], frags[2])
			h.expectNone(2)
			st := h.dp.Conntrack().Defrag().Stats(v6)
			if st.Overlap != 1 || st.Purged != 1 {
				t.Fatalf("counters %+v: want 1 overlapping and 1 purged", st)
			}
			if n, _ := h.dp.Conntrack().Defrag().Held(); n != 2 {
				t.Fatalf("%d fragments held, want the 2 after the overlap", n)
			}
		})
	}
}

// TestCTFragmentsWhole: a reassembled datagram within the MRU plus the
// Ethernet header goes out whole (the kernel's do_output: an IPv6 one
// whose data is at most 8 bytes more than its largest fragment's, as
// it lost the fragment header), and an upcall
// of a reassembled datagram carries its MRU; executing it with that MRU
// fragments it again (in pieces of the MRU).
func TestCTFragmentsWhole(t *testing.T) {
	h := newHarness(t, 2)
	h.put("recirc_id(0),in_port(1),"+anyEth+"eth_type(0x0800),ipv4(proto=0/0)", "ct,recirc(1)")
	h.put("recirc_id(1),in_port(1),"+anyEth+"eth_type(0x0800),ipv4(proto=17/0xff,dst=10.0.0.2),udp(src=0/0,dst=0/0)", "2")
	h.put("recirc_id(0),in_port(1),"+anyEth+"eth_type(0x86dd),ipv6(proto=0/0)", "ct,2")
	whole, frags := fragDatagram(true, 96, 1, 96, 8)
	h.send(1, frags...)
	if got := h.expect(2); !bytes.Equal(got, whole) {
		t.Fatalf("got\n%x\nwant the whole datagram\n%x", got, whole)
	}

	rs, err := h.dp.Upcalls(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	r := rs[0]
	defer r.Close()
	_, frags = fragDatagram(false, 3000, 2, 1480, 1480, 48)
	for _, f := range frags {
		copy(f[14+16:], []byte{10, 0, 0, 3}) // no flow in recirc 1: a miss
		fixIPv4(f, 14)
	}
	h.send(1, frags...)
	ups := make([]odp.Upcall, 1)
	n, err := r.Recv(context.Background(), ups)
	if err != nil || n != 1 {
		t.Fatalf("Recv: %d, %v", n, err)
	}
	if up := ups[0]; up.MRU != 1500 || len(up.Packet) != 14+20+3008 {
		t.Fatalf("upcall MRU %d, %d bytes", up.MRU, len(up.Packet))
	}
	acts, _ := odp.ParseActions("2")
	if err := h.dp.Execute(context.Background(), &odp.Packet{Data: ups[0].Packet, Key: odp.FlowKey{odp.InPort(1)}, Actions: acts, MRU: ups[0].MRU}); err != nil {
		t.Fatal(err)
	}
	for i, want := range frags {
		if got := h.expect(2); !bytes.Equal(got, want) {
			t.Fatalf("executed fragment %d:\n%x\nwant\n%x", i, got, want)
		}
	}
}

// TestCTFragmentsReassemblyOff: with reassembly off (ipf-set-disabled),
// a fragment goes through ct unreassembled and invalid (+trk+inv, as the
// kernel leaves a fragment it cannot reassemble), its key no longer a
// fragment's; on again, fragments are held.
func TestCTFragmentsReassemblyOff(t *testing.T) {
	h := newHarness(t, 2)
	h.put("recirc_id(0),in_port(1),"+anyEth+"eth_type(0x0800),ipv4(proto=0/0)", "ct(zone=3),recirc(1)")
	h.put("recirc_id(1),in_port(1),ct_state(+inv+trk),ct_zone(3),"+anyEth+"eth_type(0x0800),ipv4(proto=17/0xff,frag=no),udp(src=0/0,dst=0/0)", "2")
	ctx := context.Background()
	if err := h.dp.SetIPFEnabled(ctx, false, false); err != nil {
		t.Fatal(err)
	}
	_, frags := fragDatagram(false, 3000, 9, 1480, 1480, 48)
	h.send(1, frags[0])
	h.expectFrame(2, frags[0])
	if err := h.dp.SetIPFEnabled(ctx, false, true); err != nil {
		t.Fatal(err)
	}
	h.send(1, frags[1])
	h.expectNone(2)
	st, err := h.dp.IPFStatus(ctx)
	if err != nil || st.NFrags != 1 || !st.V4.Enabled || st.V4.Accepted != 1 {
		t.Fatalf("status %+v, %v", st, err)
	}
}

// TestCTFragmentsTrunc: a trunc after reassembly cuts the datagram, which
// then fits its MRU and goes out whole, cut (the kernel's do_output cuts
// before it compares with the MRU); the next output, without a trunc,
// fragments it again.
func TestCTFragmentsTrunc(t *testing.T) {
	h := newHarness(t, 2)
	h.put("recirc_id(0),in_port(1),"+anyEth+"eth_type(0x0800),ipv4(proto=0/0)", "ct,recirc(1)")
	h.put("recirc_id(1),in_port(1),"+anyEth+"eth_type(0x0800),ipv4(proto=17/0xff),udp(src=0/0,dst=0/0)", "trunc(100),2,2")
	whole, frags := fragDatagram(false, 3000, 3, 1480, 1480, 48)
	h.send(1, frags...)
	if got := h.expect(2); !bytes.Equal(got, whole[:100]) {
		t.Fatalf("truncated output:\n%x\nwant the datagram's first 100 bytes", got)
	}
	for i, want := range frags {
		if got := h.expect(2); !bytes.Equal(got, want) {
			t.Fatalf("fragment %d after the truncated output:\n%x\nwant\n%x", i, got, want)
		}
	}
}

// TestCTFragmentsToTunnel: a datagram that ct reassembled and that goes
// out of a tunnel port is fragmented again and each fragment then
// encapsulated, as the kernel's do_output fragments before the tunnel
// device's transmit.
func TestCTFragmentsToTunnel(t *testing.T) {
	ft := newFakeTunnel(tunnelVXLAN, 4789, false)
	dp, err := New("tfrag", WithoutLocalPort())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dp.Close() })
	ctx := context.Background()
	if _, err := dp.AddPort(ctx, odp.PortSpec{Name: "m1", Type: PortMemory}); err != nil {
		t.Fatal(err)
	}
	if p, err := dp.AttachPort(ft, 2); err != nil || p.Number != 2 {
		t.Fatalf("attaching the tunnel port: %+v, %v", p, err)
	}
	for _, fl := range [][2]string{
		{"recirc_id(0),in_port(1)," + anyEth + "eth_type(0x0800),ipv4(proto=0/0)", "ct,recirc(1)"},
		{"recirc_id(1),in_port(1)," + anyEth + "eth_type(0x0800)" + anyIPv4, "set(tunnel(tun_id=0x2a,dst=10.1.1.2,ttl=64,flags(key))),2"},
	} {
		if _, err := dp.PutFlow(ctx, parseFlow(t, fl[0], fl[1]), odp.PutCreate); err != nil {
			t.Fatalf("put %s: %v", fl[1], err)
		}
	}
	_, frags := fragDatagram(false, 200, 7, 112, 96)
	if _, err := dp.MemoryPeer("m1").WriteBatch(frags); err != nil {
		t.Fatal(err)
	}
	var sent [][]byte
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline) && len(sent) < len(frags); time.Sleep(time.Millisecond) {
		sent = ft.packets()
	}
	if len(sent) != len(frags) {
		info, _ := dp.Info(ctx)
		t.Fatalf("the tunnel port sent %d packets, want the %d fragments (port stats %+v, datapath %+v, drops %+v)", len(sent), len(frags), ft.Stats(), info, dp.Drops())
	}
	for i, got := range sent {
		var md flowkeys.Tunnel
		var opts [256]byte
		rcfg := ft.cfg
		off, n, _, err := decapTunnel(got, &rcfg, &md, &opts)
		if err != nil {
			t.Fatalf("packet %d is not a vxlan packet (%v): %x", i, err, got)
		}
		if !bytes.Equal(got[off:off+n], frags[i]) {
			t.Errorf("packet %d carries\n%x\nwant fragment %d\n%x", i, got[off:off+n], i, frags[i])
		}
	}
}
