package userdp

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"sync"

	"github.com/ovsdp/ovsdp/conntrack"
	"github.com/ovsdp/ovsdp/flowkeys"
	"github.com/ovsdp/ovsdp/internal/header"
	"github.com/ovsdp/ovsdp/odp"
)

// Actions are compiled when a flow is put (or a packet executed) into a
// program of ops: validated against the flow's key as the kernel's
// ovs_nla_copy_actions does (EINVAL where the kernel says EINVAL), with
// every set action's value and mask converted once to the packet
// operations' types, so that executing allocates nothing. An action the
// userspace datapath cannot execute (the package comment lists them,
// with the reasons, and any action type the odp package does not know)
// is rejected with an error that names it and wraps odp.ErrUnsupported:
// never accepted and ignored.
//
// Beyond the kernel: set and set_masked of icmp, icmpv6, arp and nd are
// executed (as Open vSwitch's userspace datapath does); the kernel
// rejects them with EINVAL.

// opKind is the kind of a compiled action.
type opKind uint8

const (
	opOutput opKind = iota + 1
	opUserspace
	opDrop
	opSetEth
	opSetIPv4
	opSetIPv6
	opSetTCP
	opSetUDP
	opSetSCTP
	opSetICMP
	opSetICMPv6
	opSetARP
	opSetND
	opSetMPLS
	opSetPriority
	opSetMark
	opPushVLAN
	opPopVLAN
	opPushMPLS
	opPopMPLS
	opTrunc
	opSample
	opClone
	opCheckPktLen
	opRecirc
	opHash
	opDecTTL
	opCTClear
	opMeter
	opCT
	opSetTunnel
	opTnlPush
	opTnlPop
	opPushEth
	opPopEth
	opAddMPLS
	opPushNSH
	opPopNSH
	opPsample
	opFail
)

// op is one compiled action.
type op struct {
	kind opKind
	last bool   // the last action of its list
	a, b uint32 // port, ID, length, probability, reason, value and mask, hash algorithm and basis
	c, d uint16 // TPID and TCI, EtherType, packet length
	set  *setArgs
	user *userspaceArgs
	ct   *conntrack.Action
	tnl  *tunnelInfo  // set(tunnel) (exec_tnl.go)
	push *tnlPushArgs // tnl_push (exec_tnl.go)
	// Nested lists: sample, clone, dec_ttl (sub); check_pkt_len
	// (sub: greater, sub2: less or equal).
	sub, sub2 []op
}

// setArgs are a set action's value and mask.
type setArgs struct {
	eth   [2]odp.Ethernet
	ip4   [2]odp.IPv4
	ip6   [2]odp.IPv6
	ports [2]odp.TCP  // set(tcp), set(udp) and set(sctp): the same two ports
	icmp  [2][2]uint8 // type, code
	arp   [2]odp.ARP
	nd    [2]odp.ND
	mpls  [2]uint32
	nsh   []byte // push_nsh's header
}

// userspaceArgs are a userspace action's arguments.
type userspaceArgs struct {
	pid      uint32
	userdata []byte
	actions  bool
	// tunPort, when hasTunPort, is tunnel_out_port: the port whose
	// egress tunnel key the upcall carries.
	tunPort    uint32
	hasTunPort bool
}

// Limits the kernel applies to action lists.
const (
	// maxCloneDepth is OVS_COPY_ACTIONS_MAX_DEPTH: nested clone,
	// sample, check_pkt_len and dec_ttl lists.
	maxCloneDepth = 16
	// maxActionsBytes is MAX_ACTIONS_BUFSIZE, the encoded size of a
	// flow's actions.
	maxActionsBytes = 32 * 1024
)

// compileActions validates as against the flow key k (the flow's key as
// given, or the executed packet's key) and compiles it.
func compileActions(as odp.Actions, k *flowkeys.Key) ([]op, error) {
	// The encoding is only measured: it goes to a pooled buffer.
	bp := actionsBufPool.Get().(*[]byte)
	b, err := odp.AppendActions((*bp)[:0], as)
	n := len(b)
	if cap(b) <= 1<<16 { // keep no giant buffer
		*bp = b[:0]
		actionsBufPool.Put(bp)
	}
	if err != nil {
		return nil, einval("actions: %v", err)
	}
	if n > maxActionsBytes {
		return nil, einval("actions: %d bytes exceed the kernel's limit of %d", n, maxActionsBytes)
	}
	c := compiler{key: *k}
	if header.IsMPLS(k.EthType) {
		c.mplsLabels = bits.OnesCount32(k.MPLSLabelsMask)
	}
	return c.list(as, 0, "actions")
}

// actionsBufPool holds the buffers compileActions encodes actions into
// to measure them.
var actionsBufPool = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// compiler tracks the key as the actions change it, as the kernel's
// validation (__ovs_nla_copy_actions) does for push/pop (its eth_type,
// vlan_tci and mpls_label_count) and for nesting.
type compiler struct {
	key        flowkeys.Key
	mplsLabels int
}

func (c *compiler) list(as odp.Actions, depth int, path string) ([]op, error) {
	if depth > maxCloneDepth {
		return nil, einval("%s: actions nested more than %d deep", path, maxCloneDepth)
	}
	ops := make([]op, 0, len(as))
	for i, a := range as {
		if a == nil {
			return nil, einval("%s[%d]: nil action", path, i)
		}
		// The action's path names it in errors only: it is formatted
		// (one allocation) when the action fails, compiling it again
		// from the state before it with its name, not for every action
		// of every flow put and execute.
		saved := *c
		o, err := c.action(a, depth, "", i == len(as)-1)
		if err != nil {
			*c = saved
			if _, named := c.action(a, depth, fmt.Sprintf("%s[%d] %s", path, i, a.ActionType()), i == len(as)-1); named != nil {
				err = named
			}
			return nil, err
		}
		o.last = i == len(as)-1
		ops = append(ops, o)
	}
	return ops, nil
}

func unsupported(path string, a odp.Action) error {
	return fmt.Errorf("%s: action %q: %w", path, odp.FormatActions(odp.Actions{a}), odp.ErrUnsupported)
}

func (c *compiler) action(a odp.Action, depth int, path string, last bool) (op, error) {
	if n, ok := a.(odp.NestedAction); ok {
		return c.nestedAction(n, depth, path)
	}
	if o, ok, err := c.l2Action(a, path); ok {
		return o, err
	}
	switch a := a.(type) {
	case odp.Output:
		return op{kind: opOutput, a: a.Port}, nil
	case odp.Userspace:
		return op{kind: opUserspace, user: &userspaceArgs{pid: a.PID, userdata: a.Userdata, actions: a.Actions,
			tunPort: a.EgressTunPort, hasTunPort: a.HasEgressTunPort}}, nil
	case odp.Drop:
		if !last {
			return op{}, einval("%s: drop must be the last action", path)
		}
		return op{kind: opDrop, a: a.Reason}, nil
	case odp.Set:
		return c.set(a.Key, nil, path)
	case odp.SetMasked:
		if a.Key == nil || a.Mask == nil || a.Key.KeyType() != a.Mask.KeyType() {
			return op{}, einval("%s: set_masked needs a value and a mask of the same type", path)
		}
		return c.set(a.Key, a.Mask, path)
	case odp.PushVLAN:
		if a.TPID != odp.EthTypeVLAN && a.TPID != odp.EthTypeQinQ {
			return op{}, einval("%s: TPID %#04x is neither 0x8100 nor 0x88a8", path, a.TPID)
		}
		if a.TCI&0x1000 == 0 {
			return op{}, einval("%s: TCI %#04x lacks the CFI (tag present) bit", path, a.TCI)
		}
		if c.key.MacProto != flowkeys.MacProtoEthernet {
			return op{}, einval("%s: packet has no Ethernet header", path)
		}
		c.key.VLANTCI = a.TCI
		return op{kind: opPushVLAN, c: a.TPID, d: a.TCI}, nil
	case odp.PopVLAN:
		if c.key.MacProto != flowkeys.MacProtoEthernet {
			return op{}, einval("%s: packet has no Ethernet header", path)
		}
		c.key.VLANTCI = 0
		return op{kind: opPopVLAN}, nil
	case odp.PushMPLS:
		if a.EthType != header.EtherTypeMPLS && a.EthType != header.EtherTypeMPLSMC {
			return op{}, einval("%s: EtherType %#04x is not MPLS", path, a.EthType)
		}
		// The kernel pushes MPLS only on packets of a known tag
		// order: no VLAN tag, and IPv4, IPv6, ARP, RARP or MPLS. It
		// pushes on L3 packets too (in front of them).
		if err := c.mplsPushable(path); err != nil {
			return op{}, err
		}
		c.key.EthType = a.EthType
		c.mplsLabels++
		return op{kind: opPushMPLS, a: a.LSE, c: a.EthType}, nil
	case odp.PopMPLS:
		if c.key.VLANTCI&flowkeys.VLANTagPresent != 0 {
			return op{}, einval("%s: the packet has a VLAN tag", path)
		}
		if c.key.EthType != header.EtherTypeMPLS && c.key.EthType != header.EtherTypeMPLSMC {
			return op{}, einval("%s: the flow's EtherType %#04x is not MPLS", path, c.key.EthType)
		}
		if a.EthType == header.EtherTypeTEB && c.key.MacProto != flowkeys.MacProtoNone {
			return op{}, einval("%s: EtherType 0x6558 (Ethernet) on a packet that has an Ethernet header", path)
		}
		// As the kernel: after the last label, or to a non-MPLS
		// EtherType, the packet's EtherType is unknown (0), so later
		// sets of L3 and L4 fields and pops are rejected.
		c.mplsLabels--
		if header.IsMPLS(a.EthType) && c.mplsLabels > 0 {
			c.key.EthType = a.EthType
		} else {
			c.key.EthType = 0
		}
		return op{kind: opPopMPLS, c: a.EthType}, nil
	case odp.Trunc:
		if a.MaxLen < 14 {
			return op{}, einval("%s: max_len %d is shorter than an Ethernet header", path, a.MaxLen)
		}
		return op{kind: opTrunc, a: a.MaxLen}, nil
	case odp.Recirc:
		return op{kind: opRecirc, a: a.ID}, nil
	case odp.Hash:
		if a.Alg != odp.HashL4 && a.Alg != odp.HashSymL4 {
			return op{}, einval("%s: unknown hash algorithm %d", path, a.Alg)
		}
		return op{kind: opHash, a: a.Alg, b: a.Basis}, nil
	case odp.CTClear:
		return op{kind: opCTClear}, nil
	case odp.TunnelPush:
		return compileTnlPush(a, path)
	case odp.TunnelPop:
		return op{kind: opTnlPop, a: a.Port}, nil
	case odp.Meter:
		return op{kind: opMeter, a: a.ID}, nil
	case odp.Psample:
		return compilePsample(a, path)
	case odp.LBOutput:
		return op{}, fmt.Errorf("%s: lb_output(%d): the action of Open vSwitch's userspace datapath that balances a bond's members; this datapath has no bonds (and the kernel rejects the action): %w", path, a.BondID, odp.ErrUnsupported)
	case odp.CT:
		ca, err := conntrack.CompileAction(&a, c.key.EthType)
		if err != nil {
			return op{}, fmt.Errorf("%s: %w", path, err)
		}
		return op{kind: opCT, ct: &ca}, nil
	}
	return op{}, unsupported(path, a)
}

// nestedAction compiles an action that holds action lists: every list
// it has (odp.NestedAction, so that none is skipped), each with its own
// copy of the key state as the kernel validates nested lists, then the op
// of its kind.
func (c *compiler) nestedAction(n odp.NestedAction, depth int, path string) (op, error) {
	var subs [2][]op
	lists := n.SubLists()
	if len(lists) > len(subs) {
		return op{}, unsupported(path, n)
	}
	for i, l := range lists {
		p := path
		if l.Name != "" {
			p += " " + l.Name
		}
		var err error
		if subs[i], err = c.nested(l.Actions, depth, p); err != nil {
			return op{}, err
		}
	}
	switch a := n.(type) {
	case odp.Sample:
		return op{kind: opSample, a: a.Probability, sub: subs[0]}, nil
	case odp.Clone:
		return op{kind: opClone, sub: subs[0]}, nil
	case odp.CheckPktLen:
		return op{kind: opCheckPktLen, c: a.PktLen, sub: subs[0], sub2: subs[1]}, nil
	case odp.DecTTL:
		// The kernel accepts dec_ttl whatever the EtherType; it
		// changes only IPv4 and IPv6 packets.
		return op{kind: opDecTTL, sub: subs[0]}, nil
	}
	return op{}, unsupported(path, n)
}

// nested compiles a nested list with its own copy of the key state, as
// the kernel validates nested lists.
func (c *compiler) nested(as odp.Actions, depth int, path string) ([]op, error) {
	sub := *c
	return sub.list(as, depth+1, path)
}

// set compiles set (mask nil) and set_masked actions.
func (c *compiler) set(key, mask odp.KeyAttr, path string) (op, error) {
	if key == nil {
		return op{}, einval("%s: no key attribute", path)
	}
	masked := mask != nil
	if masked {
		if err := checkValueInMask(key, mask); err != nil {
			return op{}, einval("%s: %v", path, err)
		}
	}
	k := &c.key
	et := k.EthType
	s := &setArgs{}
	switch v := key.(type) {
	case odp.Tunnel:
		if masked {
			return op{}, einval("%s: a masked set of the tunnel is not supported by the kernel", path)
		}
		ti, err := compileSetTunnel(v, path)
		if err != nil {
			return op{}, err
		}
		return op{kind: opSetTunnel, tnl: ti}, nil
	case odp.Priority:
		m := uint32(math.MaxUint32)
		if masked {
			m = uint32(mask.(odp.Priority))
		}
		return op{kind: opSetPriority, a: uint32(v), b: m}, nil
	case odp.SkbMark:
		m := uint32(math.MaxUint32)
		if masked {
			m = uint32(mask.(odp.SkbMark))
		}
		return op{kind: opSetMark, a: uint32(v), b: m}, nil
	case odp.Ethernet:
		if k.MacProto != flowkeys.MacProtoEthernet {
			return op{}, einval("%s: packet has no Ethernet header", path)
		}
		s.eth[0] = v
		s.eth[1] = odp.Ethernet{Src: ones6, Dst: ones6}
		if masked {
			s.eth[1] = mask.(odp.Ethernet)
		}
		return op{kind: opSetEth, set: s}, nil
	case odp.IPv4:
		if et != header.EtherTypeIPv4 {
			return op{}, einval("%s: the flow's EtherType %#04x is not IPv4", path, et)
		}
		s.ip4[0] = odp.IPv4{Src: v.Src, Dst: v.Dst, TOS: v.TOS, TTL: v.TTL}
		if masked {
			m := mask.(odp.IPv4)
			if m.Proto != 0 || m.Frag != 0 {
				return op{}, einval("%s: the IPv4 protocol and fragment type cannot be set", path)
			}
			s.ip4[1] = m
		} else {
			if v.Proto != k.IPProto || v.Frag != k.IPFrag {
				return op{}, einval("%s: proto %d and frag %d differ from the flow's (%d, %d)", path, v.Proto, v.Frag, k.IPProto, k.IPFrag)
			}
			s.ip4[1] = odp.IPv4{Src: ones4, Dst: ones4, TOS: 0xff, TTL: 0xff}
		}
		return op{kind: opSetIPv4, set: s}, nil
	case odp.IPv6:
		if et != header.EtherTypeIPv6 {
			return op{}, einval("%s: the flow's EtherType %#04x is not IPv6", path, et)
		}
		s.ip6[0] = odp.IPv6{Src: v.Src, Dst: v.Dst, Label: v.Label, TClass: v.TClass, HLimit: v.HLimit}
		if masked {
			m := mask.(odp.IPv6)
			if m.Proto != 0 || m.Frag != 0 {
				return op{}, einval("%s: the IPv6 next header and fragment type cannot be set", path)
			}
			if m.Label&^0xfffff != 0 {
				return op{}, einval("%s: label mask %#x has bits beyond the 20-bit label", path, m.Label)
			}
			s.ip6[1] = m
		} else {
			if v.Proto != k.IPProto || v.Frag != k.IPFrag {
				return op{}, einval("%s: proto %d and frag %d differ from the flow's (%d, %d)", path, v.Proto, v.Frag, k.IPProto, k.IPFrag)
			}
			if v.Label&^0xfffff != 0 {
				return op{}, einval("%s: label %#x has bits beyond the 20-bit label", path, v.Label)
			}
			s.ip6[1] = odp.IPv6{Src: ones16, Dst: ones16, Label: 0xfffff, TClass: 0xff, HLimit: 0xff}
		}
		return op{kind: opSetIPv6, set: s}, nil
	case odp.TCP:
		return c.setPorts(opSetTCP, header.IPProtoTCP, v.Src, v.Dst, mask, path, s, func(m odp.KeyAttr) (uint16, uint16) { t := m.(odp.TCP); return t.Src, t.Dst })
	case odp.UDP:
		return c.setPorts(opSetUDP, header.IPProtoUDP, v.Src, v.Dst, mask, path, s, func(m odp.KeyAttr) (uint16, uint16) { t := m.(odp.UDP); return t.Src, t.Dst })
	case odp.SCTP:
		return c.setPorts(opSetSCTP, header.IPProtoSCTP, v.Src, v.Dst, mask, path, s, func(m odp.KeyAttr) (uint16, uint16) { t := m.(odp.SCTP); return t.Src, t.Dst })
	case odp.ICMP:
		if et != header.EtherTypeIPv4 || k.IPProto != header.IPProtoICMP {
			return op{}, einval("%s: the flow is not ICMP over IPv4", path)
		}
		s.icmp[0] = [2]uint8{v.Type, v.Code}
		s.icmp[1] = [2]uint8{0xff, 0xff}
		if masked {
			m := mask.(odp.ICMP)
			s.icmp[1] = [2]uint8{m.Type, m.Code}
		}
		return op{kind: opSetICMP, set: s}, nil
	case odp.ICMPv6:
		if et != header.EtherTypeIPv6 || k.IPProto != header.IPProtoICMPv6 {
			return op{}, einval("%s: the flow is not ICMPv6", path)
		}
		s.icmp[0] = [2]uint8{v.Type, v.Code}
		s.icmp[1] = [2]uint8{0xff, 0xff}
		if masked {
			m := mask.(odp.ICMPv6)
			s.icmp[1] = [2]uint8{m.Type, m.Code}
		}
		return op{kind: opSetICMPv6, set: s}, nil
	case odp.ARP:
		if et != header.EtherTypeARP && et != header.EtherTypeRARP {
			return op{}, einval("%s: the flow's EtherType %#04x is not ARP", path, et)
		}
		s.arp[0] = v
		s.arp[1] = odp.ARP{SIP: ones4, TIP: ones4, Op: 0xffff, SHA: ones6, THA: ones6}
		if masked {
			s.arp[1] = mask.(odp.ARP)
		}
		return op{kind: opSetARP, set: s}, nil
	case odp.ND:
		if et != header.EtherTypeIPv6 || k.IPProto != header.IPProtoICMPv6 || (k.TpSrc != 135 && k.TpSrc != 136) {
			return op{}, einval("%s: the flow is not an ICMPv6 neighbour solicitation or advertisement", path)
		}
		s.nd[0] = v
		s.nd[1] = odp.ND{Target: ones16, SLL: ones6, TLL: ones6}
		if masked {
			s.nd[1] = mask.(odp.ND)
		}
		return op{kind: opSetND, set: s}, nil
	case odp.MPLS:
		if et != header.EtherTypeMPLS && et != header.EtherTypeMPLSMC {
			return op{}, einval("%s: the flow's EtherType %#04x is not MPLS", path, et)
		}
		if len(v) != 1 {
			return op{}, einval("%s: set(mpls) takes exactly one label stack entry, not %d", path, len(v))
		}
		s.mpls = [2]uint32{v[0], math.MaxUint32}
		if masked {
			m := mask.(odp.MPLS)
			if len(m) != 1 {
				return op{}, einval("%s: mpls mask has %d entries", path, len(m))
			}
			s.mpls[1] = m[0]
		}
		return op{kind: opSetMPLS, set: s}, nil
	}
	name := "set"
	if masked {
		name = "set_masked"
	}
	switch key.(type) {
	case odp.CTMark, odp.CTLabels:
		// The kernel's validate_set accepts them, and its
		// execute_masked_set_action fails them (EINVAL): every packet
		// is dropped. So here (the ct action sets these fields).
		return op{kind: opFail}, nil
	}
	if _, ok := key.(odp.NSH); ok {
		// exec_nsh.go says why.
		if et != header.EtherTypeNSH {
			return op{}, einval("%s: the flow's EtherType %#04x is not NSH", path, et)
		}
		return op{}, einval("%s: %s(nsh): Linux 6.1 refuses it", path, name)
	}
	return op{}, fmt.Errorf("%s: %s(%s): %w", path, name, key.KeyType(), odp.ErrUnsupported)
}

// setPorts compiles set(tcp|udp|sctp): the kernel requires the flow to
// be of that protocol over IPv4 or IPv6 with a port in its key.
func (c *compiler) setPorts(kind opKind, proto uint8, src, dst uint16, mask odp.KeyAttr, path string, s *setArgs, mk func(odp.KeyAttr) (uint16, uint16)) (op, error) {
	k := &c.key
	if k.IPProto != proto || (k.EthType != header.EtherTypeIPv4 && k.EthType != header.EtherTypeIPv6) {
		return op{}, einval("%s: the flow is not IP protocol %d", path, proto)
	}
	if k.TpSrc == 0 && k.TpDst == 0 {
		return op{}, einval("%s: the flow's key has no transport ports", path)
	}
	s.ports[0] = odp.TCP{Src: src, Dst: dst}
	s.ports[1] = odp.TCP{Src: 0xffff, Dst: 0xffff}
	if mask != nil {
		ms, md := mk(mask)
		s.ports[1] = odp.TCP{Src: ms, Dst: md}
	}
	return op{kind: kind, set: s}, nil
}

var (
	ones4  = [4]byte{0xff, 0xff, 0xff, 0xff}
	ones6  = [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	ones16 = [16]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
)

// checkValueInMask returns an error if the value of a masked set has a
// bit set where its mask has none (the kernel's validate_masked).
func checkValueInMask(key, mask odp.KeyAttr) error {
	kb, err := odp.MarshalKey(odp.FlowKey{key})
	if err != nil {
		return err
	}
	mb, err := odp.MarshalKey(odp.FlowKey{mask})
	if err != nil {
		return err
	}
	if len(kb) != len(mb) || len(kb) < 4 {
		return fmt.Errorf("value and mask of %s differ in size", key.KeyType())
	}
	n := int(binary.NativeEndian.Uint16(kb))
	for i := 4; i < n && i < len(kb); i++ {
		if kb[i]&^mb[i] != 0 {
			return fmt.Errorf("value of %s has bits outside its mask (byte %d)", key.KeyType(), i-4)
		}
	}
	return nil
}
