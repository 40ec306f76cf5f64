package userdp

import (
	"encoding/binary"
	"testing"

	"github.com/ovsdp/ovsdp/internal/header"
)

// FuzzSegment feeds the segmenter (and the non-GSO checksum completion)
// an arbitrary virtio_net_hdr and frame: nothing panics, and every
// segment emitted fits in BufferSize(mtu), has at most mtu bytes from its
// network header on, parses as IPv4/IPv6 with the transport header where
// the super-frame had it, has consistent IP lengths and a valid
// transport checksum.
func FuzzSegment(f *testing.F) {
	for _, sp := range []superSpec{
		{flags: 0x18, payload: 3000, mss: 1448},
		{v6: true, ecn: true, flags: 0x99, payload: 2500, mss: 1000},
		{udp: true, payload: 2000, mss: 700},
		{ipOpts: []byte{1, 1, 1, 0}, inner: true, flags: 0x10, payload: 100, mss: 50},
	} {
		super, vh := buildSuper(sp)
		var b [vnetHdrLen]byte
		vh.encode(b[:])
		f.Add(b[:], super, true, uint16(1500))
	}
	f.Add(make([]byte, vnetHdrLen), []byte{1, 2, 3}, false, uint16(0))
	f.Fuzz(fuzzSegment)
}

func fuzzSegment(t *testing.T, hb, frame []byte, tagged bool, mtu16 uint16) {
	if len(hb) < vnetHdrLen {
		return
	}
	vh := decodeVnetHdr(hb)
	mtu := int(mtu16)
	if mtu < 68 {
		mtu = 68
	}
	// Not GSO: checksum completion.
	buf := make([]byte, len(frame)+4+8)
	copy(buf[8:], frame)
	finishFrame(buf, 8, len(frame), tagged, header.EtherTypeVLAN, 7, vh)

	var s segmenter
	if _, ok := s.init(frame, vh, tagged, header.EtherTypeQinQ, 9, mtu); !ok {
		if s.active {
			t.Fatal("refused but active")
		}
		return
	}
	var ph pktHeaders
	parseHeaders(frame, &ph)
	d := 0
	if tagged {
		d = 4
	}
	out := make([]byte, BufferSize(mtu))
	for k := 0; s.active; k++ {
		if k > 70000 {
			t.Fatal("segmenter does not end")
		}
		n := s.next(out)
		if n < 0 {
			t.Fatalf("segment %d does not fit BufferSize(%d)", k, mtu)
		}
		seg := out[:n]
		var h pktHeaders
		if err := parseHeaders(seg, &h); err != nil || h.L3 != ph.L3+d || h.L4 != ph.L4+d || h.Proto != ph.Proto {
			t.Fatalf("segment %d parses as %+v (%v), super-frame as %+v", k, h, err, ph)
		}
		if l := n - h.L3; l > mtu {
			t.Fatalf("segment %d: %d bytes from the network header, mtu %d", k, l, mtu)
		}
		ip := seg[h.L3:]
		var src, dst []byte
		if h.EthType == header.EtherTypeIPv4 {
			if int(binary.BigEndian.Uint16(ip[2:])) != len(ip) || refIPv4Check(ip) != binary.BigEndian.Uint16(ip[10:]) {
				t.Fatalf("segment %d: bad IPv4 length or checksum", k)
			}
			src, dst = ip[12:16], ip[16:20]
		} else {
			if int(binary.BigEndian.Uint16(ip[4:])) != len(ip)-40 {
				t.Fatalf("segment %d: bad IPv6 payload length", k)
			}
			src, dst = ip[8:24], ip[24:40]
		}
		co := 6
		if h.Proto == header.IPProtoTCP {
			co = 16
		}
		l4 := seg[h.L4:]
		if got, want := binary.BigEndian.Uint16(l4[co:]), refL4Check(src, dst, h.Proto, l4, co); got != want && !(h.Proto == header.IPProtoTCP && got == 0xffff && want == 0) {
			t.Fatalf("segment %d: checksum %#x, want %#x", k, got, want)
		}
	}
}
