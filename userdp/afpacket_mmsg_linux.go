package userdp

import (
	"github.com/ovsdp/ovsdp/internal/header"

	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// MmsgPort is the NetdevMmsg backend: an AF_PACKET socket read with
// recvmmsg and written with sendmmsg. Its socket, offloads, VLAN tags
// and statistics are as RingPort's.
type MmsgPort struct {
	afPacket

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
}

var _ NetdevPort = (*MmsgPort)(nil)

const ctlSpace = 64 // room for one PACKET_AUXDATA control message

// rxSlabSize is the room for one frame in MmsgPort's slabs: the longest
// frame AF_PACKET hands over (a 64 KiB GSO super-frame).
const rxSlabSize = MaxFrameLen

// openMmsg opens an MmsgPort (OpenNetdev with NetdevMmsg).
func openMmsg(name string, opts NetdevOptions) (*MmsgPort, error) {
	p := &MmsgPort{}
	if err := p.init(name, opts); err != nil {
		return nil, err
	}
	p.readFn = p.readMmsg
	p.pollFn = func(fd uintptr) {
		if st, err := unix.GetsockoptTpacketStats(int(fd), unix.SOL_PACKET, unix.PACKET_STATISTICS); err == nil {
			p.stats.RxDropped.Add(uint64(st.Drops))
		}
	}
	if err := p.open(p.setupMmsg); err != nil {
		return nil, err
	}
	return p, nil
}

// Mode returns NetdevMmsg.
func (p *MmsgPort) Mode() NetdevMode { return NetdevMmsg }

// Close closes the socket (unblocking a pending ReadBatch); the
// interface leaves promiscuous mode.
func (p *MmsgPort) Close() error {
	return p.close(func() error { p.pendNext = p.pendEnd; return nil })
}

// setupMmsg asks for the VLAN tag in a control message and makes the
// recvmmsg buffers.
func (p *MmsgPort) setupMmsg(fd int) error {
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
	return nil
}

// auxdata returns message i's VLAN tag and status from its control
// message.
func (p *MmsgPort) auxdata(i int) (vlanValid bool, tpid, tci uint16) {
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

func (p *MmsgPort) slab(i int) []byte { return p.rxSlab[i*rxSlabSize : (i+1)*rxSlabSize] }

// drainPending delivers what is left of the last recvmmsg batch (the
// segments of a super-frame and the messages in their slabs) into the
// caller's buffers from p.rdN on.
func (p *MmsgPort) drainPending() {
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

func (p *MmsgPort) readMmsg(fd uintptr) bool {
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
