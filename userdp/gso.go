package userdp

import (
	"encoding/binary"
	"fmt"

	"github.com/ovsdp/ovsdp/internal/header"
)

// Receive offloads: a frame read from an AF_PACKET socket with
// PACKET_VNET_HDR comes with a virtio_net_hdr that says whether it is a
// GSO super-frame (a TCP or UDP packet of up to 64 KiB that the sender
// left to be cut into gso_size pieces) and whether its TCP/UDP checksum
// is still to be computed (the field then holds only the pseudo-header
// sum). The datapath works on MTU-sized frames with complete checksums,
// so the netdev port segments super-frames and completes checksums in
// software here, before the frames enter the datapath.

// vnetHdrLen is the size of struct virtio_net_hdr (without num_buffers).
const vnetHdrLen = 10

// virtio_net_hdr flags and gso types (include/uapi/linux/virtio_net.h).
const (
	vnetFlagNeedsCsum = 1
	vnetGSONone       = 0
	vnetGSOTCPv4      = 1
	vnetGSOTCPv6      = 4
	vnetGSOUDPL4      = 5
	vnetGSOECN        = 0x80
)

// TCP flag bits the segmentation treats specially.
const (
	tcpFIN = 0x01
	tcpPSH = 0x08
	tcpCWR = 0x80
)

// vnetHdr is a struct virtio_net_hdr. AF_PACKET reads and writes it in
// the host's byte order (the kernel's vio_le() is the CPU's endianness).
type vnetHdr struct {
	flags      uint8
	gsoType    uint8
	hdrLen     uint16
	gsoSize    uint16
	csumStart  uint16
	csumOffset uint16
}

// decodeVnetHdr reads a virtio_net_hdr from b (at least vnetHdrLen bytes).
func decodeVnetHdr(b []byte) vnetHdr {
	_ = b[vnetHdrLen-1]
	return vnetHdr{
		flags:      b[0],
		gsoType:    b[1],
		hdrLen:     binary.NativeEndian.Uint16(b[2:]),
		gsoSize:    binary.NativeEndian.Uint16(b[4:]),
		csumStart:  binary.NativeEndian.Uint16(b[6:]),
		csumOffset: binary.NativeEndian.Uint16(b[8:]),
	}
}

// encode writes h to b (at least vnetHdrLen bytes) in host byte order.
func (h vnetHdr) encode(b []byte) {
	_ = b[vnetHdrLen-1]
	b[0], b[1] = h.flags, h.gsoType
	binary.NativeEndian.PutUint16(b[2:], h.hdrLen)
	binary.NativeEndian.PutUint16(b[4:], h.gsoSize)
	binary.NativeEndian.PutUint16(b[6:], h.csumStart)
	binary.NativeEndian.PutUint16(b[8:], h.csumOffset)
}

// VnetDropReason says why a netdev port dropped a received frame because
// of its virtio_net_hdr (see RingPort.OffloadStats).
type VnetDropReason int

// The reasons. Each dropped frame is also counted in RxErrors.
const (
	// VnetBadGSOType: a gso_type the port does not segment (only
	// TCPV4, TCPV6, either with ECN, and UDP_L4 are).
	VnetBadGSOType VnetDropReason = iota
	// VnetBadGSOSize: gso_size is 0, or segments of that size would be
	// longer than the interface's MTU.
	VnetBadGSOSize
	// VnetBadHdrLen: hdr_len is beyond the end of the frame.
	VnetBadHdrLen
	// VnetBadCsum: csum_start/csum_offset point beyond the frame (or,
	// for a GSO frame, not at its transport header).
	VnetBadCsum
	// VnetBadHeaders: the frame does not carry the headers its
	// gso_type names (e.g. TCPV4 on a frame that is not IPv4/TCP, an
	// IPv4 fragment, a TCP header cut short).
	VnetBadHeaders
	// VnetTooBig: a frame (or one of its segments) does not fit in the
	// caller's buffer or the port's receive buffer.
	VnetTooBig
	numVnetDropReasons
)

// String names the reason.
func (r VnetDropReason) String() string {
	if s, ok := vnetDropReasonNames[r]; ok {
		return s
	}
	return fmt.Sprintf("VnetDropReason(%d)", int(r))
}

var vnetDropReasonNames = map[VnetDropReason]string{VnetBadGSOType: "unknown gso_type", VnetBadGSOSize: "bad gso_size", VnetBadHdrLen: "hdr_len beyond the frame", VnetBadCsum: "csum_start/csum_offset out of range", VnetBadHeaders: "headers do not match gso_type", VnetTooBig: "frame does not fit the buffer"}

// segmenter cuts one GSO super-frame into MTU-sized frames, as the
// kernel's software GSO (tcp_gso_segment, __udp_gso_segment and the IP
// layers' gso_segment) would: every segment gets the super-frame's
// headers with the IPv4 total length and header checksum, the IPv4 ID
// (incremented per segment), the IPv6 payload length, the TCP sequence
// number or UDP length fixed, and a complete TCP/UDP checksum computed
// from scratch. CWR stays only on the first TCP segment, FIN and PSH only
// on the last. An outer VLAN tag that the kernel took out of the frame
// can be put back in every segment. The zero value is idle; it keeps a
// reference to the source frame until the last segment is taken.
type segmenter struct {
	src    []byte // the super-frame, without the out-of-band VLAN tag
	tag    [4]byte
	tagged bool
	l3     int // offset of the IP header in src
	l4     int // offset of the transport header in src
	hlen   int // end of the transport header in src
	mss    int
	v6     bool
	tcp    bool
	off    int // offset in src of the next segment's payload
	seq    uint32
	id     uint16
	flags  byte // the super-frame's TCP flags
	active bool
	segs   int // segments emitted so far
}

// init validates a received frame's virtio_net_hdr h for segmentation
// and prepares s to emit its segments. tagged, tpid and tci give an
// outer VLAN tag to put back in each segment; mtu (if positive) bounds
// each segment's L3 length. On failure s stays idle and the reason is
// returned (ok false).
func (s *segmenter) init(src []byte, h vnetHdr, tagged bool, tpid, tci uint16, mtu int) (reason VnetDropReason, ok bool) {
	*s = segmenter{}
	gt := h.gsoType &^ vnetGSOECN
	switch {
	case gt == vnetGSOTCPv4 || gt == vnetGSOTCPv6:
		s.tcp = true
	case gt == vnetGSOUDPL4 && h.gsoType&vnetGSOECN == 0:
	default:
		return VnetBadGSOType, false
	}
	if h.gsoSize == 0 {
		return VnetBadGSOSize, false
	}
	if int(h.hdrLen) > len(src) {
		return VnetBadHdrLen, false
	}
	var ph pktHeaders
	if parseHeaders(src, &ph) != nil || ph.L4 < 0 || ph.Frag != header.FragNone {
		return VnetBadHeaders, false
	}
	switch {
	case gt == vnetGSOTCPv4 && ph.EthType == header.EtherTypeIPv4 && ph.Proto == header.IPProtoTCP:
	case gt == vnetGSOTCPv6 && ph.EthType == header.EtherTypeIPv6 && ph.Proto == header.IPProtoTCP:
		s.v6 = true
	case gt == vnetGSOUDPL4 && ph.Proto == header.IPProtoUDP && (ph.EthType == header.EtherTypeIPv4 || ph.EthType == header.EtherTypeIPv6):
		s.v6 = ph.EthType == header.EtherTypeIPv6
	default:
		return VnetBadHeaders, false
	}
	s.l3, s.l4 = ph.L3, ph.L4
	if s.tcp {
		if len(src) < s.l4+header.TCPMinimumSize {
			return VnetBadHeaders, false
		}
		t := header.TCP(src[s.l4:])
		doff := t.DataOffset()
		if doff < header.TCPMinimumSize || len(src) < s.l4+doff {
			return VnetBadHeaders, false
		}
		s.hlen = s.l4 + doff
		s.seq = t.SequenceNumber()
		s.flags = t[header.TCPFlagsOffset]
	} else {
		if len(src) < s.l4+header.UDPMinimumSize {
			return VnetBadHeaders, false
		}
		s.hlen = s.l4 + header.UDPMinimumSize
	}
	if h.flags&vnetFlagNeedsCsum != 0 {
		co, _ := header.TransportChecksumOffset(ph.Proto)
		if int(h.csumStart) != s.l4 || int(h.csumOffset) != co {
			return VnetBadCsum, false
		}
	}
	s.mss = int(h.gsoSize)
	if mtu > 0 && s.hlen-s.l3+s.mss > mtu {
		return VnetBadGSOSize, false
	}
	if !s.v6 {
		s.id = header.IPv4(src[s.l3:]).ID()
	}
	if tagged {
		s.tagged = true
		tag := header.VLAN(s.tag[:])
		tag.SetTPID(tpid)
		tag.SetTCI(tci)
	}
	s.src = src
	s.off = s.hlen
	s.active = true
	return 0, true
}

// maxSegLen is the length of the longest segment s emits.
func (s *segmenter) maxSegLen() int {
	n := s.hlen + min(s.mss, len(s.src)-s.hlen)
	if s.tagged {
		n += 4
	}
	return n
}

// next writes the next segment to dst and returns its length, or -1 if
// it does not fit (the segment is then skipped). After the last segment
// s is idle again.
func (s *segmenter) next(dst []byte) int {
	chunk := min(s.mss, len(s.src)-s.off)
	first := s.off == s.hlen
	last := s.off+chunk >= len(s.src)
	d := 0
	if s.tagged {
		d = 4
	}
	total := s.hlen + d + chunk
	n := -1
	if total <= len(dst) {
		n = s.build(dst[:total], s.off, chunk, first, last, d)
	}
	s.off += chunk
	s.segs++
	if last {
		s.active = false
		s.src = nil
	}
	return n
}

// build fills seg (exactly the segment's length) with the headers, the
// payload s.src[payOff:payOff+chunk] and the fixed fields.
func (s *segmenter) build(seg []byte, payOff, chunk int, first, last bool, d int) int {
	src := s.src
	copy(seg[:12], src[:12])
	if d != 0 {
		copy(seg[12:16], s.tag[:])
	}
	copy(seg[12+d:], src[12:s.hlen])
	copy(seg[s.hlen+d:], src[payOff:payOff+chunk])
	l3, l4 := s.l3+d, s.l4+d
	var sum uint64
	if s.v6 {
		ip := header.IPv6(seg[l3:])
		ip.SetPayloadLength(uint16(len(seg) - l3 - header.IPv6MinimumSize))
		sum = ip.PseudoHeaderSum(0, 0)
	} else {
		ip := header.IPv4(seg[l3:])
		ip.SetTotalLength(uint16(len(seg) - l3))
		ip.SetID(s.id + uint16(s.segs))
		ip = ip[:ip.HeaderLength()]
		ip.SetChecksum(ip.CalculateChecksum())
		sum = ip.PseudoHeaderSum(0, 0)
	}
	l4b := seg[l4:]
	var co int
	if s.tcp {
		binary.BigEndian.PutUint32(l4b[4:], s.seq+uint32(payOff-s.hlen))
		f := s.flags
		if !first {
			f &^= tcpCWR
		}
		if !last {
			f &^= tcpFIN | tcpPSH
		}
		l4b[header.TCPFlagsOffset] = f
		co = header.TCPChecksumOffset
		sum += header.IPProtoTCP
	} else {
		header.UDP(l4b).SetLength(uint16(len(l4b)))
		co = header.UDPChecksumOffset
		sum += header.IPProtoUDP
	}
	sum += uint64(len(l4b))
	l4b[co], l4b[co+1] = 0, 0
	c := header.Checksum(l4b, sum)
	if !s.tcp && c == 0 {
		c = 0xffff
	}
	binary.BigEndian.PutUint16(l4b[co:], c)
	return len(seg)
}

// completeCsum finishes the checksum a sender left to offload
// (VIRTIO_NET_HDR_F_NEEDS_CSUM), as the kernel's skb_checksum_help would
// before the frame leaves: the one's complement sum of frame[start:]
// (whose checksum field, at start+off, holds the pseudo-header sum) is
// stored at start+off, 0 sent as 0xffff. An SCTP packet (the kernel
// marks its CRC32c offload the same way, with csum_offset 8) gets its
// CRC32c instead. It reports false when the field is not inside the
// frame.
func completeCsum(frame []byte, start, off int) bool {
	if start < 0 || off < 0 || start+off+2 > len(frame) {
		return false
	}
	if off == 8 {
		var h pktHeaders
		if parseHeaders(frame, &h) == nil && h.L4 == start && h.Proto == header.IPProtoSCTP {
			sh := header.SCTP(frame[start:])
			sh.SetChecksum(sh.CalculateChecksum())
			return true
		}
	}
	c := header.Checksum(frame[start:], 0)
	if c == 0 {
		c = 0xffff
	}
	binary.BigEndian.PutUint16(frame[start+off:], c)
	return true
}
