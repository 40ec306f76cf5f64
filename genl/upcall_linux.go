//go:build !genl_stub

package genl

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"

	"github.com/ovsdp/ovsdp/odp"
)

// upcallBufSize is the receive buffer for one datagram: an upcall carries
// at most a 64 KiB packet plus its key and metadata.
const upcallBufSize = 128 << 10

// upcallSockBuf is the kernel socket buffer asked for upcall sockets.
const upcallSockBuf = 4 << 20

// upcallSocket is the Linux implementation of UpcallSocket: a netlink
// socket whose PID is registered with the datapath (per CPU or per
// vport), from which the kernel's MISS and ACTION upcalls are read.
type upcallSocket struct {
	conn *netlink.Conn
	pid  uint32
	// read reads one datagram into buf; a test may replace it.
	read func(buf []byte) (int, error)
	// readNB reads one datagram without waiting (EAGAIN when none).
	readNB func(buf []byte) (int, error)

	buf         []byte
	lost        atomic.Uint64
	interrupted atomic.Bool // Recv's context set a past read deadline
	bad         atomic.Uint64
	raw         RawUpcall

	// state for the zero-allocation raw read
	rc     syscall.RawConn
	n      int
	rerr   error
	block  func(fd uintptr) bool
	nowait func(fd uintptr) bool
	// meminfo reads SO_MEMINFO into mem (Backlog), without allocating.
	meminfo func(fd uintptr)
	mem     [unix.SK_MEMINFO_VARS]uint32
	memErr  error
}

// newUpcallSocket opens an upcall socket. Its PID must be registered
// with the datapath (Datapath.Upcalls does this) for upcalls to reach it.
func (c *client) newUpcallSocket() (*UpcallSocket, error) {
	conn, err := c.dial()
	if err != nil {
		return nil, err
	}
	return upcallSocketOn(conn), nil
}

// upcallSocketOn makes an upcall socket of conn.
func upcallSocketOn(conn *netlink.Conn) *UpcallSocket {
	u := &UpcallSocket{}
	s := &u.s
	*s = upcallSocket{conn: conn, pid: conn.PID(), buf: make([]byte, upcallBufSize)}
	rc, err := conn.SyscallConn()
	if err != nil {
		// A socket without a file descriptor (a test fake) cannot be read.
		fail := func([]byte) (int, error) { return 0, fmt.Errorf("genl: upcall socket: %w", err) }
		s.read, s.readNB = fail, fail
		return u
	}
	s.rc = rc
	// Larger than the default so that bursts of misses are not lost;
	// SO_RCVBUFFORCE (CAP_NET_ADMIN) goes past net.core.rmem_max.
	_ = rc.Control(func(fd uintptr) {
		if unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, upcallSockBuf) != nil {
			_ = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF, upcallSockBuf)
		}
	})
	s.block = func(fd uintptr) bool {
		s.n, s.rerr = unix.Read(int(fd), s.buf)
		return s.rerr != unix.EAGAIN
	}
	s.nowait = func(fd uintptr) bool {
		s.n, s.rerr = unix.Read(int(fd), s.buf)
		return true
	}
	s.meminfo = func(fd uintptr) {
		l := uint32(unsafe.Sizeof(s.mem))
		_, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, fd, unix.SOL_SOCKET, unix.SO_MEMINFO,
			uintptr(unsafe.Pointer(&s.mem[0])), uintptr(unsafe.Pointer(&l)), 0)
		s.memErr = nil
		if e != 0 {
			s.memErr = e
		} else if l < 4*(unix.SK_MEMINFO_RCVBUF+1) {
			s.memErr = fmt.Errorf("SO_MEMINFO returned %d bytes", l)
		}
	}
	s.read = func([]byte) (int, error) {
		if err := s.rc.Read(s.block); err != nil {
			return 0, err
		}
		return s.n, s.rerr
	}
	s.readNB = func([]byte) (int, error) {
		if err := s.rc.Read(s.nowait); err != nil {
			return 0, err
		}
		return s.n, s.rerr
	}
	return u
}

func (s *upcallSocket) getPID() uint32         { return s.pid }
func (s *upcallSocket) lostCount() uint64      { return s.lost.Load() }
func (s *upcallSocket) malformedCount() uint64 { return s.bad.Load() }
func (s *upcallSocket) close() error           { return s.conn.Close() }

// backlog is UpcallSocket.Backlog.
func (s *upcallSocket) backlog() (queued, capacity int, err error) {
	if s.rc == nil {
		return 0, 0, errors.New("genl: upcall socket: no file descriptor")
	}
	if err := s.rc.Control(s.meminfo); err != nil {
		return 0, 0, fmt.Errorf("genl: upcall socket %d: %w", s.pid, err)
	}
	if s.memErr != nil {
		return 0, 0, fmt.Errorf("genl: upcall socket %d: reading SO_MEMINFO: %w", s.pid, s.memErr)
	}
	return int(s.mem[unix.SK_MEMINFO_RMEM_ALLOC]), int(s.mem[unix.SK_MEMINFO_RCVBUF]), nil
}

// readRaw is UpcallSocket.ReadRaw.
func (s *upcallSocket) readRaw(fn func(*RawUpcall)) (int, error) {
	for {
		n, err := s.read(s.buf)
		if err != nil {
			if err == unix.ENOBUFS {
				s.lost.Add(1)
				continue
			}
			if err == unix.EINTR {
				continue
			}
			return 0, err
		}
		if c := s.parseDatagram(s.buf[:n], fn); c > 0 {
			return c, nil
		}
	}
}

func (s *upcallSocket) setReadDeadline(t time.Time) error { return s.conn.SetReadDeadline(t) }

// parseDatagram calls fn for each upcall in one datagram and returns how
// many it found. Messages that are not upcalls are counted as malformed.
func (s *upcallSocket) parseDatagram(b []byte, fn func(*RawUpcall)) int {
	count := 0
	for len(b) >= 16 {
		l := int(binary.NativeEndian.Uint32(b))
		typ := binary.NativeEndian.Uint16(b[4:])
		if l < 16 || l > len(b) {
			s.bad.Add(1)
			return count
		}
		msg := b[16:l]
		if al := (l + 3) &^ 3; al <= len(b) {
			b = b[al:]
		} else {
			b = b[len(b):]
		}
		if typ == uint16(netlink.Error) || typ == uint16(netlink.Done) || typ == uint16(netlink.Noop) || len(msg) < 4 {
			continue
		}
		if err := ParseUpcall(msg[0], msg[4:], &s.raw); err != nil {
			s.bad.Add(1)
			continue
		}
		fn(&s.raw)
		count++
	}
	return count
}

// recv is UpcallSocket.Recv.
func (s *upcallSocket) recv(ctx context.Context, ups []odp.Upcall) (int, error) {
	if len(ups) == 0 {
		return 0, nil
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if s.interrupted.Swap(false) {
		// An earlier Recv's context expired and left a past deadline.
		_ = s.conn.SetReadDeadline(time.Time{})
	}
	if ctx.Done() != nil {
		stop := context.AfterFunc(ctx, func() {
			s.interrupted.Store(true)
			_ = s.conn.SetReadDeadline(time.Unix(1, 0))
		})
		defer stop()
	}
	filled := 0
	var decodeErr error
	take := func(r *RawUpcall) {
		if filled >= len(ups) {
			s.lost.Add(1) // more upcalls in one datagram than room: cannot happen with the kernel's one per datagram
			return
		}
		if err := r.decode(&ups[filled]); err != nil {
			s.bad.Add(1)
			if decodeErr == nil {
				decodeErr = err
			}
			return
		}
		filled++
	}
	for filled == 0 {
		if _, err := s.readRaw(take); err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) && ctx.Err() != nil {
				return 0, ctx.Err()
			}
			return 0, fmt.Errorf("genl: upcall socket %d: %w", s.pid, err)
		}
		if filled == 0 && decodeErr != nil {
			return 0, decodeErr
		}
	}
	// Take what is already queued, without waiting.
	for filled < len(ups) {
		n, err := s.readNB(s.buf)
		if err == unix.ENOBUFS {
			s.lost.Add(1)
			continue
		}
		if err != nil {
			break
		}
		s.parseDatagram(s.buf[:n], take)
	}
	return filled, nil
}
