package userdp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/ovsdp/ovsdp/internal/header"
)

// The NetdevXDP mode: an AF_XDP socket (XSK) on queue 0 of the
// interface, in copy mode.
//
// Setting up, in order: a UMEM (one anonymous mapping cut into equal
// frames, the first half lent to the kernel for received frames through
// the fill ring, the second half kept for transmission), the four rings
// (fill, completion, rx, tx) mapped from the socket, the bind to
// (ifindex, queue 0), an XSKMAP holding the socket at key 0, and an XDP
// program that redirects every frame of the interface's queue
// ctx->rx_queue_index to the socket in that map (bpf_redirect_map, with
// XDP_PASS when there is none), attached through a BPF link: in driver
// (native) mode where the driver has it (veth does), else in generic
// (skb) mode. The link belongs to the port's file descriptor, so the
// program leaves the interface when the port is closed, from whatever
// thread or network namespace Close is called, and when the process dies.
//
// Reading copies frames out of the UMEM into the caller's buffers and
// hands their UMEM frames back through the fill ring; writing copies the
// frames into free UMEM frames, queues them on the tx ring and kicks the
// kernel with sendto (copy mode transmits in the sending thread);
// transmitted frames come back through the completion ring.

// Sizes of the UMEM and rings.
const (
	// UMEM frames, half for rx, half for tx (16 MiB of 2048-byte
	// frames): with 4096, BenchmarkNetdevRx/xdp saw 2 to 19% of its
	// stream dropped (rx ring full); with 8192, none.
	xdpFrames     = 8192
	xdpRingSize   = xdpFrames / 2
	xdpQueue      = 0   // the one rx queue the socket binds to
	xdpMaxKicks   = 128 // sendto calls per write before waiting for room
	xdpDescSize   = int(unsafe.Sizeof(unix.XDPDesc{}))
	xdpBindWait   = 500 * time.Millisecond // for a queue the kernel has not freed yet
	xdpBpfMapName = "ovsdp_xsks"
)

// XDPVLANRestore returns nil when a NetdevXDP port's XDP program puts
// back in line the outer VLAN tag the driver took out of a received
// frame, or why it does not (no kfunc bpf_xdp_metadata_rx_vlan_tag in the
// kernel or driver, generic mode). For the other modes it returns nil:
// AF_PACKET reports the tag and the port puts it back.
func (p *NetdevPort) XDPVLANRestore() error {
	if p.xdp == nil || p.xdp.vlanRestore {
		return nil
	}
	if p.xdp.vlanErr == nil {
		return errors.New("AF_XDP: the XDP program does not restore VLAN tags")
	}
	return fmt.Errorf("AF_XDP: outer VLAN tags taken out by the driver are lost: %w", p.xdp.vlanErr)
}

// bpf(2) commands, types and helpers used here (include/uapi/linux/bpf.h).
const (
	bpfMapCreate       = 0  // BPF_MAP_CREATE
	bpfMapUpdateElem   = 2  // BPF_MAP_UPDATE_ELEM
	bpfLinkCreate      = 28 // BPF_LINK_CREATE
	bpfMapTypeXSKMap   = 17 // BPF_MAP_TYPE_XSKMAP
	bpfProgTypeXDP     = 6  // BPF_PROG_TYPE_XDP
	bpfAttachXDP       = 37 // BPF_XDP
	bpfLdImm64         = 0x18
	bpfPseudoMapFD     = 1
	bpfFuncRedirectMap = 51 // bpf_redirect_map
	xdpPass            = 2  // XDP_PASS
	xdpMdRxQueueOff    = 16 // struct xdp_md.rx_queue_index
)

// xdpRing is one of the four rings an XSK shares with the kernel.
type xdpRing struct {
	mem      []byte
	producer *uint32
	consumer *uint32
	descs    unsafe.Pointer // u64 addresses (fill, completion) or XDPDesc (rx, tx)
	mask     uint32
}

func (r *xdpRing) addr(i uint32) *uint64 {
	return (*uint64)(unsafe.Add(r.descs, uintptr(i&r.mask)*8))
}

func (r *xdpRing) desc(i uint32) *unix.XDPDesc {
	return (*unix.XDPDesc)(unsafe.Add(r.descs, uintptr(i&r.mask)*uintptr(xdpDescSize)))
}

// xdpSock is the AF_XDP state of a NetdevPort in NetdevXDP mode.
type xdpSock struct {
	fd        int
	umem      []byte
	frameSize int
	fill      xdpRing
	comp      xdpRing
	rx        xdpRing
	tx        xdpRing
	freeTx    []uint64 // UMEM addresses of tx frames the kernel does not hold
	linkFD    int      // the BPF link: closing it detaches the program
	progFD    int
	mapFD     int
	native    bool // attached in driver mode (else generic)
	// vlanRestore: the program puts back in line the outer VLAN tag the
	// driver took out of the frame; else vlanErr says why not.
	vlanRestore bool
	vlanErr     error
	lastStats   unix.XDPStatistics

	// WriteBatch call state, used by writeXDPFn.
	txPkts  [][]byte
	txDone  int // frames of txPkts queued on the tx ring
	txBytes uint64
	txErr   error
	txBad   int // index in txPkts of a frame refused, or -1
	txDrops int // frames the kernel completed without sending
}

// XDPNative reports whether a NetdevXDP port's program runs in the
// driver (native XDP) rather than in generic (skb) mode; false for the
// other modes.
func (p *NetdevPort) XDPNative() bool { return p.xdp != nil && p.xdp.native }

// The bpf(2) calls below pass pointers to Go memory as integers inside
// their attribute structs, so each calls unix.Syscall directly after
// filling the struct, with no function call in between that could grow
// (and so move) the stack.

// createXSKMap creates an XSKMAP with n entries.
func createXSKMap(n int) (int, error) {
	var attr struct {
		mapType, keySize, valueSize, maxEntries, mapFlags, innerMapFD, numaNode uint32
		name                                                                    [16]byte
	}
	attr.mapType, attr.keySize, attr.valueSize, attr.maxEntries = bpfMapTypeXSKMap, 4, 4, uint32(n)
	copy(attr.name[:], xdpBpfMapName)
	fd, _, e := unix.Syscall(unix.SYS_BPF, bpfMapCreate, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr))
	if e != 0 {
		return -1, fmt.Errorf("creating the XSKMAP (bpf BPF_MAP_CREATE): %w", e)
	}
	return int(fd), nil
}

// updateMap sets key to value (both 4 bytes) in map fd.
func updateMap(fd int, key, value uint32) error {
	attr := struct {
		mapFD, _   uint32
		key, value uint64
		flags      uint64
	}{mapFD: uint32(fd), key: uint64(uintptr(unsafe.Pointer(&key))), value: uint64(uintptr(unsafe.Pointer(&value)))}
	_, _, e := unix.Syscall(unix.SYS_BPF, bpfMapUpdateElem, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr))
	runtime.KeepAlive(&key)
	runtime.KeepAlive(&value)
	if e != 0 {
		return e
	}
	return nil
}

// More BPF instruction encodings (include/uapi/linux/bpf.h).
const (
	bpfStDW             = 0x7a // BPF_ST | BPF_MEM | BPF_DW
	bpfStxW             = 0x63 // BPF_STX | BPF_MEM | BPF_W
	bpfStxH             = 0x6b // BPF_STX | BPF_MEM | BPF_H
	bpfJgtReg           = 0x2d // BPF_JMP | BPF_JGT | BPF_X
	bpfPseudoKfuncCall  = 2
	bpfFuncXDPAdjustHdr = 44 // bpf_xdp_adjust_head
	bpfFXDPDevBoundOnly = 0x40
	toRedirect          = -0x8000 // jump target placeholder in xskProgram
)

// xskProgram returns the XDP program:
//
//	if vlanKfunc != 0 && bpf_xdp_metadata_rx_vlan_tag(ctx, &tpid, &tci) == 0 &&
//	   bpf_xdp_adjust_head(ctx, -4) == 0 && the frame has 18 bytes:
//		move the Ethernet addresses 4 bytes to the front, and write
//		tpid, tci in the 4 bytes after them
//	return bpf_redirect_map(map, ctx->rx_queue_index, XDP_PASS)
//
// vlanKfunc is the BTF id of the kfunc bpf_xdp_metadata_rx_vlan_tag,
// which returns the outer VLAN tag a driver took out of the frame (veth
// does, for a tag its peer sent out of band); putting it back in line
// gives the socket the whole frame, as the AF_PACKET modes do.
func xskProgram(mapFD int, vlanKfunc uint32) []bpfInsn {
	const r0, r1, r2, r3, r4, r5, r6, r10 = 0, 1, 2, 3, 4, 5, 6, 10
	var p []bpfInsn
	if vlanKfunc != 0 {
		p = []bpfInsn{
			insn(bpfMov64Reg, r6, r1, 0, 0), // r6 = ctx
			insn(bpfStDW, r10, 0, -8, 0),    // tpid at fp-8, tci at fp-6
			insn(bpfMov64Reg, r2, r10, 0, 0),
			insn(bpfAdd64Imm, r2, 0, 0, -8),
			insn(bpfMov64Reg, r3, r10, 0, 0),
			insn(bpfAdd64Imm, r3, 0, 0, -6),
			insn(bpfCall, 0, bpfPseudoKfuncCall, 0, int32(vlanKfunc)),
			insn(bpfJneImm, r0, 0, toRedirect, 0),
			insn(bpfMov64Reg, r1, r6, 0, 0),
			insn(bpfMov64Imm, r2, 0, 0, -4),
			insn(bpfCall, 0, 0, 0, bpfFuncXDPAdjustHdr),
			insn(bpfJneImm, r0, 0, toRedirect, 0),
			insn(bpfLdxW, r2, r6, 0, 0), // data
			insn(bpfLdxW, r3, r6, 4, 0), // data_end
			insn(bpfMov64Reg, r4, r2, 0, 0),
			insn(bpfAdd64Imm, r4, 0, 0, 18),
			insn(bpfJgtReg, r4, r3, toRedirect, 0),
			insn(bpfLdxW, r5, r2, 4, 0),
			insn(bpfStxW, r2, r5, 0, 0),
			insn(bpfLdxW, r5, r2, 8, 0),
			insn(bpfStxW, r2, r5, 4, 0),
			insn(bpfLdxW, r5, r2, 12, 0),
			insn(bpfStxW, r2, r5, 8, 0),
			insn(bpfLdxH, r5, r10, -8, 0), // tpid, in network order
			insn(bpfStxH, r2, r5, 12, 0),
			insn(bpfLdxH, r5, r10, -6, 0), // tci, in host order
			insn(bpfToBE, r5, 0, 0, 16),
			insn(bpfStxH, r2, r5, 14, 0),
			insn(bpfMov64Reg, r1, r6, 0, 0), // redirect: r1 = ctx
		}
	}
	redirect := len(p) - 1
	p = append(p,
		insn(bpfLdxW, r2, r1, xdpMdRxQueueOff, 0),
		insn(bpfLdImm64, r1, bpfPseudoMapFD, 0, int32(mapFD)),
		insn(0, 0, 0, 0, 0), // upper half of the 64-bit immediate
		insn(bpfMov64Imm, r3, 0, 0, xdpPass),
		insn(bpfCall, 0, 0, 0, bpfFuncRedirectMap),
		insn(bpfExit, 0, 0, 0, 0),
	)
	for i := range p {
		if p[i].off == toRedirect && p[i].code&0x07 == 0x05 { // BPF_JMP
			p[i].off = int16(redirect - i - 1)
		}
	}
	return p
}

// loadXSKProgram loads xskProgram and returns its file descriptor. With
// vlanKfunc, the program is bound to interface ifindex (a kfunc of the
// driver's XDP metadata needs that) and can only be attached in driver
// mode.
func loadXSKProgram(mapFD int, vlanKfunc uint32, ifindex int) (int, error) {
	prog := xskProgram(mapFD, vlanKfunc)
	license := []byte(bpfLicense + "\x00") // GPL-compatible: it calls a kfunc
	logBuf := make([]byte, 16384)
	var attr struct {
		bpfProgLoadAttr
		progIfindex, expectedAttachType uint32
	}
	attr.bpfProgLoadAttr = bpfProgLoadAttr{
		progType: bpfProgTypeXDP,
		insnCnt:  uint32(len(prog)),
		insns:    uint64(uintptr(unsafe.Pointer(&prog[0]))),
		license:  uint64(uintptr(unsafe.Pointer(&license[0]))),
		logLevel: 1,
		logSize:  uint32(len(logBuf)),
		logBuf:   uint64(uintptr(unsafe.Pointer(&logBuf[0]))),
		progName: [16]byte{'o', 'v', 's', 'd', 'p', '_', 'x', 's', 'k'},
	}
	if vlanKfunc != 0 {
		attr.progFlags = bpfFXDPDevBoundOnly
		attr.progIfindex = uint32(ifindex)
	}
	fd, _, e := unix.Syscall(unix.SYS_BPF, bpfProgLoad, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr))
	runtime.KeepAlive(prog)
	runtime.KeepAlive(license)
	runtime.KeepAlive(logBuf)
	if e != 0 {
		if msg := unix.ByteSliceToString(logBuf); msg != "" {
			return -1, fmt.Errorf("loading the XDP program (bpf BPF_PROG_LOAD): %w (verifier: %s)", e, msg)
		}
		return -1, fmt.Errorf("loading the XDP program (bpf BPF_PROG_LOAD): %w", e)
	}
	return int(fd), nil
}

// xdpAttach attaches program progFD to interface ifindex (in the calling
// thread's network namespace) through a BPF link, in driver mode or in
// generic (skb) mode.
func xdpAttach(progFD, ifindex int, flags uint32) (int, error) {
	attr := struct {
		progFD, targetIfindex, attachType, flags uint32
		_                                        [4]uint64
	}{progFD: uint32(progFD), targetIfindex: uint32(ifindex), attachType: bpfAttachXDP, flags: flags}
	fd, _, e := unix.Syscall(unix.SYS_BPF, bpfLinkCreate, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr))
	if e != 0 {
		return -1, e
	}
	return int(fd), nil
}

// attach loads the XDP program and attaches it to interface ifindex: in
// driver mode with the VLAN tag restored (when the kernel has the kfunc
// and the driver implements it), else in driver mode without, else in
// generic mode. x.vlanErr says why there is no VLAN restoring.
func (x *xdpSock) attach(ifindex int) error {
	kfunc, err := btfFuncID("bpf_xdp_metadata_rx_vlan_tag")
	if err == nil {
		x.progFD, err = loadXSKProgram(x.mapFD, kfunc, ifindex)
		if err != nil {
			err = fmt.Errorf("device-bound program calling bpf_xdp_metadata_rx_vlan_tag (the driver may have no XDP metadata kfuncs): %w", err)
		} else {
			x.linkFD, err = xdpAttach(x.progFD, ifindex, unix.XDP_FLAGS_DRV_MODE)
			if err == nil {
				x.native, x.vlanRestore = true, true
				return nil
			}
			err = fmt.Errorf("attaching the device-bound XDP program (bpf BPF_LINK_CREATE, driver mode): %w", err)
			unix.Close(x.progFD)
			x.progFD = -1
		}
	}
	x.vlanErr = err
	if x.progFD, err = loadXSKProgram(x.mapFD, 0, 0); err != nil {
		return err
	}
	var errDrv error
	if x.linkFD, errDrv = xdpAttach(x.progFD, ifindex, unix.XDP_FLAGS_DRV_MODE); errDrv == nil {
		x.native = true
		return nil
	}
	if errors.Is(errDrv, unix.EBUSY) || errors.Is(errDrv, unix.EEXIST) {
		return fmt.Errorf("attaching the XDP program (bpf BPF_LINK_CREATE): the interface already has an XDP program: %w", errDrv)
	}
	x.linkFD, err = xdpAttach(x.progFD, ifindex, unix.XDP_FLAGS_SKB_MODE)
	if err != nil {
		return fmt.Errorf("attaching the XDP program (bpf BPF_LINK_CREATE): driver mode: %v; generic mode: %w", errDrv, err)
	}
	return nil
}

func setsockoptPtr(fd, level, opt int, p unsafe.Pointer, size uintptr) error {
	_, _, e := unix.Syscall6(unix.SYS_SETSOCKOPT, uintptr(fd), uintptr(level), uintptr(opt), uintptr(p), size, 0)
	if e != 0 {
		return e
	}
	return nil
}

func getsockoptPtr(fd, level, opt int, p unsafe.Pointer, size uintptr) error {
	l := uint32(size)
	_, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(fd), uintptr(level), uintptr(opt), uintptr(p), uintptr(unsafe.Pointer(&l)), 0)
	if e != 0 {
		return e
	}
	return nil
}

// mapRing maps one of the socket's rings of n entries of entrySize bytes.
func mapRing(fd int, pgoff int64, off unix.XDPRingOffset, n, entrySize int) (xdpRing, error) {
	mem, err := unix.Mmap(fd, pgoff, int(off.Desc)+n*entrySize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return xdpRing{}, err
	}
	return xdpRing{
		mem:      mem,
		producer: (*uint32)(unsafe.Pointer(&mem[off.Producer])),
		consumer: (*uint32)(unsafe.Pointer(&mem[off.Consumer])),
		descs:    unsafe.Pointer(&mem[off.Desc]),
		mask:     uint32(n - 1),
	}, nil
}

// xdpFrameSize is the UMEM frame size for an interface MTU: 2048 bytes,
// or a page where a 2048-byte frame cannot hold the kernel's headroom
// and a frame of the MTU with two VLAN tags.
func xdpFrameSize(mtu int) (int, error) {
	need := unix.XDP_PACKET_HEADROOM + 14 + 8 + mtu
	for _, s := range []int{2048, 4096} {
		if need <= s {
			return s, nil
		}
	}
	return 0, fmt.Errorf("MTU %d too large for AF_XDP frames of at most 4096 bytes", mtu)
}

// rxQueues returns how many rx queues interface name uses: from ethtool
// (ETHTOOL_GCHANNELS: rx plus combined channels), or where the driver
// does not say, the number allocated (IFLA_NUM_RX_QUEUES).
func rxQueues(name string) (int, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return 0, fmt.Errorf("socket for ethtool: %w", err)
	}
	defer unix.Close(fd)
	var ch struct {
		cmd                                     uint32
		maxRx, maxTx, maxOther, maxCombined     uint32
		rxCount, txCount, otherCount, combCount uint32
	}
	ch.cmd = 0x3c // ETHTOOL_GCHANNELS
	var ifr struct {
		name [unix.IFNAMSIZ]byte
		data uintptr
		_    [16]byte
	}
	copy(ifr.name[:], name) // before taking &ch: no call after it
	ifr.data = uintptr(unsafe.Pointer(&ch))
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(&ifr)))
	runtime.KeepAlive(&ch)
	if e == 0 {
		return int(ch.rxCount + ch.combCount), nil
	}
	link, err := netlink.LinkByName(name)
	if err != nil {
		return 0, fmt.Errorf("counting rx queues: %w", err)
	}
	return link.Attrs().NumRxQueues, nil
}

// openXDP sets up the AF_XDP socket, its UMEM and rings, and the XDP
// program, and makes p.file the socket.
func (p *NetdevPort) openXDP() (err error) {
	q, err := rxQueues(p.name)
	if err != nil {
		return fmt.Errorf("AF_XDP: %w", err)
	}
	if q > 1 {
		return fmt.Errorf("AF_XDP: the interface has %d rx queues; the XDP mode reads queue 0 only, so it needs an interface with one", q)
	}
	frameSize, err := xdpFrameSize(p.mtu)
	if err != nil {
		return err
	}
	x := &xdpSock{fd: -1, linkFD: -1, progFD: -1, mapFD: -1, frameSize: frameSize}
	defer func() {
		if err != nil {
			x.release()
		}
	}()
	x.umem, err = unix.Mmap(-1, 0, xdpFrames*frameSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_POPULATE)
	if err != nil {
		return fmt.Errorf("AF_XDP: mapping the %d-byte UMEM: %w", xdpFrames*frameSize, err)
	}
	x.fd, err = unix.Socket(unix.AF_XDP, unix.SOCK_RAW|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("AF_XDP socket: %w", err)
	}
	reg := unix.XDPUmemReg{Addr: uint64(uintptr(unsafe.Pointer(&x.umem[0]))), Len: uint64(len(x.umem)), Size: uint32(frameSize)}
	if err := setsockoptPtr(x.fd, unix.SOL_XDP, unix.XDP_UMEM_REG, unsafe.Pointer(&reg), unsafe.Sizeof(reg)); err != nil {
		return fmt.Errorf("AF_XDP: registering the UMEM (XDP_UMEM_REG): %w", err)
	}
	for _, r := range []struct {
		opt  int
		name string
	}{
		{unix.XDP_UMEM_FILL_RING, "XDP_UMEM_FILL_RING"},
		{unix.XDP_UMEM_COMPLETION_RING, "XDP_UMEM_COMPLETION_RING"},
		{unix.XDP_RX_RING, "XDP_RX_RING"},
		{unix.XDP_TX_RING, "XDP_TX_RING"},
	} {
		if err := unix.SetsockoptInt(x.fd, unix.SOL_XDP, r.opt, xdpRingSize); err != nil {
			return fmt.Errorf("AF_XDP: sizing a ring (%s): %w", r.name, err)
		}
	}
	var off unix.XDPMmapOffsets
	if err := getsockoptPtr(x.fd, unix.SOL_XDP, unix.XDP_MMAP_OFFSETS, unsafe.Pointer(&off), unsafe.Sizeof(off)); err != nil {
		return fmt.Errorf("AF_XDP: ring offsets (XDP_MMAP_OFFSETS): %w", err)
	}
	if x.fill, err = mapRing(x.fd, unix.XDP_UMEM_PGOFF_FILL_RING, off.Fr, xdpRingSize, 8); err != nil {
		return fmt.Errorf("AF_XDP: mapping the fill ring: %w", err)
	}
	if x.comp, err = mapRing(x.fd, unix.XDP_UMEM_PGOFF_COMPLETION_RING, off.Cr, xdpRingSize, 8); err != nil {
		return fmt.Errorf("AF_XDP: mapping the completion ring: %w", err)
	}
	if x.rx, err = mapRing(x.fd, unix.XDP_PGOFF_RX_RING, off.Rx, xdpRingSize, xdpDescSize); err != nil {
		return fmt.Errorf("AF_XDP: mapping the rx ring: %w", err)
	}
	if x.tx, err = mapRing(x.fd, unix.XDP_PGOFF_TX_RING, off.Tx, xdpRingSize, xdpDescSize); err != nil {
		return fmt.Errorf("AF_XDP: mapping the tx ring: %w", err)
	}
	// The first half of the UMEM goes to the kernel for received frames.
	prod := atomic.LoadUint32(x.fill.producer)
	for i := 0; i < xdpRingSize; i++ {
		*x.fill.addr(prod + uint32(i)) = uint64(i * frameSize)
	}
	atomic.StoreUint32(x.fill.producer, prod+xdpRingSize)
	x.freeTx = make([]uint64, 0, xdpFrames-xdpRingSize)
	for i := xdpFrames - 1; i >= xdpRingSize; i-- {
		x.freeTx = append(x.freeTx, uint64(i*frameSize))
	}

	sa := unix.SockaddrXDP{Flags: unix.XDP_COPY, Ifindex: uint32(p.ifindex), QueueID: xdpQueue}
	// The kernel frees a queue some time after the socket bound to it
	// closes (in a work queue): a port closed and opened again in quick
	// succession may find it busy for a moment.
	for start := time.Now(); ; time.Sleep(5 * time.Millisecond) {
		err = unix.Bind(x.fd, &sa)
		if err == nil {
			break
		}
		if !errors.Is(err, unix.EBUSY) {
			return fmt.Errorf("AF_XDP: bind to ifindex %d queue %d: %w", p.ifindex, xdpQueue, err)
		}
		if time.Since(start) > xdpBindWait {
			return fmt.Errorf("AF_XDP: bind to ifindex %d queue %d: %w (another AF_XDP socket is bound to the queue)", p.ifindex, xdpQueue, err)
		}
	}
	if x.mapFD, err = createXSKMap(1); err != nil {
		return fmt.Errorf("AF_XDP: %w", err)
	}
	if err := updateMap(x.mapFD, xdpQueue, uint32(x.fd)); err != nil {
		return fmt.Errorf("AF_XDP: putting the socket in the XSKMAP (bpf BPF_MAP_UPDATE_ELEM): %w", err)
	}
	if err := x.attach(p.ifindex); err != nil {
		return fmt.Errorf("AF_XDP: %w", err)
	}
	p.xdp = x
	return nil
}

// detach closes the BPF link, which takes the XDP program off the
// interface.
func (x *xdpSock) detach() {
	if x != nil && x.linkFD >= 0 {
		unix.Close(x.linkFD)
		x.linkFD = -1
	}
}

// release closes and unmaps whatever x holds. The socket (x.fd) is
// closed here only if it was never handed to p.file.
func (x *xdpSock) release() error {
	var first error
	keep := func(err error) {
		if err != nil && first == nil {
			first = err
		}
	}
	// Closing the link detaches the program from the interface.
	for _, fd := range []*int{&x.linkFD, &x.progFD, &x.mapFD, &x.fd} {
		if *fd >= 0 {
			keep(unix.Close(*fd))
			*fd = -1
		}
	}
	for _, r := range []*xdpRing{&x.fill, &x.comp, &x.rx, &x.tx} {
		if r.mem != nil {
			keep(unix.Munmap(r.mem))
			*r = xdpRing{}
		}
	}
	if x.umem != nil {
		keep(unix.Munmap(x.umem))
		x.umem = nil
	}
	return first
}

// readXDP copies frames from the rx ring into p.rdBufs and gives their
// UMEM frames back to the kernel through the fill ring.
func (p *NetdevPort) readXDP() bool {
	x := p.xdp
	cons := *x.rx.consumer // only this side writes it
	avail := atomic.LoadUint32(x.rx.producer) - cons
	if avail == 0 {
		return false
	}
	fillProd := *x.fill.producer
	n, taken := 0, uint32(0)
	var bytes uint64
	for n < len(p.rdBufs) && taken < avail {
		d := x.rx.desc(cons + taken)
		addr, l := d.Addr, int(d.Len)
		taken++
		b := p.rdBufs[n]
		base := addr &^ uint64(x.frameSize-1)
		*x.fill.addr(fillProd) = base
		fillProd++
		if l > len(b)-p.rdOff || addr+uint64(l) > base+uint64(x.frameSize) {
			p.stats.RxErrors.Add(1)
			continue
		}
		copy(b[p.rdOff:], x.umem[addr:addr+uint64(l)])
		p.rdSizes[n] = l
		bytes += uint64(l)
		n++
	}
	atomic.StoreUint32(x.rx.consumer, cons+taken)
	atomic.StoreUint32(x.fill.producer, fillProd)
	p.stats.rx(n, bytes)
	p.rdN = n
	return n > 0
}

// reclaimTx takes transmitted frames back from the completion ring.
func (x *xdpSock) reclaimTx() {
	cons := *x.comp.consumer
	prod := atomic.LoadUint32(x.comp.producer)
	for i := cons; i != prod; i++ {
		x.freeTx = append(x.freeTx, *x.comp.addr(i)&^uint64(x.frameSize-1))
	}
	atomic.StoreUint32(x.comp.consumer, prod)
}

// kickTx has the kernel transmit what the tx ring holds. It returns
// false when the kernel asks to be called again later.
func (p *NetdevPort) kickTx(fd uintptr) bool {
	for i := 0; i < xdpMaxKicks; i++ {
		_, _, e := unix.Syscall6(unix.SYS_SENDTO, fd, 0, 0, unix.MSG_DONTWAIT, 0, 0)
		switch e {
		case 0:
			return true
		case unix.EAGAIN, unix.EINTR:
			// Copy mode sends a bounded number of frames per call.
			if atomic.LoadUint32(p.xdp.tx.consumer) == *p.xdp.tx.producer {
				return true
			}
			continue
		case unix.EBUSY, unix.ENOBUFS:
			// One frame completed without being sent (NET_XMIT_DROP).
			p.xdp.txDrops++
			continue
		default:
			p.xdp.txErr = fmt.Errorf("sendto: %w", e)
			return true
		}
	}
	return false
}

// xdpMaxTxLen is the longest frame the port sends: the MTU plus the
// Ethernet header, plus 4 bytes for a frame that starts with a VLAN tag
// (as AF_PACKET allows), and no longer than a UMEM frame.
func (p *NetdevPort) xdpMaxTxLen(f []byte) int {
	n := p.mtu + 14
	if len(f) >= 14 {
		if t := uint16(f[12])<<8 | uint16(f[13]); t == header.EtherTypeVLAN || t == header.EtherTypeQinQ {
			n += 4
		}
	}
	return min(n, p.xdp.frameSize)
}

// doWriteXDP queues x.txPkts[x.txDone:] on the tx ring while there are
// free UMEM frames, and kicks the kernel. It returns false to wait until
// the socket is writable (transmitted frames completing).
func (p *NetdevPort) doWriteXDP(fd uintptr) bool {
	x := p.xdp
	for {
		x.reclaimTx()
		prod := *x.tx.producer
		queued := uint32(0)
		for x.txDone < len(x.txPkts) && len(x.freeTx) > 0 {
			f := x.txPkts[x.txDone]
			if len(f) < 14 || len(f) > p.xdpMaxTxLen(f) {
				x.txBad = x.txDone
				break
			}
			addr := x.freeTx[len(x.freeTx)-1]
			x.freeTx = x.freeTx[:len(x.freeTx)-1]
			copy(x.umem[addr:], f)
			d := x.tx.desc(prod + queued)
			d.Addr, d.Len, d.Options = addr, uint32(len(f)), 0
			queued++
			x.txBytes += uint64(len(f))
			x.txDone++
		}
		if queued > 0 {
			atomic.StoreUint32(x.tx.producer, prod+queued)
		}
		if !p.kickTx(fd) {
			return false
		}
		if x.txErr != nil || x.txBad >= 0 || x.txDone == len(x.txPkts) {
			return true
		}
		// Out of UMEM frames: go on with what the kick completed, if
		// anything, else wait.
		if atomic.LoadUint32(x.comp.producer) == *x.comp.consumer {
			return false
		}
	}
}

// writeXDP is WriteBatch for NetdevXDP. A frame shorter than an Ethernet
// header or longer than the MTU allows is counted as a tx error and
// skipped (with an error returned, as AF_PACKET's EMSGSIZE); when every
// tx frame of the UMEM is in flight it waits for completions.
func (p *NetdevPort) writeXDP(pkts [][]byte) (int, error) {
	p.wrMu.Lock()
	defer p.wrMu.Unlock()
	x := p.xdp
	sent := 0
	var bytes uint64
	var firstErr error
	for len(pkts) > 0 {
		x.txPkts, x.txDone, x.txBytes, x.txErr, x.txBad, x.txDrops = pkts, 0, 0, nil, -1, 0
		err := p.rc.Write(p.writeFn)
		done, b, bad, txErr := x.txDone, x.txBytes, x.txBad, x.txErr
		x.txPkts = nil
		if x.txDrops > 0 {
			// Which frames were dropped is not known: count them
			// out of the packets, and leave the bytes.
			d := min(x.txDrops, done)
			p.stats.TxDropped.Add(uint64(d))
			done -= d
		}
		sent += done
		bytes += b
		if err != nil {
			if p.isClosed() {
				err = ErrPortClosed
			}
			p.stats.tx(sent, bytes)
			return sent, fmt.Errorf("userdp: %s: write: %w", p.name, err)
		}
		if txErr != nil {
			p.stats.tx(sent, bytes)
			return sent, fmt.Errorf("userdp: %s: write: %w", p.name, txErr)
		}
		if bad < 0 {
			break
		}
		p.stats.TxErrors.Add(1)
		if firstErr == nil {
			firstErr = fmt.Errorf("userdp: %s: write of a %d-byte frame: %w (AF_XDP sends %d to %d bytes)", p.name, len(pkts[bad]), unix.EMSGSIZE, 14, p.xdpMaxTxLen(pkts[bad]))
		}
		pkts = pkts[bad+1:]
	}
	p.stats.tx(sent, bytes)
	return sent, firstErr
}

// pollXDPDrops adds what XDP_STATISTICS counted since the last call:
// frames dropped for want of a fill-ring frame or rx-ring room to
// RxDropped, invalid descriptors to RxErrors and TxErrors.
func (p *NetdevPort) pollXDPDrops(fd uintptr) {
	var st unix.XDPStatistics
	if getsockoptPtr(int(fd), unix.SOL_XDP, unix.XDP_STATISTICS, unsafe.Pointer(&st), unsafe.Sizeof(st)) != nil {
		return
	}
	last := &p.xdp.lastStats
	p.stats.RxDropped.Add(st.Rx_dropped - last.Rx_dropped + st.Rx_ring_full - last.Rx_ring_full)
	p.stats.RxErrors.Add(st.Rx_invalid_descs - last.Rx_invalid_descs)
	p.stats.TxErrors.Add(st.Tx_invalid_descs - last.Tx_invalid_descs)
	*last = st
}

// errXDPVLANTx is NetdevPort.VLANTxOffload in NetdevXDP mode.
var errXDPVLANTx = errors.New("AF_XDP transmits frames as written, bypassing the tc egress hook: VLAN tags go in line")

// vmlinuxBTF is where the kernel publishes its own BTF type information.
const vmlinuxBTF = "/sys/kernel/btf/vmlinux"

// btfFuncID returns the BTF type id of the kernel function name (a
// BTF_KIND_FUNC in the kernel's BTF), which a BPF program calls as a
// kfunc.
func btfFuncID(name string) (uint32, error) {
	data, err := os.ReadFile(vmlinuxBTF)
	if err != nil {
		return 0, fmt.Errorf("reading the kernel's BTF: %w", err)
	}
	id, err := findBTFFunc(data, name)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", vmlinuxBTF, err)
	}
	return id, nil
}

// BTF kinds (include/uapi/linux/btf.h) and the size of what follows a
// btf_type of each kind: fixed, or per vlen entry.
var btfKindExtra = [20]struct{ fixed, perVlen int }{
	1:  {4, 0},  // INT
	3:  {12, 0}, // ARRAY
	4:  {0, 12}, // STRUCT
	5:  {0, 12}, // UNION
	6:  {0, 8},  // ENUM
	13: {0, 8},  // FUNC_PROTO
	14: {4, 0},  // VAR
	15: {0, 12}, // DATASEC
	17: {4, 0},  // DECL_TAG
	19: {0, 12}, // ENUM64
}

const btfKindFunc = 12

// findBTFFunc looks name up among the BTF_KIND_FUNC types of the raw BTF
// blob data (native byte order, as the running kernel writes it).
func findBTFFunc(data []byte, name string) (uint32, error) {
	le := binary.NativeEndian
	if len(data) < 24 || le.Uint16(data) != 0xeb9f {
		return 0, errors.New("not BTF (bad magic or too short)")
	}
	hdrLen := le.Uint32(data[4:])
	typeOff, typeLen := le.Uint32(data[8:]), le.Uint32(data[12:])
	strOff, strLen := le.Uint32(data[16:]), le.Uint32(data[20:])
	in := func(off, n uint32) bool { return uint64(hdrLen)+uint64(off)+uint64(n) <= uint64(len(data)) }
	if hdrLen < 24 || !in(typeOff, typeLen) || !in(strOff, strLen) {
		return 0, fmt.Errorf("BTF sections (header %d, types %d+%d, strings %d+%d) outside its %d bytes", hdrLen, typeOff, typeLen, strOff, strLen, len(data))
	}
	types := data[hdrLen+typeOff : hdrLen+typeOff+typeLen]
	strs := data[hdrLen+strOff : hdrLen+strOff+strLen]
	for id, off := uint32(1), 0; off < len(types); id++ {
		if off+12 > len(types) {
			return 0, fmt.Errorf("BTF type %d truncated at offset %d", id, off)
		}
		nameOff, info := le.Uint32(types[off:]), le.Uint32(types[off+4:])
		kind, vlen := int(info>>24&0x1f), int(info&0xffff)
		if kind == 0 || kind >= len(btfKindExtra) {
			return 0, fmt.Errorf("BTF type %d at offset %d: unknown kind %d", id, off, kind)
		}
		if kind == btfKindFunc && int(nameOff) < len(strs) {
			s := strs[nameOff:]
			if len(s) > len(name) && string(s[:len(name)]) == name && s[len(name)] == 0 {
				return id, nil
			}
		}
		off += 12 + btfKindExtra[kind].fixed + vlen*btfKindExtra[kind].perVlen
	}
	return 0, fmt.Errorf("no function %s", name)
}
