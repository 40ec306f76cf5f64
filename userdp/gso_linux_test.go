package userdp

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

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
func checkSegmented(t *testing.T, p *NetdevPort) {
	t.Helper()
	st := p.OffloadStats()
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
	np, ok := byNumber[pa.Number].port.(*NetdevPort)
	if !ok {
		t.Fatalf("port %d is a %T, not a *NetdevPort", pa.Number, byNumber[pa.Number].port)
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
			fwd := func(from, to *NetdevPort) {
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
