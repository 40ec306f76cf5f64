package userdp

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/ovsdp/ovsdp/internal/header"
	"github.com/ovsdp/ovsdp/odp"
	"github.com/ovsdp/ovsdp/testenv"
)

// ethtoolTSO reports whether TCP segmentation offload is on for the
// interface name in the calling thread's namespace (ethtool -k's
// tcp-segmentation-offload, ETHTOOL_GTSO).
func ethtoolTSO(name string) (bool, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return false, err
	}
	defer unix.Close(fd)
	ev := struct{ cmd, data uint32 }{cmd: unix.ETHTOOL_GTSO}
	var ifr struct {
		name [unix.IFNAMSIZ]byte
		data uintptr
		_    [16]byte
	}
	copy(ifr.name[:], name)
	ifr.data = uintptr(unsafe.Pointer(&ev))
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(&ifr))); e != 0 {
		return false, fmt.Errorf("SIOCETHTOOL ETHTOOL_GTSO on %s: %w", name, e)
	}
	return ev.data != 0, nil
}

// gsoTopo is two namespaces A (10.79.0.1) and B (10.79.0.2), each on a
// veth pair with default offloads whose other end is in the test's
// namespace.
type gsoTopo struct {
	nsA, nsB *testenv.Netns
	va, vb   *testenv.Veth
}

func newGSOTopo(t *testing.T) *gsoTopo {
	testenv.RequireRoot(t)
	g := &gsoTopo{nsA: testenv.NewNetns(t), nsB: testenv.NewNetns(t)}
	g.va = testenv.NewVeth(t, nil, g.nsA)
	g.vb = testenv.NewVeth(t, nil, g.nsB)
	g.nsA.AddAddr(t, g.va.PeerName, "10.79.0.1/24")
	g.nsB.AddAddr(t, g.vb.PeerName, "10.79.0.2/24")
	for _, e := range []struct {
		ns   *testenv.Netns
		name string
	}{{g.nsA, g.va.PeerName}, {g.nsB, g.vb.PeerName}} {
		var on bool
		if err := e.ns.Do(func() (err error) { on, err = ethtoolTSO(e.name); return err }); err != nil {
			t.Fatal(err)
		}
		if !on {
			t.Fatalf("TSO is off on %s: the test needs the default offloads", e.name)
		}
	}
	return g
}

// transfer sends size random bytes by TCP from A to B and fails the test
// unless B receives exactly them.
func (g *gsoTopo) transfer(t *testing.T, size int) {
	t.Helper()
	data := make([]byte, size)
	rand.Read(data)
	var ln net.Listener
	if err := g.nsB.Do(func() (err error) { ln, err = net.Listen("tcp4", "10.79.0.2:5002"); return err }); err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	type result struct {
		b   []byte
		err error
	}
	got := make(chan result, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- result{err: err}
			return
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(60 * time.Second))
		b, err := io.ReadAll(c)
		got <- result{b, err}
	}()
	var conn net.Conn
	if err := g.nsA.Do(func() (err error) {
		conn, err = (&net.Dialer{Timeout: 10 * time.Second}).Dial("tcp4", "10.79.0.2:5002")
		return err
	}); err != nil {
		t.Fatalf("TCP connect: %v", err)
	}
	conn.SetDeadline(time.Now().Add(60 * time.Second))
	start := time.Now()
	if _, err := conn.Write(data); err != nil {
		t.Fatalf("TCP write: %v", err)
	}
	conn.Close()
	r := <-got
	if r.err != nil {
		t.Fatalf("TCP read in B: %v (%d of %d bytes)", r.err, len(r.b), size)
	}
	if !bytes.Equal(r.b, data) {
		t.Fatalf("B received %d bytes, not the %d sent", len(r.b), size)
	}
	t.Logf("%d bytes in %v", size, time.Since(start))
}

// checkSegmented fails unless p segmented GSO frames and dropped none
// for their virtio_net_hdr.
func checkSegmented(t *testing.T, p NetdevPort) {
	t.Helper()
	st := afPacketOf(t, p).OffloadStats()
	t.Logf("%s: %+v", p.Name(), st)
	if st.GSOFrames == 0 || st.GSOSegments <= st.GSOFrames {
		t.Errorf("%s: %d GSO frames cut into %d segments: want super-frames segmented", p.Name(), st.GSOFrames, st.GSOSegments)
	}
	if len(st.Dropped) != 0 {
		t.Errorf("%s: dropped for their virtio_net_hdr: %v (last: %v)", p.Name(), st.Dropped, st.LastDrop)
	}
}

// TestNetdevGSOThroughDatapath: TCP between two namespaces on veth pairs
// with the default offloads (TSO, GSO and tx checksumming on: the
// senders hand the veth 64 KiB super-frames with partial checksums),
// through a userspace datapath with flows in_port(A)->B and back. 4 MiB
// arrive intact and the sender's port shows that it segmented GSO frames.
func TestNetdevGSOThroughDatapath(t *testing.T) {
	g := newGSOTopo(t)
	dp, err := New(testenv.NewName())
	if err != nil {
		t.Fatal(err)
	}
	defer dp.Close()
	ctx := context.Background()
	pa, err := dp.AddPort(ctx, odp.PortSpec{Name: g.va.Name, Type: odp.PortNetdev})
	if err != nil {
		t.Fatal(err)
	}
	pb, err := dp.AddPort(ctx, odp.PortSpec{Name: g.vb.Name, Type: odp.PortNetdev})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range [][2]odp.Port{{pa, pb}, {pb, pa}} {
		fl := parseFlow(t, "in_port("+itoa(f[0].Number)+"),"+anyEth[:len(anyEth)-1], itoa(f[1].Number))
		if _, err := dp.PutFlow(ctx, fl, odp.PutCreate); err != nil {
			t.Fatalf("put in_port(%d)->%d: %v", f[0].Number, f[1].Number, err)
		}
	}
	g.transfer(t, 4<<20)
	byNumber := dp.ports.Load().byNumber
	np, ok := byNumber[pa.Number].port.(NetdevPort)
	if !ok {
		t.Fatalf("port %d is a %T, not a NetdevPort", pa.Number, byNumber[pa.Number].port)
	}
	checkSegmented(t, np)
}

// TestNetdevGSOForward: the same transfer with a port of each AF_PACKET
// mode on each side and a loop that forwards every frame read from one
// to the other, reading at most 3 frames a time so that a super-frame's
// segments span several ReadBatch calls.
func TestNetdevGSOForward(t *testing.T) {
	for _, mode := range netdevModes {
		t.Run(mode.String(), func(t *testing.T) {
			g := newGSOTopo(t)
			a, err := OpenNetdev(g.va.Name, NetdevOptions{Mode: mode})
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close()
			b, err := OpenNetdev(g.vb.Name, NetdevOptions{Mode: mode})
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			errs := make(chan error, 2)
			fwd := func(from, to NetdevPort) {
				bufs := make([][]byte, 3)
				sizes := make([]int, 3)
				for i := range bufs {
					bufs[i] = make([]byte, BufferSize(from.MTU()))
				}
				pkts := make([][]byte, 3)
				for {
					n, err := from.ReadBatch(bufs, sizes, DefaultHeadroom)
					if err != nil {
						errs <- err
						return
					}
					for i := 0; i < n; i++ {
						pkts[i] = bufs[i][DefaultHeadroom : DefaultHeadroom+sizes[i]]
					}
					to.WriteBatch(pkts[:n])
				}
			}
			go fwd(a, b)
			go fwd(b, a)
			g.transfer(t, 4<<20)
			checkSegmented(t, a)
			a.Close()
			b.Close()
			for range 2 {
				if err := <-errs; !errors.Is(err, ErrPortClosed) {
					t.Errorf("forwarder ended with %v", err)
				}
			}
		})
	}
}

// vnetSender is an AF_PACKET socket with PACKET_VNET_HDR on an interface
// in a namespace: it sends frames with a virtio_net_hdr, so a GSO
// super-frame leaves as one skb that veth hands over whole.
type vnetSender struct{ fd int }

func newVnetSender(t *testing.T, ns *testenv.Netns, ifname string) *vnetSender {
	t.Helper()
	s := &vnetSender{fd: -1}
	if err := ns.Do(func() error {
		ifi, err := net.InterfaceByName(ifname)
		if err != nil {
			return err
		}
		fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return err
		}
		s.fd = fd
		if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_VNET_HDR, 1); err != nil {
			return fmt.Errorf("PACKET_VNET_HDR: %w", err)
		}
		return unix.Bind(fd, &unix.SockaddrLinklayer{Ifindex: ifi.Index})
	}); err != nil {
		t.Fatalf("vnet sender on %s: %v", ifname, err)
	}
	t.Cleanup(func() { unix.Close(s.fd) })
	return s
}

// send writes the header and frame with one writev (no allocation).
func (s *vnetSender) send(hdr, frame []byte) error {
	iov := [2]unix.Iovec{{Base: &hdr[0]}, {Base: &frame[0]}}
	iov[0].SetLen(len(hdr))
	iov[1].SetLen(len(frame))
	_, _, e := unix.Syscall(unix.SYS_WRITEV, uintptr(s.fd), uintptr(unsafe.Pointer(&iov[0])), 2)
	if e != 0 {
		return e
	}
	return nil
}

// TestNetdevGSOSegments: super-frames sent whole into the veth (TCPv4
// with an in-line VLAN tag that the receiving veth takes out of band,
// TCPv6, UDP_L4) arrive as the segments wantSegments computes, byte for
// byte, read 2 at a time; a super-frame with a bad header is dropped and
// counted with its reason; and a ReadBatch that segments allocates
// nothing.
func TestNetdevGSOSegments(t *testing.T) {
	for _, mode := range netdevModes {
		t.Run(mode.String(), func(t *testing.T) {
			testenv.RequireRoot(t)
			ns := testenv.NewNetns(t)
			v := testenv.NewVeth(t, nil, ns)
			rx, err := OpenNetdev(v.Name, NetdevOptions{Mode: mode})
			if err != nil {
				t.Fatal(err)
			}
			defer rx.Close()
			snd := newVnetSender(t, ns, v.PeerName)
			bufs := make([][]byte, 2)
			sizes := make([]int, 2)
			for i := range bufs {
				bufs[i] = make([]byte, BufferSize(rx.MTU()))
			}
			// readSegs reads until the port has emitted n more
			// segments and returns those from the test's sender.
			readSegs := func(n uint64, keep bool) ([][]byte, error) {
				var out [][]byte
				offl := &afPacketOf(t, rx).offl
				target := offl.gsoSegments.Load() + n
				for offl.gsoSegments.Load() < target {
					k, err := rx.ReadBatch(bufs, sizes, DefaultHeadroom)
					if err != nil {
						return nil, err
					}
					for i := 0; keep && i < k; i++ {
						f := bufs[i][DefaultHeadroom : DefaultHeadroom+sizes[i]]
						if bytes.Equal(f[6:12], []byte{0x02, 0, 0, 0, 0, 0xaa}) {
							out = append(out, append([]byte(nil), f...))
						}
					}
				}
				return out, nil
			}
			var hb [vnetHdrLen]byte
			for _, sp := range []superSpec{
				{inner: true, flags: 0x18 | 0x01, payload: 3*1400 + 99, mss: 1400},
				{v6: true, flags: 0x18, payload: 4000, mss: 1400},
				{udp: true, payload: 3000, mss: 1000},
			} {
				super, vh := buildSuper(sp)
				vh.encode(hb[:])
				if err := snd.send(hb[:], super); err != nil {
					t.Fatalf("sending a super-frame: %v", err)
				}
				want := wantSegments(sp, super, nil)
				got, err := readSegs(uint64(len(want)), true)
				if err != nil {
					t.Fatal(err)
				}
				if len(got) != len(want) {
					t.Fatalf("%+v: %d segments read, want %d", sp, len(got), len(want))
				}
				for i := range want {
					if !bytes.Equal(got[i], want[i]) {
						t.Errorf("%+v: segment %d\n got % x\nwant % x", sp, i, got[i], want[i])
					}
				}
			}

			// A header the kernel sends but the port refuses:
			// segments of 1461 bytes of TCP payload exceed the MTU
			// of 1500. Dropped, counted, reason kept.
			super, vh := buildSuper(superSpec{flags: 0x10, payload: 3000, mss: 1461})
			vh.encode(hb[:])
			errsBefore := rx.Stats().RxErrors
			if err := snd.send(hb[:], super); err != nil {
				t.Fatalf("sending a super-frame with gso_size 1461: %v", err)
			}
			deadline := time.Now().Add(3 * time.Second)
			for rx.Stats().RxErrors == errsBefore && time.Now().Before(deadline) {
				readWithTimeout(rx, bufs, sizes)
			}
			st := afPacketOf(t, rx).OffloadStats()
			if st.Dropped[VnetBadGSOSize] != 1 || st.LastDrop == nil || rx.Stats().RxErrors != errsBefore+1 {
				t.Errorf("gso_size beyond the MTU: offload stats %+v, rx errors %d (before %d), want one VnetBadGSOSize drop", st, rx.Stats().RxErrors, errsBefore)
			} else {
				t.Logf("drop recorded: %v", st.LastDrop)
			}

			super, vh = buildSuper(superSpec{flags: 0x10, payload: 5 * 1448, mss: 1448})
			vh.encode(hb[:])
			var failed error
			allocs := testing.AllocsPerRun(30, func() {
				if err := snd.send(hb[:], super); err != nil {
					failed = err
					return
				}
				if _, err := readSegs(5, false); err != nil {
					failed = err
				}
			})
			if failed != nil {
				t.Fatal(failed)
			}
			if allocs != 0 {
				t.Errorf("%v allocations per super-frame sent and read as 5 segments, want 0", allocs)
			}
		})
	}
}

// readWithTimeout reads one batch or gives up after 100 ms.
func readWithTimeout(p NetdevPort, bufs [][]byte, sizes []int) {
	f := baseOf(p).file
	if r, ok := p.(*RingPort); ok && r.epFile != nil {
		f = r.epFile // what a ring port with two lanes waits on
	}
	f.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	p.ReadBatch(bufs, sizes, DefaultHeadroom)
	f.SetReadDeadline(time.Time{})
}

// TestCompleteCsum: a checksum left to offload is completed from
// csum_start/csum_offset for TCP and UDP over IPv4 and IPv6 and with an
// outer tag put back (csum_start then moves by 4); SCTP gets its CRC32c.
func TestCompleteCsum(t *testing.T) {
	rng := newRand(t)
	for _, c := range []struct {
		name  string
		proto uint8
		v6    bool
		tag   bool
	}{
		{"tcp4", header.IPProtoTCP, false, false}, {"udp4", header.IPProtoUDP, false, false},
		{"tcp6", header.IPProtoTCP, true, false}, {"udp6", header.IPProtoUDP, true, true},
		{"tcp4 tagged", header.IPProtoTCP, false, true}, {"sctp4", header.IPProtoSCTP, false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			var f []byte
			var l3, l4 int
			if c.v6 {
				f = testIPv6(rng, c.proto, 301)
				l3, l4 = 14, 54
			} else {
				f = testIPv4(rng, c.proto, 301, 0)
				l3, l4 = 14, 34
			}
			ip := f[l3:]
			var src, dst []byte
			if c.v6 {
				src, dst = ip[8:24], ip[24:40]
			} else {
				src, dst = ip[12:16], ip[16:20]
			}
			co := csumOffset(c.proto)
			if c.proto == header.IPProtoSCTP {
				co = 8 // the kernel's csum_offset for SCTP's CRC32c
			}
			seg := f[l4:]
			want := append([]byte(nil), f...)
			if c.proto == header.IPProtoSCTP {
				binary.LittleEndian.PutUint32(want[l4+8:], refSCTPCheck(want[l4:]))
				binary.BigEndian.PutUint32(seg[8:], 0)
			} else {
				binary.BigEndian.PutUint16(want[l4+co:], refL4Check(src, dst, c.proto, want[l4:], co))
				// The sender's partial checksum: the folded
				// pseudo-header sum, not complemented.
				ph := append(append(append([]byte(nil), src...), dst...), 0, c.proto, byte(len(seg)>>8), byte(len(seg)))
				binary.BigEndian.PutUint16(seg[co:], uint16(refSum(0, ph)))
			}
			vh := vnetHdr{flags: vnetFlagNeedsCsum, csumStart: uint16(l4), csumOffset: uint16(co)}
			buf := make([]byte, 8+len(f)+4)
			copy(buf[8:], f)
			n, r := finishFrame(buf, 8, len(f), c.tag, header.EtherTypeVLAN, 0x0123, vh)
			if n < 0 {
				t.Fatalf("finishFrame refused: %v", r)
			}
			got := buf[8 : 8+n]
			if c.tag {
				if !bytes.Equal(got[12:16], []byte{0x81, 0x00, 0x01, 0x23}) {
					t.Errorf("tag % x", got[12:16])
				}
				got = append(append([]byte(nil), got[:12]...), got[16:]...)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("completed frame\n got % x\nwant % x", got, want)
			}
		})
	}
	// Out of range: refused, nothing written.
	f := make([]byte, 60)
	for _, vh := range []vnetHdr{
		{flags: vnetFlagNeedsCsum, csumStart: 59, csumOffset: 0},
		{flags: vnetFlagNeedsCsum, csumStart: 40, csumOffset: 19},
		{flags: vnetFlagNeedsCsum, csumStart: 0xffff, csumOffset: 0xffff},
		{hdrLen: 61},
	} {
		if n, r := finishFrame(f, 0, 60, false, 0, 0, vh); n >= 0 {
			t.Errorf("finishFrame with %+v: %d, want refused", vh, n)
		} else if r != VnetBadCsum && r != VnetBadHdrLen {
			t.Errorf("finishFrame with %+v: reason %v", vh, r)
		}
	}
}
