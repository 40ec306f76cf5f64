package userdp

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/ovsdp/ovsdp/internal/header"
	"github.com/ovsdp/ovsdp/testenv"
)

var responderMAC = net.HardwareAddr{0x02, 0x0d, 0xa7, 0xa0, 0, 1}

// responder answers ARP requests and ICMP echo requests for the IPv4
// addresses in ips on port p, echoing a VLAN tag if the request had one,
// and records every frame it read.
type responder struct {
	p      Port
	ips    [][4]byte
	mu     sync.Mutex
	frames [][]byte
	done   chan error
}

func startResponder(p Port, ips ...[4]byte) *responder {
	r := &responder{p: p, ips: ips, done: make(chan error, 1)}
	go r.run()
	return r
}

func (r *responder) ours(ip []byte) bool {
	for _, a := range r.ips {
		if bytes.Equal(a[:], ip) {
			return true
		}
	}
	return false
}

func (r *responder) run() {
	bufs := make([][]byte, 16)
	sizes := make([]int, 16)
	for i := range bufs {
		bufs[i] = make([]byte, BufferSize(1500))
	}
	for {
		n, err := r.p.ReadBatch(bufs, sizes, DefaultHeadroom)
		if err != nil {
			r.done <- err
			return
		}
		for i := 0; i < n; i++ {
			f := append([]byte(nil), bufs[i][DefaultHeadroom:DefaultHeadroom+sizes[i]]...)
			r.mu.Lock()
			r.frames = append(r.frames, f)
			r.mu.Unlock()
			if reply := r.answer(f); reply != nil {
				if _, err := r.p.WriteBatch([][]byte{reply}); err != nil {
					r.done <- err
					return
				}
			}
		}
	}
}

func (r *responder) answer(f []byte) []byte {
	l2 := 14
	if binary.BigEndian.Uint16(f[12:]) == header.EtherTypeVLAN {
		l2 = 18
	}
	if len(f) < l2+28 {
		return nil
	}
	et := binary.BigEndian.Uint16(f[l2-2:])
	out := append([]byte(nil), f...)
	copy(out[0:6], f[6:12])
	copy(out[6:12], responderMAC)
	switch {
	case et == header.EtherTypeARP && binary.BigEndian.Uint16(f[l2+6:]) == 1 && r.ours(f[l2+24:l2+28]):
		a := out[l2:]
		binary.BigEndian.PutUint16(a[6:], 2)
		copy(a[18:28], f[l2+8:l2+18]) // tha, tpa = requester's sha, spa
		copy(a[8:14], responderMAC)
		copy(a[14:18], f[l2+24:l2+28])
		return out
	case et == header.EtherTypeIPv4 && f[l2+9] == header.IPProtoICMP && r.ours(f[l2+16:l2+20]) && f[l2+20] == 8:
		ip := out[l2:]
		copy(ip[12:16], f[l2+16:l2+20])
		copy(ip[16:20], f[l2+12:l2+16])
		icmp := ip[20:binary.BigEndian.Uint16(ip[2:])]
		icmp[0] = 0
		icmp[2], icmp[3] = 0, 0
		binary.BigEndian.PutUint16(icmp[2:], refCsum(icmp))
		return out
	}
	return nil
}

func (r *responder) seen(match func([]byte) bool) []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, f := range r.frames {
		if match(f) {
			return f
		}
	}
	return nil
}

var netdevModes = []NetdevMode{NetdevRing, NetdevMmsg}

// TestNetdevNamespace: a netdev port on one end of a veth pair answers
// ARP and ping from a namespace at the other end (frames both ways),
// does not read back its own frames, and completes UDP checksums left to offload.
func TestNetdevNamespace(t *testing.T) {
	testenv.RequireRoot(t)
	for _, mode := range netdevModes {
		t.Run(mode.String(), func(t *testing.T) {
			ns := testenv.NewNetns(t)
			v := testenv.NewVeth(t, nil, ns)
			ns.AddAddr(t, v.PeerName, "10.77.0.2/24")
			peerMAC := ns.MAC(t, v.PeerName)

			p, err := OpenNetdev(v.Name, NetdevOptions{Mode: mode})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			r := startResponder(p, [4]byte{10, 77, 0, 1}, [4]byte{10, 78, 0, 1})

			if err := ns.Ping("10.77.0.1", 5*time.Second); err != nil {
				t.Fatalf("ping through the port: %v", err)
			}
			if r.seen(func(f []byte) bool {
				return bytes.Equal(f[6:12], peerMAC) && binary.BigEndian.Uint16(f[12:]) == header.EtherTypeARP
			}) == nil {
				t.Errorf("no ARP request from %s read", peerMAC)
			}
			if own := r.seen(func(f []byte) bool { return bytes.Equal(f[6:12], responderMAC) }); own != nil {
				t.Errorf("read back a frame the port sent itself: % x", own[:20])
			}

			// UDP from a socket in the namespace: veth leaves the
			// checksum to offload; the port must complete it.
			ns.AddNeigh(t, v.PeerName, "10.77.0.9", "02:00:00:00:00:09")
			if err := ns.Do(func() error {
				c, err := net.Dial("udp4", "10.77.0.9:9999")
				if err != nil {
					return err
				}
				defer c.Close()
				_, err = c.Write([]byte("checksum offload test payload"))
				return err
			}); err != nil {
				t.Fatal(err)
			}
			var udp []byte
			for deadline := time.Now().Add(3 * time.Second); udp == nil && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
				udp = r.seen(func(f []byte) bool {
					return len(f) > 42 && binary.BigEndian.Uint16(f[12:]) == header.EtherTypeIPv4 && f[23] == header.IPProtoUDP && binary.BigEndian.Uint16(f[36:]) == 9999
				})
			}
			if udp == nil {
				t.Fatal("UDP datagram not read")
			}
			checkIPv4(t, udp, 14)

			st := p.Stats()
			for deadline := time.Now().Add(2 * time.Second); st.TxPackets < 2 && time.Now().Before(deadline); st = p.Stats() {
				time.Sleep(10 * time.Millisecond)
			}
			if st.RxPackets < 3 || st.TxPackets < 2 || st.RxBytes < 3*42 || st.TxBytes < 2*42 {
				t.Errorf("stats too low: %+v", st)
			}
			p.Close()
			select {
			case err := <-r.done:
				if !errors.Is(err, ErrPortClosed) {
					t.Errorf("ReadBatch after Close: %v, want ErrPortClosed", err)
				}
			case <-time.After(3 * time.Second):
				t.Errorf("ReadBatch still blocked 3s after Close")
			}
		})
	}
}

// netdevPair opens a port of the given mode on a veth end in the test's
// namespace and a sender port (mmsg) on the other end, in a namespace.
func netdevPair(t testing.TB, mode NetdevMode) (rx, tx NetdevPort) {
	rx, tx, _ = portPair(t, mode, NetdevMmsg)
	return rx, tx
}

// portPair opens a port of mode on a veth end in the test's namespace
// and one of peerMode on the other end, in a namespace; both are closed
// when the test ends.
func portPair(t testing.TB, mode, peerMode NetdevMode) (p, peer NetdevPort, v *testenv.Veth) {
	t.Helper()
	testenv.RequireRoot(t)
	ns := testenv.NewNetns(t)
	v = testenv.NewVeth(t, nil, ns)
	p, err := OpenNetdev(v.Name, NetdevOptions{Mode: mode})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	if err := ns.Do(func() error {
		var err error
		peer, err = OpenNetdev(v.PeerName, NetdevOptions{Mode: peerMode})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { peer.Close() })
	return p, peer, v
}

// TestNetdevNoAllocs: a read and a write of a batch allocate nothing.
func TestNetdevNoAllocs(t *testing.T) {
	for _, mode := range netdevModes {
		t.Run(mode.String(), func(t *testing.T) {
			rx, tx := netdevPair(t, mode)
			pkts := requireNoAllocs(t, rx, tx, 50)
			if _, err := tx.WriteBatch(pkts[:1]); err != nil {
				t.Fatal(err)
			}
			if got := readFrom(t, rx, 1, testSrcMAC)[0]; len(got) != 60 || !bytes.Equal(got[:14], pkts[0][:14]) {
				t.Errorf("read frame % x", got)
			}
		})
	}
}

// requireNoAllocs writes batches of 8 frames through tx and reads them
// from rx, runs times, and fails unless that allocates nothing. It
// returns the frames.
func requireNoAllocs(t *testing.T, rx, tx NetdevPort, runs int) [][]byte {
	t.Helper()
	pkts := make([][]byte, 8)
	for i := range pkts {
		pkts[i] = udpFrame64(i)
	}
	bufs := make([][]byte, 8)
	sizes := make([]int, 8)
	for i := range bufs {
		bufs[i] = make([]byte, BufferSize(rx.MTU()))
	}
	var failed error
	allocs := testing.AllocsPerRun(runs, func() {
		if n, err := tx.WriteBatch(pkts); err != nil || n != len(pkts) {
			failed = errors.Join(err, fmt.Errorf("wrote %d of %d frames", n, len(pkts)))
			return
		}
		for got := 0; got < len(pkts); {
			n, err := rx.ReadBatch(bufs, sizes, DefaultHeadroom)
			if err != nil {
				failed = err
				return
			}
			got += n
		}
	})
	if failed != nil {
		t.Fatal(failed)
	}
	if allocs != 0 {
		t.Errorf("%v allocations per batch write+read, want 0", allocs)
	}
	return pkts
}

// TestNetdevOversizedWrite: a frame longer than the MTU is refused, counted,
// and the frames after it are still sent.
func TestNetdevOversizedWrite(t *testing.T) {
	rx, tx := netdevPair(t, NetdevMmsg)
	big := make([]byte, 9000)
	copy(big, udpFrame64(0)[:14])
	n, err := tx.WriteBatch([][]byte{udpFrame64(1), big, udpFrame64(2)})
	if err == nil || n != 2 {
		t.Fatalf("WriteBatch with a 9000-byte frame: n=%d err=%v, want 2 and an error", n, err)
	}
	if st := tx.Stats(); st.TxErrors != 1 || st.TxPackets != 2 {
		t.Errorf("stats %+v, want 1 tx error, 2 tx packets", st)
	}
	bufs := [][]byte{make([]byte, BufferSize(1500)), make([]byte, BufferSize(1500))}
	sizes := make([]int, 2)
	for got := 0; got < 2; {
		n, err := rx.ReadBatch(bufs[got:], sizes[got:], DefaultHeadroom)
		if err != nil {
			t.Fatal(err)
		}
		got += n
	}
}

// TestNetdevVLANTag: the receiving veth end moves a frame's outer VLAN tag
// out of the data (skb_vlan_untag); the port puts it back in-line, for
// 802.1Q and 802.1ad, with a second (inner) tag left in place.
func TestNetdevVLANTag(t *testing.T) {
	for _, mode := range netdevModes {
		t.Run(mode.String(), func(t *testing.T) {
			rx, tx := netdevPair(t, mode)
			base := udpFrame64(7)
			tag := func(f []byte, tpid, tci uint16) []byte {
				out := append([]byte(nil), f[:12]...)
				out = binary.BigEndian.AppendUint16(out, tpid)
				out = binary.BigEndian.AppendUint16(out, tci)
				return append(out, f[12:]...)
			}
			frames := [][]byte{
				tag(base, header.EtherTypeVLAN, 0x2064),
				tag(tag(base, header.EtherTypeVLAN, 5), header.EtherTypeQinQ, 0x0ffe),
				base,
			}
			if n, err := tx.WriteBatch(frames); err != nil || n != len(frames) {
				t.Fatalf("WriteBatch: %d, %v", n, err)
			}
			got := readFrom(t, rx, 3, testSrcMAC)
			for i, want := range frames {
				if !bytes.Equal(got[i], want) {
					t.Errorf("frame %d read as\n% x\nsent\n% x", i, got[i], want)
				}
			}
		})
	}
}

var testSrcMAC = []byte{0x02, 0, 0, 0, 0, 0x01}

// readFrom reads from p until it has n frames with source MAC src (the
// peer's own stack may send other frames, e.g. IPv6 router
// solicitations, at any time) and returns copies of them.
func readFrom(t testing.TB, p Port, n int, src []byte) [][]byte {
	t.Helper()
	bufs := make([][]byte, 8)
	sizes := make([]int, 8)
	for i := range bufs {
		bufs[i] = make([]byte, BufferSize(1500))
	}
	var out [][]byte
	for len(out) < n {
		k, err := p.ReadBatch(bufs, sizes, DefaultHeadroom)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < k; i++ {
			f := bufs[i][DefaultHeadroom : DefaultHeadroom+sizes[i]]
			if len(f) >= 12 && bytes.Equal(f[6:12], src) {
				out = append(out, append([]byte(nil), f...))
			}
		}
	}
	return out
}

// TestNetdevVLANTxOffload: a netdev port sends the outer VLAN tag out of
// band, as the kernel's datapath does, so the receiver gets tagged
// frames of 18 and 19 bytes (which it would drop with the tag in line)
// and every other tagged frame unchanged.
func TestNetdevVLANTxOffload(t *testing.T) {
	for _, mode := range netdevModes {
		t.Run(mode.String(), func(t *testing.T) {
			out, in := netdevPair(t, mode)
			if err := out.VLANTxOffload(); err != nil {
				t.Fatalf("no out-of-band VLAN transmit: %v", err)
			}
			base := []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0, 0, 0, 0, 1}
			frames := [][]byte{
				append(append([]byte(nil), base...), 0x81, 0x00, 0x20, 0x07, 0x08, 0x06),
				append(append([]byte(nil), base...), 0x81, 0x00, 0x20, 0x07, 0x08, 0x06, 0x00),
				append(append([]byte(nil), base...), 0x88, 0xa8, 0x01, 0x2c, 0x81, 0x00, 0x00, 0x05, 0x08, 0x00),
				append(append([]byte(nil), base...), 0x88, 0xa8, 0xa0, 0x05, 0x81, 0x00, 0x00, 0x05, 0x08, 0x00, 1, 2, 3, 4, 5, 6, 7, 8),
				append(append([]byte(nil), base...), 0x81, 0x00, 0x00, 0x09, 0x08, 0x06, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10),
				append(append([]byte(nil), base...), 0x08, 0x06),
			}
			if n, err := out.WriteBatch(frames); err != nil || n != len(frames) {
				t.Fatalf("WriteBatch: %d of %d, %v", n, len(frames), err)
			}
			bufs := make([][]byte, 8)
			sizes := make([]int, 8)
			for i := range bufs {
				bufs[i] = make([]byte, BufferSize(in.MTU()))
			}
			var got [][]byte
			deadline := time.Now().Add(3 * time.Second)
			for len(got) < len(frames) && time.Now().Before(deadline) {
				n, err := in.ReadBatch(bufs, sizes, DefaultHeadroom)
				if err != nil {
					t.Fatal(err)
				}
				for i := 0; i < n; i++ {
					f := bufs[i][DefaultHeadroom : DefaultHeadroom+sizes[i]]
					if bytes.Equal(f[:12], base) {
						got = append(got, append([]byte(nil), f...))
					}
				}
			}
			if len(got) != len(frames) {
				t.Fatalf("received %d of %d frames: % x", len(got), len(frames), got)
			}
			for i := range frames {
				if !bytes.Equal(got[i], frames[i]) {
					t.Errorf("frame %d:\n got % x\nwant % x", i, got[i], frames[i])
				}
			}
			// The interface counts skb->len: the out-of-band tag is not in it.
			want := uint64(0)
			for _, f := range frames {
				want += uint64(skbLen(f))
			}
			if st := out.Stats(); st.TxPackets != uint64(len(frames)) || st.TxBytes != want {
				t.Errorf("tx stats %+v, want %d packets and %d bytes", st, len(frames), want)
			}
		})
	}
}
