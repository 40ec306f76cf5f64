package userdp

import (
	"fmt"
	"net"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/ovsdp/ovsdp/odp"
)

// NetdevMode selects how a netdev port reads and writes frames: which of
// the backends OpenNetdev opens.
type NetdevMode int

// The netdev port backends.
const (
	// NetdevRing reads from memory-mapped receive rings (frames are
	// copied out into the caller's buffers): a TPACKET_V2 slot ring
	// that hands over each frame at once while the rate is low, and a
	// TPACKET_V3 block ring, a block of frames per wake-up, for
	// streams; it writes with sendmmsg: a RingPort
	// (afpacket_ring_linux.go, afpacket_lanes_linux.go).
	NetdevRing NetdevMode = iota
	// NetdevMmsg reads with recvmmsg and writes with sendmmsg: an
	// MmsgPort (afpacket_mmsg_linux.go).
	NetdevMmsg
	// NetdevXDP reads and writes through an AF_XDP socket on the
	// interface's queue 0 in copy mode: an XDPPort (afxdp_linux.go).
	NetdevXDP
)

// DefaultNetdevMode is the mode OpenNetdev uses unless told otherwise:
// the rings, which have the kernel's checksum status and out-of-band
// VLAN tags that NetdevXDP lacks (docs/netdev-backends.md has the
// measurements behind the choice, made when the port had the TPACKET_V3
// ring alone; then it dropped nothing, while the slot ring, 1,024 slots,
// can drop at the start of a burst, before the port takes the block
// lane).
const DefaultNetdevMode = NetdevRing

var netdevModeNames = [...]string{NetdevRing: "ring", NetdevMmsg: "mmsg", NetdevXDP: "xdp"}

// String returns "ring", "mmsg" or "xdp".
func (m NetdevMode) String() string {
	if m >= 0 && int(m) < len(netdevModeNames) {
		return netdevModeNames[m]
	}
	return fmt.Sprintf("NetdevMode(%d)", int(m))
}

// NetdevOptions tune OpenNetdev. The zero value uses DefaultNetdevMode
// and default sizes.
type NetdevOptions struct {
	// Mode selects the backend: ring or recvmmsg reads (AF_PACKET) or
	// AF_XDP; the zero value is NetdevRing.
	Mode NetdevMode
	// Batch is the most frames one ReadBatch or WriteBatch syscall
	// handles; 0 means 64.
	Batch int
	// RingBlocks and RingBlockSize size the TPACKET_V3 block ring of
	// NetdevRing; 0 means 64 blocks of 128 KiB (8 MiB). The slot ring
	// beside it has 2 MiB (8 MiB when it is alone).
	RingBlocks, RingBlockSize int
	// Type is the port type to report; "" means odp.PortNetdev.
	Type odp.PortType
}

// NetdevPort is a port on an existing Linux network interface: a
// *RingPort, *MmsgPort or *XDPPort, as NetdevOptions.Mode chose. The
// port sets the interface up and takes every frame the interface
// receives (promiscuous mode for the AF_PACKET backends, an XDP program
// for AF_XDP) for as long as it is open, never reads back the frames it
// sends itself, and hands each frame to ReadBatch with all its VLAN tags
// in line (tags the driver took out of band are put back). The Port
// contract (port.go) holds: one reader and one writer at a time, neither
// allocating.
type NetdevPort interface {
	Port
	// Mode is the backend the port uses.
	Mode() NetdevMode
	// Ifindex is the interface index.
	Ifindex() int
	// VLANTxOffload returns nil when the port transmits a frame's
	// outer VLAN tag out of band, as the kernel's datapath does (so
	// that the receiver gets tagged frames of 18 and 19 bytes too),
	// or the reason it sends tags in line.
	VLANTxOffload() error
}

// OpenNetdev opens a port of backend opts.Mode on the existing interface
// name (in the network namespace of the calling thread) and sets the
// interface up.
func OpenNetdev(name string, opts NetdevOptions) (NetdevPort, error) {
	switch opts.Mode {
	case NetdevRing:
		return openRing(name, opts)
	case NetdevMmsg:
		return openMmsg(name, opts)
	case NetdevXDP:
		return openXDP(name, opts)
	}
	return nil, fmt.Errorf("userdp: netdev %s: unknown mode %d", name, int(opts.Mode))
}

// netdevBase is what every netdev backend has: the interface, the
// socket (fdPort) and the socket's drop counter.
type netdevBase struct {
	fdPort
	typ     odp.PortType
	ifindex int
	mtu     int
	batch   int
	// pollFn adds the drops the kernel counted for the socket to stats.
	pollFn  func(fd uintptr)
	statsMu sync.Mutex
}

// init fills in the interface's name, index and MTU and the options,
// and sets the interface up.
func (p *netdevBase) init(name string, opts NetdevOptions) error {
	ifi, err := net.InterfaceByName(name)
	if err != nil {
		return fmt.Errorf("userdp: netdev %s: %w", name, err)
	}
	p.name, p.typ, p.ifindex, p.mtu, p.batch = name, odp.PortNetdev, ifi.Index, ifi.MTU, opts.Batch
	if opts.Type != "" {
		p.typ = opts.Type
	}
	if p.batch <= 0 {
		p.batch = 64
	}
	if err := setLinkUp(name); err != nil {
		return fmt.Errorf("userdp: netdev %s: %w", name, err)
	}
	return nil
}

// Type returns the port type (odp.PortNetdev unless NetdevOptions.Type).
func (p *netdevBase) Type() odp.PortType { return p.typ }

// MTU returns the interface's MTU when the port was opened.
func (p *netdevBase) MTU() int { return p.mtu }

// Ifindex returns the interface index.
func (p *netdevBase) Ifindex() int { return p.ifindex }

// Stats returns the port's counters. RxDropped includes the frames the
// kernel dropped because the socket (or its ring) was full, read from the
// socket's statistics (PACKET_STATISTICS, XDP_STATISTICS). Byte counts
// are what the kernel's vport reports for the same traffic (the
// interface's counters, skb->len): TxBytes leaves out an outer VLAN tag
// sent out of band (VLANTxOffload); RxBytes counts every tag, as the
// interface does for a sender that put its tags in line (one that used
// VLAN offload is counted 4 bytes less per tagged frame by the
// interface, which the socket does not tell apart).
func (p *netdevBase) Stats() odp.PortStats {
	p.statsMu.Lock()
	if !p.isClosed() {
		p.rc.Control(p.pollFn)
	}
	p.statsMu.Unlock()
	return p.stats.Snapshot()
}

// closeErr wraps the first error of a Close.
func (p *netdevBase) closeErr(err error) error {
	if err != nil {
		return fmt.Errorf("userdp: closing %s: %w", p.name, err)
	}
	return nil
}

// setLinkUp sets IFF_UP on the interface.
func setLinkUp(name string) error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("socket for link flags: %w", err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq(name)
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("SIOCGIFFLAGS: %w", err)
	}
	if ifr.Uint16()&unix.IFF_UP != 0 {
		return nil
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("setting the link up: %w", err)
	}
	return nil
}
