package userdp

import (
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"golang.org/x/sys/unix"

	"github.com/ovsdp/ovsdp/internal/header"
)

// The two lanes of a RingPort.
//
// A TPACKET_V2 slot ring hands each frame to the reader as soon as it is
// in, which is what a lone frame (the first of a new flow) needs; a
// TPACKET_V3 block ring hands frames over a block at a time (when the
// block is full or its 1 ms timer fires), which is what a stream of
// frames needs: one wake-up per block, and small frames packed tightly
// (8 MiB hold about 50,000 64-byte frames, against 4,096 in 2 KiB
// slots). A RingPort has both: two sockets in one PACKET_FANOUT_EBPF
// group, the slot socket first, and a BPF program that sends each frame
// to the lane a word in a memory-mapped BPF array says, so that the
// reader switches lanes with one store. The reader takes the block
// lane at laneUpRate frames per second or more and goes back to the
// slots below laneDownRate, the latter judged only when it has caught
// up. The order of a sender's frames is kept across switches (readRing).
//
// Outgoing frames: the fanout group's hook does not inherit the
// sockets' PACKET_IGNORE_OUTGOING. The group is asked for
// PACKET_FANOUT_FLAG_IGNORE_OUTGOING (without it if the kernel refuses
// it), and both sockets carry a classic BPF filter that drops outgoing
// frames anyway, for a kernel that accepts the flag without honouring
// it.
//
// Without BPF (the kernel or the process cannot load the program or
// make the map), the port has the slot ring alone (Lanes says why).

// The lane switch's thresholds, in frames delivered per second over a
// window of at least laneUpWindow in the slot lane, laneDownWindow in
// the block lane (longer: a sender or a reader held off the CPU for a
// few milliseconds on a busy host does not send a stream back to the
// slots).
const (
	laneUpRate     = 100_000
	laneDownRate   = 20_000
	laneUpWindow   = 2 * time.Millisecond
	laneDownWindow = 10 * time.Millisecond
)

// laneClockStart is the origin of the lane switch's clock.
var laneClockStart = time.Now()

// laneSwitch is the state of a RingPort's lanes.
type laneSwitch struct {
	err   error   // why there is one lane, or nil
	word  *uint32 // the switch word in the map (0: slots, 1: blocks), nil with one lane
	bulk  bool    // the word is 1
	m     *ebpf.Map
	prog  *ebpf.Program
	mem   []byte // the map's mapping
	epoll int    // the epoll descriptor, before epFile owns it
	// groupIgnoresOutgoing: the kernel accepted the fanout group's
	// PACKET_FANOUT_FLAG_IGNORE_OUTGOING (the sockets' filters keep
	// outgoing frames out either way).
	groupIgnoresOutgoing bool

	// The rate window: frames delivered since winStart.
	winStart  time.Duration
	winFrames int
	// frames counts the frames read from each lane; switches the
	// switches made (tests).
	frames   [2]uint64
	switches uint64
	// manual stops account switching (tests switch with set).
	manual bool
}

// ringLanesOff makes ring ports open with the slot ring alone, as where
// BPF is unavailable (tests of that case).
var ringLanesOff bool

// errNoFanoutBPF wraps why a RingPort has one lane.
var errNoFanoutBPF = errors.New("userdp: ring port with the slot ring alone")

// load makes the switch's map and fanout program. It returns why it
// could not.
func (l *laneSwitch) load() error {
	if ringLanesOff {
		return fmt.Errorf("%w: turned off", errNoFanoutBPF)
	}
	m, err := ebpf.NewMap(&ebpf.MapSpec{
		Name:       "ovsdp_lane",
		Type:       ebpf.Array,
		KeySize:    4,
		ValueSize:  4,
		MaxEntries: 1,
		Flags:      unix.BPF_F_MMAPABLE,
	})
	if err != nil {
		return fmt.Errorf("%w: BPF array map: %w", errNoFanoutBPF, err)
	}
	mem, err := unix.Mmap(m.FD(), 0, os.Getpagesize(), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		m.Close()
		return fmt.Errorf("%w: mmap of the BPF array map: %w", errNoFanoutBPF, err)
	}
	prog, err := loadProgram(&ebpf.ProgramSpec{
		Name:         "ovsdp_lane",
		Type:         ebpf.SocketFilter,
		Instructions: laneProgram(m.FD()),
	}, "the ring port's fanout program")
	if err != nil {
		unix.Munmap(mem)
		m.Close()
		return fmt.Errorf("%w: %w", errNoFanoutBPF, err)
	}
	l.m, l.mem, l.prog = m, mem, prog
	l.word = (*uint32)(unsafe.Pointer(&mem[0]))
	return nil
}

// laneProgram returns the fanout program: the index of the socket in
// the group (0: slots, 1: blocks) is the map's word.
func laneProgram(mapFD int) asm.Instructions {
	return asm.Instructions{
		asm.StoreImm(asm.RFP, -4, 0, asm.Word),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, -4),
		asm.LoadMapPtr(asm.R1, mapFD),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "none"),
		asm.LoadMem(asm.R0, asm.R0, 0, asm.Word),
		asm.Return(),
		asm.Mov.Imm(asm.R0, 0).WithSymbol("none"),
		asm.Return(),
	}
}

// close releases the map and the program.
func (l *laneSwitch) close() {
	if l.epoll > 0 {
		unix.Close(l.epoll)
		l.epoll = 0
	}
	if l.mem != nil {
		unix.Munmap(l.mem)
		l.mem, l.word = nil, nil
	}
	if l.prog != nil {
		l.prog.Close()
		l.prog = nil
	}
	if l.m != nil {
		l.m.Close()
		l.m = nil
	}
}

// set points the fanout program at lane bulk.
func (l *laneSwitch) set(bulk bool) {
	v := uint32(0)
	if bulk {
		v = 1
	}
	atomic.StoreUint32(l.word, v)
	l.bulk = bulk
	l.switches++
}

// account adds n delivered frames to the rate window and, at the end of
// a window, switches lanes: to the blocks at laneUpRate or more once
// the block ring holds nothing from an earlier bulk period; back to the
// slots below laneDownRate when the reader caught up.
func (l *laneSwitch) account(p *RingPort, n int, caughtUp bool) {
	if l.word == nil || l.manual {
		return
	}
	l.winFrames += n
	now := time.Since(laneClockStart)
	el := now - l.winStart
	if (!l.bulk && el < laneUpWindow) || (l.bulk && el < laneDownWindow) {
		return
	}
	rate := float64(l.winFrames) / el.Seconds()
	switch {
	case !l.bulk && rate >= laneUpRate:
		if p.bulk.pending() || p.seg.active {
			return // keep the window: judged again at the next read
		}
		l.set(true)
	case l.bulk && rate < laneDownRate && caughtUp:
		l.set(false)
	}
	l.winStart, l.winFrames = now, 0
}

// The classic BPF ancillary load of skb->pkt_type (linux/filter.h).
const (
	skfAdOff     = 0xfffff000 // SKF_AD_OFF, -0x1000
	skfAdPktType = 4          // SKF_AD_PKTTYPE
)

// Classic BPF filters on the ring sockets.
var (
	// noOutgoing drops the frames the host sends (pkt_type
	// PACKET_OUTGOING), keeps the others whole.
	noOutgoing = []unix.SockFilter{
		{Code: unix.BPF_LD | unix.BPF_B | unix.BPF_ABS, K: skfAdOff + skfAdPktType},
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, Jt: 0, Jf: 1, K: unix.PACKET_OUTGOING},
		{Code: unix.BPF_RET | unix.BPF_K, K: 0},
		{Code: unix.BPF_RET | unix.BPF_K, K: 0xffffffff},
	}
	// dropAll keeps nothing: the block socket has it until it is in
	// the group, so that it takes no frame of its own before.
	dropAll = []unix.SockFilter{{Code: unix.BPF_RET | unix.BPF_K, K: 0}}
)

// attachNoOutgoing attaches noOutgoing to fd.
func attachNoOutgoing(fd int) error {
	if err := attachFilter(fd, noOutgoing); err != nil {
		return fmt.Errorf("SO_ATTACH_FILTER (outgoing frames): %w", err)
	}
	return nil
}

// openBulkLane adds the block lane to a port whose slot socket is open:
// the block socket, the fanout group and the epoll descriptor that
// ReadBatch waits on. An error the kernel gives for the fanout group (an
// old kernel) leaves the port with one lane and the reason in p.lanes.err;
// other errors are returned.
func (p *RingPort) openBulkLane(opts NetdevOptions) error {
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("AF_PACKET socket for the block ring: %w", err)
	}
	p.v3File = os.NewFile(uintptr(fd), "afpacket-blocks:"+p.name)
	if p.v3RC, err = p.v3File.SyscallConn(); err != nil {
		return err
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_IGNORE_OUTGOING, 1); err != nil {
		return fmt.Errorf("PACKET_IGNORE_OUTGOING: %w", err)
	}
	unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, 4<<20)
	if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_VNET_HDR, 1); err != nil {
		return fmt.Errorf("PACKET_VNET_HDR: %w", err)
	}
	if err := attachFilter(fd, dropAll); err != nil {
		return fmt.Errorf("SO_ATTACH_FILTER (drop all): %w", err)
	}
	if err := p.bulk.setup(fd, p.mtu, opts); err != nil {
		return err
	}
	sa := unix.RawSockaddrLinklayer{Family: unix.AF_PACKET, Protocol: header.Htons(unix.ETH_P_ALL), Ifindex: int32(p.ifindex)}
	if _, _, e := unix.Syscall(unix.SYS_BIND, uintptr(fd), uintptr(unsafe.Pointer(&sa)), unsafe.Sizeof(sa)); e != 0 {
		return fmt.Errorf("bind to ifindex %d: %w", p.ifindex, e)
	}
	slotFD := p.slotFD
	p.lanes.groupIgnoresOutgoing, err = joinFanout(slotFD, fd, p.lanes.prog.FD())
	if err != nil {
		p.lanes.err = fmt.Errorf("%w: %w", errNoFanoutBPF, err)
		p.bulk.unmap()
		p.v3File.Close()
		p.v3File, p.v3RC = nil, nil
		return nil
	}
	if err := attachNoOutgoing(fd); err != nil {
		return err
	}
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return fmt.Errorf("epoll_create1: %w", err)
	}
	p.lanes.epoll = ep
	for _, f := range []int{slotFD, fd} {
		ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(f)}
		if err := unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, f, &ev); err != nil {
			return fmt.Errorf("epoll_ctl: %w", err)
		}
	}
	if err := unix.SetNonblock(ep, true); err != nil {
		return fmt.Errorf("epoll descriptor non-blocking: %w", err)
	}
	p.epFile = os.NewFile(uintptr(ep), "afpacket-epoll:"+p.name)
	p.lanes.epoll = 0
	rc, err := p.epFile.SyscallConn()
	if err != nil {
		return err
	}
	p.rdRC = rc
	return nil
}

// joinFanout puts the slot socket and then the block socket (indexes 0
// and 1) in a new PACKET_FANOUT_EBPF group steered by prog; it returns
// whether the kernel accepted PACKET_FANOUT_FLAG_IGNORE_OUTGOING.
func joinFanout(slotFD, blockFD, prog int) (bool, error) {
	flags := unix.PACKET_FANOUT_EBPF | unix.PACKET_FANOUT_FLAG_IGNORE_OUTGOING
	err := unix.SetsockoptInt(slotFD, unix.SOL_PACKET, unix.PACKET_FANOUT, (flags|unix.PACKET_FANOUT_FLAG_UNIQUEID)<<16)
	if err == unix.EINVAL {
		// A kernel that refuses PACKET_FANOUT_FLAG_IGNORE_OUTGOING:
		// the sockets' filters drop outgoing frames.
		flags = unix.PACKET_FANOUT_EBPF
		err = unix.SetsockoptInt(slotFD, unix.SOL_PACKET, unix.PACKET_FANOUT, (flags|unix.PACKET_FANOUT_FLAG_UNIQUEID)<<16)
	}
	if err != nil {
		return false, fmt.Errorf("PACKET_FANOUT: %w", err)
	}
	v, err := unix.GetsockoptInt(slotFD, unix.SOL_PACKET, unix.PACKET_FANOUT)
	if err != nil {
		return false, fmt.Errorf("PACKET_FANOUT (reading the group id): %w", err)
	}
	id := v & 0xffff
	if err := unix.SetsockoptInt(slotFD, unix.SOL_PACKET, unix.PACKET_FANOUT_DATA, prog); err != nil {
		return false, fmt.Errorf("PACKET_FANOUT_DATA: %w", err)
	}
	if err := unix.SetsockoptInt(blockFD, unix.SOL_PACKET, unix.PACKET_FANOUT, id|flags<<16); err != nil {
		return false, fmt.Errorf("PACKET_FANOUT (joining group %d): %w", id, err)
	}
	return flags&unix.PACKET_FANOUT_FLAG_IGNORE_OUTGOING != 0, nil
}
