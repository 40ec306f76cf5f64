package crosscheck

import (
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
		h := header.IPv4(b[p.L3:])
		h.SetID(0)
		h.SetChecksum(0)
		s, d := h.SourceAddress(), h.DestinationAddress()
		src, dst = fmt.Sprint(s[:]), fmt.Sprint(d[:])
	case header.EtherTypeIPv6:
		h := header.IPv6(b[p.L3:])
		s, d := h.SourceAddress(), h.DestinationAddress()
		src, dst = fmt.Sprint(s[:]), fmt.Sprint(d[:])
	default:
		return
	}
	if p.Proto != header.IPProtoTCP || p.Fragment || p.L4Len < header.TCPMinimumSize || p.L4+header.TCPMinimumSize > len(b) {
		return
	}
	t := header.TCP(b[p.L4:])
	sp, dp := header.Ports(t).Source(), header.Ports(t).Destination()
	fwd := fmt.Sprintf("%s:%d>%s:%d", src, sp, dst, dp)
	rev := fmt.Sprintf("%s:%d>%s:%d", dst, dp, src, sp)
	seq, ack := t.SequenceNumber(), t.AckNumber()
	isn, ok := n.isn[fwd]
	if !ok {
		isn = seq
		n.isn[fwd] = seq
	}
	t.SetSequenceNumber(seq - isn)
	if t.Flags()&header.TCPFlagAck != 0 {
		if risn, ok := n.isn[rev]; ok {
			t.SetAckNumber(ack - risn)
		} else {
			// The peer's first segment was not seen here: its ISN is
			// the acknowledged number minus one.
			n.isn[rev] = ack - 1
			t.SetAckNumber(1)
		}
	}
	t.SetChecksum(0)
}
