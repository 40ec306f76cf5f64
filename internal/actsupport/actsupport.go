// Package actsupport is the table of what each datapath answers to every
// action type of package odp: for each, a sample flow (a masked key and
// its actions, in dpctl's text) and the answer of Linux 6.1's
// openvswitch module and of the userspace datapath (package userdp) when
// the flow is put. userdp's unit tests check its column, the VM's kernel
// tests (crosscheck) the kernel's, so that a flow the kernel accepts and
// userdp refuses is always one of the documented refusals (Reason).
package actsupport

import "github.com/ovsdp/ovsdp/odp"

// Answer is what a datapath says to a flow put.
type Answer int

// The answers.
const (
	// Accepted: the flow is installed.
	Accepted Answer = iota
	// Invalid: EINVAL, as the kernel's validation gives it.
	Invalid
	// Unsupported: odp.ErrUnsupported (userdp only): the action has no
	// meaning or no implementation here, documented in Reason.
	Unsupported
)

// String names the answer.
func (a Answer) String() string {
	switch a {
	case Accepted:
		return "accepted"
	case Invalid:
		return "EINVAL"
	case Unsupported:
		return "unsupported"
	}
	return "answer?"
}

// Case is one sample flow and the answers to it.
type Case struct {
	// Type is the action type the case is about.
	Type odp.ActionType
	// Key and Actions are the flow, as dpctl add-flow takes them.
	Key, Actions string
	// Kernel and Userdp are the answers of Linux 6.1 and userdp.
	Kernel, Userdp Answer
	// Reason says why the two answers differ, when they do.
	Reason string
}

// Keys of the cases.
const (
	ipKey   = "in_port(1),eth(),eth_type(0x0800),ipv4(proto=17,frag=no),udp()"
	l3Key   = "in_port(1),eth_type(0x0800),ipv4(proto=17,frag=no),udp()"
	mplsKey = "in_port(1),eth(),eth_type(0x8847),mpls(label=5,tc=0,ttl=64,bos=1)"
	nshKey  = "in_port(1),eth(),eth_type(0x894f),nsh(np=1)"
)

// Cases has at least one case for every action type odp knows.
var Cases = []Case{
	{Type: odp.ActionOutput, Key: ipKey, Actions: "2"},
	{Type: odp.ActionUserspace, Key: ipKey, Actions: "userspace(pid=1,userdata(01020304))"},
	{Type: odp.ActionUserspace, Key: ipKey, Actions: "userspace(pid=1,tunnel_out_port=2)", Userdp: Unsupported,
		Reason: "the egress tunnel's metadata comes from a tunnel port (issue 16, tunnels)"},
	{Type: odp.ActionUserspace, Key: ipKey, Actions: "userspace(pid=0)", Kernel: Invalid,
		Reason: "the kernel wants a netlink port ID; userdp's upcalls go to its receivers (Datapath.Upcalls), any PID"},
	{Type: odp.ActionSet, Key: ipKey, Actions: "set(skb_priority(0x3)),2"},
	{Type: odp.ActionSetMasked, Key: ipKey, Actions: "set(ipv4(ttl=3)),2"},
	// Accepted, and every packet dropped when it runs (both datapaths).
	{Type: odp.ActionSetMasked, Key: ipKey, Actions: "set(ct_mark(0x1)),2"},
	{Type: odp.ActionSetMasked, Key: ipKey, Actions: "set(ct_label(0x1)),2"},
	{Type: odp.ActionSet, Key: ipKey, Actions: "set(tunnel(tun_id=0x1,dst=192.0.2.1,ttl=64,flags(key))),2",
		Userdp: Unsupported, Reason: "tunnel metadata needs tunnel ports (issue 16, tunnels)"},
	{Type: odp.ActionPushVLAN, Key: ipKey, Actions: "push_vlan(vid=5,pcp=0),2"},
	{Type: odp.ActionPopVLAN, Key: ipKey, Actions: "pop_vlan,2"},
	{Type: odp.ActionSample, Key: ipKey, Actions: "sample(sample=50.0%,actions(2))"},
	{Type: odp.ActionRecirc, Key: ipKey, Actions: "recirc(0x1)"},
	{Type: odp.ActionHash, Key: ipKey, Actions: "hash(l4(0)),recirc(0x1)"},
	{Type: odp.ActionHash, Key: ipKey, Actions: "hash(sym_l4(0)),recirc(0x1)", Kernel: Invalid,
		Reason: "Linux 6.1 knows only the L4 hash; userdp computes the symmetric one too"},
	{Type: odp.ActionPushMPLS, Key: ipKey, Actions: "push_mpls(label=7,tc=0,ttl=64,bos=1,eth_type=0x8847),2"},
	{Type: odp.ActionPopMPLS, Key: mplsKey, Actions: "pop_mpls(eth_type=0x800),2"},
	{Type: odp.ActionCT, Key: ipKey, Actions: "ct(commit,zone=1),recirc(0x1)"},
	{Type: odp.ActionTrunc, Key: ipKey, Actions: "trunc(100),2"},
	{Type: odp.ActionPushEth, Key: l3Key, Actions: "push_eth(src=02:00:00:00:00:01,dst=02:00:00:00:00:02),2"},
	{Type: odp.ActionPushEth, Key: ipKey, Actions: "push_eth(src=02:00:00:00:00:01,dst=02:00:00:00:00:02),2", Kernel: Invalid, Userdp: Invalid},
	{Type: odp.ActionPopEth, Key: ipKey, Actions: "pop_eth,recirc(0x1)"},
	{Type: odp.ActionCTClear, Key: ipKey, Actions: "ct_clear,2"},
	{Type: odp.ActionPushNSH, Key: ipKey, Actions: "push_nsh(flags=0,ttl=63,mdtype=1,np=3,spi=0x10,si=255,c1=0x1,c2=0x2,c3=0x3,c4=0x4),2"},
	{Type: odp.ActionPopNSH, Key: nshKey, Actions: "pop_eth,pop_nsh,recirc(0x1)"},
	{Type: odp.ActionSetMasked, Key: nshKey, Actions: "set(nsh(spi=0x5/0xffffff,si=3/0xff)),2", Kernel: Invalid, Userdp: Invalid},
	{Type: odp.ActionMeter, Key: ipKey, Actions: "meter(1),2"},
	{Type: odp.ActionClone, Key: ipKey, Actions: "clone(set(ipv4(ttl=3)),2),3"},
	{Type: odp.ActionCheckPktLen, Key: ipKey, Actions: "check_pkt_len(size=100,gt(2),le(3))"},
	{Type: odp.ActionAddMPLS, Key: ipKey, Actions: "add_mpls(label=7,tc=0,ttl=64,bos=1,eth_type=0x8847),recirc(0x1)"},
	{Type: odp.ActionAddMPLS, Key: ipKey, Actions: "add_mpls(label=7,tc=0,ttl=64,bos=1,eth_type=0x8847,tun_flags=0x1),2"},
	{Type: odp.ActionDecTTL, Key: ipKey, Actions: "dec_ttl(le_1(drop)),2"},
	{Type: odp.ActionDrop, Key: ipKey, Actions: "drop"},
	{Type: odp.ActionDrop, Key: ipKey, Actions: "drop(5)"},
	{Type: odp.ActionPsample, Key: ipKey, Actions: "psample(group=7,cookie=0x0102),2", Kernel: Invalid,
		Reason: "OVS_ACTION_ATTR_PSAMPLE came with Linux 6.11; 6.1 does not know the type (EINVAL). userdp delivers the samples to its subscribers (Datapath.PsampleEvents, dpctl psample-events)"},
	{Type: odp.ActionTunnelPush, Key: ipKey,
		Actions: "tnl_push(tnl_port(2),header(size=50,type=4,eth(dst=02:00:00:00:00:02,src=02:00:00:00:00:01,dl_type=0x0800),ipv4(src=192.0.2.1,dst=192.0.2.2,proto=17,tos=0,ttl=64,frag=0x4000),udp(src=0,dst=4789,csum=0x0),vxlan(flags=0x8000000,vni=0x1)),out_port(1))",
		Kernel:  Invalid, Userdp: Unsupported, Reason: "Open vSwitch's userspace datapath only (the kernel rejects it); needs tunnel ports (issue 16, tunnels)"},
	{Type: odp.ActionTunnelPop, Key: ipKey, Actions: "tnl_pop(2)", Kernel: Invalid, Userdp: Unsupported,
		Reason: "Open vSwitch's userspace datapath only (the kernel rejects it); needs tunnel ports (issue 16, tunnels)"},
	{Type: odp.ActionLBOutput, Key: ipKey, Actions: "lb_output(1)", Kernel: Invalid, Userdp: Unsupported,
		Reason: "Open vSwitch's userspace datapath balances a bond's members with it; this datapath has no bonds (nor does the kernel, which rejects it)"},
}
