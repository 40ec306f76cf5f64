package crosscheck

import (
	"encoding/binary"
	"fmt"

	"github.com/ovsdp/ovsdp/internal/header"
)

// Normalizer rewrites, in place, the parts of frames that legitimately
// differ from run to run (chosen by the sending host's network stack,
// not by the datapath). It sees the frames of one host in arrival order
// and may keep state across them (TCP initial sequence numbers).
type Normalizer interface {
	Normalize(frame []byte)
}

// StackNormalizer normalizes frames sent by Linux network stacks: the
// IPv4 identification (random per boot and destination) and, for TCP,
// the sequence and acknowledgement numbers, made relative to the first
// sequence number seen in each direction of each connection. The
// checksums that covered the rewritten fields are zeroed: Describe and
// VerifyChecksums must be applied before normalizing, and are by Play.
type StackNormalizer struct {
	isn map[string]uint32
}

// NewStackNormalizer returns a StackNormalizer with no connections seen.
func NewStackNormalizer() *StackNormalizer {
	return &StackNormalizer{isn: map[string]uint32{}}
}

// Normalize implements Normalizer.
func (n *StackNormalizer) Normalize(b []byte) {
	p := Parse(b)
	if p.L3 < 0 {
		return
	}
	var src, dst string
	switch p.EthType {
	case header.EtherTypeIPv4:
		h := b[p.L3:]
		binary.BigEndian.PutUint16(h[4:], 0)  // ID
		binary.BigEndian.PutUint16(h[10:], 0) // header checksum
		src, dst = fmt.Sprint(h[12:16]), fmt.Sprint(h[16:20])
	case header.EtherTypeIPv6:
		h := b[p.L3:]
		src, dst = fmt.Sprint(h[8:24]), fmt.Sprint(h[24:40])
	default:
		return
	}
	if p.Proto != header.IPProtoTCP || p.Fragment || p.L4Len < 20 || p.L4+20 > len(b) {
		return
	}
	t := b[p.L4:]
	sp, dp := binary.BigEndian.Uint16(t), binary.BigEndian.Uint16(t[2:])
	fwd := fmt.Sprintf("%s:%d>%s:%d", src, sp, dst, dp)
	rev := fmt.Sprintf("%s:%d>%s:%d", dst, dp, src, sp)
	seq, ack := binary.BigEndian.Uint32(t[4:]), binary.BigEndian.Uint32(t[8:])
	isn, ok := n.isn[fwd]
	if !ok {
		isn = seq
		n.isn[fwd] = seq
	}
	binary.BigEndian.PutUint32(t[4:], seq-isn)
	if t[13]&header.TCPFlagAck != 0 {
		if risn, ok := n.isn[rev]; ok {
			binary.BigEndian.PutUint32(t[8:], ack-risn)
		} else {
			// The peer's first segment was not seen here: its ISN is
			// the acknowledged number minus one.
			n.isn[rev] = ack - 1
			binary.BigEndian.PutUint32(t[8:], 1)
		}
	}
	binary.BigEndian.PutUint16(t[16:], 0)
}
