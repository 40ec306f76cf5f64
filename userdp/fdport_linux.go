package userdp

import (
	"fmt"
	"os"
	"sync"
	"syscall"
)

// fdPort is what the ports whose device is a file descriptor in Go's
// poller share (the netdev backends and TapPort): ReadBatch checks its
// arguments and runs the backend's readFn, which fills in the read call
// state, whenever the descriptor is readable; the backend's WriteBatch
// runs writeFn the same way. ReadBatch holds rdMu and WriteBatch wrMu, so
// each has one caller at a time (the Port contract); Close marks the
// port closed first, so that the poller's error reads as ErrPortClosed.
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
	rc := p.rc
	if p.rdRC != nil {
		rc = p.rdRC
	}
	err := rc.Read(p.readFn)
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
