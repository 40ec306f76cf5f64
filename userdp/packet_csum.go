package userdp

import "github.com/ovsdp/ovsdp/internal/header"

// completeChecksum computes the TCP or UDP checksum of an IPv4 or IPv6
// frame from scratch and stores it, for frames whose sender left the
// checksum to offload (the field then holds only the pseudo-header sum).
// The segment's length comes from the IP header's length field, not the
// frame's (which may be padded). Frames that are not TCP/UDP, later
// fragments, and frames whose lengths are inconsistent are left as they
// are. It allocates nothing.
func completeChecksum(frame []byte) {
	var h pktHeaders
	if parseHeaders(frame, &h) != nil || h.L4 < 0 || h.Frag == header.FragLater {
		return
	}
	if h.Proto != header.IPProtoTCP && h.Proto != header.IPProtoUDP {
		return
	}
	var end int
	switch h.EthType {
	case header.EtherTypeIPv4:
		end = h.L3 + int(header.IPv4(frame[h.L3:]).TotalLength())
	case header.EtherTypeIPv6:
		end = h.L3 + header.IPv6MinimumSize + int(header.IPv6(frame[h.L3:]).PayloadLength())
	default:
		return
	}
	if end > len(frame) || end < h.L4 {
		return
	}
	seg := frame[h.L4:end]
	co, _ := header.TransportChecksumOffset(h.Proto)
	if len(seg) < co+2 {
		return
	}
	var s uint64
	if h.EthType == header.EtherTypeIPv4 {
		s = header.IPv4(frame[h.L3:]).PseudoHeaderSum(h.Proto, len(seg))
	} else {
		s = header.IPv6(frame[h.L3:]).PseudoHeaderSum(h.Proto, len(seg))
	}
	seg[co], seg[co+1] = 0, 0
	c := header.Checksum(seg, s)
	if h.Proto == header.IPProtoUDP && c == 0 {
		c = 0xffff
	}
	seg[co], seg[co+1] = byte(c>>8), byte(c)
}
