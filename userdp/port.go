package userdp

import (
	"errors"
	"sync/atomic"

	"github.com/ovsdp/ovsdp/odp"
)

// Buffer convention
//
// The datapath's forwarding loop owns a fixed set of packet buffers, each
// BufferSize bytes long, allocated once. A received frame is placed at
// buf[offset:offset+size], where offset (normally DefaultHeadroom) leaves
// room in front of the frame so that pushing VLAN tags or MPLS labels moves
// only the header bytes into the headroom instead of copying the frame (see
// frameBuf). Ports never keep a reference to a buffer after ReadBatch or
// WriteBatch returns.

// DefaultHeadroom is the number of bytes the datapath reserves in front of
// every received frame: room for eight 4-byte VLAN tags or MPLS labels.
const DefaultHeadroom = 32

// MaxFrameLen is the largest frame the ports handle: a 65535-byte IP packet
// plus an Ethernet header and two VLAN tags. Ports on a device with a
// smaller MTU use MTU-sized buffers (see BufferSize).
const MaxFrameLen = 65535 + 14 + 8

// BufferSize returns the buffer length the datapath should allocate for
// frames of a port with the given MTU (the device's L3 MTU): the headroom,
// an Ethernet header, two VLAN tags (one may be re-inserted from the
// kernel's VLAN offload) and the MTU.
func BufferSize(mtu int) int {
	if mtu <= 0 || mtu > 65535 {
		mtu = 65535
	}
	return DefaultHeadroom + 14 + 8 + mtu
}

// ErrPortClosed is returned (wrapped) by ReadBatch and WriteBatch on a
// closed port.
var ErrPortClosed = errors.New("userdp: port closed")

// Port is the packet I/O of one datapath port. ReadBatch and WriteBatch
// may be called concurrently with each other, but each of them by one
// goroutine at a time (one reader, one writer). Neither allocates.
type Port interface {
	// Name is the port's device name ("veth0", "br0", ...).
	Name() string
	// Type is the port's type as the odp package names it.
	Type() odp.PortType
	// MTU is the device's L3 MTU when the port was opened.
	MTU() int

	// ReadBatch blocks until at least one frame is available, then
	// receives up to len(bufs) frames without blocking further. Frame i
	// is stored at bufs[i][offset:offset+sizes[i]]; len(sizes) must be at
	// least len(bufs). It returns the number of frames received. A frame
	// longer than its buffer is dropped and counted as an rx error. After
	// Close it returns an error wrapping ErrPortClosed.
	ReadBatch(bufs [][]byte, sizes []int, offset int) (n int, err error)

	// WriteBatch transmits the frames pkts[i] (each a complete Ethernet
	// frame, VLAN tags inline). It returns how many were handed to the
	// device; on a partial write err says why the first one failed. A
	// frame the device refuses (too long, no buffer space) is counted as
	// a tx drop or error and is skipped, not retried.
	WriteBatch(pkts [][]byte) (n int, err error)

	// Stats returns the port's counters (see odp.PortStats).
	Stats() odp.PortStats

	// Close releases the port's resources and unblocks a pending
	// ReadBatch. It is safe to call more than once.
	Close() error
}

// Counters are a port's statistics, updated atomically by the I/O paths
// and read by Snapshot; the zero value is ready to use. Rx is what the
// port received from its device, tx what it sent to it.
type Counters struct {
	RxPackets, RxBytes, RxErrors, RxDropped atomic.Uint64
	TxPackets, TxBytes, TxErrors, TxDropped atomic.Uint64
}

// Snapshot returns the counters as odp.PortStats.
func (c *Counters) Snapshot() odp.PortStats {
	return odp.PortStats{
		RxPackets: c.RxPackets.Load(), TxPackets: c.TxPackets.Load(),
		RxBytes: c.RxBytes.Load(), TxBytes: c.TxBytes.Load(),
		RxErrors: c.RxErrors.Load(), TxErrors: c.TxErrors.Load(),
		RxDropped: c.RxDropped.Load(), TxDropped: c.TxDropped.Load(),
	}
}

// rx records n received frames totalling bytes bytes.
func (c *Counters) rx(n int, bytes uint64) {
	if n > 0 {
		c.RxPackets.Add(uint64(n))
		c.RxBytes.Add(bytes)
	}
}

// tx records n sent frames totalling bytes bytes.
func (c *Counters) tx(n int, bytes uint64) {
	if n > 0 {
		c.TxPackets.Add(uint64(n))
		c.TxBytes.Add(bytes)
	}
}
