package userdp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"unsafe"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/ovsdp/ovsdp/internal/header"
)

// Transmitting the outer VLAN tag out of band.
//
// The kernel's datapath holds a packet's outer VLAN tag out of band (the
// skb's accelerated tag) and transmits it so: veth and most drivers hand
// it to the receiver beside the frame. A frame written through AF_PACKET
// carries every tag in line instead, and a Linux receiver must then take
// the outer tag out itself (skb_vlan_untag), which drops a tagged frame
// shorter than 20 bytes: the 18- and 19-byte frames that push_vlan makes
// of 14- and 15-byte ones, or trunc of a tagged frame, reach the receiver
// from the kernel's datapath but not from ours. (The receiver's byte
// counters also differ by the tag.)
//
// So a netdev port attaches a small tc program (cls_bpf, direct action)
// to its interface's egress: for a frame with no out-of-band tag whose
// skb->protocol is 802.1Q or 802.1ad, it pops the in-line outer tag and
// pushes it back out of band (bpf_skb_vlan_pop, bpf_skb_vlan_push), so
// the frame leaves exactly as the kernel's datapath sends it. This needs
// the clsact qdisc and cls_bpf (built in, or the modules sch_ingress and
// cls_bpf loaded) and CAP_BPF or CAP_SYS_ADMIN; without them the port
// still works, sending tags in line, and NetdevPort.VLANTxOffload says
// why.

// BPF instruction encoding (include/uapi/linux/bpf.h).
const (
	bpfMov64Reg = 0xbf // BPF_ALU64 | BPF_MOV | BPF_X
	bpfMov64Imm = 0xb7 // BPF_ALU64 | BPF_MOV | BPF_K
	bpfAdd64Imm = 0x07 // BPF_ALU64 | BPF_ADD | BPF_K
	bpfLdxW     = 0x61 // BPF_LDX | BPF_MEM | BPF_W
	bpfLdxH     = 0x69 // BPF_LDX | BPF_MEM | BPF_H
	bpfJeqImm   = 0x15 // BPF_JMP | BPF_JEQ | BPF_K
	bpfJneImm   = 0x55 // BPF_JMP | BPF_JNE | BPF_K
	bpfJneReg   = 0x5d // BPF_JMP | BPF_JNE | BPF_X
	bpfJeqReg   = 0x1d // BPF_JMP | BPF_JEQ | BPF_X
	bpfJltImm   = 0xa5 // BPF_JMP | BPF_JLT | BPF_K
	bpfToBE     = 0xdc // BPF_ALU | BPF_END | BPF_TO_BE
	bpfCall     = 0x85 // BPF_JMP | BPF_CALL
	bpfExit     = 0x95 // BPF_JMP | BPF_EXIT

	bpfFuncSkbVLANPush = 18
	bpfFuncSkbVLANPop  = 19
	bpfFuncSkbLoadByte = 26 // bpf_skb_load_bytes

	// struct __sk_buff field offsets.
	skbLenOff         = 0
	skbProtocolOff    = 16
	skbVLANPresentOff = 20

	bpfProgLoad        = 5 // BPF_PROG_LOAD
	bpfProgTypeSchedCl = 3 // BPF_PROG_TYPE_SCHED_CLS

	// vlanTxPrio is our filter's priority on the interface's egress.
	vlanTxPrio = 0xc0de
)

// bpfInsn is struct bpf_insn.
type bpfInsn struct {
	code uint8
	regs uint8 // dst | src<<4
	off  int16
	imm  int32
}

func insn(code uint8, dst, src uint8, off int16, imm int32) bpfInsn {
	return bpfInsn{code: code, regs: dst | src<<4, off: off, imm: imm}
}

// Jump targets in vlanTxProgram, resolved when it is built.
const (
	toOut  = -0x8000 // the final "return TC_ACT_OK"
	toPush = -0x7fff // the bpf_skb_vlan_push call
	toLen  = -0x7ffe // the length check
)

// vlanTxProgram returns the egress program:
//
//	if skb->vlan_present: return OK
//	proto := skb->protocol; if proto is neither 802.1Q nor 802.1ad: return OK
//	n := skb->len; if n < 18: return OK
//	tci := the 2 bytes at offset 14 (big-endian)
//	bpf_skb_vlan_pop(skb)
//	if skb->len is n-4 or n-8: bpf_skb_vlan_push(skb, proto, tci)
//	return OK
//
// bpf_skb_vlan_pop also moves a second in-line tag out of band (then the
// frame is 8 bytes shorter); the push puts that one back in line
// (skb_vlan_push) and the outer one out of band. The length check keeps
// a frame whose tag could not be popped as it was.
func vlanTxProgram() []bpfInsn {
	// skb->protocol holds the big-endian EtherType as stored in memory.
	var be [2]byte
	binary.BigEndian.PutUint16(be[:], header.EtherTypeVLAN)
	q := int32(binary.NativeEndian.Uint16(be[:]))
	binary.BigEndian.PutUint16(be[:], header.EtherTypeQinQ)
	ad := int32(binary.NativeEndian.Uint16(be[:]))
	const r0, r1, r2, r3, r4, r6, r7, r8, r9, r10 = 0, 1, 2, 3, 4, 6, 7, 8, 9, 10
	p := []bpfInsn{
		insn(bpfMov64Reg, r6, r1, 0, 0), // r6 = skb
		insn(bpfLdxW, r2, r6, skbVLANPresentOff, 0),
		insn(bpfJneImm, r2, 0, toOut, 0),
		insn(bpfLdxW, r7, r6, skbProtocolOff, 0),
		insn(bpfJeqImm, r7, 0, toLen, q),
		insn(bpfJneImm, r7, 0, toOut, ad),
		insn(bpfLdxW, r9, r6, skbLenOff, 0), // length check
		insn(bpfJltImm, r9, 0, toOut, 18),
		insn(bpfMov64Reg, r1, r6, 0, 0),
		insn(bpfMov64Imm, r2, 0, 0, 14),
		insn(bpfMov64Reg, r3, r10, 0, 0),
		insn(bpfAdd64Imm, r3, 0, 0, -8),
		insn(bpfMov64Imm, r4, 0, 0, 2),
		insn(bpfCall, 0, 0, 0, bpfFuncSkbLoadByte),
		insn(bpfJneImm, r0, 0, toOut, 0),
		insn(bpfLdxH, r8, r10, -8, 0),
		insn(bpfToBE, r8, 0, 0, 16), // r8 = host-order TCI
		insn(bpfMov64Reg, r1, r6, 0, 0),
		insn(bpfCall, 0, 0, 0, bpfFuncSkbVLANPop),
		insn(bpfLdxW, r2, r6, skbLenOff, 0),
		insn(bpfAdd64Imm, r2, 0, 0, 4),
		insn(bpfJeqReg, r2, r9, toPush, 0),
		insn(bpfAdd64Imm, r2, 0, 0, 4),
		insn(bpfJneReg, r2, r9, toOut, 0),
		insn(bpfMov64Reg, r1, r6, 0, 0), // push
		insn(bpfMov64Reg, r2, r7, 0, 0),
		insn(bpfMov64Reg, r3, r8, 0, 0),
		insn(bpfCall, 0, 0, 0, bpfFuncSkbVLANPush),
		insn(bpfMov64Imm, r0, 0, 0, 0), // out: TC_ACT_OK
		insn(bpfExit, 0, 0, 0, 0),
	}
	targets := map[int16]int{toOut: len(p) - 2, toPush: len(p) - 6, toLen: 6}
	for i := range p {
		if t, ok := targets[p[i].off]; ok && p[i].code&0x07 == 0x05 { // BPF_JMP
			p[i].off = int16(t - i - 1)
		}
	}
	return p
}

// bpfProgLoadAttr is the BPF_PROG_LOAD part of union bpf_attr.
type bpfProgLoadAttr struct {
	progType    uint32
	insnCnt     uint32
	insns       uint64
	license     uint64
	logLevel    uint32
	logSize     uint32
	logBuf      uint64
	kernVersion uint32
	progFlags   uint32
	progName    [16]byte
}

// bpfLicense is the license the project's BPF programs (the tc egress
// program here and the XDP program of afxdp_linux.go) declare to the
// kernel: "Dual MIT/GPL", the usual dual license of BPF programs that are
// loaded into the kernel. They are our own instructions, generated by
// this package, so they are under the project's MIT license (LICENSE),
// and the GPL alternative adds what loading them into the kernel needs:
// the kernel's license_is_gpl_compatible accepts the string, and the verifier lets only such programs call kfuncs, which
// the XDP program needs to put back VLAN tags that the driver took out
// of the frame (bpf_xdp_metadata_rx_vlan_tag).
const bpfLicense = "Dual MIT/GPL"

// loadVLANTxProgram loads the program and returns its file descriptor.
func loadVLANTxProgram() (int, error) {
	prog := vlanTxProgram()
	license := []byte(bpfLicense + "\x00")
	logBuf := make([]byte, 4096)
	attr := bpfProgLoadAttr{
		progType: bpfProgTypeSchedCl,
		insnCnt:  uint32(len(prog)),
		insns:    uint64(uintptr(unsafe.Pointer(&prog[0]))),
		license:  uint64(uintptr(unsafe.Pointer(&license[0]))),
		logLevel: 1,
		logSize:  uint32(len(logBuf)),
		logBuf:   uint64(uintptr(unsafe.Pointer(&logBuf[0]))),
	}
	copy(attr.progName[:], "ovsdp_vlan_tx")
	fd, _, e := unix.Syscall(unix.SYS_BPF, bpfProgLoad, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr))
	runtime.KeepAlive(prog)
	runtime.KeepAlive(license)
	if e != 0 {
		msg := unix.ByteSliceToString(logBuf)
		if msg != "" {
			return -1, fmt.Errorf("loading the egress VLAN program: %w (verifier: %s)", e, msg)
		}
		return -1, fmt.Errorf("loading the egress VLAN program: %w", e)
	}
	return int(fd), nil
}

// vlanTx is the egress program attached to one interface.
type vlanTx struct {
	filter *netlink.BpfFilter
	qdisc  *netlink.Clsact // nil if the interface had one already
}

// attachVLANTx attaches the egress program to interface ifindex (in the
// calling thread's network namespace).
func attachVLANTx(ifindex int) (*vlanTx, error) {
	fd, err := loadVLANTxProgram()
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd) // the filter holds the program
	v := &vlanTx{}
	q := &netlink.Clsact{QdiscAttrs: netlink.QdiscAttrs{
		LinkIndex: ifindex, Handle: netlink.MakeHandle(0xffff, 0), Parent: netlink.HANDLE_CLSACT,
	}}
	switch err := netlink.QdiscAdd(q); {
	case err == nil:
		v.qdisc = q
	case errors.Is(err, unix.EEXIST):
	default:
		return nil, fmt.Errorf("adding the clsact qdisc: %w", err)
	}
	v.filter = &netlink.BpfFilter{
		FilterAttrs: netlink.FilterAttrs{
			LinkIndex: ifindex, Parent: netlink.HANDLE_MIN_EGRESS, Handle: netlink.MakeHandle(0, 1),
			Protocol: unix.ETH_P_ALL, Priority: vlanTxPrio,
		},
		Fd: fd, Name: "ovsdp_vlan_tx", DirectAction: true,
	}
	if err := netlink.FilterReplace(v.filter); err != nil {
		if v.qdisc != nil {
			netlink.QdiscDel(v.qdisc)
		}
		return nil, fmt.Errorf("attaching the egress VLAN program: %w", err)
	}
	return v, nil
}

// detach removes the filter, and the qdisc if attachVLANTx added it. An
// interface that is gone took both with it.
func (v *vlanTx) detach() {
	if v == nil {
		return
	}
	netlink.FilterDel(v.filter)
	if v.qdisc != nil {
		netlink.QdiscDel(v.qdisc)
	}
}
