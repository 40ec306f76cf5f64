package userdp

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// fdPort is what the ports whose device is a file descriptor share (the
// netdev backends and TapPort): ReadBatch checks its arguments and runs
// the backend's readFn, which fills in the read call state, whenever the
// descriptor is readable; the backend's WriteBatch runs writeFn the same
// way. They wait in Go's poller, or with an fdWaiter (useWaiter) for a
// descriptor the poller does not hold. ReadBatch holds rdMu and
// WriteBatch wrMu, so each has one caller at a time (the Port contract);
// Close marks the port closed first, so that the poller's (or the
// waiter's) error reads as ErrPortClosed.
type fdPort struct {
	name  string
	file  *os.File
	rc    syscall.RawConn
	stats Counters
	// rdRC, when set, is what ReadBatch waits on instead of rc (RingPort:
	// an epoll descriptor over its two sockets).
	rdRC syscall.RawConn

	rdMu sync.Mutex // held by ReadBatch; Close takes it before freeing what reads use
	wrMu sync.Mutex // held by WriteBatch

	// Read call state, used by readFn.
	rdBufs  [][]byte
	rdSizes []int
	rdOff   int
	rdN     int
	rdErr   error
	readFn  func(fd uintptr) bool // the backend's read, made once
	writeFn func(fd uintptr) bool // the backend's write, made once
	// minRoom is the fewest bytes ReadBatch wants in each buffer past
	// the offset.
	minRoom int

	// waiter, if not nil, waits for the descriptor with poll(2) in the
	// calling thread (the descriptor is not in Go's poller); rdWait and
	// wrWait run readFn and writeFn under it (made once, in useWaiter),
	// and leave what the wait returned in rdWaitErr and wrWaitErr.
	waiter               *fdWaiter
	rdWait, wrWait       func(fd uintptr)
	rdWaitErr, wrWaitErr error

	closeMu sync.Mutex
	closed  bool
}

// adopt makes fd the port's device, in Go's poller (kind names it in
// the file's name). On failure fd is closed.
func (p *fdPort) adopt(fd int, kind string) error {
	p.file = os.NewFile(uintptr(fd), kind+":"+p.name)
	rc, err := p.file.SyscallConn()
	if err != nil {
		p.file.Close()
		return err
	}
	p.rc = rc
	return nil
}

// Name returns the device's name.
func (p *fdPort) Name() string { return p.name }

// ReadBatch implements Port.
func (p *fdPort) ReadBatch(bufs [][]byte, sizes []int, offset int) (int, error) {
	if len(sizes) < len(bufs) {
		return 0, fmt.Errorf("userdp: %s: read: %d sizes for %d buffers", p.name, len(sizes), len(bufs))
	}
	if len(bufs) == 0 {
		return 0, nil
	}
	for _, b := range bufs {
		if offset < 0 || len(b)-offset < p.minRoom {
			return 0, fmt.Errorf("userdp: %s: read: offset %d outside a %d-byte buffer", p.name, offset, len(b))
		}
	}
	p.rdMu.Lock()
	defer p.rdMu.Unlock()
	p.rdBufs, p.rdSizes, p.rdOff, p.rdN, p.rdErr = bufs, sizes, offset, 0, nil
	err := p.read()
	n, rerr := p.rdN, p.rdErr
	p.rdBufs, p.rdSizes = nil, nil
	if err != nil {
		if p.isClosed() {
			err = ErrPortClosed
		}
		return n, fmt.Errorf("userdp: %s: read: %w", p.name, err)
	}
	if rerr != nil {
		return n, fmt.Errorf("userdp: %s: read: %w", p.name, rerr)
	}
	return n, nil
}

// read runs readFn until it returns true, waiting for the descriptor to
// be readable in between: in Go's poller, or with p.waiter.
func (p *fdPort) read() error {
	if p.waiter == nil {
		if p.rdRC != nil {
			return p.rdRC.Read(p.readFn)
		}
		return p.rc.Read(p.readFn)
	}
	p.rdWaitErr = nil
	if err := p.rc.Control(p.rdWait); err != nil {
		return err
	}
	return p.rdWaitErr
}

// write runs writeFn until it returns true, waiting for the descriptor
// to be writable in between: in Go's poller, or with p.waiter.
func (p *fdPort) write() error {
	if p.waiter == nil {
		return p.rc.Write(p.writeFn)
	}
	p.wrWaitErr = nil
	if err := p.rc.Control(p.wrWait); err != nil {
		return err
	}
	return p.wrWaitErr
}

// useWaiter has the port wait for its descriptor with w rather than in
// Go's poller (the descriptor must be one the poller does not hold: in
// blocking mode when it was adopted). readFn and writeFn must be set.
func (p *fdPort) useWaiter(w *fdWaiter) {
	p.waiter = w
	p.rdWait = func(fd uintptr) { p.rdWaitErr = w.run(fd, unix.POLLIN, p.readFn) }
	p.wrWait = func(fd uintptr) { p.wrWaitErr = w.run(fd, unix.POLLOUT, p.writeFn) }
}

// fdWaiter waits for a descriptor with poll(2), blocking the calling
// thread, instead of in Go's poller: a descriptor in Go's poller is in
// its epoll set for good, so every wake-up of the socket (for an AF_XDP
// socket, every batch of frames the kernel puts on the rx ring, while
// the reader is busy too) runs epoll's callback and may wake an idle
// thread of the runtime blocked in epoll_wait; a descriptor in poll(2)
// is on the socket's wait queue only while the thread waits. An eventfd
// wakes the waiter for good when the port is closed (wake).
//
// For XDPPort, BenchmarkForwardVeth FWD_PHASES=xdp,bridge,ovsxdp, test
// binaries alternated, 14 runs each, load average 6 to 9.5 (other work
// on the host), medians [ranges], poll(2) vs Go's poller: forwarder CPU
// per delivered frame 684 ns [649, 965] vs 838 ns [523, 950], cores
// 0.41 vs 0.47, frames arriving 99.9% vs 98.0%; delivered rate 0.576
// vs 0.594 Mpps and vs the bridge 0.66× vs 0.71× (not told apart on that
// host: ranges 0.36–1.04× and 0.47–0.97×).
type fdWaiter struct {
	efd int
}

// errWaiterClosed is what a wait returns once the waiter was woken for
// good (the port is closing).
var errWaiterClosed = errors.New("port closing")

// newFdWaiter makes an fdWaiter, with its eventfd.
func newFdWaiter() (*fdWaiter, error) {
	efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("eventfd: %w", err)
	}
	return &fdWaiter{efd: efd}, nil
}

// run calls fn until it returns true, waiting between calls with
// poll(2) for events on fd or for the waiter to be woken (then it
// returns errWaiterClosed). poll(2) reports readiness as a level: an fn
// that returns false while fd stays ready (an AF_XDP write waiting for
// the kernel to complete frames, which copy mode does within its own
// transmit) is called again at once.
func (w *fdWaiter) run(fd uintptr, events int16, fn func(fd uintptr) bool) error {
	for !fn(fd) {
		if err := w.wait(fd, events); err != nil {
			return err
		}
	}
	return nil
}

// wait waits once with poll(2) for events on fd or for the waiter to be
// woken (then it returns errWaiterClosed).
func (w *fdWaiter) wait(fd uintptr, events int16) error {
	fds := [2]unix.PollFd{{Fd: int32(fd), Events: events}, {Fd: int32(w.efd), Events: unix.POLLIN}}
	// A blocking system call: the runtime hands the P to another
	// thread if it lasts.
	_, _, e := unix.Syscall6(unix.SYS_PPOLL, uintptr(unsafe.Pointer(&fds[0])), 2, 0, 0, 0, 0)
	if e != 0 && e != unix.EINTR {
		return fmt.Errorf("poll: %w", e)
	}
	if fds[1].Revents != 0 {
		return errWaiterClosed
	}
	if fds[0].Revents&(unix.POLLERR|unix.POLLNVAL) != 0 {
		return fmt.Errorf("poll: events %#x on the socket", fds[0].Revents)
	}
	return nil
}

// nap sleeps for d (plus the kernel's timer slack) without waiting on
// any socket, or until the waiter is woken (then it returns
// errWaiterClosed): a sleep that no sender has to wake.
func (w *fdWaiter) nap(d time.Duration) error {
	fds := [1]unix.PollFd{{Fd: int32(w.efd), Events: unix.POLLIN}}
	ts := unix.NsecToTimespec(int64(d))
	_, _, e := unix.Syscall6(unix.SYS_PPOLL, uintptr(unsafe.Pointer(&fds[0])), 1, uintptr(unsafe.Pointer(&ts)), 0, 0, 0)
	if e != 0 && e != unix.EINTR {
		return fmt.Errorf("poll (nap): %w", e)
	}
	if fds[0].Revents != 0 {
		return errWaiterClosed
	}
	return nil
}

// wake wakes every wait, now and later, for good.
func (w *fdWaiter) wake() error {
	one := [8]byte{1}
	if _, err := unix.Write(w.efd, one[:]); err != nil {
		return fmt.Errorf("waking the waiter (eventfd): %w", err)
	}
	return nil
}

// close closes the eventfd; no wait may be running.
func (w *fdWaiter) close() error {
	if w.efd < 0 {
		return nil
	}
	err := unix.Close(w.efd)
	w.efd = -1
	return err
}

// writeErr is the error of a WriteBatch whose write through the poller
// failed with err.
func (p *fdPort) writeErr(err error) error {
	if p.isClosed() {
		err = ErrPortClosed
	}
	return fmt.Errorf("userdp: %s: write: %w", p.name, err)
}

func (p *fdPort) isClosed() bool {
	p.closeMu.Lock()
	defer p.closeMu.Unlock()
	return p.closed
}

// markClosed marks the port closed; it returns false if it already was.
func (p *fdPort) markClosed() bool {
	p.closeMu.Lock()
	was := p.closed
	p.closed = true
	p.closeMu.Unlock()
	return !was
}
