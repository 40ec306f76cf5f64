package userdp

import (
	"github.com/ovsdp/ovsdp/internal/header"

	"fmt"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// RingPort is the NetdevRing backend: an AF_PACKET socket that reads
// from a memory-mapped TPACKET_V3 receive ring, copying frames out of the
// ring into the caller's buffers a whole block of frames per wake-up, and
// writes with sendmmsg. What follows holds for MmsgPort too.
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
//     block is held until the last segment is out) or into a per-message
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

	ring      []byte
	blockSize int
	blocks    int
	curBlock  int
	pktOff    int // offset in ring of the next packet of the current block, 0 if none
	pktLeft   int
}

var _ NetdevPort = (*RingPort)(nil)

// openRing opens a RingPort (OpenNetdev with NetdevRing).
func openRing(name string, opts NetdevOptions) (*RingPort, error) {
	p := &RingPort{}
	if err := p.init(name, opts); err != nil {
		return nil, err
	}
	p.readFn = func(uintptr) bool { return p.readRing() }
	p.pollFn = func(fd uintptr) {
		if st, err := unix.GetsockoptTpacketStatsV3(int(fd), unix.SOL_PACKET, unix.PACKET_STATISTICS); err == nil {
			p.stats.RxDropped.Add(uint64(st.Drops))
		}
	}
	if err := p.open(func(fd int) error { return p.setupRing(fd, opts) }); err != nil {
		p.unmap()
		return nil, err
	}
	return p, nil
}

// Mode returns NetdevRing.
func (p *RingPort) Mode() NetdevMode { return NetdevRing }

// Close closes the socket (unblocking a pending ReadBatch) and releases
// the ring; the interface leaves promiscuous mode.
func (p *RingPort) Close() error { return p.close(p.unmap) }

// unmap releases the ring.
func (p *RingPort) unmap() error {
	if p.ring == nil {
		return nil
	}
	err := unix.Munmap(p.ring)
	p.ring = nil
	return err
}

// setupRing sets up and maps the TPACKET_V3 receive ring.
func (p *RingPort) setupRing(fd int, opts NetdevOptions) error {
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
	return nil
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

func (p *RingPort) u32(off int) uint32 {
	return *(*uint32)(unsafe.Pointer(&p.ring[off]))
}

func (p *RingPort) readRing() bool {
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
