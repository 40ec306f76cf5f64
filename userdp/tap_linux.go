package userdp

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/ovsdp/ovsdp/odp"
)

// TapPort is an internal port: a tap device (IFF_TAP|IFF_NO_PI) that the
// datapath creates, as the kernel's internal ports are devices the
// datapath owns. Frames the host sends out of the device are read by
// ReadBatch; frames written by WriteBatch are received by the host. The
// device exists while the port is open (it is not persistent). The local
// port, number 0, is the internal port named like the datapath.
//
// Stats are counted from the device's side, as the kernel reports an
// internal vport's statistics (the device's own counters): frames the
// datapath writes to the host are RxPackets, frames the host sends into
// the datapath are TxPackets — the reverse of a netdev port's reads and
// writes.
type TapPort struct {
	fdPort
	mtu int

	// WriteBatch call state, used by writeFn.
	wrPkts [][]byte
	wrN    int
	wrErr  error
	wrSkip int
}

// OpenTap creates the tap device name (in the network namespace of the
// calling thread), sets it up and returns it as an internal port. It
// fails if a device of that name exists and is not a tap device that
// can be attached.
func OpenTap(name string) (*TapPort, error) {
	if len(name) == 0 || len(name) >= unix.IFNAMSIZ {
		return nil, fmt.Errorf("userdp: tap %q: name must be 1..%d bytes", name, unix.IFNAMSIZ-1)
	}
	// Attach the device before the file joins Go's poller: the tun
	// driver hooks its wait queue into epoll only once attached.
	fd, err := unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("userdp: tap %s: opening /dev/net/tun: %w", name, err)
	}
	ifr, err := unix.NewIfreq(name)
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("userdp: tap %s: %w", name, err)
	}
	ifr.SetUint16(unix.IFF_TAP | unix.IFF_NO_PI)
	if err := unix.IoctlIfreq(fd, unix.TUNSETIFF, ifr); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("userdp: tap %s: TUNSETIFF: %w", name, err)
	}
	// ReadBatch reads at least one byte into each buffer.
	p := &TapPort{fdPort: fdPort{name: name, minRoom: 1}}
	if err := p.adopt(fd, "tap"); err != nil {
		return nil, fmt.Errorf("userdp: tap %s: %w", name, err)
	}
	if err := setLinkUp(name); err != nil {
		p.file.Close()
		return nil, fmt.Errorf("userdp: tap %s: %w", name, err)
	}
	p.mtu = 1500
	if mtu, err := linkMTU(name); err == nil {
		p.mtu = mtu
	}
	p.readFn = p.doRead
	p.writeFn = p.doWrite
	return p, nil
}

// linkMTU reads an interface's MTU.
func linkMTU(name string) (int, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return 0, err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq(name)
	if err != nil {
		return 0, err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFMTU, ifr); err != nil {
		return 0, err
	}
	return int(ifr.Uint32()), nil
}

// Type returns odp.PortInternal.
func (p *TapPort) Type() odp.PortType { return odp.PortInternal }

// MTU returns the device's MTU when the port was opened.
func (p *TapPort) MTU() int { return p.mtu }

// Stats returns the counters, from the device's side (see TapPort).
func (p *TapPort) Stats() odp.PortStats { return p.stats.Snapshot() }

// doRead is TapPort's readFn: one read(2) per frame, until none is left.
func (p *TapPort) doRead(fd uintptr) bool {
	var bytes uint64
	for p.rdN < len(p.rdBufs) {
		b := p.rdBufs[p.rdN][p.rdOff:]
		r, _, e := unix.Syscall(unix.SYS_READ, fd, uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(len(b)))
		if e == unix.EAGAIN {
			break
		}
		if e == unix.EINTR {
			continue
		}
		if e != 0 {
			p.rdErr = fmt.Errorf("read: %w", e)
			break
		}
		p.rdSizes[p.rdN] = int(r)
		bytes += uint64(r)
		p.rdN++
	}
	p.stats.tx(p.rdN, bytes) // the device sent them (see TapPort)
	return p.rdN > 0 || p.rdErr != nil
}

// WriteBatch implements Port: one write(2) per frame. A frame the device
// refuses is counted as an error on the device's rx side and skipped.
func (p *TapPort) WriteBatch(pkts [][]byte) (int, error) {
	p.wrMu.Lock()
	defer p.wrMu.Unlock()
	p.wrPkts, p.wrN, p.wrErr, p.wrSkip = pkts, 0, nil, 0
	err := p.rc.Write(p.writeFn)
	n, werr := p.wrN, p.wrErr
	p.wrPkts = nil
	if err != nil {
		return n, p.writeErr(err)
	}
	return n, werr
}

func (p *TapPort) doWrite(fd uintptr) bool {
	var bytes uint64
	sent := 0
	for p.wrSkip < len(p.wrPkts) {
		b := p.wrPkts[p.wrSkip]
		_, _, e := unix.Syscall(unix.SYS_WRITE, fd, uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(len(b)))
		if e == unix.EAGAIN {
			break
		}
		if e == unix.EINTR {
			continue
		}
		p.wrSkip++
		if e != 0 {
			p.stats.RxErrors.Add(1)
			if p.wrErr == nil {
				p.wrErr = fmt.Errorf("userdp: %s: write of a %d-byte frame: %w", p.name, len(b), e)
			}
			continue
		}
		sent++
		bytes += uint64(len(b))
	}
	p.wrN += sent
	p.stats.rx(sent, bytes) // the device received them (see TapPort)
	return p.wrSkip == len(p.wrPkts)
}

// Close deletes the device and unblocks a pending ReadBatch.
func (p *TapPort) Close() error {
	if !p.markClosed() {
		return nil
	}
	if err := p.file.Close(); err != nil {
		return fmt.Errorf("userdp: closing tap %s: %w", p.name, err)
	}
	return nil
}

var _ Port = (*TapPort)(nil)
