package userdp

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/ovsdp/ovsdp/internal/header"
	"github.com/ovsdp/ovsdp/testenv"
)

// xdpPair opens a NetdevXDP port on a veth end in the test's namespace
// and a port of peerMode on the other end, in a namespace.
func xdpPair(t testing.TB, peerMode NetdevMode) (x *XDPPort, peer NetdevPort, v *testenv.Veth) {
	t.Helper()
	p, peer, v := portPair(t, NetdevXDP, peerMode)
	return p.(*XDPPort), peer, v
}

// sizedFrame is a frame of n bytes from testSrcMAC with a counting
// payload, so that every byte is checked.
func sizedFrame(n int, seq byte) []byte {
	f := make([]byte, n)
	copy(f, []byte{0x02, 0, 0, 0, 0, 0x02, 0x02, 0, 0, 0, 0, 0x01, 0x88, 0xb5})
	for i := 14; i < n; i++ {
		f[i] = byte(i) + seq
	}
	return f
}

func vlanTagged(f []byte, tpid, tci uint16) []byte {
	out := append([]byte(nil), f[:12]...)
	out = binary.BigEndian.AppendUint16(out, tpid)
	out = binary.BigEndian.AppendUint16(out, tci)
	return append(out, f[12:]...)
}

// TestNetdevXDPReceive: frames the peer sends, of every size from an
// Ethernet header to the MTU and with VLAN tags (which the peer's port
// sends out of band), arrive byte for byte, in order, and are counted.
func TestNetdevXDPReceive(t *testing.T) {
	x, peer, _ := xdpPair(t, NetdevMmsg)
	if !x.XDPNative() {
		t.Errorf("XDP program in generic mode on veth, which has native XDP")
	}
	// veth hands the peer's outer tag out of band; the program puts it
	// back with a kfunc that only GPL-compatible programs may call
	// (bpfLicense).
	if !gplCompatible(bpfLicense) {
		t.Errorf("the XDP program declares %q, which the kernel does not take as GPL-compatible", bpfLicense)
	}
	restore := x.XDPVLANRestore()
	if restore != nil {
		t.Errorf("no VLAN tag restoring on veth (needs Linux 6.8): %v", restore)
	}
	var frames [][]byte
	for i, n := range []int{14, 15, 59, 60, 61, 128, 1000, 1513, 1514} {
		frames = append(frames, sizedFrame(n, byte(i)))
	}
	frames = append(frames,
		vlanTagged(sizedFrame(60, 1), header.EtherTypeVLAN, 0xe00a),
		vlanTagged(vlanTagged(sizedFrame(100, 2), header.EtherTypeVLAN, 7), header.EtherTypeQinQ, 0x1ffe),
		vlanTagged(sizedFrame(1514, 3), header.EtherTypeVLAN, 0x0123),
		vlanTagged(sizedFrame(14, 4), header.EtherTypeVLAN, 0x0124), // 18 bytes
	)
	if n, err := peer.WriteBatch(frames); err != nil || n != len(frames) {
		t.Fatalf("peer WriteBatch: %d of %d, %v", n, len(frames), err)
	}
	got := readFrom(t, x, len(frames), testSrcMAC)
	var bytesIn uint64
	for i, want := range frames {
		if restore != nil && i >= 9 {
			// The tagged frames: the peer sent the outer tag out of
			// band, and without the kfunc it does not reach us.
			want = append(append([]byte(nil), want[:12]...), want[16:]...)
		}
		bytesIn += uint64(len(want))
		if !bytes.Equal(got[i], want) {
			t.Errorf("frame %d (%d bytes) read as %d bytes:\n% x\nsent\n% x", i, len(want), len(got[i]), got[i], want)
		}
	}
	if st := x.Stats(); st.RxPackets < uint64(len(frames)) || st.RxBytes < bytesIn || st.RxErrors != 0 {
		t.Errorf("stats %+v, want at least %d packets and %d bytes, no errors", st, len(frames), bytesIn)
	}
}

// TestNetdevXDPSend: frames written through the XDP port arrive at the
// peer byte for byte; frames too short or too long are refused and
// counted, and those after them still sent; a batch larger than the
// UMEM's transmit half goes out whole (frames reclaimed from the
// completion ring as they go).
func TestNetdevXDPSend(t *testing.T) {
	x, peer, _ := xdpPair(t, NetdevMmsg)
	good := [][]byte{sizedFrame(60, 0), sizedFrame(1514, 1), vlanTagged(sizedFrame(1514, 2), header.EtherTypeVLAN, 9), sizedFrame(14, 3)}
	batch := [][]byte{good[0], make([]byte, 13), good[1], sizedFrame(1515, 9), good[2], good[3]}
	n, err := x.WriteBatch(batch)
	if n != len(good) || err == nil || !errors.Is(err, errEMSGSIZE) {
		t.Fatalf("WriteBatch with a 13- and a 1515-byte frame: %d, %v; want %d and EMSGSIZE", n, err, len(good))
	}
	st := x.Stats()
	want := uint64(0)
	for _, f := range good {
		want += uint64(len(f))
	}
	if st.TxPackets != uint64(len(good)) || st.TxBytes != want || st.TxErrors != 2 {
		t.Errorf("stats %+v, want %d packets, %d bytes, 2 errors", st, len(good), want)
	}
	got := readFrom(t, peer, len(good), testSrcMAC)
	for i := range good {
		if !bytes.Equal(got[i], good[i]) {
			t.Errorf("frame %d arrived as\n% x\nsent\n% x", i, got[i], good[i])
		}
	}

	big := make([][]byte, 3*xdpTxFrames)
	for i := range big {
		big[i] = sizedFrame(60, byte(i))
	}
	done := make(chan error, 1)
	go func() {
		n, err := x.WriteBatch(big)
		if err == nil && n != len(big) {
			err = errors.New("short write")
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("WriteBatch of %d frames: %v", len(big), err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("WriteBatch of %d frames still blocked after 10s", len(big))
	}
	if st := x.Stats(); st.TxPackets+st.TxDropped != uint64(len(good)+len(big)) {
		t.Errorf("stats %+v: %d frames written, want tx packets + tx dropped = %d", st, len(big), len(good)+len(big))
	}
}

var errEMSGSIZE = unix.EMSGSIZE

// readUntilError reads p one frame at a time until ReadBatch fails, and
// sends that error to done.
func readUntilError(p Port, done chan<- error) {
	bufs := [][]byte{make([]byte, BufferSize(1500))}
	sizes := []int{0}
	for {
		if _, err := p.ReadBatch(bufs, sizes, DefaultHeadroom); err != nil {
			done <- err
			return
		}
	}
}

// TestNetdevXDPCloseUnblocks: Close wakes a ReadBatch blocked on an idle
// socket, which returns ErrPortClosed, and a second Close is harmless.
func TestNetdevXDPCloseUnblocks(t *testing.T) {
	x, _, _ := xdpPair(t, NetdevMmsg)
	done := make(chan error, 1)
	go readUntilError(x, done)
	time.Sleep(100 * time.Millisecond)
	select {
	case err := <-done:
		t.Fatalf("ReadBatch returned before Close: %v", err)
	default:
	}
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, ErrPortClosed) {
			t.Errorf("ReadBatch after Close: %v, want ErrPortClosed", err)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("ReadBatch still blocked 3s after Close")
	}
	if err := x.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := x.WriteBatch([][]byte{sizedFrame(60, 0)}); !errors.Is(err, ErrPortClosed) {
		t.Errorf("WriteBatch after Close: %v, want ErrPortClosed", err)
	}
}

// TestNetdevXDPNoAllocs: a batch written by one XDP port and read by the
// XDP port at the other end of the veth allocates nothing.
func TestNetdevXDPNoAllocs(t *testing.T) {
	rx, tx, _ := xdpPair(t, NetdevXDP)
	requireNoAllocs(t, rx, tx, 200)
	if st := rx.Stats(); st.RxPackets < 201*8 {
		t.Errorf("rx stats %+v, want at least %d packets", st, 201*8)
	}
}

// TestNetdevXDPDetach: the XDP program is on the interface while the
// port is open and gone after Close, even when Close runs in another
// network namespace than the open; the interface can then be opened
// again in XDP mode.
func TestNetdevXDPDetach(t *testing.T) {
	testenv.RequireRoot(t)
	ns := testenv.NewNetns(t)
	v := testenv.NewVeth(t, ns, nil) // the XDP end in ns
	attached := func() bool {
		l := ns.Link(t, v.Name)
		return l.Attrs().Xdp != nil && l.Attrs().Xdp.Attached
	}
	var p NetdevPort
	if err := ns.Do(func() error {
		var err error
		p, err = OpenNetdev(v.Name, NetdevOptions{Mode: NetdevXDP})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if !attached() {
		p.Close()
		t.Fatal("no XDP program on the interface while the port is open")
	}
	// A second XDP port on the same interface is refused, saying why.
	if err := ns.Do(func() error {
		q, err := OpenNetdev(v.Name, NetdevOptions{Mode: NetdevXDP})
		if err == nil {
			q.Close()
			return errors.New("second XDP port opened")
		}
		t.Logf("second open: %v", err)
		if !strings.Contains(err.Error(), "AF_XDP") {
			return errors.New("error does not say AF_XDP: " + err.Error())
		}
		return nil
	}); err != nil {
		t.Error(err)
	}
	if err := p.Close(); err != nil { // from the test's namespace
		t.Fatal(err)
	}
	if attached() {
		t.Fatal("XDP program still on the interface after Close")
	}
	if err := ns.Do(func() error {
		q, err := OpenNetdev(v.Name, NetdevOptions{Mode: NetdevXDP})
		if err != nil {
			return err
		}
		return q.Close()
	}); err != nil {
		t.Fatalf("reopening after Close: %v", err)
	}
	if attached() {
		t.Fatal("XDP program still on the interface after the second Close")
	}
}

// TestNetdevXDPNamespace: an XDP port answers ARP and ping from a
// namespace at the other end of the veth (frames both ways through the
// kernel's stack there).
func TestNetdevXDPNamespace(t *testing.T) {
	testenv.RequireRoot(t)
	ns := testenv.NewNetns(t)
	v := testenv.NewVeth(t, nil, ns)
	ns.AddAddr(t, v.PeerName, "10.79.0.2/24")
	p, err := OpenNetdev(v.Name, NetdevOptions{Mode: NetdevXDP})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	startResponder(p, [4]byte{10, 79, 0, 1})
	if err := ns.Ping("10.79.0.1", 5*time.Second); err != nil {
		t.Fatalf("ping through the XDP port: %v", err)
	}
}

// TestNetdevXDPRxDropped: frames that arrive while the rx ring is full
// and the fill ring empty (nobody reading) are counted as rx drops, from
// XDP_STATISTICS.
func TestNetdevXDPRxDropped(t *testing.T) {
	x, peer, _ := xdpPair(t, NetdevMmsg)
	pkts := make([][]byte, 64)
	for i := range pkts {
		pkts[i] = sizedFrame(60, byte(i))
	}
	for sent := 0; sent < 2*xdpRxFrames; {
		n, err := peer.WriteBatch(pkts)
		if err != nil {
			t.Fatal(err)
		}
		sent += n
	}
	var st = x.Stats()
	for deadline := time.Now().Add(3 * time.Second); st.RxDropped == 0 && time.Now().Before(deadline); st = x.Stats() {
		time.Sleep(10 * time.Millisecond)
	}
	if st.RxDropped == 0 {
		t.Errorf("stats %+v after %d unread frames into a %d-frame ring: no drops counted", st, 2*xdpRxFrames, xdpRxFrames)
	}
}

// TestNetdevXDPRxHoldsAStall: a reader that falls 32,000 frames behind
// (50 ms of a 0.64 Mpps stream: what a forwarding thread waiting for a
// CPU on a loaded 2-core host lost frames to, BenchmarkForwardVeth/xdp,
// with rings of 16384) loses none of them: they wait in the rx ring and
// arrive in order.
func TestNetdevXDPRxHoldsAStall(t *testing.T) {
	const n = 32000
	x, peer, _ := xdpPair(t, NetdevMmsg)
	queued := func() uint32 { return atomic.LoadUint32(x.xdp.rx.producer) - atomic.LoadUint32(x.xdp.rx.consumer) }
	pkts := make([][]byte, 64)
	for sent := 0; sent < n; {
		for i := range pkts {
			pkts[i] = sizedFrame(60, byte(sent+i))
		}
		k, err := peer.WriteBatch(pkts[:min(len(pkts), n-sent)])
		if err != nil {
			t.Fatal(err)
		}
		sent += k
		// Paced by the ring: what this checks is the room, not the
		// rate the veth takes frames at.
		for deadline := time.Now().Add(2 * time.Second); queued() < uint32(sent) && time.Now().Before(deadline); {
			time.Sleep(100 * time.Microsecond)
		}
		if q := queued(); q < uint32(sent) {
			t.Fatalf("%d frames sent, %d in the rx ring (stats %+v): the ring holds fewer than %d unread frames", sent, q, x.Stats(), n)
		}
	}
	if st := x.Stats(); st.RxDropped != 0 {
		t.Errorf("stats %+v after %d unread frames: want no drops", st, n)
	}
	got := readFrom(t, x, n, testSrcMAC)
	for i, f := range got {
		if want := sizedFrame(60, byte(i)); !bytes.Equal(f, want) {
			t.Fatalf("frame %d arrived as\n% x\nsent\n% x", i, f, want)
		}
	}
}

// TestNetdevXDPIdleReaderSleeps: a ReadBatch on a port that receives
// nothing waits without using the CPU, and so does one that has just
// read a frame and finds the rx ring empty: frames that come one at a
// time, xdpTrickleGap apart, cost the reader's thread little CPU each
// (with the 50 µs spin a read did on an empty ring before 785f118 was
// undone, each such frame cost more than xdpTrickleCPU).
func TestNetdevXDPIdleReaderSleeps(t *testing.T) {
	x, peer, _ := xdpPair(t, NetdevMmsg)
	started, done := make(chan int, 1), make(chan error, 1)
	var got atomic.Int64
	go func() {
		runtime.LockOSThread() // the reader's CPU is this thread's
		defer runtime.UnlockOSThread()
		started <- unix.Gettid()
		bufs := [][]byte{make([]byte, BufferSize(1500))}
		sizes := []int{0}
		for {
			n, err := x.ReadBatch(bufs, sizes, DefaultHeadroom)
			if err != nil {
				done <- err
				return
			}
			got.Add(int64(n))
		}
	}()
	tid := <-started
	threadCPU := func() time.Duration {
		b, err := os.ReadFile(fmt.Sprintf("/proc/self/task/%d/schedstat", tid))
		if err != nil {
			t.Fatal(err)
		}
		var ns int64
		if _, err := fmt.Sscan(string(b), &ns); err != nil {
			t.Fatalf("schedstat %q: %v", b, err)
		}
		return time.Duration(ns)
	}
	time.Sleep(20 * time.Millisecond)
	c0 := threadCPU()
	const idle = 300 * time.Millisecond
	time.Sleep(idle)
	if used := threadCPU() - c0; used > idle/10 {
		t.Errorf("the reader of an idle port used %v of CPU in %v: want it waiting", used, idle)
	}

	// One frame at a time: each wakes the reader, which reads it and
	// finds the ring empty again.
	const frames = 200
	c0 = threadCPU()
	f := [][]byte{sizedFrame(60, 0)}
	for i := 0; i < frames; i++ {
		if _, err := peer.WriteBatch(f); err != nil {
			t.Fatal(err)
		}
		want := int64(i + 1)
		for deadline := time.Now().Add(time.Second); got.Load() < want; time.Sleep(50 * time.Microsecond) {
			if time.Now().After(deadline) {
				t.Fatalf("frame %d not read in 1s (%d read)", i, got.Load())
			}
		}
		time.Sleep(xdpTrickleGap)
	}
	used := threadCPU() - c0
	t.Logf("reader CPU for %d frames one at a time: %v (%v each)", frames, used, used/frames)
	if used > frames*xdpTrickleCPU {
		t.Errorf("the reader used %v of CPU for %d frames that came one at a time (%v each): want at most %v each, no polling of the empty ring",
			used, frames, used/frames, xdpTrickleCPU)
	}
	x.Close()
	if err := <-done; !errors.Is(err, ErrPortClosed) {
		t.Errorf("ReadBatch after Close: %v, want ErrPortClosed", err)
	}
}

// TestNetdevXDPIdleReaderSleeps's frames that come one at a time: the
// gap between them, and the most reader CPU each may cost. The bound is
// under the 50 µs that the spin the test guards against cost by itself
// on every empty look, and over what a wake-up and a read cost without
// it on a loaded 2-core machine: 4–11 µs idle, but 26.8 µs in a CI run
// beside other work and 29.7 µs under -race, where a 25 µs bound failed.
const (
	xdpTrickleGap = 500 * time.Microsecond
	xdpTrickleCPU = 45 * time.Microsecond
)

// TestFindBTFFunc: the kernel's own BTF has the kfunc the XDP program
// calls (this kernel has it); a made-up name and malformed blobs give
// errors.
func TestFindBTFFunc(t *testing.T) {
	data, err := os.ReadFile(vmlinuxBTF)
	if err != nil {
		t.Fatalf("the kernel publishes no BTF: %v", err)
	}
	id, err := findBTFFunc(data, "bpf_xdp_metadata_rx_vlan_tag")
	if err != nil || id == 0 {
		t.Fatalf("bpf_xdp_metadata_rx_vlan_tag: %d, %v", id, err)
	}
	if _, err := findBTFFunc(data, "no_such_function_ovsdp"); err == nil {
		t.Error("found a function that does not exist")
	}
	// A prefix of a real name is not that name.
	if _, err := findBTFFunc(data, "bpf_xdp_metadata_rx_vlan"); err == nil {
		t.Error("found bpf_xdp_metadata_rx_vlan, a prefix")
	}
	for _, bad := range [][]byte{nil, {0x9f, 0xeb}, data[:24], data[:len(data)/2], append([]byte{0, 0}, data[2:100]...)} {
		if _, err := findBTFFunc(bad, "bpf_xdp_metadata_rx_vlan_tag"); err == nil {
			t.Errorf("no error for a malformed %d-byte blob", len(bad))
		}
	}
}

// FuzzFindBTFFunc: no blob makes the BTF reader panic or read outside it.
func FuzzFindBTFFunc(f *testing.F) {
	if data, err := os.ReadFile(vmlinuxBTF); err == nil {
		f.Add(data[:min(len(data), 4096)])
	}
	hdr := make([]byte, 24)
	binary.NativeEndian.PutUint16(hdr, 0xeb9f)
	binary.NativeEndian.PutUint32(hdr[4:], 24)
	f.Add(hdr)
	f.Fuzz(func(t *testing.T, data []byte) {
		findBTFFunc(data, "bpf_xdp_metadata_rx_vlan_tag")
	})
}

// TestNetdevXDPGeneric: on an interface whose driver has no native XDP
// (a bridge), the program goes on in generic mode, the port says that it
// does not restore VLAN tags, writes work, and Close takes the program
// off.
func TestNetdevXDPGeneric(t *testing.T) {
	testenv.RequireRoot(t)
	ns := testenv.NewNetns(t)
	name := testenv.NewName()
	if err := ns.Handle().LinkAdd(&netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: name}}); err != nil {
		t.Fatalf("creating a bridge: %v", err)
	}
	var p NetdevPort
	if err := ns.Do(func() error {
		var err error
		p, err = OpenNetdev(name, NetdevOptions{Mode: NetdevXDP})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if p.(*XDPPort).XDPNative() {
		t.Error("XDPNative on a bridge, which has no native XDP")
	}
	if err := p.(*XDPPort).XDPVLANRestore(); err == nil {
		t.Error("XDPVLANRestore says tags are restored in generic mode")
	} else {
		t.Logf("XDPVLANRestore: %v", err)
	}
	if n, err := p.WriteBatch([][]byte{sizedFrame(60, 0), sizedFrame(100, 1)}); n != 2 || err != nil {
		t.Errorf("WriteBatch: %d, %v", n, err)
	}
	if l := ns.Link(t, name); l.Attrs().Xdp == nil || !l.Attrs().Xdp.Attached {
		t.Fatal("no XDP program on the interface while the port is open")
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if l := ns.Link(t, name); l.Attrs().Xdp != nil && l.Attrs().Xdp.Attached {
		t.Error("XDP program still on the interface after Close")
	}
}

// gplCompatible is the kernel's license_is_gpl_compatible.
func gplCompatible(license string) bool {
	switch license {
	case "GPL", "GPL v2", "GPL and additional rights", "Dual BSD/GPL", "Dual MIT/GPL", "Dual MPL/GPL":
		return true
	}
	return false
}

// The BPF programs' declared license stays consistent with the
// repository's: MIT (LICENSE), dual-licensed with the GPL for the kernel.
func TestBPFLicenseMatchesLICENSE(t *testing.T) {
	if b, err := os.ReadFile("../LICENSE"); err != nil || !strings.HasPrefix(string(b), "MIT License\n") {
		t.Fatalf("LICENSE is not the MIT license: %.40q, %v", b, err)
	}
	if bpfLicense != "Dual MIT/GPL" {
		t.Errorf("the BPF programs declare %q; with an MIT LICENSE they declare \"Dual MIT/GPL\"", bpfLicense)
	}
}

// TestNetdevXDPNotInGoPoller: the AF_XDP socket is in no epoll set of
// the process (Go's poller would keep it in one for good, and every
// batch the kernel puts on the rx ring would run epoll's callback; the
// port waits with poll(2) instead, fdWaiter), while the peer's AF_PACKET
// socket, in Go's poller, is in one: the check sees what it looks for.
func TestNetdevXDPNotInGoPoller(t *testing.T) {
	x, peer, _ := xdpPair(t, NetdevMmsg)
	fdOf := func(p *fdPort) int {
		fd := -1
		if err := p.rc.Control(func(f uintptr) { fd = int(f) }); err != nil {
			t.Fatal(err)
		}
		return fd
	}
	xfd, pfd := fdOf(&x.fdPort), fdOf(&peer.(*MmsgPort).fdPort)
	polled := epollTargets(t)
	if !polled[pfd] {
		t.Fatalf("the peer's socket (fd %d) is in no epoll set of the process: the check cannot see Go's poller", pfd)
	}
	if polled[xfd] {
		t.Errorf("the AF_XDP socket (fd %d) is in an epoll set: want it waited for with poll(2) only", xfd)
	}
}
