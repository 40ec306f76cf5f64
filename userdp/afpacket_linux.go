package userdp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/ovsdp/ovsdp/internal/header"
	"github.com/ovsdp/ovsdp/odp"
)

// NetdevMode selects how a netdev port reads frames.
type NetdevMode int

// The netdev port implementations.
const (
	// NetdevRing reads from a memory-mapped TPACKET_V3 receive ring
	// (frames are copied out of the ring into the caller's buffers, a
	// whole block of frames per wake-up) and writes with sendmmsg.
	NetdevRing NetdevMode = iota
	// NetdevMmsg reads with recvmmsg and writes with sendmmsg.
	NetdevMmsg
	// NetdevXDP reads and writes through an AF_XDP socket on the
	// interface's queue 0 in copy mode, with an XDP program that
	// redirects every frame of the interface to it (afxdp_linux.go).
	// Frames are taken from the interface before the kernel's stack
	// sees them. Unlike the AF_PACKET modes it gets no checksum status
	// from the kernel: a TCP/UDP checksum that a local sender left to
	// offload (CHECKSUM_PARTIAL, as a socket behind veth does unless
	// tx offload is off) arrives incomplete and is passed on so. An
	// outer VLAN tag the driver took out of the frame (veth hands it out
	// of band) is put back in line by the XDP program, with the kfunc
	// bpf_xdp_metadata_rx_vlan_tag (Linux 6.8 and later, for drivers
	// with XDP metadata kfuncs such as veth, in driver mode); where the
	// kernel, the driver or generic mode lacks it, such a tag is lost,
	// and XDPVLANRestore says why. Frames are sent as written,
	// outer VLAN tag in line, past the tc egress hook (VLANTxOffload
	// says so). It needs an interface with one rx queue,
	// CAP_NET_ADMIN and CAP_BPF (or CAP_SYS_ADMIN).
	NetdevXDP
)

// DefaultNetdevMode is the mode OpenNetdev uses unless told otherwise,
// chosen by measurement: BenchmarkNetdevRx (ring, mmsg, xdp)
// (afpacket_bench_linux_test.go) over a veth
// pair, 64-byte UDP frames sent by sendmmsg in batches of 64 from the
// peer namespace, read in batches of 64; BenchmarkNetdevTx (mmsg, xdp)
// writes the same frames in batches of 64. All in
// one run, as root:
//
//	go test -run XXX -bench 'NetdevRx|NetdevTx' -benchtime 500000x -count 3 ./userdp
//
// gave (median of 3, the range in brackets):
//
//	rx ring (TPACKET_V3)   0.17 Mpps [0.15-0.17], no drops
//	rx mmsg (recvmmsg)     0.27 Mpps [0.24-0.28], 7.7% dropped in one run
//	rx xdp  (AF_XDP copy)  0.18 Mpps [0.15-0.20], no drops
//	tx sendmmsg (ring, mmsg modes)  0.37 Mpps [0.33-0.38]
//	tx xdp  (AF_XDP copy, sendto)   0.53 Mpps [0.50-0.56]
//
// on the 2-core shared development VM (load average about 3 from other
// jobs). The reader rates are bounded by the sender, whose core also
// does the kernel's veth receive work (for XDP that likely includes
// copying each frame into a page with XDP headroom, then into the UMEM),
// and they move with the load: an earlier run measured ring 0.18 and
// mmsg 0.12 Mpps with 9.4% dropped. No read mode is clearly ahead, and
// the AF_XDP mode fails what the netdev tests require (checksums a
// local sender left to offload, VLAN tags sent out of band), so the
// default stays the ring, which has dropped nothing in any run. The
// AF_XDP mode writes 1.4x as fast as sendmmsg here, partly because it
// passes neither the qdisc nor the tc egress program.
const DefaultNetdevMode = NetdevRing

// String returns "ring", "mmsg" or "xdp".
func (m NetdevMode) String() string {
	switch m {
	case NetdevRing:
		return "ring"
	case NetdevMmsg:
		return "mmsg"
	case NetdevXDP:
		return "xdp"
	}
	return fmt.Sprintf("NetdevMode(%d)", int(m))
}

// NetdevOptions tune OpenNetdev. The zero value uses DefaultNetdevMode
// and default sizes.
type NetdevOptions struct {
	// Mode selects ring or recvmmsg reads (AF_PACKET) or AF_XDP; the
	// zero value is NetdevRing.
	Mode NetdevMode
	// Batch is the most frames one ReadBatch or WriteBatch syscall
	// handles; 0 means 64.
	Batch int
	// RingBlocks and RingBlockSize size the TPACKET_V3 ring; 0 means 64
	// blocks of 128 KiB (8 MiB).
	RingBlocks, RingBlockSize int
	// Type is the port type to report; "" means odp.PortNetdev.
	Type odp.PortType
}

// NetdevPort is a port on an existing Linux network interface, read and
// written through an AF_PACKET socket bound to it. The socket ignores
// the frames it sends itself (PACKET_IGNORE_OUTGOING), puts the
// interface in promiscuous mode for as long as it is open, and recovers
// VLAN tags that the kernel took out of the frame (VLAN offload, as veth
// does): the tag is put back in-line after the Ethernet addresses, so
// frames carry all their tags.
//
// Offloads. The interface's offloads are left as they are (a veth's
// TSO, GSO and tx checksumming stay on). The AF_PACKET modes read every
// frame with a virtio_net_hdr (PACKET_VNET_HDR), as OVS's netdev-linux
// does with userspace TSO off:
//   - A GSO super-frame (up to 64 KiB: a TCP or UDP sender in a
//     namespace behind veth hands these over whole) of gso_type TCPV4 or
//     TCPV6 (with or without ECN) or UDP_L4 is cut in software into
//     gso_size segments, each a complete frame of at most the MTU, as
//     the kernel's software GSO would (gso.go): IPv4 total length, ID
//     (+1 per segment) and header checksum, IPv6 payload length, TCP
//     sequence numbers, CWR only on the first segment, FIN and PSH only
//     on the last, UDP length, and a TCP/UDP checksum computed over the
//     segment. An outer VLAN tag the kernel took out goes into every
//     segment. The super-frame is read into the ring (NetdevRing: its
//     block is held until the last segment is out) or into a per-message
//     slab of 64 KiB (NetdevMmsg: batch slabs of virtual memory, touched
//     only by long frames); segments that do not fit in the caller's
//     buffers are kept and returned by the next ReadBatch, in order.
//   - A frame whose checksum the sender left to offload
//     (VIRTIO_NET_HDR_F_NEEDS_CSUM, which AF_PACKET sets exactly when it
//     reports TP_STATUS_CSUMNOTREADY) gets it completed from csum_start
//     and csum_offset, as the kernel's skb_checksum_help would (an SCTP
//     packet gets its CRC32c), because the kernel would not complete it
//     when the frame is sent out again through AF_PACKET.
//   - A frame with a header the port cannot honour (gso_size 0 or
//     segments beyond the MTU, hdr_len or csum_start/csum_offset beyond
//     the frame, an unknown gso_type, headers that are not what gso_type
//     says) is dropped and counted in RxErrors and, by reason, in
//     OffloadStats, which also describes the last one.
//
// Stats count what the datapath sees: each segment is one received
// packet (the interface counts the super-frame once). The cost: a
// super-frame's payload is copied once, into the segments, and each
// segment's checksum is summed once, much as the kernel's software GSO
// would do it; frames that are not GSO only pay the 10-byte header (an
// extra iovec; NetdevRing reads it from the ring). Writes send a zeroed
// virtio_net_hdr before each frame by a second iovec (no copy, no
// offload asked). NetdevXDP has none of this (see NetdevXDP).
type NetdevPort struct {
	name    string
	typ     odp.PortType
	ifindex int
	mtu     int
	mode    NetdevMode
	batch   int
	file    *os.File
	rc      syscall.RawConn
	stats   Counters

	rdMu sync.Mutex // held by ReadBatch; Close takes it before unmapping
	wrMu sync.Mutex // held by WriteBatch

	// Read call state, used by readFn (a method value made once).
	rdBufs  [][]byte
	rdSizes []int
	rdOff   int
	rdN     int
	rdErr   error
	readFn  func(fd uintptr) bool
	writeFn func(fd uintptr) bool

	rdBytes uint64 // bytes delivered by the current read

	// recvmmsg state. Each message has three iovecs: its
	// virtio_net_hdr in rxVnet, the caller's buffer, and the rest of
	// its slab in rxSlab for a frame longer than the caller's buffer (a
	// GSO super-frame). Once a message of a batch needs its slab, it
	// and the messages after it are delivered from their slabs (the
	// caller's buffers then receive segments): rxPend[pendNext:pendEnd]
	// are their lengths, -1 for one already dropped.
	rxHdrs   []unix.Mmsghdr
	rxIov    []unix.Iovec
	rxCtl    []byte
	rxVnet   []byte
	rxSlab   []byte
	rxPend   []int
	pendNext int
	pendEnd  int

	// The GSO super-frame being segmented (gso.go), from the ring or a
	// slab; its remaining segments go to the next ReadBatch when the
	// caller's buffers run out.
	seg    segmenter
	offl   offloadCounters
	txVnet [vnetHdrLen]byte // the zero virtio_net_hdr sent before every frame
	// sendmmsg state: two iovecs per message, txVnet and the frame.
	txHdrs []unix.Mmsghdr
	txIov  []unix.Iovec
	txN    int // messages to send in txHdrs
	txSent int
	txErr  error

	// TPACKET_V3 ring state.
	ring      []byte
	blockSize int
	blocks    int
	curBlock  int
	pktOff    int // offset in ring of the next packet of the current block, 0 if none
	pktLeft   int

	statsMu sync.Mutex
	closeMu sync.Mutex
	closed  bool

	// The egress program that sends the outer VLAN tag out of band
	// (vlantx_linux.go), or why there is none.
	vlanTx    *vlanTx
	vlanTxErr error

	xdp *xdpSock // NetdevXDP state (afxdp_linux.go)
}

const ctlSpace = 64 // room for one PACKET_AUXDATA control message

// rxSlabSize is the room for one frame in NetdevMmsg's slabs: the
// longest frame AF_PACKET hands over (a 64 KiB GSO super-frame).
const rxSlabSize = MaxFrameLen

// OpenNetdev opens a port on the existing interface name (in the network
// namespace of the calling thread) and sets the interface up.
func OpenNetdev(name string, opts NetdevOptions) (*NetdevPort, error) {
	ifi, err := net.InterfaceByName(name)
	if err != nil {
		return nil, fmt.Errorf("userdp: netdev %s: %w", name, err)
	}
	p := &NetdevPort{name: name, typ: odp.PortNetdev, ifindex: ifi.Index, mtu: ifi.MTU, mode: opts.Mode, batch: opts.Batch}
	if opts.Type != "" {
		p.typ = opts.Type
	}
	if p.batch <= 0 {
		p.batch = 64
	}
	if p.mode != NetdevRing && p.mode != NetdevMmsg && p.mode != NetdevXDP {
		return nil, fmt.Errorf("userdp: netdev %s: unknown mode %d", name, int(p.mode))
	}
	if err := setLinkUp(name); err != nil {
		return nil, fmt.Errorf("userdp: netdev %s: %w", name, err)
	}
	if p.mode == NetdevXDP {
		if err := p.openXDP(); err != nil {
			return nil, fmt.Errorf("userdp: netdev %s: %w", name, err)
		}
		p.file = os.NewFile(uintptr(p.xdp.fd), "afxdp:"+name)
		p.xdp.fd = -1 // p.file owns it
		rc, err := p.file.SyscallConn()
		if err != nil {
			p.file.Close()
			p.xdp.release()
			return nil, fmt.Errorf("userdp: netdev %s: %w", name, err)
		}
		p.rc = rc
		p.readFn = p.doRead
		p.writeFn = p.doWriteXDP
		p.vlanTxErr = errXDPVLANTx
		return p, nil
	}
	// Protocol 0: nothing is received until bind, so no frame from
	// another interface is queued before the socket is bound.
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("userdp: netdev %s: AF_PACKET socket: %w", name, err)
	}
	if err := p.setup(fd, opts); err != nil {
		unix.Close(fd)
		if p.ring != nil {
			unix.Munmap(p.ring)
		}
		return nil, fmt.Errorf("userdp: netdev %s: %w", name, err)
	}
	p.file = os.NewFile(uintptr(fd), "afpacket:"+name)
	rc, err := p.file.SyscallConn()
	if err != nil {
		p.file.Close()
		return nil, fmt.Errorf("userdp: netdev %s: %w", name, err)
	}
	p.rc = rc
	p.readFn = p.doRead
	p.writeFn = p.doWrite
	p.vlanTx, p.vlanTxErr = attachVLANTx(p.ifindex)
	return p, nil
}

// txLen is the length the interface counts for a transmitted frame, as
// the kernel's vport reports the device's tx_bytes: skb->len, without
// an outer VLAN tag sent out of band.
func (p *NetdevPort) txLen(frame []byte) int {
	if p.vlanTx != nil {
		return skbLen(frame)
	}
	return len(frame)
}

// VLANTxOffload returns nil when the port transmits a frame's outer VLAN
// tag out of band, as the kernel's datapath does (so that the receiver
// gets tagged frames of 18 and 19 bytes too), or the reason it sends
// tags in line: the kernel lacks the clsact qdisc or cls_bpf, or the
// process may not load BPF programs.
func (p *NetdevPort) VLANTxOffload() error { return p.vlanTxErr }

func (p *NetdevPort) setup(fd int, opts NetdevOptions) error {
	if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_IGNORE_OUTGOING, 1); err != nil {
		return fmt.Errorf("PACKET_IGNORE_OUTGOING: %w", err)
	}
	mreq := unix.PacketMreq{Ifindex: int32(p.ifindex), Type: unix.PACKET_MR_PROMISC}
	if err := unix.SetsockoptPacketMreq(fd, unix.SOL_PACKET, unix.PACKET_ADD_MEMBERSHIP, &mreq); err != nil {
		return fmt.Errorf("promiscuous mode: %w", err)
	}
	unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, 4<<20)
	unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUF, 4<<20)
	// Before the ring is set up (the kernel refuses it after).
	if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_VNET_HDR, 1); err != nil {
		return fmt.Errorf("PACKET_VNET_HDR: %w", err)
	}
	switch p.mode {
	case NetdevMmsg:
		if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_AUXDATA, 1); err != nil {
			return fmt.Errorf("PACKET_AUXDATA: %w", err)
		}
		p.rxHdrs = make([]unix.Mmsghdr, p.batch)
		p.rxIov = make([]unix.Iovec, 3*p.batch)
		p.rxCtl = make([]byte, p.batch*ctlSpace)
		p.rxVnet = make([]byte, p.batch*vnetHdrLen)
		// Virtual memory mostly: a slab's pages are touched only by
		// frames longer than the caller's buffer.
		p.rxSlab = make([]byte, p.batch*rxSlabSize)
		p.rxPend = make([]int, p.batch)
	case NetdevRing:
		if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_VERSION, unix.TPACKET_V3); err != nil {
			return fmt.Errorf("TPACKET_V3: %w", err)
		}
		p.blocks, p.blockSize = opts.RingBlocks, opts.RingBlockSize
		if p.blocks <= 0 {
			p.blocks = 64
		}
		if p.blockSize <= 0 {
			p.blockSize = 128 << 10
		}
		pg := os.Getpagesize()
		p.blockSize = (p.blockSize + pg - 1) / pg * pg
		if p.blockSize < 2*(MaxFrameLen/2) && p.blockSize < 14+8+p.mtu+256 {
			return fmt.Errorf("ring block size %d too small for MTU %d", p.blockSize, p.mtu)
		}
		const frameSize = 2048
		req := unix.TpacketReq3{
			Block_size:     uint32(p.blockSize),
			Block_nr:       uint32(p.blocks),
			Frame_size:     frameSize,
			Frame_nr:       uint32(p.blockSize / frameSize * p.blocks),
			Retire_blk_tov: 1, // ms: hand over a partly filled block after 1 ms
		}
		if err := unix.SetsockoptTpacketReq3(fd, unix.SOL_PACKET, unix.PACKET_RX_RING, &req); err != nil {
			return fmt.Errorf("PACKET_RX_RING: %w", err)
		}
		ring, err := unix.Mmap(fd, 0, p.blockSize*p.blocks, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
		if err != nil {
			return fmt.Errorf("mmap of the rx ring: %w", err)
		}
		p.ring = ring
	}
	p.txHdrs = make([]unix.Mmsghdr, p.batch)
	p.txIov = make([]unix.Iovec, 2*p.batch)
	sa := unix.RawSockaddrLinklayer{Family: unix.AF_PACKET, Protocol: htons(unix.ETH_P_ALL), Ifindex: int32(p.ifindex)}
	if _, _, e := unix.Syscall(unix.SYS_BIND, uintptr(fd), uintptr(unsafe.Pointer(&sa)), unsafe.Sizeof(sa)); e != 0 {
		return fmt.Errorf("bind to ifindex %d: %w", p.ifindex, e)
	}
	return nil
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

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

// Name returns the interface name.
func (p *NetdevPort) Name() string { return p.name }

// Type returns the port type (odp.PortNetdev unless NetdevOptions.Type).
func (p *NetdevPort) Type() odp.PortType { return p.typ }

// MTU returns the interface's MTU when the port was opened.
func (p *NetdevPort) MTU() int { return p.mtu }

// Mode returns the port's read implementation.
func (p *NetdevPort) Mode() NetdevMode { return p.mode }

// Ifindex returns the interface index.
func (p *NetdevPort) Ifindex() int { return p.ifindex }

// Stats returns the port's counters. RxDropped includes the frames the
// kernel dropped because the socket (or ring) was full, read from
// PACKET_STATISTICS. Byte counts are what the kernel's vport reports for
// the same traffic (the interface's counters, skb->len): TxBytes leaves
// out an outer VLAN tag sent out of band (VLANTxOffload); RxBytes counts
// every tag, as the interface does for a sender that put its tags in
// line (one that used VLAN offload is counted 4 bytes less per tagged
// frame by the interface, which AF_PACKET does not tell apart).
func (p *NetdevPort) Stats() odp.PortStats {
	p.pollDrops()
	return p.stats.Snapshot()
}

// pollDrops adds the kernel's socket drop count (reset by each read).
func (p *NetdevPort) pollDrops() {
	p.statsMu.Lock()
	defer p.statsMu.Unlock()
	if p.isClosed() {
		return
	}
	p.rc.Control(func(fd uintptr) {
		if p.mode == NetdevXDP {
			p.pollXDPDrops(fd)
		} else if p.mode == NetdevRing {
			if st, err := unix.GetsockoptTpacketStatsV3(int(fd), unix.SOL_PACKET, unix.PACKET_STATISTICS); err == nil {
				p.stats.RxDropped.Add(uint64(st.Drops))
			}
		} else if st, err := unix.GetsockoptTpacketStats(int(fd), unix.SOL_PACKET, unix.PACKET_STATISTICS); err == nil {
			p.stats.RxDropped.Add(uint64(st.Drops))
		}
	})
}

// ReadBatch implements Port.
func (p *NetdevPort) ReadBatch(bufs [][]byte, sizes []int, offset int) (int, error) {
	if len(sizes) < len(bufs) {
		return 0, fmt.Errorf("userdp: %s: read: %d sizes for %d buffers", p.name, len(sizes), len(bufs))
	}
	if len(bufs) == 0 {
		return 0, nil
	}
	for _, b := range bufs {
		if offset < 0 || offset > len(b) {
			return 0, fmt.Errorf("userdp: %s: read: offset %d outside a %d-byte buffer", p.name, offset, len(b))
		}
	}
	p.rdMu.Lock()
	defer p.rdMu.Unlock()
	p.rdBufs, p.rdSizes, p.rdOff, p.rdN, p.rdErr = bufs, sizes, offset, 0, nil
	err := p.rc.Read(p.readFn)
	n, rerr := p.rdN, p.rdErr
	p.rdBufs, p.rdSizes = nil, nil
	if err != nil {
		if p.isClosed() {
			return n, fmt.Errorf("userdp: %s: read: %w", p.name, ErrPortClosed)
		}
		return n, fmt.Errorf("userdp: %s: read: %w", p.name, err)
	}
	if rerr != nil {
		return n, fmt.Errorf("userdp: %s: read: %w", p.name, rerr)
	}
	return n, nil
}

func (p *NetdevPort) doRead(fd uintptr) bool {
	if p.mode == NetdevXDP {
		return p.readXDP()
	}
	if p.mode == NetdevRing {
		return p.readRing()
	}
	return p.readMmsg(fd)
}

// finishFrame re-inserts a VLAN tag the kernel took out of the frame and
// completes a checksum left to offload, as the frame's virtio_net_hdr vh
// says (VIRTIO_NET_HDR_F_NEEDS_CSUM, set exactly when AF_PACKET also
// reports TP_STATUS_CSUMNOTREADY: both mean CHECKSUM_PARTIAL). b is the
// whole buffer, the frame is b[off:off+n] and is not a GSO frame. It
// returns the frame's new length, or -1 and the reason it was refused.
func finishFrame(b []byte, off, n int, vlanValid bool, tpid, tci uint16, vh vnetHdr) (int, VnetDropReason) {
	if int(vh.hdrLen) > n {
		return -1, VnetBadHdrLen
	}
	start := int(vh.csumStart)
	if vlanValid {
		if n < 12 || off+n+4 > len(b) {
			return -1, VnetTooBig
		}
		f := b[off : off+n+4]
		copy(f[16:], f[12:n])
		binary.BigEndian.PutUint16(f[12:], tpid)
		binary.BigEndian.PutUint16(f[14:], tci)
		n += 4
		start += 4 // csum_start counts from the frame without the tag
	}
	if vh.flags&vnetFlagNeedsCsum != 0 && !completeCsum(b[off:off+n], start, int(vh.csumOffset)) {
		return -1, VnetBadCsum
	}
	return n, 0
}

// offloadCounters are a netdev port's receive offload counters.
type offloadCounters struct {
	gsoFrames, gsoSegments, csums atomic.Uint64
	drops                         [numVnetDropReasons]atomic.Uint64

	mu       sync.Mutex
	lastDrop vnetDrop
}

// vnetDrop records the last frame dropped for its virtio_net_hdr.
type vnetDrop struct {
	valid  bool
	reason VnetDropReason
	hdr    vnetHdr
	len    int
}

// NetdevOffloadStats counts a netdev port's receive offload work (see
// NetdevPort).
type NetdevOffloadStats struct {
	// GSOFrames is the number of GSO super-frames read and segmented.
	GSOFrames uint64
	// GSOSegments is the number of frames they were cut into (each
	// counted in RxPackets).
	GSOSegments uint64
	// ChecksumsCompleted is the number of frames (not GSO) whose
	// TCP/UDP checksum (or SCTP CRC32c) the port completed.
	ChecksumsCompleted uint64
	// Dropped counts the frames dropped for their virtio_net_hdr, by
	// reason (each also counted in RxErrors); reasons with no drop are
	// absent.
	Dropped map[VnetDropReason]uint64
	// LastDrop describes the last such drop (reason, the header's
	// fields and the frame's length); nil if there was none.
	LastDrop error
}

// OffloadStats returns the port's receive offload counters.
func (p *NetdevPort) OffloadStats() NetdevOffloadStats {
	o := &p.offl
	st := NetdevOffloadStats{
		GSOFrames:          o.gsoFrames.Load(),
		GSOSegments:        o.gsoSegments.Load(),
		ChecksumsCompleted: o.csums.Load(),
	}
	for r := range o.drops {
		if v := o.drops[r].Load(); v != 0 {
			if st.Dropped == nil {
				st.Dropped = make(map[VnetDropReason]uint64)
			}
			st.Dropped[VnetDropReason(r)] = v
		}
	}
	o.mu.Lock()
	d := o.lastDrop
	o.mu.Unlock()
	if d.valid {
		st.LastDrop = fmt.Errorf("userdp: %s: dropped a %d-byte frame: %s (virtio_net_hdr flags %#x gso_type %#x hdr_len %d gso_size %d csum_start %d csum_offset %d)",
			p.name, d.len, d.reason, d.hdr.flags, d.hdr.gsoType, d.hdr.hdrLen, d.hdr.gsoSize, d.hdr.csumStart, d.hdr.csumOffset)
	}
	return st
}

// dropVnet counts a frame dropped for reason r.
func (p *NetdevPort) dropVnet(r VnetDropReason, vh vnetHdr, n int) {
	p.stats.RxErrors.Add(1)
	o := &p.offl
	o.drops[r].Add(1)
	o.mu.Lock()
	o.lastDrop = vnetDrop{valid: true, reason: r, hdr: vh, len: n}
	o.mu.Unlock()
}

// deliverFinished records frame number p.rdN of length l (or a drop).
func (p *NetdevPort) deliverFinished(l int, r VnetDropReason, vh vnetHdr, n int) {
	if l < 0 {
		p.dropVnet(r, vh, n)
		return
	}
	if vh.flags&vnetFlagNeedsCsum != 0 {
		p.offl.csums.Add(1)
	}
	p.rdSizes[p.rdN] = l
	p.rdBytes += uint64(l)
	p.rdN++
}

// startGSO prepares the segmentation of the super-frame src.
func (p *NetdevPort) startGSO(src []byte, vh vnetHdr, vlanValid bool, tpid, tci uint16) {
	if r, ok := p.seg.init(src, vh, vlanValid, tpid, tci, p.mtu); !ok {
		p.dropVnet(r, vh, len(src))
		return
	}
	p.offl.gsoFrames.Add(1)
}

// emitSegments writes the current super-frame's segments into the
// caller's buffers from p.rdN on, as many as fit.
func (p *NetdevPort) emitSegments() {
	for p.seg.active && p.rdN < len(p.rdBufs) {
		l := p.seg.next(p.rdBufs[p.rdN][p.rdOff:])
		if l < 0 {
			p.dropVnet(VnetTooBig, vnetHdr{gsoSize: uint16(p.seg.mss)}, p.seg.maxSegLen())
			continue
		}
		p.offl.gsoSegments.Add(1)
		p.rdSizes[p.rdN] = l
		p.rdBytes += uint64(l)
		p.rdN++
	}
}

// auxdata returns message i's VLAN tag and status from its control
// message.
func (p *NetdevPort) auxdata(i int) (vlanValid bool, tpid, tci uint16) {
	h := &p.rxHdrs[i]
	var status uint32
	if cl := int(h.Hdr.Controllen); cl >= unix.CmsgLen(int(unsafe.Sizeof(unix.TpacketAuxdata{}))) {
		c := p.rxCtl[i*ctlSpace:]
		cm := (*unix.Cmsghdr)(unsafe.Pointer(&c[0]))
		if cm.Level == unix.SOL_PACKET && cm.Type == unix.PACKET_AUXDATA {
			aux := (*unix.TpacketAuxdata)(unsafe.Pointer(&c[unix.CmsgLen(0)]))
			status, tci, tpid = aux.Status, aux.Vlan_tci, aux.Vlan_tpid
		}
	}
	if status&unix.TP_STATUS_VLAN_TPID_VALID == 0 {
		tpid = header.EtherTypeVLAN
	}
	return status&unix.TP_STATUS_VLAN_VALID != 0, tpid, tci
}

func (p *NetdevPort) slab(i int) []byte { return p.rxSlab[i*rxSlabSize : (i+1)*rxSlabSize] }

// drainPending delivers what is left of the last recvmmsg batch (the
// segments of a super-frame and the messages in their slabs) into the
// caller's buffers from p.rdN on.
func (p *NetdevPort) drainPending() {
	for p.rdN < len(p.rdBufs) {
		if p.seg.active {
			p.emitSegments()
			continue
		}
		if p.pendNext >= p.pendEnd {
			return
		}
		j := p.pendNext
		p.pendNext++
		l := p.rxPend[j]
		if l < 0 {
			continue
		}
		vh := decodeVnetHdr(p.rxVnet[j*vnetHdrLen:])
		vlanValid, tpid, tci := p.auxdata(j)
		p.receive(p.slab(j)[:l], vh, vlanValid, tpid, tci)
	}
}

// receive takes one received frame, src, with its virtio_net_hdr and
// out-of-band VLAN tag: a GSO super-frame starts segmenting; any other
// frame is copied into the caller's next buffer and finished.
func (p *NetdevPort) receive(src []byte, vh vnetHdr, vlanValid bool, tpid, tci uint16) {
	if vh.gsoType != vnetGSONone {
		p.startGSO(src, vh, vlanValid, tpid, tci)
		return
	}
	b := p.rdBufs[p.rdN]
	if len(src) > len(b)-p.rdOff {
		p.dropVnet(VnetTooBig, vh, len(src))
		return
	}
	copy(b[p.rdOff:], src)
	l, r := finishFrame(b, p.rdOff, len(src), vlanValid, tpid, tci, vh)
	p.deliverFinished(l, r, vh, len(src))
}

func (p *NetdevPort) readMmsg(fd uintptr) bool {
	p.rdN, p.rdBytes = 0, 0
	if p.seg.active || p.pendNext < p.pendEnd {
		p.drainPending()
		if p.rdN > 0 {
			p.stats.rx(p.rdN, p.rdBytes)
			return true
		}
	}
	want := min(len(p.rdBufs), p.batch)
	for i := 0; i < want; i++ {
		b := p.rdBufs[i][p.rdOff:]
		iov := p.rxIov[3*i : 3*i+3]
		iov[0].Base = &p.rxVnet[i*vnetHdrLen]
		iov[0].SetLen(vnetHdrLen)
		iov[1].Base = unsafe.SliceData(b)
		iov[1].SetLen(len(b))
		h := &p.rxHdrs[i].Hdr
		h.Iov = &iov[0]
		h.Iovlen = 2
		if len(b) < rxSlabSize {
			sl := p.slab(i)[len(b):]
			iov[2].Base = &sl[0]
			iov[2].SetLen(len(sl))
			h.Iovlen = 3
		}
		h.Control = &p.rxCtl[i*ctlSpace]
		h.SetControllen(ctlSpace)
		h.Flags = 0
		p.rxHdrs[i].Len = 0
	}
	r, _, e := unix.Syscall6(unix.SYS_RECVMMSG, fd, uintptr(unsafe.Pointer(&p.rxHdrs[0])), uintptr(want), unix.MSG_DONTWAIT|unix.MSG_TRUNC, 0, 0)
	if e == unix.EAGAIN || e == unix.EINTR {
		return false
	}
	if e != 0 {
		p.rdErr = fmt.Errorf("recvmmsg: %w", e)
		return true
	}
	got := int(r)
	for i := 0; i < got; i++ {
		h := &p.rxHdrs[i]
		l := int(h.Len) - vnetHdrLen
		avail := len(p.rdBufs[i]) - p.rdOff
		if l < 0 || h.Hdr.Flags&unix.MSG_TRUNC != 0 || l > max(avail, rxSlabSize) {
			p.dropVnet(VnetTooBig, vnetHdr{}, l)
			continue
		}
		vh := decodeVnetHdr(p.rxVnet[i*vnetHdrLen:])
		if vh.gsoType != vnetGSONone || l > avail {
			// This frame is read from its slab, and so are the ones
			// after it: the caller's buffers from p.rdN on will
			// hold segments. Make each slab hold its whole frame.
			for j := i; j < got; j++ {
				lj := int(p.rxHdrs[j].Len) - vnetHdrLen
				aj := len(p.rdBufs[j]) - p.rdOff
				if lj < 0 || p.rxHdrs[j].Hdr.Flags&unix.MSG_TRUNC != 0 || lj > rxSlabSize {
					if j > i {
						p.dropVnet(VnetTooBig, vnetHdr{}, lj)
					}
					p.rxPend[j] = -1
					continue
				}
				copy(p.slab(j)[:min(lj, aj)], p.rdBufs[j][p.rdOff:])
				p.rxPend[j] = lj
			}
			p.pendNext, p.pendEnd = i, got
			p.drainPending()
			break
		}
		vlanValid, tpid, tci := p.auxdata(i)
		// Compact: frame i goes to buffer p.rdN (p.rdN <= i); buffers
		// are the caller's, so move the data if a frame before was
		// dropped.
		n := p.rdN
		if n != i {
			if len(p.rdBufs[n])-p.rdOff < l {
				p.dropVnet(VnetTooBig, vh, l)
				continue
			}
			copy(p.rdBufs[n][p.rdOff:], p.rdBufs[i][p.rdOff:p.rdOff+l])
		}
		nl, r := finishFrame(p.rdBufs[n], p.rdOff, l, vlanValid, tpid, tci, vh)
		p.deliverFinished(nl, r, vh, l)
	}
	p.stats.rx(p.rdN, p.rdBytes)
	return p.rdN > 0
}

// Offsets in a TPACKET_V3 block descriptor and packet header.
const (
	blkStatusOff   = 8     // tpacket_block_desc.hdr.bh1.block_status (after version, offset_to_priv)
	blkNumPktsOff  = 8 + 4 // num_pkts
	blkFirstPktOff = 8 + 8 // offset_to_first_pkt
	tp3NextOff     = int(unsafe.Offsetof(unix.Tpacket3Hdr{}.Next_offset))
	tp3SnaplenOff  = int(unsafe.Offsetof(unix.Tpacket3Hdr{}.Snaplen))
	tp3LenOff      = int(unsafe.Offsetof(unix.Tpacket3Hdr{}.Len))
	tp3StatusOff   = int(unsafe.Offsetof(unix.Tpacket3Hdr{}.Status))
	tp3MacOff      = int(unsafe.Offsetof(unix.Tpacket3Hdr{}.Mac))
	tp3VlanTCIOff  = int(unsafe.Offsetof(unix.Tpacket3Hdr{}.Hv1) + unsafe.Offsetof(unix.TpacketHdrVariant1{}.Vlan_tci))
	tp3VlanTPIDOff = int(unsafe.Offsetof(unix.Tpacket3Hdr{}.Hv1) + unsafe.Offsetof(unix.TpacketHdrVariant1{}.Vlan_tpid))
)

func (p *NetdevPort) u32(off int) uint32 {
	return *(*uint32)(unsafe.Pointer(&p.ring[off]))
}

func (p *NetdevPort) readRing() bool {
	p.rdN, p.rdBytes = 0, 0
	for p.rdN < len(p.rdBufs) {
		if p.seg.active {
			// Segments of a super-frame in the ring: its block is
			// not given back before the last one is out.
			p.emitSegments()
			continue
		}
		if p.pktLeft == 0 {
			if p.pktOff != 0 {
				// Done with the current block: give it back.
				atomicStore32(&p.ring[p.curBlock*p.blockSize+blkStatusOff], unix.TP_STATUS_KERNEL)
				p.pktOff = 0
				p.curBlock++
				if p.curBlock == p.blocks {
					p.curBlock = 0
				}
			}
			base := p.curBlock * p.blockSize
			if atomicLoad32(&p.ring[base+blkStatusOff])&unix.TP_STATUS_USER == 0 {
				break
			}
			p.pktLeft = int(p.u32(base + blkNumPktsOff))
			p.pktOff = base + int(p.u32(base+blkFirstPktOff))
			if p.pktLeft == 0 {
				continue // an empty block (retired by timeout): release it
			}
		}
		hdr := p.pktOff
		snap := int(p.u32(hdr + tp3SnaplenOff))
		full := int(p.u32(hdr + tp3LenOff))
		status := p.u32(hdr + tp3StatusOff)
		mac := int(*(*uint16)(unsafe.Pointer(&p.ring[hdr+tp3MacOff])))
		tci := uint16(p.u32(hdr + tp3VlanTCIOff))
		tpid := *(*uint16)(unsafe.Pointer(&p.ring[hdr+tp3VlanTPIDOff]))
		next := int(p.u32(hdr + tp3NextOff))
		p.pktLeft--
		if p.pktLeft > 0 {
			p.pktOff = hdr + next
		}
		if snap < full || mac < vnetHdrLen || hdr+mac+snap > len(p.ring) {
			p.dropVnet(VnetTooBig, vnetHdr{}, full)
			continue
		}
		// tpacket_rcv writes the virtio_net_hdr just before the frame.
		vh := decodeVnetHdr(p.ring[hdr+mac-vnetHdrLen:])
		if status&unix.TP_STATUS_VLAN_TPID_VALID == 0 {
			tpid = header.EtherTypeVLAN
		}
		vlanValid := status&unix.TP_STATUS_VLAN_VALID != 0
		p.receive(p.ring[hdr+mac:hdr+mac+snap], vh, vlanValid, tpid, tci)
	}
	p.stats.rx(p.rdN, p.rdBytes)
	return p.rdN > 0
}

// WriteBatch implements Port with sendmmsg. A frame the kernel refuses
// (e.g. longer than the MTU: EMSGSIZE) is counted as a tx error and
// skipped; ENOBUFS counts a tx drop. When the socket's send buffer is
// full it waits for room.
func (p *NetdevPort) WriteBatch(pkts [][]byte) (int, error) {
	if p.mode == NetdevXDP {
		return p.writeXDP(pkts)
	}
	p.wrMu.Lock()
	defer p.wrMu.Unlock()
	sent := 0
	var bytes uint64
	var firstErr error
	for len(pkts) > 0 {
		k := min(len(pkts), p.batch)
		for i := 0; i < k; i++ {
			// The socket has PACKET_VNET_HDR: a zero header (no
			// offload asked) goes before each frame, by iovec.
			iov := p.txIov[2*i : 2*i+2]
			iov[0].Base = &p.txVnet[0]
			iov[0].SetLen(vnetHdrLen)
			iov[1].Base = unsafe.SliceData(pkts[i])
			iov[1].SetLen(len(pkts[i]))
			h := &p.txHdrs[i].Hdr
			h.Iov = &iov[0]
			h.Iovlen = 2
		}
		p.txN, p.txSent, p.txErr = k, 0, nil
		if err := p.rc.Write(p.writeFn); err != nil {
			if p.isClosed() {
				err = ErrPortClosed
			}
			p.stats.tx(sent, bytes)
			return sent, fmt.Errorf("userdp: %s: write: %w", p.name, err)
		}
		for i := 0; i < p.txSent; i++ {
			bytes += uint64(p.txLen(pkts[i]))
		}
		sent += p.txSent
		skip := p.txSent
		if p.txErr != nil {
			// pkts[txSent] failed: count it and go on after it.
			if errors.Is(p.txErr, unix.ENOBUFS) {
				p.stats.TxDropped.Add(1)
			} else {
				p.stats.TxErrors.Add(1)
			}
			if firstErr == nil {
				firstErr = fmt.Errorf("userdp: %s: write of a %d-byte frame: %w", p.name, len(pkts[p.txSent]), p.txErr)
			}
			skip++
		}
		pkts = pkts[skip:]
	}
	p.stats.tx(sent, bytes)
	return sent, firstErr
}

func (p *NetdevPort) doWrite(fd uintptr) bool {
	for p.txSent < p.txN {
		r, _, e := unix.Syscall6(unix.SYS_SENDMMSG, fd, uintptr(unsafe.Pointer(&p.txHdrs[p.txSent])), uintptr(p.txN-p.txSent), unix.MSG_DONTWAIT, 0, 0)
		switch {
		case e == unix.EAGAIN:
			return false
		case e == unix.EINTR:
			continue
		case e != 0:
			p.txErr = e
			return true
		}
		p.txSent += int(r)
	}
	return true
}

func (p *NetdevPort) isClosed() bool {
	p.closeMu.Lock()
	defer p.closeMu.Unlock()
	return p.closed
}

// Close closes the socket (unblocking a pending ReadBatch) and releases
// the ring; the interface leaves promiscuous mode. In NetdevXDP mode it
// detaches the XDP program, closes the XSKMAP and frees the UMEM.
func (p *NetdevPort) Close() error {
	p.closeMu.Lock()
	if p.closed {
		p.closeMu.Unlock()
		return nil
	}
	p.closed = true
	p.closeMu.Unlock()
	p.vlanTx.detach()
	p.xdp.detach() // before the socket goes: no frame reaches the stack half-done
	err := p.file.Close()
	p.rdMu.Lock()
	if p.ring != nil {
		if e := unix.Munmap(p.ring); e != nil && err == nil {
			err = e
		}
		p.ring = nil
	}
	p.seg = segmenter{} // it may point into the ring
	p.pendNext = p.pendEnd
	if p.xdp != nil {
		// The socket is closed: no reader or writer is in the rings.
		p.wrMu.Lock()
		if e := p.xdp.release(); e != nil && err == nil {
			err = e
		}
		p.wrMu.Unlock()
	}
	p.rdMu.Unlock()
	if err != nil {
		return fmt.Errorf("userdp: closing %s: %w", p.name, err)
	}
	return nil
}

var _ Port = (*NetdevPort)(nil)
