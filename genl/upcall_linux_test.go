//go:build !genl_stub

package genl

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"

	"github.com/ovsdp/ovsdp/odp"
)

// nlmsg wraps a generic netlink payload (command cmd) in a netlink
// message header.
func nlmsg(cmd uint8, payload []byte) []byte {
	b := binary.NativeEndian.AppendUint32(nil, uint32(16+4+len(payload)))
	b = binary.NativeEndian.AppendUint16(b, 0x23)
	b = binary.NativeEndian.AppendUint16(b, 0)
	b = binary.NativeEndian.AppendUint32(b, 0)
	b = binary.NativeEndian.AppendUint32(b, 0)
	b = append(b, cmd, 1, 0, 0)
	b = append(b, payload...)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

// fakeReads is a scripted sequence of read results.
type fakeReads struct {
	items []any // []byte datagrams or errors
}

func (f *fakeReads) read(buf []byte) (int, error) {
	if len(f.items) == 0 {
		return 0, unix.EAGAIN
	}
	it := f.items[0]
	f.items = f.items[1:]
	if err, ok := it.(error); ok {
		return 0, err
	}
	return copy(buf, it.([]byte)), nil
}

func TestUpcallSocketRecv(t *testing.T) {
	up1 := nlmsg(packetCmdMiss, goodUpcall())
	up2 := nlmsg(packetCmdAction, cat(hdr, attr(packetAttrPacket, []byte("second")), attr(packetAttrKey, inPortKey(9)), attr(packetAttrUserdata, []byte("cookie"))))
	bad := nlmsg(packetCmdMiss, cat(hdr, attr(packetAttrKey, inPortKey(1)))) // no packet
	fr := &fakeReads{items: []any{unix.ENOBUFS, up1, bad, up2, unix.ENOBUFS, up1}}
	s := &UpcallSocket{s: upcallSocket{buf: make([]byte, upcallBufSize), read: fr.read, readNB: fr.read}}
	ups := make([]odp.Upcall, 2)
	n, err := s.Recv(context.Background(), ups)
	if err != nil || n != 2 {
		t.Fatalf("Recv = %d, %v; want 2", n, err)
	}
	if ups[0].Kind != odp.UpcallMiss || ups[0].Port != 3 || ups[1].Kind != odp.UpcallAction || ups[1].Port != 9 || string(ups[1].Userdata) != "cookie" || string(ups[1].Packet) != "second" {
		t.Errorf("upcalls %+v", ups)
	}
	if s.Lost() != 1 || s.Malformed() != 1 {
		t.Errorf("lost %d malformed %d, want 1 and 1", s.Lost(), s.Malformed())
	}
	// The buffer is reused: the first upcall's packet must be a copy.
	copy(s.s.buf, make([]byte, 200))
	if string(ups[1].Packet) != "second" {
		t.Error("Upcall.Packet aliases the receive buffer")
	}
	n, err = s.Recv(context.Background(), ups)
	if err != nil || n != 1 || s.Lost() != 2 {
		t.Fatalf("second Recv = %d, %v, lost %d", n, err, s.Lost())
	}
	// A read error other than ENOBUFS ends Recv.
	fr.items = []any{unix.EBADF}
	if _, err := s.Recv(context.Background(), ups); !errors.Is(err, unix.EBADF) {
		t.Errorf("Recv after EBADF: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Recv(ctx, ups); !errors.Is(err, context.Canceled) {
		t.Errorf("Recv with a cancelled context: %v", err)
	}
}

// sendTo sends b from socket fd to the netlink port pid.
func sendTo(t testing.TB, fd int, pid uint32, b []byte) {
	if err := unix.Sendto(fd, b, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK, Pid: pid}); err != nil {
		t.Fatalf("sendto: %v", err)
	}
}

// realUpcallSocket opens a real (unprivileged) netlink socket as an
// upcall socket, and a raw socket to send it messages: the kernel passes
// unicast messages between user sockets, so the receive path is exercised
// without the openvswitch module.
func realUpcallSocket(t testing.TB) (*UpcallSocket, int) {
	conn, err := netlink.Dial(unix.NETLINK_GENERIC, nil)
	if err != nil {
		t.Fatalf("netlink socket: %v", err)
	}
	s := upcallSocketOn(conn)
	t.Cleanup(func() { s.Close() })
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_GENERIC)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		t.Fatal(err)
	}
	return s, fd
}

func TestUpcallSocketReal(t *testing.T) {
	s, fd := realUpcallSocket(t)
	msg := nlmsg(packetCmdMiss, goodUpcall())
	sendTo(t, fd, s.PID(), msg)
	sendTo(t, fd, s.PID(), msg)
	ups := make([]odp.Upcall, 8)
	n, err := s.Recv(context.Background(), ups)
	if err != nil || n != 2 || ups[0].Port != 3 || !bytes.Equal(ups[1].Packet, []byte("0123456789abcdef")) {
		t.Fatalf("Recv = %d, %v: %+v", n, err, ups[:n])
	}
	// Recv gives up with the context.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := s.Recv(ctx, ups); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Recv on an idle socket: %v, want DeadlineExceeded", err)
	}
	// and works again afterwards.
	sendTo(t, fd, s.PID(), msg)
	if n, err := s.Recv(context.Background(), ups); err != nil || n != 1 {
		t.Errorf("Recv after a timeout = %d, %v", n, err)
	}
	// Close unblocks a reader.
	done := make(chan error, 1)
	go func() { _, err := s.ReadRaw(func(*RawUpcall) {}); done <- err }()
	time.Sleep(20 * time.Millisecond)
	s.Close()
	select {
	case err := <-done:
		if err == nil {
			t.Error("ReadRaw returned nil after Close")
		}
	case <-time.After(2 * time.Second):
		t.Fatal("Close did not unblock ReadRaw")
	}
	s2, _ := realUpcallSocket(t)
	s2.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
	if _, err := s2.ReadRaw(func(*RawUpcall) {}); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("ReadRaw past its deadline: %v", err)
	}
}

// TestReadRawAllocs proves that the receive path (read, framing, upcall
// parsing) does not allocate.
func TestReadRawAllocs(t *testing.T) {
	s, fd := realUpcallSocket(t)
	msg := nlmsg(packetCmdMiss, goodUpcall())
	const runs = 200
	for i := 0; i < runs+1; i++ {
		sendTo(t, fd, s.PID(), msg)
	}
	var got uint32
	fn := func(r *RawUpcall) { got += r.InPort }
	allocs := testing.AllocsPerRun(runs, func() {
		if _, err := s.ReadRaw(fn); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("ReadRaw allocates %.2f times per upcall, want 0", allocs)
	}
	if got != 3*(runs+1) {
		t.Errorf("saw in_port sum %d, want %d", got, 3*(runs+1))
	}
}

// BenchmarkReadRaw measures the zero-allocation receive path, and
// BenchmarkRecv the decoding one (keys decoded, packets copied), on real
// sockets. Each iteration includes the sendto that feeds the socket (its
// one allocation is the sender's; TestReadRawAllocs shows ReadRaw itself
// makes none).
func BenchmarkReadRaw(b *testing.B) {
	s, fd := realUpcallSocket(b)
	msg := nlmsg(packetCmdMiss, goodUpcall())
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		sendTo(b, fd, s.PID(), msg)
		if _, err := s.ReadRaw(func(*RawUpcall) {}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRecv(b *testing.B) {
	s, fd := realUpcallSocket(b)
	msg := nlmsg(packetCmdMiss, goodUpcall())
	ups := make([]odp.Upcall, 1)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		sendTo(b, fd, s.PID(), msg)
		if _, err := s.Recv(context.Background(), ups); err != nil {
			b.Fatal(err)
		}
	}
}

// TestUpcallSocketBacklog: Backlog reports the bytes queued on the
// socket, growing with every datagram sent and back to zero once they
// are read, against a capacity of at least the buffer asked for; it
// allocates nothing. A socket without a descriptor says so.
func TestUpcallSocketBacklog(t *testing.T) {
	s, fd := realUpcallSocket(t)
	q0, c, err := s.Backlog()
	if err != nil || q0 != 0 || c < upcallSockBuf/2 {
		t.Fatalf("Backlog of an empty socket = %d, %d, %v; want 0 queued of at least %d", q0, c, err, upcallSockBuf/2)
	}
	msg := nlmsg(packetCmdMiss, goodUpcall())
	prev := 0
	for i := range 3 {
		sendTo(t, fd, s.PID(), msg)
		q, c2, err := s.Backlog()
		if err != nil || q <= prev || q < (i+1)*len(msg) || c2 != c {
			t.Fatalf("Backlog after %d datagrams = %d, %d, %v; want more than %d (and %d bytes at least) of %d", i+1, q, c2, err, prev, (i+1)*len(msg), c)
		}
		prev = q
	}
	ups := make([]odp.Upcall, 8)
	if n, err := s.Recv(context.Background(), ups); err != nil || n != 3 {
		t.Fatalf("Recv = %d, %v", n, err)
	}
	if q, _, err := s.Backlog(); err != nil || q != 0 {
		t.Errorf("Backlog once read = %d, %v; want 0", q, err)
	}
	if n := testing.AllocsPerRun(100, func() { s.Backlog() }); n != 0 {
		t.Errorf("Backlog allocates %v times", n)
	}
	bad := &UpcallSocket{s: upcallSocket{buf: make([]byte, upcallBufSize)}}
	if _, _, err := bad.Backlog(); err == nil {
		t.Error("Backlog without a descriptor: no error")
	}
}
