package conntrack

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/ovsdp/ovsdp/internal/header"
)

// Output of a reassembled datagram, as the kernel's do_output and
// ovs_fragment (net/openvswitch/actions.c) over ip_do_fragment and
// ip6_fragment:
//
//   - A frame no longer than the MRU plus the port's link-layer header
//     (14 bytes for Ethernet) goes out whole (NeedsRefragment is false).
//   - Otherwise, if the MRU is above the port's MTU, it is dropped
//     (ErrFragMTU).
//   - Otherwise it is fragmented again. The kernel keeps the fragments
//     it reassembled (the skb's frag_list) and, on the fast path, sends
//     each with its own data length again, in offset order; it takes the
//     slow path, cutting the data into pieces of the MRU (IPv4) or of
//     max(MRU, 1280) (IPv6) less the headers, multiples of 8 but the
//     last, when the datagram was cloned (an output that is not the
//     datapath action list's last one outputs a clone) or the
//     fragments' geometry does not fit.
//   - IPv4 fragments carry the datagram's header (NAT's changes
//     included, options copied whole, as ovs_fragment leaves the
//     options length unset) with the offset, MF on all but the last, no
//     DF, the total length and a new checksum. IPv6 fragments carry the
//     unfragmentable part (ip6_find_1stfragopt: hop-by-hop options,
//     routing, destination options before a routing header) and a
//     fragment header.
//
// The clone rule is the kernel's skb_cloned test: a packet is fragmented
// on the slow path while another clone of it is alive. The userspace
// datapath takes it for every output but its action list's last one
// (the kernel's output clone, fragmented and freed at once); it does not
// model the other clones the kernel may still hold at an output (a
// recirculation deferred by an earlier recirc action, the packet of an
// enclosing clone or sample), where the kernel takes the slow path too.
//
// One difference is kept on purpose: the kernel gives IPv6 fragments a
// new identification (ipv6_select_ident, a keyed hash with a counter,
// which cannot be reproduced); these keep the original fragments' one,
// as Open vSwitch's userspace reassembler does.

// ErrFragMTU: the datagram's MRU is above the output port's MTU (the
// kernel drops it).
var ErrFragMTU = errors.New("conntrack: reassembled datagram's MRU exceeds the port's MTU")

// ipv6MinMTU is IPV6_MIN_MTU.
const ipv6MinMTU = 1280

// NeedsRefragment reports whether a frame whose kernel skb->len is
// skbLen, reassembled with fi, must be fragmented before output on a
// port whose link-layer header has hhLen bytes.
func (fi *FragInfo) NeedsRefragment(skbLen, hhLen int) bool {
	return fi.MRU != 0 && skbLen > int(fi.MRU)+hhLen
}

// Fragmenter fragments reassembled datagrams for output; its buffer is
// reused, so a frame it emits is valid only during the emit call. The
// zero value is ready to use; it is not safe for concurrent use.
type Fragmenter struct {
	buf []byte
}

// Fragment splits frame (a link-layer header, then the IP datagram at
// l3) that was reassembled with fi for output on a port of L3 MTU mtu,
// calling emit with each fragment's frame. cloned says the kernel would
// output a clone (the slow path).
func (f *Fragmenter) Fragment(frame []byte, l3 int, fi *FragInfo, mtu int, cloned bool, emit func([]byte)) error {
	if int(fi.MRU) > mtu {
		return fmt.Errorf("%w: MRU %d, MTU %d", ErrFragMTU, fi.MRU, mtu)
	}
	if l3 < 0 || l3 > len(frame) {
		return fmt.Errorf("%w: no IP header to fragment", ErrFragInvalid)
	}
	ip := frame[l3:]
	if fi.V6 {
		return f.fragment6(frame[:l3], ip, fi, cloned, emit)
	}
	return f.fragment4(frame[:l3], ip, fi, cloned, emit)
}

// frame returns the scratch buffer with room for n bytes.
func (f *Fragmenter) frame(n int) []byte {
	if cap(f.buf) < n {
		f.buf = make([]byte, max(n, 2048))
	}
	return f.buf[:n]
}

// pieces calls fn with the offset and length of each fragment's data:
// the original sizes when the fast path applies, else slices of at
// most maxData (multiples of 8 but the last).
func pieces(total, maxData int, sizes []uint16, cloned bool, fn func(off, n int, last bool)) {
	fast := !cloned && sizes != nil
	if fast {
		sum := 0
		for i, s := range sizes {
			if int(s) > maxData || (i < len(sizes)-1 && s&7 != 0) {
				fast = false
				break
			}
			sum += int(s)
		}
		fast = fast && sum == total
	}
	if fast {
		off := 0
		for i, s := range sizes {
			fn(off, int(s), i == len(sizes)-1)
			off += int(s)
		}
		return
	}
	for off := 0; off < total; {
		n := min(total-off, maxData)
		if n < total-off {
			n &^= 7
		}
		fn(off, n, off+n == total)
		off += n
	}
}

func (f *Fragmenter) fragment4(l2, ip []byte, fi *FragInfo, cloned bool, emit func([]byte)) error {
	if len(ip) < header.IPv4MinimumSize || ip[0]>>4 != 4 {
		return fmt.Errorf("%w: an IPv4 header of %d bytes", ErrFragInvalid, len(ip))
	}
	hl := int(ip[0]&0x0f) * 4
	tl := int(binary.BigEndian.Uint16(ip[header.IPv4TotalLenOffset:]))
	if hl < header.IPv4MinimumSize || tl < hl || tl > len(ip) {
		return fmt.Errorf("%w: IPv4 header length %d, total length %d, %d bytes", ErrFragInvalid, hl, tl, len(ip))
	}
	maxData := int(fi.MRU) - hl
	if maxData < 8 {
		return fmt.Errorf("%w: MRU %d leaves no room after a %d-byte header", ErrFragMTU, fi.MRU, hl)
	}
	data := ip[hl:tl]
	pieces(len(data), maxData, fi.Sizes, cloned, func(off, n int, last bool) {
		b := f.frame(len(l2) + hl + n)
		copy(b, l2)
		h := b[len(l2):]
		copy(h, ip[:hl])
		copy(h[hl:], data[off:off+n])
		binary.BigEndian.PutUint16(h[header.IPv4TotalLenOffset:], uint16(hl+n))
		fo := uint16(off >> 3)
		if !last {
			fo |= header.IPv4FlagMoreFragments
		}
		binary.BigEndian.PutUint16(h[header.IPv4FlagsFragOffset:], fo)
		binary.BigEndian.PutUint16(h[header.IPv4ChecksumOffset:], 0)
		binary.BigEndian.PutUint16(h[header.IPv4ChecksumOffset:], header.Checksum(h[:hl], 0))
		emit(b)
	})
	return nil
}

// unfragmentable returns the length of an IPv6 packet's unfragmentable
// part and the offset of the next-header byte that ends it
// (ip6_find_1stfragopt).
func unfragmentable(ip []byte) (n, nhOff int, err error) {
	off, nhOff := header.IPv6MinimumSize, header.IPv6NextHeaderOffset
	routing := false
	for {
		switch ip[nhOff] {
		case 0:
		case 43:
			routing = true
		case 60:
			if routing {
				return off, nhOff, nil
			}
		default:
			return off, nhOff, nil
		}
		if off+8 > len(ip) {
			return 0, 0, fmt.Errorf("%w: an IPv6 extension header cut short", ErrFragInvalid)
		}
		nhOff, off = off, off+(int(ip[off+1])+1)*8
	}
}

func (f *Fragmenter) fragment6(l2, ip []byte, fi *FragInfo, cloned bool, emit func([]byte)) error {
	if len(ip) < header.IPv6MinimumSize || ip[0]>>4 != 6 {
		return fmt.Errorf("%w: an IPv6 header of %d bytes", ErrFragInvalid, len(ip))
	}
	tl := header.IPv6MinimumSize + int(binary.BigEndian.Uint16(ip[header.IPv6PayloadLenOffset:]))
	if tl > len(ip) {
		return fmt.Errorf("%w: IPv6 payload length %d, %d bytes", ErrFragInvalid, tl-header.IPv6MinimumSize, len(ip))
	}
	ip = ip[:tl]
	hl, nhOff, err := unfragmentable(ip)
	if err != nil {
		return err
	}
	if hl > tl {
		return fmt.Errorf("%w: IPv6 extension headers beyond the payload", ErrFragInvalid)
	}
	mtu := max(int(fi.MRU), ipv6MinMTU)
	maxData := mtu - hl - header.IPv6FragmentHdrSize
	if maxData < 8 {
		return fmt.Errorf("%w: MTU %d leaves no room after %d bytes of headers", ErrFragMTU, mtu, hl)
	}
	next := ip[nhOff]
	data := ip[hl:]
	pieces(len(data), maxData, fi.Sizes, cloned, func(off, n int, last bool) {
		b := f.frame(len(l2) + hl + header.IPv6FragmentHdrSize + n)
		copy(b, l2)
		h := b[len(l2):]
		copy(h, ip[:hl])
		h[nhOff] = 44
		fh := h[hl:]
		fh[0], fh[1] = next, 0
		fo := uint16(off)
		if !last {
			fo |= 1
		}
		binary.BigEndian.PutUint16(fh[2:], fo)
		binary.BigEndian.PutUint32(fh[4:], fi.ID)
		copy(fh[header.IPv6FragmentHdrSize:], data[off:off+n])
		binary.BigEndian.PutUint16(h[header.IPv6PayloadLenOffset:], uint16(hl-header.IPv6MinimumSize+header.IPv6FragmentHdrSize+n))
		emit(b)
	})
	return nil
}
