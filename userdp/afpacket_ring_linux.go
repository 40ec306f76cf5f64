package userdp

import (
	"github.com/ovsdp/ovsdp/internal/header"

	"fmt"
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// RingPort is the NetdevRing backend: AF_PACKET sockets that read from
// memory-mapped receive rings, copying frames out into the caller's
// buffers, and write with sendmmsg. It has two lanes
// (afpacket_lanes_linux.go): a TPACKET_V2 slot ring that hands each
// frame over as soon as it is in, used while the port receives fewer
// than 100,000 frames/s (a new flow's first frame is not held back),
// and a TPACKET_V3 block ring, a block of frames per wake-up, for
// streams; a BPF fanout program steers each frame to one of them, and
// the reader keeps each sender's frames in order across switches.
// Without BPF it has the slot ring alone (Lanes). What follows holds for
// MmsgPort too.
//
// The socket is bound to the interface, ignores the frames it sends
// itself (PACKET_IGNORE_OUTGOING), puts the interface in promiscuous
// mode for as long as it is open, and recovers VLAN tags that the kernel
// took out of the frame (VLAN offload, as veth does): the tag is put
// back in-line after the Ethernet addresses, so frames carry all their
// tags.
//
// Offloads. The interface's offloads are left as they are (a veth's
// TSO, GSO and tx checksumming stay on). Every frame is read with a
// virtio_net_hdr (PACKET_VNET_HDR), as OVS's netdev-linux does with
// userspace TSO off:
//   - A GSO super-frame (up to 64 KiB: a TCP or UDP sender in a
//     namespace behind veth hands these over whole) of gso_type TCPV4 or
//     TCPV6 (with or without ECN) or UDP_L4 is cut in software into
//     gso_size segments, each a complete frame of at most the MTU, as
//     the kernel's software GSO would (gso.go): IPv4 total length, ID
//     (+1 per segment) and header checksum, IPv6 payload length, TCP
//     sequence numbers, CWR only on the first segment, FIN and PSH only
//     on the last, UDP length, and a TCP/UDP checksum computed over the
//     segment. An outer VLAN tag the kernel took out goes into every
//     segment. The super-frame is read into the ring (RingPort: its
//     block, held until the last segment is out, or, being longer
//     than a slot, from the slot socket's queue into a 64 KiB slab) or into a per-message
//     slab of 64 KiB (MmsgPort: batch slabs of virtual memory, touched
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
// extra iovec; RingPort reads it from the ring). Writes send a zeroed
// virtio_net_hdr before each frame by a second iovec (no copy, no
// offload asked).
type RingPort struct {
	afPacket

	slots slotRing  // the TPACKET_V2 ring of the first socket (p.file)
	bulk  blockRing // the TPACKET_V3 ring of the second socket, if there are two lanes
	lanes laneSwitch

	// With two lanes: the second socket, and the epoll descriptor over
	// both that ReadBatch waits on (fdPort.rdRC).
	v3File *os.File
	v3RC   syscall.RawConn
	epFile *os.File

	// slab receives, by recvfrom, a frame longer than a slot: the
	// kernel put its first bytes in the slot (TP_STATUS_COPY) and the
	// whole frame, with its virtio_net_hdr, on the socket's queue.
	slab   []byte
	slotFD int // p.file's descriptor
}

var _ NetdevPort = (*RingPort)(nil)

// The ring sizes: the slot ring, alone or beside the block ring; the
// block ring (NetdevOptions.RingBlocks and RingBlockSize).
const (
	ringBlockSize     = 128 << 10
	ringSoloBlocks    = 64 // 8 MiB of slots when the slot ring is alone
	ringLaneBlocks    = 16 // 2 MiB of slots beside the block ring
	ringDefaultBlocks = 64 // 8 MiB of blocks
)

// openRing opens a RingPort (OpenNetdev with NetdevRing).
func openRing(name string, opts NetdevOptions) (*RingPort, error) {
	p := &RingPort{}
	if err := p.init(name, opts); err != nil {
		return nil, err
	}
	p.readFn = p.readRing
	p.pollFn = p.pollDrops
	// The slot ring is sized before knowing whether the lanes can be
	// made; without them it is as large as the block ring would be.
	lanesErr := p.lanes.load()
	slotBlocks := ringLaneBlocks
	if lanesErr != nil {
		slotBlocks = ringSoloBlocks
	}
	if err := p.open(func(fd int) error { return p.slots.setup(fd, p.mtu, slotBlocks) }); err != nil {
		p.slots.unmap()
		p.lanes.close()
		return nil, err
	}
	p.slab = make([]byte, vnetHdrLen+MaxFrameLen)
	p.rc.Control(func(fd uintptr) { p.slotFD = int(fd) })
	p.lanes.err = lanesErr
	if lanesErr == nil {
		if err := p.openBulkLane(opts); err != nil {
			p.Close()
			return nil, fmt.Errorf("userdp: netdev %s: %w", name, err)
		}
	}
	if p.lanes.err != nil {
		// One lane: ReadBatch waits on the slot ring's socket.
		p.lanes.close()
	}
	return p, nil
}

// Mode returns NetdevRing.
func (p *RingPort) Mode() NetdevMode { return NetdevRing }

// Lanes returns the number of lanes the port reads (2: the slot ring
// and the block ring; 1: the slot ring alone) and, with one, why the
// block ring could not be used (the kernel or the process cannot load
// the BPF program that steers frames between them).
func (p *RingPort) Lanes() (int, error) {
	if p.lanes.err != nil {
		return 1, p.lanes.err
	}
	return 2, nil
}

// Close closes the sockets (unblocking a pending ReadBatch) and
// releases the rings; the interface leaves promiscuous mode.
func (p *RingPort) Close() error {
	if !p.markClosed() {
		return nil
	}
	p.vlanTx.detach()
	// Closing what the reader waits on unblocks it.
	var err error
	if p.epFile != nil {
		err = p.epFile.Close()
	} else {
		err = p.file.Close()
	}
	if e := p.closeTx(); e != nil && err == nil {
		err = e
	}
	p.rdMu.Lock()
	// The reader is out: the sockets and rings can go.
	if p.epFile != nil {
		if e := p.file.Close(); e != nil && err == nil {
			err = e
		}
	}
	if p.v3File != nil {
		if e := p.v3File.Close(); e != nil && err == nil {
			err = e
		}
	}
	if e := p.slots.unmap(); e != nil && err == nil {
		err = e
	}
	if e := p.bulk.unmap(); e != nil && err == nil {
		err = e
	}
	p.lanes.close()
	p.seg = segmenter{} // it may point into a ring
	p.rdMu.Unlock()
	return p.closeErr(err)
}

// pollDrops adds the drops both sockets counted to the port's.
func (p *RingPort) pollDrops(fd uintptr) {
	if st, err := unix.GetsockoptTpacketStats(int(fd), unix.SOL_PACKET, unix.PACKET_STATISTICS); err == nil {
		p.stats.RxDropped.Add(uint64(st.Drops))
	}
	if p.v3RC != nil {
		p.v3RC.Control(func(fd uintptr) {
			if st, err := unix.GetsockoptTpacketStatsV3(int(fd), unix.SOL_PACKET, unix.PACKET_STATISTICS); err == nil {
				p.stats.RxDropped.Add(uint64(st.Drops))
			}
		})
	}
}

// ringFrameSize is the slot size for an interface of MTU mtu: a power
// of two, at least 2 KiB, with room for the slot's header, the
// virtio_net_hdr and a frame of the MTU with two VLAN tags in line.
func ringFrameSize(mtu int) int {
	const room = 128 + 14 + 8 // tpacket2_hdr, sockaddr_ll and alignment; Ethernet header; two tags
	n := 2048
	for n < room+mtu && n < MaxFrameLen {
		n <<= 1
	}
	return n
}

// slotRing is a TPACKET_V2 receive ring: one frame per slot, each slot
// handed to the reader as soon as its frame is in.
type slotRing struct {
	ring      []byte
	frameSize int
	frames    int
	cur       int  // the next slot to read
	held      bool // slot cur was read and is not given back yet
}

// setup sets up and maps the ring of blocks 128 KiB blocks on fd, with
// slots for frames of MTU mtu.
func (r *slotRing) setup(fd, mtu, blocks int) error {
	if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_VERSION, unix.TPACKET_V2); err != nil {
		return fmt.Errorf("TPACKET_V2: %w", err)
	}
	// A frame longer than a slot (a GSO super-frame) is queued whole
	// on the socket as well (TP_STATUS_COPY).
	if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_COPY_THRESH, 1); err != nil {
		return fmt.Errorf("PACKET_COPY_THRESH: %w", err)
	}
	if err := attachNoOutgoing(fd); err != nil {
		return err
	}
	r.frameSize = ringFrameSize(mtu)
	// A block is whole pages and whole slots.
	unit := max(os.Getpagesize(), r.frameSize)
	blockSize := (ringBlockSize + unit - 1) / unit * unit
	r.frames = blockSize / r.frameSize * blocks
	req := unix.TpacketReq{
		Block_size: uint32(blockSize),
		Block_nr:   uint32(blocks),
		Frame_size: uint32(r.frameSize),
		Frame_nr:   uint32(r.frames),
	}
	if err := unix.SetsockoptTpacketReq(fd, unix.SOL_PACKET, unix.PACKET_RX_RING, &req); err != nil {
		return fmt.Errorf("PACKET_RX_RING (%d blocks of %d bytes, %d-byte slots): %w", blocks, blockSize, r.frameSize, err)
	}
	ring, err := unix.Mmap(fd, 0, blockSize*blocks, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return fmt.Errorf("mmap of the slot ring: %w", err)
	}
	r.ring = ring
	return nil
}

func (r *slotRing) unmap() error { return unmapRing(&r.ring) }

// release gives back the slot last read, if its frame is out.
func (r *slotRing) release() {
	if !r.held {
		return
	}
	atomicStore32(&r.ring[r.cur*r.frameSize+tp2StatusOff], unix.TP_STATUS_KERNEL)
	r.held = false
	r.cur++
	if r.cur == r.frames {
		r.cur = 0
	}
}

// ready reports whether the next slot holds a frame (after release).
func (r *slotRing) ready() bool {
	return atomicLoad32(&r.ring[r.cur*r.frameSize+tp2StatusOff])&unix.TP_STATUS_USER != 0
}

// blockRing is a TPACKET_V3 receive ring: frames packed in blocks, each
// block handed to the reader when full or when the kernel's timer
// retires it.
type blockRing struct {
	ring      []byte
	blockSize int
	blocks    int
	curBlock  int
	pktOff    int // offset in ring of the next packet of the current block, 0 if none
	pktLeft   int
}

// setup sets up and maps the TPACKET_V3 ring on fd.
func (r *blockRing) setup(fd, mtu int, opts NetdevOptions) error {
	if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_VERSION, unix.TPACKET_V3); err != nil {
		return fmt.Errorf("TPACKET_V3: %w", err)
	}
	r.blocks, r.blockSize = opts.RingBlocks, opts.RingBlockSize
	if r.blocks <= 0 {
		r.blocks = ringDefaultBlocks
	}
	if r.blockSize <= 0 {
		r.blockSize = ringBlockSize
	}
	pg := os.Getpagesize()
	r.blockSize = (r.blockSize + pg - 1) / pg * pg
	if r.blockSize < 2*(MaxFrameLen/2) && r.blockSize < 14+8+mtu+256 {
		return fmt.Errorf("ring block size %d too small for MTU %d", r.blockSize, mtu)
	}
	const frameSize = 2048
	req := unix.TpacketReq3{
		Block_size:     uint32(r.blockSize),
		Block_nr:       uint32(r.blocks),
		Frame_size:     frameSize,
		Frame_nr:       uint32(r.blockSize / frameSize * r.blocks),
		Retire_blk_tov: 1, // ms: hand over a partly filled block after 1 ms
	}
	if err := unix.SetsockoptTpacketReq3(fd, unix.SOL_PACKET, unix.PACKET_RX_RING, &req); err != nil {
		return fmt.Errorf("PACKET_RX_RING: %w", err)
	}
	ring, err := unix.Mmap(fd, 0, r.blockSize*r.blocks, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return fmt.Errorf("mmap of the block ring: %w", err)
	}
	r.ring = ring
	return nil
}

func (r *blockRing) unmap() error { return unmapRing(&r.ring) }

// release gives back the current block once all its frames are out. Its
// packet count is zeroed first, so that until the kernel opens it again
// it does not look like an open block with frames (pending).
func (r *blockRing) release() {
	if r.pktLeft != 0 || r.pktOff == 0 {
		return
	}
	base := r.curBlock * r.blockSize
	atomicStore32(&r.ring[base+blkNumPktsOff], 0)
	atomicStore32(&r.ring[base+blkStatusOff], unix.TP_STATUS_KERNEL)
	r.pktOff = 0
	r.curBlock++
	if r.curBlock == r.blocks {
		r.curBlock = 0
	}
}

// ready reports whether a frame can be read now (after release): the
// current block has frames left, or the next one was handed over.
func (r *blockRing) ready() bool {
	if r.ring == nil {
		return false
	}
	if r.pktLeft > 0 {
		return true
	}
	return r.pktOff == 0 && atomicLoad32(&r.ring[r.curBlock*r.blockSize+blkStatusOff])&unix.TP_STATUS_USER != 0
}

// pending reports whether the ring holds frames not read yet, in a block
// handed over or in the one the kernel is filling (which its timer
// hands over within Retire_blk_tov).
func (r *blockRing) pending() bool {
	if r.ring == nil {
		return false
	}
	if r.ready() {
		return true
	}
	return r.pktOff == 0 && atomicLoad32(&r.ring[r.curBlock*r.blockSize+blkNumPktsOff]) != 0
}

// Offsets in a TPACKET_V2 slot header.
const (
	tp2StatusOff   = int(unsafe.Offsetof(unix.Tpacket2Hdr{}.Status))
	tp2LenOff      = int(unsafe.Offsetof(unix.Tpacket2Hdr{}.Len))
	tp2SnaplenOff  = int(unsafe.Offsetof(unix.Tpacket2Hdr{}.Snaplen))
	tp2MacOff      = int(unsafe.Offsetof(unix.Tpacket2Hdr{}.Mac))
	tp2VlanTCIOff  = int(unsafe.Offsetof(unix.Tpacket2Hdr{}.Vlan_tci))
	tp2VlanTPIDOff = int(unsafe.Offsetof(unix.Tpacket2Hdr{}.Vlan_tpid))
)

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

func u32At(b []byte, off int) uint32 { return *(*uint32)(unsafe.Pointer(&b[off])) }

func u16At(b []byte, off int) uint16 { return *(*uint16)(unsafe.Pointer(&b[off])) }

// readRing is RingPort's readFn. It delivers frames from the two lanes
// in the order a sender's frames reached the port (a sender's frames
// reach the port one after the other, and each went to the lane the
// switch word named when the fanout program ran, laneSwitch): after a
// switch, the lane switched from can only hold frames older than any of
// the lane switched to, so it is read first whenever it has something.
// Frames of one lane come in the order the kernel wrote them.
func (p *RingPort) readRing(uintptr) bool {
	p.rdN, p.rdBytes = 0, 0
	caughtUp := false
	for p.rdN < len(p.rdBufs) {
		if p.seg.active {
			// Segments of a super-frame: its slot or block is not
			// given back before the last one is out.
			p.emitSegments()
			continue
		}
		p.slots.release()
		p.bulk.release()
		if p.lanes.bulk {
			// The slot ring holds only frames from before the switch
			// to bulk. A block is looked at first: a frame in the
			// slots that came before one of its frames is there to
			// be seen once the block is, so the slots are looked at
			// again when a block is opened, not for every frame.
			if p.bulk.pktLeft > 0 {
				p.readBlockFrame()
				continue
			}
			blockReady := p.bulk.ready()
			if p.slots.ready() {
				p.readSlot()
				continue
			}
			if blockReady {
				p.readBlockFrame()
				continue
			}
			caughtUp = true
			break
		}
		// The block ring holds only frames from before the switch
		// back to slots: they go first. The slot is looked at first:
		// a frame in the block ring that came before it is there to
		// be seen (counted in the block the kernel fills) once the
		// slot is.
		slotReady := p.slots.ready()
		if p.bulk.ready() {
			p.readBlockFrame()
			continue
		}
		if !slotReady {
			caughtUp = true
			break
		}
		if p.bulk.pending() {
			// Older frames are in the block the kernel fills: wait
			// for its timer to hand it over (the block socket wakes
			// the reader).
			break
		}
		p.readSlot()
	}
	p.stats.rx(p.rdN, p.rdBytes)
	p.lanes.account(p, p.rdN, caughtUp)
	return p.rdN > 0
}

// readSlot delivers the frame in the next slot, which is ready.
func (p *RingPort) readSlot() {
	r := &p.slots
	hdr := r.cur * r.frameSize
	status := atomicLoad32(&r.ring[hdr+tp2StatusOff])
	r.held = true
	p.lanes.frames[0]++
	snap := int(u32At(r.ring, hdr+tp2SnaplenOff))
	full := int(u32At(r.ring, hdr+tp2LenOff))
	mac := int(u16At(r.ring, hdr+tp2MacOff))
	tci := u16At(r.ring, hdr+tp2VlanTCIOff)
	tpid := u16At(r.ring, hdr+tp2VlanTPIDOff)
	var frame []byte
	var vh vnetHdr
	switch {
	case status&unix.TP_STATUS_COPY != 0:
		// The whole frame is next on the socket's queue.
		n, ok := p.recvCopy()
		if !ok {
			p.dropVnet(VnetTooBig, vnetHdr{}, full)
			return
		}
		vh = decodeVnetHdr(p.slab)
		frame = p.slab[vnetHdrLen:n]
	case snap < full || mac < vnetHdrLen || mac+snap > r.frameSize:
		p.dropVnet(VnetTooBig, vnetHdr{}, full)
		return
	default:
		// tpacket_rcv writes the virtio_net_hdr just before the frame.
		vh = decodeVnetHdr(r.ring[hdr+mac-vnetHdrLen:])
		frame = r.ring[hdr+mac : hdr+mac+snap]
	}
	if status&unix.TP_STATUS_VLAN_TPID_VALID == 0 {
		tpid = header.EtherTypeVLAN
	}
	p.receive(frame, vh, status&unix.TP_STATUS_VLAN_VALID != 0, tpid, tci)
}

// recvCopy reads the frame at the head of the slot socket's queue, with
// its virtio_net_hdr, into p.slab; it returns the length read, or false
// if there was none or it did not fit.
func (p *RingPort) recvCopy() (int, bool) {
	// slotFD is valid here: the reader runs inside a read on p.file or
	// on the epoll descriptor, and Close closes p.file after the reader
	// is out in the latter case, while in the former the read holds
	// the descriptor open.
	for {
		r, _, e := unix.Syscall6(unix.SYS_RECVFROM, uintptr(p.slotFD), uintptr(unsafe.Pointer(&p.slab[0])), uintptr(len(p.slab)), unix.MSG_DONTWAIT|unix.MSG_TRUNC, 0, 0)
		if e == unix.EINTR {
			continue
		}
		n := int(r)
		return n, e == 0 && n >= vnetHdrLen && n <= len(p.slab)
	}
}

// readBlockFrame delivers the next frame of the block ring, which is
// ready.
func (p *RingPort) readBlockFrame() {
	r := &p.bulk
	if r.pktLeft == 0 {
		base := r.curBlock * r.blockSize
		r.pktLeft = int(u32At(r.ring, base+blkNumPktsOff))
		r.pktOff = base + int(u32At(r.ring, base+blkFirstPktOff))
		if r.pktLeft == 0 {
			return // an empty block (retired by timeout): released next
		}
	}
	hdr := r.pktOff
	snap := int(u32At(r.ring, hdr+tp3SnaplenOff))
	full := int(u32At(r.ring, hdr+tp3LenOff))
	status := u32At(r.ring, hdr+tp3StatusOff)
	mac := int(u16At(r.ring, hdr+tp3MacOff))
	tci := uint16(u32At(r.ring, hdr+tp3VlanTCIOff))
	tpid := u16At(r.ring, hdr+tp3VlanTPIDOff)
	next := int(u32At(r.ring, hdr+tp3NextOff))
	r.pktLeft--
	if r.pktLeft > 0 {
		r.pktOff = hdr + next
	}
	p.lanes.frames[1]++
	if snap < full || mac < vnetHdrLen || hdr+mac+snap > len(r.ring) {
		p.dropVnet(VnetTooBig, vnetHdr{}, full)
		return
	}
	// tpacket_rcv writes the virtio_net_hdr just before the frame.
	vh := decodeVnetHdr(r.ring[hdr+mac-vnetHdrLen:])
	if status&unix.TP_STATUS_VLAN_TPID_VALID == 0 {
		tpid = header.EtherTypeVLAN
	}
	p.receive(r.ring[hdr+mac:hdr+mac+snap], vh, status&unix.TP_STATUS_VLAN_VALID != 0, tpid, tci)
}

// unmapRing unmaps *ring, a ring mmapped from a packet socket, once:
// a nil ring is not mapped.
func unmapRing(ring *[]byte) error {
	if *ring == nil {
		return nil
	}
	err := unix.Munmap(*ring)
	*ring = nil
	return err
}
