package userdp

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/ovsdp/ovsdp/internal/header"
)

// superSpec describes a hand-built GSO super-frame.
type superSpec struct {
	v6      bool
	udp     bool
	ecn     bool   // gso_type has VIRTIO_NET_HDR_GSO_ECN
	ipOpts  []byte // IPv4 options (a multiple of 4 bytes)
	tcpOpts []byte // TCP options (a multiple of 4 bytes)
	flags   byte   // TCP flags
	payload int
	mss     int
	inner   bool // an in-line 802.1Q tag in the super-frame itself
}

const (
	testSeq = 0xfffff000 // wraps during the segmentation
	testID  = 0xfffe     // wraps too
)

// buildSuper returns the super-frame and its virtio_net_hdr as the
// kernel's virtio_net_hdr_from_skb would write it (NEEDS_CSUM, csum_start
// at the transport header). The checksum fields hold junk: the segmenter
// must compute them from scratch.
func buildSuper(sp superSpec) ([]byte, vnetHdr) {
	f := []byte{0x02, 0, 0, 0, 0, 0xbb, 0x02, 0, 0, 0, 0, 0xaa}
	if sp.inner {
		f = append(f, 0x81, 0x00, 0x00, 0x2a)
	}
	l4len := 20 + len(sp.tcpOpts)
	proto := byte(header.IPProtoTCP)
	if sp.udp {
		l4len, proto = 8, header.IPProtoUDP
	}
	var l3 int
	if sp.v6 {
		f = append(f, 0x86, 0xdd)
		l3 = len(f)
		ip := make([]byte, 40)
		ip[0] = 0x60
		binary.BigEndian.PutUint16(ip[4:], uint16(l4len+sp.payload))
		ip[6], ip[7] = proto, 64
		copy(ip[8:], []byte{0x20, 0x01, 0x0d, 0xb8, 15: 1})
		copy(ip[24:], []byte{0x20, 0x01, 0x0d, 0xb8, 15: 2})
		f = append(f, ip...)
	} else {
		f = append(f, 0x08, 0x00)
		l3 = len(f)
		ip := make([]byte, 20+len(sp.ipOpts))
		ip[0] = 0x40 | byte(len(ip)/4)
		binary.BigEndian.PutUint16(ip[2:], uint16(len(ip)+l4len+sp.payload))
		binary.BigEndian.PutUint16(ip[4:], testID)
		ip[6] = 0x40 // DF
		ip[8], ip[9] = 64, proto
		ip[10], ip[11] = 0xde, 0xad
		copy(ip[12:], []byte{10, 1, 2, 3, 10, 4, 5, 6})
		copy(ip[20:], sp.ipOpts)
		f = append(f, ip...)
	}
	l4 := len(f)
	th := make([]byte, l4len)
	binary.BigEndian.PutUint16(th[0:], 40000)
	binary.BigEndian.PutUint16(th[2:], 5001)
	co := 6
	if sp.udp {
		binary.BigEndian.PutUint16(th[4:], uint16(8+sp.payload))
	} else {
		binary.BigEndian.PutUint32(th[4:], testSeq)
		binary.BigEndian.PutUint32(th[8:], 0x12345678)
		th[12] = byte(l4len/4) << 4
		th[13] = sp.flags
		binary.BigEndian.PutUint16(th[14:], 512)
		binary.BigEndian.PutUint16(th[18:], 0x0102) // urgent pointer
		copy(th[20:], sp.tcpOpts)
		co = 16
	}
	th[co], th[co+1] = 0xbe, 0xef
	f = append(f, th...)
	for i := 0; i < sp.payload; i++ {
		f = append(f, byte(i*7+i/251))
	}
	gt := byte(vnetGSOTCPv4)
	switch {
	case sp.udp:
		gt = vnetGSOUDPL4
	case sp.v6:
		gt = vnetGSOTCPv6
	}
	if sp.ecn {
		gt |= vnetGSOECN
	}
	_ = l3
	return f, vnetHdr{flags: vnetFlagNeedsCsum, gsoType: gt, hdrLen: uint16(len(f) - sp.payload),
		gsoSize: uint16(sp.mss), csumStart: uint16(l4), csumOffset: uint16(co)}
}

// wantSegments computes the segments of a super-frame built by
// buildSuper independently of the segmenter (the reference checksums of
// packet_helpers_test.go), with an outer tag (4 bytes) put back when tag
// is not nil.
func wantSegments(sp superSpec, super []byte, tag []byte) [][]byte {
	l3 := 14
	if sp.inner {
		l3 = 18
	}
	var l4 int
	if sp.v6 {
		l4 = l3 + 40
	} else {
		l4 = l3 + 20 + len(sp.ipOpts)
	}
	hlen := l4 + 8
	if !sp.udp {
		hlen = l4 + 20 + len(sp.tcpOpts)
	}
	var out [][]byte
	pay := super[hlen:]
	for k := 0; k*sp.mss < len(pay) || k == 0; k++ {
		chunk := pay[k*sp.mss : min((k+1)*sp.mss, len(pay))]
		last := (k+1)*sp.mss >= len(pay)
		seg := append([]byte(nil), super[:12]...)
		seg = append(seg, tag...)
		seg = append(seg, super[12:hlen]...)
		seg = append(seg, chunk...)
		d := len(tag)
		ip := seg[l3+d:]
		th := seg[l4+d:]
		var src, dst []byte
		if sp.v6 {
			binary.BigEndian.PutUint16(ip[4:], uint16(len(ip)-40))
			src, dst = ip[8:24], ip[24:40]
		} else {
			binary.BigEndian.PutUint16(ip[2:], uint16(len(ip)))
			binary.BigEndian.PutUint16(ip[4:], uint16(testID+k))
			binary.BigEndian.PutUint16(ip[10:], refIPv4Check(ip))
			src, dst = ip[12:16], ip[16:20]
		}
		proto := uint8(header.IPProtoUDP)
		co := 6
		if sp.udp {
			binary.BigEndian.PutUint16(th[4:], uint16(len(th)))
		} else {
			proto, co = header.IPProtoTCP, 16
			binary.BigEndian.PutUint32(th[4:], uint32(testSeq+k*sp.mss))
			fl := sp.flags
			if k > 0 {
				fl &^= 0x80 // CWR
			}
			if !last {
				fl &^= 0x01 | 0x08 // FIN, PSH
			}
			th[13] = fl
		}
		binary.BigEndian.PutUint16(th[co:], refL4Check(src, dst, proto, th, co))
		out = append(out, seg)
	}
	return out
}

// segmentAll runs the segmenter over a super-frame into buffers of
// BufferSize(mtu) and returns copies of the segments.
func segmentAll(t *testing.T, super []byte, vh vnetHdr, tagged bool, tpid, tci uint16, mtu int) [][]byte {
	t.Helper()
	var s segmenter
	if r, ok := s.init(super, vh, tagged, tpid, tci, mtu); !ok {
		t.Fatalf("init refused the super-frame: %v", r)
	}
	buf := make([]byte, BufferSize(mtu))
	var out [][]byte
	for s.active {
		n := s.next(buf[DefaultHeadroom:])
		if n < 0 {
			t.Fatalf("segment %d does not fit a %d-byte buffer", len(out), len(buf)-DefaultHeadroom)
		}
		out = append(out, append([]byte(nil), buf[DefaultHeadroom:DefaultHeadroom+n]...))
	}
	return out
}

func TestSegmenter(t *testing.T) {
	const (
		fin = 0x01
		psh = 0x08
		ack = 0x10
		urg = 0x20
		ece = 0x40
		cwr = 0x80
	)
	cases := []struct {
		name string
		sp   superSpec
		tag  bool
		mtu  int
	}{
		{name: "tcp4 remainder", sp: superSpec{flags: ack | psh, payload: 3*1448 + 100, mss: 1448}},
		{name: "tcp4 exact multiple", sp: superSpec{flags: ack, payload: 4 * 1000, mss: 1000}},
		{name: "tcp4 one segment", sp: superSpec{flags: ack | psh | fin, payload: 500, mss: 1448}},
		{name: "tcp4 64k", sp: superSpec{flags: ack | psh, payload: 65535 - 40, mss: 1460}},
		{name: "tcp4 fin psh last only", sp: superSpec{flags: ack | psh | fin | urg, payload: 5000, mss: 1448}},
		{name: "tcp4 ecn cwr first only", sp: superSpec{ecn: true, flags: ack | cwr | ece | psh, payload: 5000, mss: 1448}},
		{name: "tcp4 ip options", sp: superSpec{ipOpts: []byte{0x94, 0x04, 0, 0, 1, 1, 1, 0}, flags: ack, payload: 4000, mss: 1400}},
		{name: "tcp4 tcp options", sp: superSpec{tcpOpts: []byte{1, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2}, flags: ack | psh, payload: 4000, mss: 1448}},
		{name: "tcp6", sp: superSpec{v6: true, flags: ack | psh, payload: 3*1428 + 7, mss: 1428}},
		{name: "tcp6 ecn", sp: superSpec{v6: true, ecn: true, flags: ack | cwr | fin, payload: 3000, mss: 1000}},
		{name: "udp4 uso", sp: superSpec{udp: true, payload: 3*1200 + 33, mss: 1200}},
		{name: "udp6 uso", sp: superSpec{v6: true, udp: true, payload: 2 * 1200, mss: 1200}},
		{name: "tcp4 outer tag", sp: superSpec{flags: ack | psh, payload: 4000, mss: 1448}, tag: true},
		{name: "udp6 outer tag", sp: superSpec{v6: true, udp: true, payload: 4000, mss: 1000}, tag: true},
		{name: "tcp4 inner and outer tag", sp: superSpec{inner: true, flags: ack, payload: 3000, mss: 1448}, tag: true},
		{name: "tcp4 mss fills mtu", sp: superSpec{flags: ack, payload: 5000, mss: 1460}, mtu: 1500},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			super, vh := buildSuper(c.sp)
			mtu := c.mtu
			if mtu == 0 {
				mtu = 1500
			}
			var tag []byte
			if c.tag {
				tag = []byte{0x88, 0xa8, 0x20, 0x64}
			}
			got := segmentAll(t, super, vh, c.tag, 0x88a8, 0x2064, mtu)
			want := wantSegments(c.sp, super, tag)
			if len(got) != len(want) {
				t.Fatalf("%d segments, want %d", len(got), len(want))
			}
			for i := range want {
				if !bytes.Equal(got[i], want[i]) {
					t.Errorf("segment %d of %d:\n got % x\nwant % x", i, len(want), got[i], want[i])
				}
			}
			// The payloads put together are the super-frame's.
			var pay []byte
			for _, s := range got {
				var h pktHeaders
				if err := parseHeaders(s, &h); err != nil || h.L4 < 0 {
					t.Fatalf("segment does not parse: %v", err)
				}
				hl := 8
				if !c.sp.udp {
					hl = int(s[h.L4+12]>>4) * 4
				}
				if l3 := len(s) - h.L3; l3 > mtu {
					t.Errorf("segment of %d L3 bytes exceeds the MTU %d", l3, mtu)
				}
				pay = append(pay, s[h.L4+hl:]...)
			}
			if !bytes.Equal(pay, super[int(vh.hdrLen):]) {
				t.Errorf("payloads put together differ from the super-frame's")
			}
		})
	}
}

// TestSegmenterFlags checks the TCP flag rule on its own: CWR only on the
// first segment, FIN and PSH only on the last, the rest on every one.
func TestSegmenterFlags(t *testing.T) {
	sp := superSpec{ecn: true, flags: 0xff &^ 0x02 &^ 0x04, payload: 4500, mss: 1000} // all but SYN, RST
	super, vh := buildSuper(sp)
	segs := segmentAll(t, super, vh, false, 0, 0, 1500)
	if len(segs) != 5 {
		t.Fatalf("%d segments, want 5", len(segs))
	}
	for i, s := range segs {
		fl := s[14+20+13]
		want := byte(0x10 | 0x20 | 0x40) // ACK URG ECE
		if i == 0 {
			want |= 0x80
		}
		if i == len(segs)-1 {
			want |= 0x01 | 0x08
		}
		if fl != want {
			t.Errorf("segment %d: flags %#x, want %#x", i, fl, want)
		}
	}
}

func TestSegmenterRefuses(t *testing.T) {
	good, gvh := buildSuper(superSpec{flags: 0x10, payload: 3000, mss: 1448})
	v6, v6vh := buildSuper(superSpec{v6: true, flags: 0x10, payload: 3000, mss: 1448})
	frag := append([]byte(nil), good...)
	frag[14+6] |= 0x20 // MF
	short := good[:14+20+10]
	badDoff := append([]byte(nil), good...)
	badDoff[14+20+12] = 0x40 // 16-byte TCP header
	with := func(vh vnetHdr, f func(*vnetHdr)) vnetHdr { f(&vh); return vh }
	cases := []struct {
		name  string
		frame []byte
		vh    vnetHdr
		mtu   int
		want  VnetDropReason
	}{
		{"gso_size 0", good, with(gvh, func(h *vnetHdr) { h.gsoSize = 0 }), 1500, VnetBadGSOSize},
		{"gso_size beyond the mtu", good, with(gvh, func(h *vnetHdr) { h.gsoSize = 1461 }), 1500, VnetBadGSOSize},
		{"hdr_len beyond the frame", good, with(gvh, func(h *vnetHdr) { h.hdrLen = uint16(len(good) + 1) }), 1500, VnetBadHdrLen},
		{"csum_start out of range", good, with(gvh, func(h *vnetHdr) { h.csumStart = 60000 }), 1500, VnetBadCsum},
		{"csum_offset wrong", good, with(gvh, func(h *vnetHdr) { h.csumOffset = 6 }), 1500, VnetBadCsum},
		{"ufo", good, with(gvh, func(h *vnetHdr) { h.gsoType = 3 }), 1500, VnetBadGSOType},
		{"gso_type 2", good, with(gvh, func(h *vnetHdr) { h.gsoType = 2 }), 1500, VnetBadGSOType},
		{"udp with ecn", good, with(gvh, func(h *vnetHdr) { h.gsoType = vnetGSOUDPL4 | vnetGSOECN }), 1500, VnetBadGSOType},
		{"tcpv4 on ipv6", v6, gvh, 1500, VnetBadHeaders},
		{"tcpv6 on ipv4", good, v6vh, 1500, VnetBadHeaders},
		{"udp_l4 on tcp", good, with(gvh, func(h *vnetHdr) { h.gsoType = vnetGSOUDPL4 }), 1500, VnetBadHeaders},
		{"ipv4 fragment", frag, gvh, 1500, VnetBadHeaders},
		{"tcp header cut short", short, with(gvh, func(h *vnetHdr) { h.hdrLen = 0 }), 1500, VnetBadHeaders},
		{"tcp data offset below 20", badDoff, gvh, 1500, VnetBadHeaders},
		{"not ip", make([]byte, 100), gvh, 1500, VnetBadHeaders},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var s segmenter
			r, ok := s.init(c.frame, c.vh, false, 0, 0, c.mtu)
			if ok || r != c.want || s.active {
				t.Errorf("init: %v, %v (active %v), want %v refused", r, ok, s.active, c.want)
			}
		})
	}
}

func TestVnetHdrRoundTrip(t *testing.T) {
	h := vnetHdr{flags: 1, gsoType: 0x84, hdrLen: 66, gsoSize: 1448, csumStart: 34, csumOffset: 16}
	var b [vnetHdrLen]byte
	h.encode(b[:])
	if got := decodeVnetHdr(b[:]); got != h {
		t.Errorf("decoded %+v, want %+v", got, h)
	}
}

// TestSegmenterNoAllocs: segmenting a 64 KiB super-frame allocates nothing.
func TestSegmenterNoAllocs(t *testing.T) {
	super, vh := buildSuper(superSpec{flags: 0x18, payload: 60000, mss: 1448})
	buf := make([]byte, BufferSize(1500))
	var s segmenter
	allocs := testing.AllocsPerRun(20, func() {
		s.init(super, vh, true, header.EtherTypeVLAN, 5, 1500)
		for s.active {
			s.next(buf)
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations per super-frame", allocs)
	}
}
