package userdp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/ovsdp/ovsdp/internal/header"
)

// The AF_PACKET backends, RingPort (afpacket_ring_linux.go) and MmsgPort
// (afpacket_mmsg_linux.go), share what is here: the socket's set-up, the
// virtio_net_hdr receive offloads (GSO segmentation and checksum
// completion, gso.go), VLAN tag recovery, the sendmmsg writer and the
// egress program that sends the outer VLAN tag out of band
// (vlantx_linux.go).
//
// The contract they share (offloads, VLAN tags, statistics) is stated
// on RingPort.

// afPacket is the state the AF_PACKET backends share.
type afPacket struct {
	netdevBase

	rdBytes uint64 // bytes delivered by the current read

	// The GSO super-frame being segmented (gso.go), from the ring or a
	// slab; its remaining segments go to the next ReadBatch when the
	// caller's buffers run out.
	seg    segmenter
	offl   offloadCounters
	txVnet [vnetHdrLen]byte // the zero virtio_net_hdr sent before every frame
	// The socket WriteBatch sends on (openTx), -1 before it is made or
	// after Close, and the poll(2) waiter its writes wait in.
	txFd   int
	txWait *fdWaiter
	// sendmmsg state: two iovecs per message, txVnet and the frame.
	txHdrs []unix.Mmsghdr
	txIov  []unix.Iovec
	txN    int // messages to send in txHdrs
	txSent int
	txErr  error

	// The egress program that sends the outer VLAN tag out of band
	// (vlantx_linux.go), or why there is none.
	vlanTx    *vlanTx
	vlanTxErr error
}

// open makes the port's AF_PACKET socket: bound to the interface, with
// the options both backends need, and those that setup (the backend's,
// run before the bind) sets. The backend sets readFn and pollFn.
func (p *afPacket) open(setup func(fd int) error) error {
	// Protocol 0: nothing is received until bind, so no frame from
	// another interface is queued before the socket is bound.
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("userdp: netdev %s: AF_PACKET socket: %w", p.name, err)
	}
	if err := p.setup(fd, setup); err != nil {
		unix.Close(fd)
		return fmt.Errorf("userdp: netdev %s: %w", p.name, err)
	}
	if err := p.adopt(fd, "afpacket"); err != nil {
		return fmt.Errorf("userdp: netdev %s: %w", p.name, err)
	}
	if err := p.openTx(); err != nil {
		p.file.Close()
		return fmt.Errorf("userdp: netdev %s: %w", p.name, err)
	}
	p.writeFn = p.doWrite
	p.vlanTx, p.vlanTxErr = attachVLANTx(p.ifindex)
	return nil
}

func (p *afPacket) setup(fd int, backend func(fd int) error) error {
	if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_IGNORE_OUTGOING, 1); err != nil {
		return fmt.Errorf("PACKET_IGNORE_OUTGOING: %w", err)
	}
	mreq := unix.PacketMreq{Ifindex: int32(p.ifindex), Type: unix.PACKET_MR_PROMISC}
	if err := unix.SetsockoptPacketMreq(fd, unix.SOL_PACKET, unix.PACKET_ADD_MEMBERSHIP, &mreq); err != nil {
		return fmt.Errorf("promiscuous mode: %w", err)
	}
	unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, 4<<20)
	unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUF, 4<<20)
	// Before the ring is set up (the kernel refuses it after).
	if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_VNET_HDR, 1); err != nil {
		return fmt.Errorf("PACKET_VNET_HDR: %w", err)
	}
	if err := backend(fd); err != nil {
		return err
	}
	p.txHdrs = make([]unix.Mmsghdr, p.batch)
	p.txIov = make([]unix.Iovec, 2*p.batch)
	sa := unix.RawSockaddrLinklayer{Family: unix.AF_PACKET, Protocol: header.Htons(unix.ETH_P_ALL), Ifindex: int32(p.ifindex)}
	if _, _, e := unix.Syscall(unix.SYS_BIND, uintptr(fd), uintptr(unsafe.Pointer(&sa)), unsafe.Sizeof(sa)); e != 0 {
		return fmt.Errorf("bind to ifindex %d: %w", p.ifindex, e)
	}
	return nil
}

// openTx makes the socket that WriteBatch sends on: a second AF_PACKET
// socket on the interface, bound with protocol 0 (so it receives
// nothing) and with PACKET_VNET_HDR as the receiving socket has, outside
// Go's poller; its writes wait for room in poll(2) (fdWaiter).
//
// Why a socket of its own: a socket in Go's poller is in the runtime's
// epoll set for good (with EPOLLOUT), so every transmitted frame, when
// the receiver frees it (sock_wfree: sock_def_write_space), ran epoll's
// callback for the sending socket and made the runtime's netpoll return
// that socket as writable: in `perf record -g` of the forwarder in
// BenchmarkForwardVeth's ring phase, sock_wfree was 13.5% of its samples
// and runtime.netpoll (epoll_pwait) 17.8%. A socket outside any epoll
// set has no sleeper on its wait queue unless a write waits for room.
// The receiving socket's PACKET_IGNORE_OUTGOING keeps it from seeing
// these frames as it kept it from seeing its own; the egress program
// (vlantx_linux.go) runs on the interface, whichever socket sent.
func (p *afPacket) openTx() error {
	p.txFd = -1
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("AF_PACKET transmit socket: %w", err)
	}
	fail := func(err error) error {
		unix.Close(fd)
		return err
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_VNET_HDR, 1); err != nil {
		return fail(fmt.Errorf("transmit socket: PACKET_VNET_HDR: %w", err))
	}
	unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUF, 4<<20)
	sa := unix.RawSockaddrLinklayer{Family: unix.AF_PACKET, Ifindex: int32(p.ifindex)}
	if _, _, e := unix.Syscall(unix.SYS_BIND, uintptr(fd), uintptr(unsafe.Pointer(&sa)), unsafe.Sizeof(sa)); e != 0 {
		return fail(fmt.Errorf("transmit socket: bind to ifindex %d: %w", p.ifindex, e))
	}
	w, err := newFdWaiter()
	if err != nil {
		return fail(fmt.Errorf("transmit socket: %w", err))
	}
	p.txFd, p.txWait = fd, w
	return nil
}

// closeTx closes the transmit socket once no WriteBatch is running in
// it (a write waiting for room is woken). The port is marked closed.
func (p *afPacket) closeTx() error {
	if p.txWait == nil {
		return nil
	}
	err := p.txWait.wake()
	p.wrMu.Lock()
	defer p.wrMu.Unlock()
	if e := unix.Close(p.txFd); e != nil && err == nil {
		err = fmt.Errorf("closing the transmit socket: %w", e)
	}
	if e := p.txWait.close(); e != nil && err == nil {
		err = e
	}
	p.txFd, p.txWait = -1, nil
	return err
}

// close closes the socket (unblocking a pending ReadBatch) and detaches
// the egress program; the interface leaves promiscuous mode. release,
// run with the reader shut out, frees what the backend's reads use.
func (p *afPacket) close(release func() error) error {
	if !p.markClosed() {
		return nil
	}
	p.vlanTx.detach()
	err := p.file.Close()
	if e := p.closeTx(); e != nil && err == nil {
		err = e
	}
	p.rdMu.Lock()
	if e := release(); e != nil && err == nil {
		err = e
	}
	p.seg = segmenter{} // it may point into the ring
	p.rdMu.Unlock()
	return p.closeErr(err)
}

// txLen is the length the interface counts for a transmitted frame, as
// the kernel's vport reports the device's tx_bytes: skb->len, without
// an outer VLAN tag sent out of band.
func (p *afPacket) txLen(frame []byte) int {
	if p.vlanTx != nil {
		return skbLen(frame)
	}
	return len(frame)
}

// VLANTxOffload returns nil when the port transmits a frame's outer VLAN
// tag out of band, as the kernel's datapath does (so that the receiver
// gets tagged frames of 18 and 19 bytes too), or the reason it sends
// tags in line: the kernel lacks the clsact qdisc or cls_bpf, or the
// process may not load BPF programs.
func (p *afPacket) VLANTxOffload() error { return p.vlanTxErr }

// finishFrame re-inserts a VLAN tag the kernel took out of the frame and
// completes a checksum left to offload, as the frame's virtio_net_hdr vh
// says (VIRTIO_NET_HDR_F_NEEDS_CSUM, set exactly when AF_PACKET also
// reports TP_STATUS_CSUMNOTREADY: both mean CHECKSUM_PARTIAL). b is the
// whole buffer, the frame is b[off:off+n] and is not a GSO frame. It
// returns the frame's new length, or -1 and the reason it was refused.
func finishFrame(b []byte, off, n int, vlanValid bool, tpid, tci uint16, vh vnetHdr) (int, VnetDropReason) {
	if int(vh.hdrLen) > n {
		return -1, VnetBadHdrLen
	}
	start := int(vh.csumStart)
	if vlanValid {
		if n < 12 || off+n+4 > len(b) {
			return -1, VnetTooBig
		}
		f := b[off : off+n+4]
		copy(f[16:], f[12:n])
		binary.BigEndian.PutUint16(f[12:], tpid)
		binary.BigEndian.PutUint16(f[14:], tci)
		n += 4
		start += 4 // csum_start counts from the frame without the tag
	}
	if vh.flags&vnetFlagNeedsCsum != 0 && !completeCsum(b[off:off+n], start, int(vh.csumOffset)) {
		return -1, VnetBadCsum
	}
	return n, 0
}

// offloadCounters are a netdev port's receive offload counters.
type offloadCounters struct {
	gsoFrames, gsoSegments, csums atomic.Uint64
	drops                         [numVnetDropReasons]atomic.Uint64

	mu       sync.Mutex
	lastDrop vnetDrop
}

// vnetDrop records the last frame dropped for its virtio_net_hdr.
type vnetDrop struct {
	valid  bool
	reason VnetDropReason
	hdr    vnetHdr
	len    int
}

// NetdevOffloadStats counts an AF_PACKET port's receive offload work
// (RingPort.OffloadStats, MmsgPort.OffloadStats).
type NetdevOffloadStats struct {
	// GSOFrames is the number of GSO super-frames read and segmented.
	GSOFrames uint64
	// GSOSegments is the number of frames they were cut into (each
	// counted in RxPackets).
	GSOSegments uint64
	// ChecksumsCompleted is the number of frames (not GSO) whose
	// TCP/UDP checksum (or SCTP CRC32c) the port completed.
	ChecksumsCompleted uint64
	// Dropped counts the frames dropped for their virtio_net_hdr, by
	// reason (each also counted in RxErrors); reasons with no drop are
	// absent.
	Dropped map[VnetDropReason]uint64
	// LastDrop describes the last such drop (reason, the header's
	// fields and the frame's length); nil if there was none.
	LastDrop error
}

// OffloadStats returns the port's receive offload counters.
func (p *afPacket) OffloadStats() NetdevOffloadStats {
	o := &p.offl
	st := NetdevOffloadStats{
		GSOFrames:          o.gsoFrames.Load(),
		GSOSegments:        o.gsoSegments.Load(),
		ChecksumsCompleted: o.csums.Load(),
	}
	for r := range o.drops {
		if v := o.drops[r].Load(); v != 0 {
			if st.Dropped == nil {
				st.Dropped = make(map[VnetDropReason]uint64)
			}
			st.Dropped[VnetDropReason(r)] = v
		}
	}
	o.mu.Lock()
	d := o.lastDrop
	o.mu.Unlock()
	if d.valid {
		st.LastDrop = fmt.Errorf("userdp: %s: dropped a %d-byte frame: %s (virtio_net_hdr flags %#x gso_type %#x hdr_len %d gso_size %d csum_start %d csum_offset %d)",
			p.name, d.len, d.reason, d.hdr.flags, d.hdr.gsoType, d.hdr.hdrLen, d.hdr.gsoSize, d.hdr.csumStart, d.hdr.csumOffset)
	}
	return st
}

// dropVnet counts a frame dropped for reason r.
func (p *afPacket) dropVnet(r VnetDropReason, vh vnetHdr, n int) {
	p.stats.RxErrors.Add(1)
	o := &p.offl
	o.drops[r].Add(1)
	o.mu.Lock()
	o.lastDrop = vnetDrop{valid: true, reason: r, hdr: vh, len: n}
	o.mu.Unlock()
}

// deliverFinished records frame number p.rdN of length l (or a drop).
func (p *afPacket) deliverFinished(l int, r VnetDropReason, vh vnetHdr, n int) {
	if l < 0 {
		p.dropVnet(r, vh, n)
		return
	}
	if vh.flags&vnetFlagNeedsCsum != 0 {
		p.offl.csums.Add(1)
	}
	p.rdSizes[p.rdN] = l
	p.rdBytes += uint64(l)
	p.rdN++
}

// startGSO prepares the segmentation of the super-frame src.
func (p *afPacket) startGSO(src []byte, vh vnetHdr, vlanValid bool, tpid, tci uint16) {
	if r, ok := p.seg.init(src, vh, vlanValid, tpid, tci, p.mtu); !ok {
		p.dropVnet(r, vh, len(src))
		return
	}
	p.offl.gsoFrames.Add(1)
}

// emitSegments writes the current super-frame's segments into the
// caller's buffers from p.rdN on, as many as fit.
func (p *afPacket) emitSegments() {
	for p.seg.active && p.rdN < len(p.rdBufs) {
		l := p.seg.next(p.rdBufs[p.rdN][p.rdOff:])
		if l < 0 {
			p.dropVnet(VnetTooBig, vnetHdr{gsoSize: uint16(p.seg.mss)}, p.seg.maxSegLen())
			continue
		}
		p.offl.gsoSegments.Add(1)
		p.rdSizes[p.rdN] = l
		p.rdBytes += uint64(l)
		p.rdN++
	}
}

// receive takes one received frame, src, with its virtio_net_hdr and
// out-of-band VLAN tag: a GSO super-frame starts segmenting; any other
// frame is copied into the caller's next buffer and finished.
func (p *afPacket) receive(src []byte, vh vnetHdr, vlanValid bool, tpid, tci uint16) {
	if vh.gsoType != vnetGSONone {
		p.startGSO(src, vh, vlanValid, tpid, tci)
		return
	}
	b := p.rdBufs[p.rdN]
	if len(src) > len(b)-p.rdOff {
		p.dropVnet(VnetTooBig, vh, len(src))
		return
	}
	copy(b[p.rdOff:], src)
	l, r := finishFrame(b, p.rdOff, len(src), vlanValid, tpid, tci, vh)
	p.deliverFinished(l, r, vh, len(src))
}

// WriteBatch implements Port with sendmmsg on the port's transmit
// socket (openTx). A frame the kernel refuses
// (e.g. longer than the MTU: EMSGSIZE) is counted as a tx error and
// skipped; ENOBUFS counts a tx drop. When the socket's send buffer is
// full it waits for room.
func (p *afPacket) WriteBatch(pkts [][]byte) (int, error) {
	p.wrMu.Lock()
	defer p.wrMu.Unlock()
	sent := 0
	var bytes uint64
	var firstErr error
	for len(pkts) > 0 {
		k := min(len(pkts), p.batch)
		for i := 0; i < k; i++ {
			// The socket has PACKET_VNET_HDR: a zero header (no
			// offload asked) goes before each frame, by iovec.
			iov := p.txIov[2*i : 2*i+2]
			iov[0].Base = &p.txVnet[0]
			iov[0].SetLen(vnetHdrLen)
			iov[1].Base = unsafe.SliceData(pkts[i])
			iov[1].SetLen(len(pkts[i]))
			h := &p.txHdrs[i].Hdr
			h.Iov = &iov[0]
			h.Iovlen = 2
		}
		p.txN, p.txSent, p.txErr = k, 0, nil
		if p.txWait == nil {
			// Closed (closeTx ran).
			p.stats.tx(sent, bytes)
			return sent, p.writeErr(ErrPortClosed)
		}
		if err := p.txWait.run(uintptr(p.txFd), unix.POLLOUT, p.writeFn); err != nil {
			p.stats.tx(sent, bytes)
			return sent, p.writeErr(err)
		}
		for i := 0; i < p.txSent; i++ {
			bytes += uint64(p.txLen(pkts[i]))
		}
		sent += p.txSent
		skip := p.txSent
		if p.txErr != nil {
			// pkts[txSent] failed: count it and go on after it.
			if errors.Is(p.txErr, unix.ENOBUFS) {
				p.stats.TxDropped.Add(1)
			} else {
				p.stats.TxErrors.Add(1)
			}
			if firstErr == nil {
				firstErr = fmt.Errorf("userdp: %s: write of a %d-byte frame: %w", p.name, len(pkts[p.txSent]), p.txErr)
			}
			skip++
		}
		pkts = pkts[skip:]
	}
	p.stats.tx(sent, bytes)
	return sent, firstErr
}

func (p *afPacket) doWrite(fd uintptr) bool {
	for p.txSent < p.txN {
		r, _, e := unix.Syscall6(unix.SYS_SENDMMSG, fd, uintptr(unsafe.Pointer(&p.txHdrs[p.txSent])), uintptr(p.txN-p.txSent), unix.MSG_DONTWAIT, 0, 0)
		switch {
		case e == unix.EAGAIN:
			return false
		case e == unix.EINTR:
			continue
		case e != 0:
			p.txErr = e
			return true
		}
		p.txSent += int(r)
	}
	return true
}
