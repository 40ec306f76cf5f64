package userdp

import (
	"encoding/binary"
	"fmt"
	"slices"
	"testing"
	"unsafe"

	"github.com/ovsdp/ovsdp/conntrack"
	"github.com/ovsdp/ovsdp/flowkeys"
	"github.com/ovsdp/ovsdp/odp"
)

// TestStartAfterEveryForm sends a packet through each form a flow's
// actions run in (the fast forms fastOutput, fastDecTTLOutput and
// fastCTRecirc, with and without NAT and to the recirculation limit; run
// with actions that change the key, the headers and the ct state; a
// miss; a frame the straight-line extraction does not take; a packet
// received on a tunnel port, with its metadata in the key), each
// followed by a plain UDP packet whose flow outputs it (fastOutput), and
// requires that the plain packet meet a fresh context: every field
// start resets at its start value and the key that ExtractPortL3 gives
// for it. A form that changes the context but leaves it marked clean
// (pktCtx.clean), or a key wrongly taken for the straight-line
// extraction's (pktCtx.straight), leaks into the plain packet and fails.
func TestStartAfterEveryForm(t *testing.T) {
	dp, err := New("clean", WithoutLocalPort())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dp.Close() })
	for i := 1; i <= 11; i++ {
		if _, err := dp.AttachPort(newSinkPort(fmt.Sprintf("k%d", i)), uint32(i)); err != nil {
			t.Fatal(err)
		}
	}
	const udp = "eth_type(0x0800),ipv4(proto=17/0xff),udp(src=0/0)"
	for _, f := range [][2]string{
		{"recirc_id(0),in_port(1)," + anyEth + udp, "ct(commit,zone=1),recirc(1)"},
		{"recirc_id(1),in_port(1)," + anyEth + udp, "2"},
		{"recirc_id(0),in_port(1)," + anyEth + ipTCP, "ct(commit,zone=2,nat(src=10.9.9.9)),recirc(3)"},
		{"recirc_id(3),in_port(1)," + anyEth + ipTCP, "2"},
		{"recirc_id(0),in_port(3)," + anyEth + udp, "ct(zone=3),recirc(5)"},
		{"recirc_id(5),in_port(3)," + anyEth + udp, "ct(zone=3),recirc(5)"},
		{"recirc_id(0),in_port(4)," + anyEth + udp, "2"},
		{"recirc_id(0),in_port(5)," + anyEth + udp, "dec_ttl(le_1(drop)),2"},
		{"recirc_id(0),in_port(6)," + anyEth + udp, "push_vlan(vid=5,pcp=0),2"},
		{"recirc_id(0),in_port(7)," + anyEth + udp, "ct(commit,zone=7),2"},
		{"recirc_id(0),in_port(8)," + anyEth + udp, "set(skb_mark(0x42)),set(ipv4(ttl=7)),2"},
		{"recirc_id(0),in_port(9)," + anyEth + udp, "trunc(30),sample(sample=100%,actions(2)),2"},
		{"recirc_id(0),in_port(10)," + anyEth + udp, "set(skb_mark(7)),recirc(11)"},
		{"recirc_id(11),in_port(10)," + anyEth + udp, "ct(zone=10),recirc(12)"},
		{"recirc_id(12),in_port(10)," + anyEth + udp, "2"},
		{"recirc_id(0),in_port(11)," + anyEth + udp, "ct(zone=11),recirc(13)"},
		{"recirc_id(13),in_port(11)," + anyEth + udp, "set(skb_mark(9)),2"},
	} {
		if _, err := dp.PutFlow(t.Context(), parseFlow(t, f[0], f[1]), odp.PutCreate); err != nil {
			t.Fatalf("%s %s: %v", f[0], f[1], err)
		}
	}
	kinds := map[fastKind]int{}
	dp.table.each(func(f *megaflow) bool {
		kinds[f.acts.Load().fast.kind]++
		return true
	})
	if kinds[fastCTRecirc] != 6 || kinds[fastOutput] != 4 || kinds[fastDecTTLOutput] != 1 || kinds[fastNone] != 6 {
		t.Fatalf("the flows' fast forms are %v", kinds)
	}
	ttl1 := udpFrame(1, 2, 1000)
	ttl1[14+8] = 1
	fixIPv4(ttl1, 14)
	arp := append(make([]byte, 12), 0x08, 0x06, 0, 1, 8, 0, 6, 4, 0, 1, 0xa0, 0xa1, 0xa2, 0xa3, 0xa4, 0xa5, 10, 0, 0, 1, 0, 0, 0, 0, 0, 0, 10, 0, 0, 2)
	vlan := append(append(clone(udpFrame(1, 2, 1000)[:12]), 0x81, 0, 0, 7), udpFrame(1, 2, 1000)[12:]...)
	firsts := []struct {
		name   string
		in     uint32
		f      []byte
		tunnel bool // received on a tunnel port (processTunnel)
	}{
		{"fastOutput", 4, udpFrame(1, 2, 1000), false},
		{"fastDecTTLOutput", 5, udpFrame(1, 2, 1000), false},
		{"fastCTRecirc", 1, udpFrame(1, 2, 1000), false},
		{"fastCTRecirc with NAT", 1, ctTCP(1, 2, 40000, 80, 0x02, 1, 0), false},
		{"fastCTRecirc to the limit", 3, udpFrame(1, 2, 1000), false},
		{"dec_ttl's le_1 (run)", 5, ttl1, false},
		{"push_vlan (run)", 6, udpFrame(1, 2, 1000), false},
		{"ct without recirc (run)", 7, udpFrame(1, 2, 1000), false},
		{"set skb_mark and ttl (run)", 8, udpFrame(1, 2, 1000), false},
		{"trunc and sample (run)", 9, udpFrame(1, 2, 1000), false},
		{"miss, ARP", 4, arp, false},
		{"miss, VLAN tag", 4, vlan, false},
		{"a tunnel's packet", 4, udpFrame(1, 2, 1000), true},
		{"run, then fastCTRecirc", 10, udpFrame(1, 2, 1000), false},
		{"fastCTRecirc, then run", 11, udpFrame(1, 2, 1000), false},
	}
	plain := udpFrame(3, 4, 2000)
	var want flowkeys.Key
	if _, err := flowkeys.ExtractPortL3(plain, 4, &want); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, BufferSize(1500))
	for _, first := range firsts {
		for _, before := range []string{"a fresh worker", "a plain packet"} {
			w := newWorker(dp, DefaultCacheEntries)
			w.now = dp.nowMs()
			if before == "a plain packet" {
				copy(buf[DefaultHeadroom:], plain)
				w.process(buf, DefaultHeadroom, len(plain), 4)
			}
			copy(buf[DefaultHeadroom:], first.f)
			if first.tunnel {
				md := flowkeys.Metadata{InPort: first.in, SkbMark: 9}
				md.Tunnel.ID = 77
				w.processTunnel(buf, DefaultHeadroom, len(first.f), &md)
			} else {
				w.process(buf, DefaultHeadroom, len(first.f), first.in)
			}
			copy(buf[DefaultHeadroom:], plain)
			w.process(buf, DefaultHeadroom, len(plain), 4)
			c := &w.ctx
			where := fmt.Sprintf("a plain packet after %s after %s", first.name, before)
			if c.hValid || c.cutlen != 0 || c.recirc != 0 || !c.steal || c.noEth || c.probability != 0 || c.egress != nil || c.ct != (conntrack.State{}) {
				t.Errorf("%s: context hValid %v cutlen %#x recirc %d steal %v noEth %v probability %d egress %v ct %+v",
					where, c.hValid, c.cutlen, c.recirc, c.steal, c.noEth, c.probability, c.egress, c.ct)
			}
			if c.key != want {
				t.Errorf("%s: key\n%+v\nwant\n%+v", where, c.key, want)
			}
			w.flush()
		}
	}
}

// TestRunFastStraightMatchesRun sends straight-line-extracted frames
// (untagged IPv4 without options, UDP and TCP, every TTL class) through
// flows whose output and dec_ttl, output actions take the fast forms
// (runFastStraight for these frames), also after a fast ct form (with
// and without NAT), and through the same flows with the output forms
// dropped (run), and requires the same frames out of every port, the
// same drop counters and the same key after.
func TestRunFastStraightMatchesRun(t *testing.T) {
	type outcome struct {
		out   [4][][]byte
		keys  []flowkeys.Key
		drops DropStats
	}
	ip := func(proto uint8, ttl byte, payload []byte) []byte {
		f := append(make([]byte, 12), 0x08, 0x00)
		f[5], f[11] = 2, 1
		h := []byte{0x45, 0x10, 0, 0, 0x12, 0x34, 0x40, 0, ttl, proto, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2}
		binary.BigEndian.PutUint16(h[2:], uint16(20+len(payload)))
		binary.BigEndian.PutUint16(h[10:], refIPv4Check(h))
		return append(append(f, h...), payload...)
	}
	udp := []byte{0x03, 0xe8, 0x00, 0x35, 0, 8, 0, 0}
	tcp := append([]byte{0x9c, 0x40, 0, 80, 0, 0, 0, 1, 0, 0, 0, 0, 0x50, 0x12, 0xff, 0xff, 0, 0, 0, 0}, 1, 2, 3)
	run := func(slow bool) outcome {
		dp, err := New("straight", WithoutLocalPort())
		if err != nil {
			t.Fatal(err)
		}
		defer dp.Close()
		ports := make([]*capPort, 4)
		for i := 1; i <= 3; i++ {
			ports[i] = &capPort{sinkPort: *newSinkPort(fmt.Sprintf("s%d", i))}
			if _, err := dp.AttachPort(ports[i], uint32(i)); err != nil {
				t.Fatal(err)
			}
		}
		for _, f := range [][2]string{
			{"recirc_id(0),in_port(1)," + anyEth + "eth_type(0x0800)" + anyIPv4, "dec_ttl(le_1(3)),2"},
			{"recirc_id(0),in_port(2)," + anyEth + "eth_type(0x0800)" + anyIPv4, "3"},
			// After a fast ct form (runFlow's straight case), with
			// and without NAT.
			{"recirc_id(0),in_port(3)," + anyEth + "eth_type(0x0800),ipv4(proto=17/0xff),udp(src=0/0)", "ct(commit,zone=1),recirc(1)"},
			{"recirc_id(1),in_port(3)," + anyEth + "eth_type(0x0800)" + anyIPv4, "dec_ttl(le_1(1)),2"},
			{"recirc_id(0),in_port(3)," + anyEth + ipTCP, "ct(commit,zone=2,nat(src=10.9.9.9)),recirc(2)"},
			{"recirc_id(2),in_port(3)," + anyEth + "eth_type(0x0800)" + anyIPv4, "dec_ttl(le_1(1)),2"},
		} {
			if _, err := dp.PutFlow(t.Context(), parseFlow(t, f[0], f[1]), odp.PutCreate); err != nil {
				t.Fatal(err)
			}
		}
		if n := countFastForms(dp, slow, fastOutput, fastDecTTLOutput); n != 4 {
			t.Fatalf("%d flows have a fast output form, want 4", n)
		}
		w := newWorker(dp, DefaultCacheEntries)
		w.now = dp.nowMs()
		var o outcome
		buf := make([]byte, BufferSize(1500))
		for _, ttl := range []byte{0, 1, 2, 64, 255} {
			for _, in := range []uint32{1, 2, 3} {
				for _, f := range [][]byte{ip(17, ttl, udp), ip(6, ttl, tcp), ip(17, ttl, append(clone(udp), make([]byte, 18)...))} {
					var k flowkeys.Key
					if _, _, straight, _ := flowkeys.ExtractPortHashedOver(f, in, &k, w.cache.hasher, false); !straight {
						t.Fatalf("%x: not one the straight-line path takes", f)
					}
					copy(buf[DefaultHeadroom:], f)
					w.process(buf, DefaultHeadroom, len(f), in)
					o.keys = append(o.keys, w.ctx.key)
					w.flush() // the frame in buf is written before the next overwrites it
				}
			}
		}
		for i := 1; i <= 3; i++ {
			o.out[i] = ports[i].frames
		}
		o.drops = dp.Drops()
		return o
	}
	want, got := run(true), run(false)
	comparePortFrames(t, &got.out, &want.out)
	if !slices.Equal(got.keys, want.keys) {
		t.Errorf("keys differ:\n got %+v\nwant %+v", got.keys, want.keys)
	}
	if got.drops != want.drops {
		t.Errorf("drops %+v, want %+v", got.drops, want.drops)
	}
	if len(want.out[2]) == 0 || len(want.out[3]) == 0 {
		t.Fatalf("the frames did not take the paths meant: %d and %d frames out of ports 2 and 3", len(want.out[2]), len(want.out[3]))
	}
}

// TestIPv4PayloadStraight checks ipv4Payload's shortcut for a straight
// key against its general path (the same context without straight): the
// same payload (the same bytes of the frame, by address and length),
// network length and ok, for UDP frames of every length from the
// shortest the straight-line extraction takes and every IPv4 total
// length from 0 to past the frame.
func TestIPv4PayloadStraight(t *testing.T) {
	h := flowkeys.NewKeyedHasherFromSecret([]byte("ipv4-payload"))
	base := udpFrame(1, 2, 1000)
	cases := 0
	for n := 42; n <= len(base); n++ {
		for tot := 0; tot <= n+2; tot++ {
			f := clone(base[:n])
			binary.BigEndian.PutUint16(f[14+2:], uint16(tot))
			buf := make([]byte, DefaultHeadroom+len(f)+16)
			copy(buf[DefaultHeadroom:], f)
			var c pktCtx
			c.f = frameBuf{Buf: buf, Off: DefaultHeadroom, Len: len(f)}
			l3, _, straight, err := flowkeys.ExtractPortHashedOver(c.f.Bytes(), 1, &c.key, h, false)
			if err != nil || !straight {
				continue
			}
			cases++
			c.l3off, c.keyValid, c.proto = l3, true, keyProtocol(&c.key)
			c.straight = false
			wl4, wlen, wok := c.ipv4Payload()
			c.straight = true
			l4, l3len, ok := c.ipv4Payload()
			if ok != wok || l3len != wlen || len(l4) != len(wl4) || (len(l4) > 0 && &l4[0] != &wl4[0]) {
				t.Errorf("frame of %d bytes, total length %d: payload %d bytes at %p, %d, %v; the general path's %d bytes at %p, %d, %v",
					n, tot, len(l4), unsafe.SliceData(l4), l3len, ok, len(wl4), unsafe.SliceData(wl4), wlen, wok)
			}
		}
	}
	if cases < 100 {
		t.Fatalf("only %d straight cases", cases)
	}
}
