package userdp

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/link"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/ovsdp/ovsdp/internal/header"
)

// XDPPort is the NetdevXDP backend: an AF_XDP socket (XSK) on queue 0
// of the interface, in copy mode, with an XDP program that redirects
// every frame of the interface to it. Frames are taken from the
// interface before the kernel's stack sees them. Unlike the AF_PACKET
// backends it gets no checksum status from the kernel: a TCP/UDP
// checksum that a local sender left to offload (CHECKSUM_PARTIAL, as a
// socket behind veth does unless tx offload is off) arrives incomplete
// and is passed on so. An outer VLAN tag the driver took out of the
// frame (veth hands it out of band) is put back in line by the XDP
// program, with the kfunc bpf_xdp_metadata_rx_vlan_tag (Linux 6.8 and
// later, for drivers with XDP metadata kfuncs such as veth, in driver
// mode); where the kernel, the driver or generic mode lacks it, such a
// tag is lost, and XDPVLANRestore says why. Frames are sent as written,
// outer VLAN tag in line, past the tc egress hook (VLANTxOffload says
// so). It needs an interface with one rx queue, CAP_NET_ADMIN and
// CAP_BPF (or CAP_SYS_ADMIN).
type XDPPort struct {
	netdevBase
	xdp *xdpSock
}

var _ NetdevPort = (*XDPPort)(nil)

// How XDPPort works.
//
// Setting up, in order: a UMEM (one anonymous mapping cut into equal
// frames, xdpRxFrames lent to the kernel for received frames through
// the fill ring, xdpTxFrames kept for transmission), the four rings
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
// hands their UMEM frames back through the fill ring at once (so the
// fill ring stays full and the kernel drops a frame only when the reader
// is xdpRxFrames behind); a read that finds the rx ring empty does not
// spin (xdpRxFrames says why): right after a read of frames it naps
// (xdpNap says why), else it waits on the socket in poll(2) rather
// than in Go's poller (fdWaiter says why). Writing
// copies the frames into free UMEM frames, queues them on the tx ring
// and kicks the kernel with sendto (copy mode transmits in the sending
// thread); transmitted frames come back through the completion ring.

// Sizes of the UMEM and rings.
const (
	// UMEM frames for received frames: all of them start on the fill
	// ring, and the fill and rx rings have one slot for each, so the
	// kernel drops a frame only when the reader is xdpRxFrames frames
	// behind (the fill ring empty). With 4096, BenchmarkNetdevRx/xdp saw
	// 2 to 19% of its stream dropped, and BenchmarkForwardVeth/xdp on a
	// loaded 2-core host (load average 4 to 9) lost frames in 12 of 17
	// runs, median 6.6% of those sent, all for want of fill-ring frames
	// (XDP_STATISTICS rx_dropped and rx_fill_ring_empty_descs, never
	// rx_ring_full) while the forwarding goroutine waited for a CPU;
	// with 16384 (32 MiB of 2048-byte frames; Open vSwitch's AF_XDP
	// ports take 64 MiB), in 9 of 31 runs, median 0. With 32768 (64
	// MiB), against 16384, reads waiting in poll(2), FWD_PHASES=xdp,
	// bridge,ovsxdp, binaries alternated, 14 runs each, load average 8
	// to 14 (other work on the host): frames arriving median 98.5% vs
	// 96.3%, dropped for want of fill-ring frames 1.5% vs 3.5%; rate and
	// CPU per frame not told apart (0.57 vs 0.61 Mpps, 741 vs 789 ns).
	//
	// A read that finds the rx ring empty does not poll it before
	// waiting (a 50 µs spin did so from 785f118): on the 2-core host
	// the spin takes CPU from the sender, whose softirq puts the frames
	// on the ring. BenchmarkForwardVeth FWD_PHASES=xdp,bridge,ovsxdp,
	// binaries alternated, 12 runs each, load average 2.6 to 8.7 (other
	// work on the host), medians [ranges]: userdp AF_XDP vs the bridge
	// 0.75× [0.57, 0.89] without the spin, 0.63× [0.45, 0.75] with it;
	// 0.631 vs 0.608 Mpps; forwarder CPU per delivered frame 793 ns vs
	// 853 ns; frames arriving 99.7% vs 100%.
	xdpRxFrames = 32768
	// How long a read that finds the rx ring empty, right after a read
	// that returned frames, sleeps before it looks again (the kernel's
	// timer slack, 50 µs for a normal thread, comes on top), instead of
	// waiting in poll(2) on the socket. While the reader waits on the
	// socket, the kernel wakes it when it puts frames on the rx ring
	// (sock_def_readable from the XDP flush), in the softirq of whoever
	// sent them: on the 2-core host that is BenchmarkForwardVeth's
	// sender, which a profile (perf record -g on the sender, main at
	// f5eec58) showed spending 3.9% of its samples in that wake-up
	// (_raw_spin_unlock_irqrestore under sock_def_readable under
	// __xsk_map_flush). A nap no one wakes: the reader's own timer ends
	// it, on its own core, and it then finds a batch (at 1 Mpps, 20 to
	// 70 frames) where each wake-up found about 2.5 (XDP_STATISTICS
	// tx_ring_empty_descs: 0.39 sendto calls per frame). Only when a
	// nap finds nothing does the reader wait on the socket again, so an
	// idle port costs one nap.
	//
	// Tried beside it, as throwaway builds (BenchmarkForwardVeth,
	// FWD_PHASES=xdp,bridge, alternated with this code, 4-5 rounds each,
	// load 5-7): busy polling, with the socket's SO_PREFER_BUSY_POLL,
	// SO_BUSY_POLL 20 µs and SO_BUSY_POLL_BUDGET 64, a recvfrom
	// (MSG_DONTWAIT) when the ring is empty, and on M's veth end
	// napi_defer_hard_irqs 2 and gro_flush_timeout 200 µs, has the
	// reader run the veth's NAPI (the XDP program and both copies) in
	// place of the sender's softirq: the sender's CPU per frame against
	// its own in the bridge phase 0.65-0.68x (0.95-0.96x here), delivered
	// vs the bridge 1.17-1.20x (0.84-0.97x here), but in one of the two
	// sets 14% of the frames dropped at the veth's 256-slot ring while the
	// reader waited for a CPU; with gro_flush_timeout 20 µs the sender
	// paid more (1.31x). The product would have to set the two device
	// knobs itself (netdev netlink napi-set, in the port's namespace) and
	// put them back on Close. Threaded NAPI on that veth end made the
	// sender wake the NAPI thread for each frame: delivered vs the bridge
	// 0.55x, sender CPU per frame 3740 vs 2382 ns.
	xdpNap = 20 * time.Microsecond
	// The fewest frames a read returns for the next read that finds the
	// ring empty to nap: a nap costs the reader a sleep and a wake-up
	// of its own (TestNetdevXDPIdleReaderSleeps, frames one at a time
	// 500 µs apart: 21 to 28 µs of reader CPU per frame with a nap after
	// every read, 6 to 8 µs without), worth it only while frames come
	// faster than one per wake-up.
	xdpBusyFrames = 2
	// UMEM frames for transmission, and the size of the tx and
	// completion rings: copy mode transmits in sendto, so few are in
	// flight at a time.
	xdpTxFrames   = 4096
	xdpFrames     = xdpRxFrames + xdpTxFrames
	xdpQueue      = 0   // the one rx queue the socket binds to
	xdpMaxKicks   = 128 // sendto calls per write before waiting for room
	xdpDescSize   = int(unsafe.Sizeof(unix.XDPDesc{}))
	xdpBindWait   = 500 * time.Millisecond // for a queue the kernel has not freed yet
	xdpBpfMapName = "ovsdp_xsks"
)

// XDPVLANRestore returns nil when the port's XDP program puts back in
// line the outer VLAN tag the driver took out of a received frame, or
// why it does not (no kfunc bpf_xdp_metadata_rx_vlan_tag in the kernel
// or driver, generic mode).
func (p *XDPPort) XDPVLANRestore() error {
	if p.xdp.vlanRestore {
		return nil
	}
	if p.xdp.vlanErr == nil {
		return errors.New("AF_XDP: the XDP program does not restore VLAN tags")
	}
	return fmt.Errorf("AF_XDP: outer VLAN tags taken out by the driver are lost: %w", p.xdp.vlanErr)
}

// XDP constants (include/uapi/linux/bpf.h).
const (
	xdpPass             = 2  // XDP_PASS
	xdpMdRxQueueOff     = 16 // struct xdp_md.rx_queue_index
	bpfFXDPDevBoundOnly = 0x40
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

// xdpSock is the AF_XDP state of an XDPPort.
type xdpSock struct {
	fd        int
	waiter    *fdWaiter // what reads and writes wait in, for the socket
	umem      []byte
	frameSize int
	fill      xdpRing
	comp      xdpRing
	rx        xdpRing
	tx        xdpRing
	freeTx    []uint64  // UMEM addresses of tx frames the kernel does not hold
	link      link.Link // closing it detaches the program
	prog      *ebpf.Program
	xsks      *ebpf.Map // the XSKMAP holding the socket
	native    bool      // attached in driver mode (else generic)
	// vlanRestore: the program puts back in line the outer VLAN tag the
	// driver took out of the frame; else vlanErr says why not.
	vlanRestore bool
	vlanErr     error
	lastStats   unix.XDPStatistics
	// rxBusy: the last read returned xdpBusyFrames or more (readWait
	// naps rather than waits on the socket when the next finds the
	// ring empty).
	rxBusy bool

	// WriteBatch call state, used by writeXDPFn.
	txPkts  [][]byte
	txDone  int // frames of txPkts queued on the tx ring
	txBytes uint64
	txErr   error
	txBad   int // index in txPkts of a frame refused, or -1
	txDrops int // frames the kernel completed without sending
}

// XDPNative reports whether the port's program runs in the driver
// (native XDP) rather than in generic (skb) mode.
func (p *XDPPort) XDPNative() bool { return p.xdp.native }

// Mode returns NetdevXDP.
func (p *XDPPort) Mode() NetdevMode { return NetdevXDP }

// VLANTxOffload returns why the port sends VLAN tags in line: AF_XDP
// transmits frames as written, past the tc egress hook.
func (p *XDPPort) VLANTxOffload() error { return errXDPVLANTx }

// openXDP opens an XDPPort (OpenNetdev with NetdevXDP).
func openXDP(name string, opts NetdevOptions) (*XDPPort, error) {
	p := &XDPPort{}
	if err := p.init(name, opts); err != nil {
		return nil, err
	}
	if err := p.setup(); err != nil {
		return nil, fmt.Errorf("userdp: netdev %s: %w", name, err)
	}
	fd := p.xdp.fd
	p.xdp.fd = -1 // p.file owns it
	if err := p.adopt(fd, "afxdp"); err != nil {
		p.xdp.release()
		return nil, fmt.Errorf("userdp: netdev %s: %w", name, err)
	}
	p.readFn = func(uintptr) bool { return p.readXDP() }
	p.writeFn = p.doWriteXDP
	p.pollFn = p.pollXDPDrops
	p.useWaiter(p.xdp.waiter)
	p.rdWait = func(fd uintptr) { p.rdWaitErr = p.xdp.readWait(fd, p.readFn) }
	return p, nil
}

// readWait calls read until it returns true. A read that finds the rx
// ring empty right after one that returned xdpBusyFrames or more (read
// sets x.rxBusy) naps (xdpNap) and tries again; a read that finds it
// empty otherwise, or after the nap, waits in poll(2) on the socket
// until the kernel wakes it with frames.
func (x *xdpSock) readWait(fd uintptr, read func(fd uintptr) bool) error {
	for !read(fd) {
		var err error
		if x.rxBusy {
			x.rxBusy = false
			err = x.waiter.nap(xdpNap)
		} else {
			err = x.waiter.wait(fd, unix.POLLIN)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// Close detaches the XDP program, closes the socket (unblocking a
// pending ReadBatch) and the XSKMAP, and frees the UMEM.
func (p *XDPPort) Close() error {
	if !p.markClosed() {
		return nil
	}
	p.xdp.detach() // before the socket goes: no frame reaches the stack half-done
	// Wake a ReadBatch or WriteBatch waiting in poll(2); the socket is
	// closed once they have left it (os.File waits for them).
	werr := p.xdp.waiter.wake()
	err := p.file.Close()
	if err == nil {
		err = werr
	}
	// The socket is closed: no reader or writer is in the rings.
	p.rdMu.Lock()
	p.wrMu.Lock()
	if e := p.xdp.release(); e != nil && err == nil {
		err = e
	}
	p.wrMu.Unlock()
	p.rdMu.Unlock()
	return p.closeErr(err)
}

// xskProgram returns the XDP program:
//
//	if vlanKfunc != 0 && bpf_xdp_metadata_rx_vlan_tag(ctx, &tpid, &tci) == 0 &&
//	   bpf_xdp_adjust_head(ctx, -4) == 0 && the frame has 18 bytes:
//		move the Ethernet addresses 4 bytes to the front, and write
//		tpid, tci in the 4 bytes after them
//	return bpf_redirect_map(xsks, ctx->rx_queue_index, XDP_PASS)
//
// vlanKfunc is the BTF id of the kfunc bpf_xdp_metadata_rx_vlan_tag,
// which returns the outer VLAN tag a driver took out of the frame (veth
// does, for a tag its peer sent out of band); putting it back in line
// gives the socket the whole frame, as the AF_PACKET modes do.
func xskProgram(xsks *ebpf.Map, vlanKfunc btf.TypeID) asm.Instructions {
	const (
		r0, r1, r2, r3, r4, r5, r6 = asm.R0, asm.R1, asm.R2, asm.R3, asm.R4, asm.R5, asm.R6
		fp                         = asm.R10
	)
	var p asm.Instructions
	if vlanKfunc != 0 {
		p = asm.Instructions{
			asm.Mov.Reg(r6, r1),               // r6 = ctx
			asm.StoreImm(fp, -8, 0, asm.Word), // tpid at fp-8, tci at fp-6
			asm.Mov.Reg(r2, fp),
			asm.Add.Imm(r2, -8),
			asm.Mov.Reg(r3, fp),
			asm.Add.Imm(r3, -6),
			{OpCode: asm.OpCode(asm.JumpClass).SetJumpOp(asm.Call), Src: asm.PseudoKfuncCall, Constant: int64(vlanKfunc)},
			asm.JNE.Imm(r0, 0, "redirect"),
			asm.Mov.Reg(r1, r6),
			asm.Mov.Imm(r2, -4),
			asm.FnXdpAdjustHead.Call(),
			asm.JNE.Imm(r0, 0, "redirect"),
			asm.LoadMem(r2, r6, 0, asm.Word), // data
			asm.LoadMem(r3, r6, 4, asm.Word), // data_end
			asm.Mov.Reg(r4, r2),
			asm.Add.Imm(r4, 18),
			asm.JGT.Reg(r4, r3, "redirect"),
			asm.LoadMem(r5, r2, 4, asm.Word),
			asm.StoreMem(r2, 0, r5, asm.Word),
			asm.LoadMem(r5, r2, 8, asm.Word),
			asm.StoreMem(r2, 4, r5, asm.Word),
			asm.LoadMem(r5, r2, 12, asm.Word),
			asm.StoreMem(r2, 8, r5, asm.Word),
			asm.LoadMem(r5, fp, -8, asm.Half), // tpid, in network order
			asm.StoreMem(r2, 12, r5, asm.Half),
			asm.LoadMem(r5, fp, -6, asm.Half), // tci, in host order
			asm.HostTo(asm.BE, r5, asm.Half),
			asm.StoreMem(r2, 14, r5, asm.Half),
			asm.Mov.Reg(r1, r6).WithSymbol("redirect"), // r1 = ctx
		}
	}
	return append(p,
		asm.LoadMem(r2, r1, xdpMdRxQueueOff, asm.Word),
		asm.LoadMapPtr(r1, xsks.FD()),
		asm.Mov.Imm(r3, xdpPass),
		asm.FnRedirectMap.Call(),
		asm.Return(),
	)
}

// loadXSKProgram loads xskProgram. With vlanKfunc, the program is bound
// to interface ifindex (a kfunc of the driver's XDP metadata needs that)
// and can only be attached in driver mode.
func loadXSKProgram(xsks *ebpf.Map, vlanKfunc btf.TypeID, ifindex int) (*ebpf.Program, error) {
	spec := &ebpf.ProgramSpec{
		Name:         "ovsdp_xsk",
		Type:         ebpf.XDP,
		Instructions: xskProgram(xsks, vlanKfunc),
	}
	if vlanKfunc != 0 {
		spec.Flags = bpfFXDPDevBoundOnly
		spec.Ifindex = uint32(ifindex)
	}
	return loadProgram(spec, "the XDP program")
}

// xdpAttach attaches prog to interface ifindex (in the calling thread's
// network namespace) through a BPF link (BPF_LINK_CREATE), in driver
// mode or in generic (skb) mode.
func xdpAttach(prog *ebpf.Program, ifindex int, mode link.XDPAttachFlags) (link.Link, error) {
	return link.AttachXDP(link.XDPOptions{Program: prog, Interface: ifindex, Flags: mode})
}

// attach loads the XDP program and attaches it to interface ifindex: in
// driver mode with the VLAN tag restored (when the kernel has the kfunc
// and the driver implements it), else in driver mode without, else in
// generic mode. x.vlanErr says why there is no VLAN restoring.
func (x *xdpSock) attach(ifindex int) error {
	kfunc, err := btfFuncID("bpf_xdp_metadata_rx_vlan_tag")
	if err == nil {
		x.prog, err = loadXSKProgram(x.xsks, kfunc, ifindex)
		if err != nil {
			err = fmt.Errorf("device-bound program calling bpf_xdp_metadata_rx_vlan_tag (the driver may have no XDP metadata kfuncs): %w", err)
		} else {
			x.link, err = xdpAttach(x.prog, ifindex, link.XDPDriverMode)
			if err == nil {
				x.native, x.vlanRestore = true, true
				return nil
			}
			err = fmt.Errorf("attaching the device-bound XDP program (bpf BPF_LINK_CREATE, driver mode): %w", err)
			x.prog.Close()
			x.prog = nil
		}
	}
	x.vlanErr = err
	if x.prog, err = loadXSKProgram(x.xsks, 0, 0); err != nil {
		return err
	}
	var errDrv error
	if x.link, errDrv = xdpAttach(x.prog, ifindex, link.XDPDriverMode); errDrv == nil {
		x.native = true
		return nil
	}
	if errors.Is(errDrv, unix.EBUSY) || errors.Is(errDrv, unix.EEXIST) {
		return fmt.Errorf("attaching the XDP program (bpf BPF_LINK_CREATE): the interface already has an XDP program: %w", errDrv)
	}
	x.link, err = xdpAttach(x.prog, ifindex, link.XDPGenericMode)
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

// setup sets up the AF_XDP socket (in p.xdp.fd), its UMEM and rings, and
// the XDP program.
func (p *XDPPort) setup() (err error) {
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
	x := &xdpSock{fd: -1, frameSize: frameSize}
	defer func() {
		if err != nil {
			x.release()
		}
	}()
	x.umem, err = unix.Mmap(-1, 0, xdpFrames*frameSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_POPULATE)
	if err != nil {
		return fmt.Errorf("AF_XDP: mapping the %d-byte UMEM: %w", xdpFrames*frameSize, err)
	}
	// In blocking mode, so that Go's poller does not take it (see
	// fdWaiter): every call on it that could block says MSG_DONTWAIT or
	// is a poll.
	x.fd, err = unix.Socket(unix.AF_XDP, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("AF_XDP socket: %w", err)
	}
	if x.waiter, err = newFdWaiter(); err != nil {
		return fmt.Errorf("AF_XDP: %w", err)
	}
	reg := unix.XDPUmemReg{Addr: uint64(uintptr(unsafe.Pointer(&x.umem[0]))), Len: uint64(len(x.umem)), Size: uint32(frameSize)}
	if err := setsockoptPtr(x.fd, unix.SOL_XDP, unix.XDP_UMEM_REG, unsafe.Pointer(&reg), unsafe.Sizeof(reg)); err != nil {
		return fmt.Errorf("AF_XDP: registering the UMEM (XDP_UMEM_REG): %w", err)
	}
	for _, r := range []struct {
		opt  int
		name string
		size int
	}{
		{unix.XDP_UMEM_FILL_RING, "XDP_UMEM_FILL_RING", xdpRxFrames},
		{unix.XDP_UMEM_COMPLETION_RING, "XDP_UMEM_COMPLETION_RING", xdpTxFrames},
		{unix.XDP_RX_RING, "XDP_RX_RING", xdpRxFrames},
		{unix.XDP_TX_RING, "XDP_TX_RING", xdpTxFrames},
	} {
		if err := unix.SetsockoptInt(x.fd, unix.SOL_XDP, r.opt, r.size); err != nil {
			return fmt.Errorf("AF_XDP: sizing a ring (%s): %w", r.name, err)
		}
	}
	var off unix.XDPMmapOffsets
	if err := getsockoptPtr(x.fd, unix.SOL_XDP, unix.XDP_MMAP_OFFSETS, unsafe.Pointer(&off), unsafe.Sizeof(off)); err != nil {
		return fmt.Errorf("AF_XDP: ring offsets (XDP_MMAP_OFFSETS): %w", err)
	}
	if x.fill, err = mapRing(x.fd, unix.XDP_UMEM_PGOFF_FILL_RING, off.Fr, xdpRxFrames, 8); err != nil {
		return fmt.Errorf("AF_XDP: mapping the fill ring: %w", err)
	}
	if x.comp, err = mapRing(x.fd, unix.XDP_UMEM_PGOFF_COMPLETION_RING, off.Cr, xdpTxFrames, 8); err != nil {
		return fmt.Errorf("AF_XDP: mapping the completion ring: %w", err)
	}
	if x.rx, err = mapRing(x.fd, unix.XDP_PGOFF_RX_RING, off.Rx, xdpRxFrames, xdpDescSize); err != nil {
		return fmt.Errorf("AF_XDP: mapping the rx ring: %w", err)
	}
	if x.tx, err = mapRing(x.fd, unix.XDP_PGOFF_TX_RING, off.Tx, xdpTxFrames, xdpDescSize); err != nil {
		return fmt.Errorf("AF_XDP: mapping the tx ring: %w", err)
	}
	// The first xdpRxFrames frames of the UMEM go to the kernel for
	// received frames.
	prod := atomic.LoadUint32(x.fill.producer)
	for i := 0; i < xdpRxFrames; i++ {
		*x.fill.addr(prod + uint32(i)) = uint64(i * frameSize)
	}
	atomic.StoreUint32(x.fill.producer, prod+xdpRxFrames)
	x.freeTx = make([]uint64, 0, xdpTxFrames)
	for i := xdpFrames - 1; i >= xdpRxFrames; i-- {
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
	x.xsks, err = ebpf.NewMap(&ebpf.MapSpec{Name: xdpBpfMapName, Type: ebpf.XSKMap, KeySize: 4, ValueSize: 4, MaxEntries: 1})
	if err != nil {
		return fmt.Errorf("AF_XDP: creating the XSKMAP (bpf BPF_MAP_CREATE): %w", err)
	}
	if err := x.xsks.Put(uint32(xdpQueue), uint32(x.fd)); err != nil {
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
	if x != nil && x.link != nil {
		x.link.Close()
		x.link = nil
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
	if x.link != nil {
		keep(x.link.Close())
		x.link = nil
	}
	if x.prog != nil {
		keep(x.prog.Close())
		x.prog = nil
	}
	if x.xsks != nil {
		keep(x.xsks.Close())
		x.xsks = nil
	}
	if x.fd >= 0 {
		keep(unix.Close(x.fd))
		x.fd = -1
	}
	if x.waiter != nil {
		keep(x.waiter.close())
		x.waiter = nil
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
func (p *XDPPort) readXDP() bool {
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
	x.rxBusy = n >= xdpBusyFrames
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
func (p *XDPPort) kickTx(fd uintptr) bool {
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
func (p *XDPPort) xdpMaxTxLen(f []byte) int {
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
func (p *XDPPort) doWriteXDP(fd uintptr) bool {
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

// WriteBatch implements Port. A frame shorter than an Ethernet header or
// longer than the MTU allows is counted as a tx error and skipped (with
// an error returned, as AF_PACKET's EMSGSIZE); when every tx frame of the
// UMEM is in flight it waits for completions.
func (p *XDPPort) WriteBatch(pkts [][]byte) (int, error) {
	p.wrMu.Lock()
	defer p.wrMu.Unlock()
	x := p.xdp
	sent := 0
	var bytes uint64
	var firstErr error
	for len(pkts) > 0 {
		x.txPkts, x.txDone, x.txBytes, x.txErr, x.txBad, x.txDrops = pkts, 0, 0, nil, -1, 0
		err := p.write()
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
			p.stats.tx(sent, bytes)
			return sent, p.writeErr(err)
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
func (p *XDPPort) pollXDPDrops(fd uintptr) {
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

// errXDPVLANTx is XDPPort.VLANTxOffload.
var errXDPVLANTx = errors.New("AF_XDP transmits frames as written, bypassing the tc egress hook: VLAN tags go in line")

// vmlinuxBTF is where the kernel publishes its own BTF type information.
const vmlinuxBTF = "/sys/kernel/btf/vmlinux"

// btfFuncID returns the BTF type id of the kernel function name (a
// BTF_KIND_FUNC in the kernel's BTF), which a BPF program calls as a
// kfunc.
func btfFuncID(name string) (btf.TypeID, error) {
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

// findBTFFunc looks name up among the BTF_KIND_FUNC types of the raw BTF
// blob data (native byte order, as the running kernel writes it).
func findBTFFunc(data []byte, name string) (btf.TypeID, error) {
	spec, err := btf.LoadSpecFromReader(bytes.NewReader(data))
	if err != nil {
		return 0, fmt.Errorf("parsing BTF: %w", err)
	}
	var fn *btf.Func
	if err := spec.TypeByName(name, &fn); err != nil {
		return 0, fmt.Errorf("no function %s: %w", name, err)
	}
	id, err := spec.TypeID(fn)
	if err != nil {
		return 0, fmt.Errorf("function %s: %w", name, err)
	}
	return id, nil
}
