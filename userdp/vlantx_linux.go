package userdp

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
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
// still works, sending tags in line, and RingPort.VLANTxOffload says
// why.

// struct __sk_buff field offsets, and our filter's priority.
const (
	skbLenOff         = 0
	skbProtocolOff    = 16
	skbVLANPresentOff = 20

	// vlanTxPrio is our filter's priority on the interface's egress.
	vlanTxPrio = 0xc0de
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
func vlanTxProgram() asm.Instructions {
	// skb->protocol holds the big-endian EtherType as stored in memory.
	var be [2]byte
	binary.BigEndian.PutUint16(be[:], header.EtherTypeVLAN)
	q := int32(binary.NativeEndian.Uint16(be[:]))
	binary.BigEndian.PutUint16(be[:], header.EtherTypeQinQ)
	ad := int32(binary.NativeEndian.Uint16(be[:]))
	const (
		r0, r1, r2, r3, r4 = asm.R0, asm.R1, asm.R2, asm.R3, asm.R4
		r6, r7, r8, r9     = asm.R6, asm.R7, asm.R8, asm.R9
		fp                 = asm.R10
	)
	return asm.Instructions{
		asm.Mov.Reg(r6, r1), // r6 = skb
		asm.LoadMem(r2, r6, skbVLANPresentOff, asm.Word),
		asm.JNE.Imm(r2, 0, "out"),
		asm.LoadMem(r7, r6, skbProtocolOff, asm.Word),
		asm.JEq.Imm(r7, q, "len"),
		asm.JNE.Imm(r7, ad, "out"),
		asm.LoadMem(r9, r6, skbLenOff, asm.Word).WithSymbol("len"),
		asm.JLT.Imm(r9, 18, "out"),
		asm.Mov.Reg(r1, r6),
		asm.Mov.Imm(r2, 14),
		asm.Mov.Reg(r3, fp),
		asm.Add.Imm(r3, -8),
		asm.Mov.Imm(r4, 2),
		asm.FnSkbLoadBytes.Call(),
		asm.JNE.Imm(r0, 0, "out"),
		asm.LoadMem(r8, fp, -8, asm.Half),
		asm.HostTo(asm.BE, r8, asm.Half), // r8 = host-order TCI
		asm.Mov.Reg(r1, r6),
		asm.FnSkbVlanPop.Call(),
		asm.LoadMem(r2, r6, skbLenOff, asm.Word),
		asm.Add.Imm(r2, 4),
		asm.JEq.Reg(r2, r9, "push"),
		asm.Add.Imm(r2, 4),
		asm.JNE.Reg(r2, r9, "out"),
		asm.Mov.Reg(r1, r6).WithSymbol("push"),
		asm.Mov.Reg(r2, r7),
		asm.Mov.Reg(r3, r8),
		asm.FnSkbVlanPush.Call(),
		asm.Mov.Imm(r0, 0).WithSymbol("out"), // TC_ACT_OK
		asm.Return(),
	}
}

// vlanTx is the egress program attached to one interface.
type vlanTx struct {
	filter *netlink.BpfFilter
	qdisc  *netlink.Clsact // nil if the interface had one already
}

// attachVLANTx attaches the egress program to interface ifindex (in the
// calling thread's network namespace).
func attachVLANTx(ifindex int) (*vlanTx, error) {
	prog, err := loadProgram(&ebpf.ProgramSpec{
		Name:         "ovsdp_vlan_tx",
		Type:         ebpf.SchedCLS,
		Instructions: vlanTxProgram(),
	}, "the egress VLAN program")
	if err != nil {
		return nil, err
	}
	defer prog.Close() // the filter holds the program
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
		Fd: prog.FD(), Name: "ovsdp_vlan_tx", DirectAction: true,
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
