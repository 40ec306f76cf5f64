package userdp

import (
	"encoding/binary"
	"fmt"

	"github.com/ovsdp/ovsdp/flowkeys"
	"github.com/ovsdp/ovsdp/internal/header"
	"github.com/ovsdp/ovsdp/odp"
)

// Packets without an Ethernet header (L3 packets), and the actions that
// make and unmake them: push_eth, pop_eth and add_mpls, as the Linux 6.1
// kernel's (net/openvswitch/actions.c and flow_netlink.c,
// net/core/skbuff.c's skb_eth_push, skb_eth_pop and skb_mpls_push).
//
// The kernel's flow key says whether a packet has an Ethernet header
// (key->mac_proto, MAC_PROTO_ETHERNET or MAC_PROTO_NONE; flowkeys'
// Key.MacProto); on the wire of a datapath message an L3 key is one with
// eth_type and no eth attribute (Open vSwitch's userspace packet_type
// ns=1,id=ETHERTYPE; the kernel has no OVS_KEY_ATTR_PACKET_TYPE). Here
// pktCtx.noEth carries it: push_eth, pop_eth and add_mpls change it, as
// the kernel sets key->mac_proto right before invalidating the key, and
// a re-extraction of the key (recirc, hash, userspace) extracts an L3
// packet from its network header with skb->protocol (pktCtx.proto) as
// its EtherType (flowkeys.Metadata.L3).
//
// As the kernel:
//   - validation (when a flow is put or a packet executed): push_eth
//     needs a packet without an Ethernet header, pop_eth one with an
//     Ethernet header and no VLAN tag; push_vlan, pop_vlan and
//     set(eth) need an Ethernet header; add_mpls without the L3 tunnel
//     flag makes the packet an L3 MPLS packet whatever it was; all EINVAL;
//   - execution: pop_eth removes the 14 bytes of the Ethernet header and
//     keeps skb->protocol; it fails on a frame with a VLAN tag (the
//     kernel's skb_vlan_tagged: EPROTO, the packet is dropped). push_eth
//     adds an Ethernet header whose EtherType is skb->protocol;
//   - output of an L3 packet to a port of Ethernet type (every port of
//     this datapath: netdev, tap, memory) drops it (ovs_vport_send's
//     ARPHRD_ETHER case), counted in DropStats.NoEthernet here; the
//     kernel counts it nowhere;
//   - an upcall carries the L3 packet as it is, and its key has no eth.
//
// Two corner cases are not modelled, both of a packet whose network
// header is not where its MAC header ends: pop_eth of an 802.3 LLC/SNAP
// frame leaves the kernel's network header 8 bytes in (its skb->mac_len
// then is 8 until the key is extracted again), and pop_mpls(0x6558) of
// an L3 MPLS packet leaves it at 0 in an Ethernet frame. Here both are
// treated as if the key had been extracted again (network header at 0
// for an L3 packet, after the Ethernet header otherwise).

// l2Action compiles push_eth, pop_eth, add_mpls, push_nsh and pop_nsh
// (exec_nsh.go), tracking the key's
// MAC protocol as __ovs_nla_copy_actions tracks mac_proto. ok is false
// for any other action.
func (c *compiler) l2Action(a odp.Action, path string) (o op, ok bool, err error) {
	k := &c.key
	switch a := a.(type) {
	case odp.PushEth:
		if k.MacProto != flowkeys.MacProtoNone {
			return op{}, true, einval("%s: the packet has an Ethernet header already", path)
		}
		k.MacProto = flowkeys.MacProtoEthernet
		return op{kind: opPushEth, set: &setArgs{eth: [2]odp.Ethernet{{Src: a.Src, Dst: a.Dst}}}}, true, nil
	case odp.PopEth:
		if k.MacProto != flowkeys.MacProtoEthernet {
			return op{}, true, einval("%s: the packet has no Ethernet header", path)
		}
		if k.VLANTCI&flowkeys.VLANTagPresent != 0 {
			return op{}, true, einval("%s: the packet has a VLAN tag", path)
		}
		k.MacProto = flowkeys.MacProtoNone
		return op{kind: opPopEth}, true, nil
	case odp.PushNSH:
		o, err := c.compilePushNSH(a, path)
		return o, true, err
	case odp.PopNSH:
		o, err := c.compilePopNSH(path)
		return o, true, err
	case odp.AddMPLS:
		if !header.IsMPLS(a.EthType) {
			return op{}, true, einval("%s: EtherType %#04x is not MPLS", path, a.EthType)
		}
		l3 := a.TunFlags&addMPLSL3Tunnel != 0
		if l3 {
			// Pushed after the MAC header, as push_mpls.
			if err := c.mplsPushable(path); err != nil {
				return op{}, true, err
			}
			c.mplsLabels++
		} else if k.MacProto == flowkeys.MacProtoEthernet {
			// Pushed in front of the Ethernet header: the packet is
			// L3 MPLS from here on, with this one label known.
			c.mplsLabels = 1
			k.MacProto = flowkeys.MacProtoNone
		} else {
			c.mplsLabels++
		}
		k.EthType = a.EthType
		var l3flag uint32
		if l3 {
			l3flag = 1
		}
		return op{kind: opAddMPLS, a: a.LSE, b: l3flag, c: a.EthType}, true, nil
	}
	return op{}, false, nil
}

// addMPLSL3Tunnel is OVS_MPLS_L3_TUNNEL_FLAG_MASK: add_mpls pushes the
// label after the packet's MAC header (as push_mpls) rather than in
// front of the packet.
const addMPLSL3Tunnel = 1

// mplsPushable is the kernel's check before it pushes an MPLS label after
// the MAC header (push_mpls, and add_mpls with the L3 tunnel flag): a
// packet of a known tag order, with no VLAN tag and IPv4, IPv6, ARP,
// RARP or MPLS.
func (c *compiler) mplsPushable(path string) error {
	if c.key.VLANTCI&flowkeys.VLANTagPresent != 0 {
		return einval("%s: the packet has a VLAN tag", path)
	}
	switch et := c.key.EthType; et {
	case header.EtherTypeIPv4, header.EtherTypeIPv6, header.EtherTypeARP, header.EtherTypeRARP, header.EtherTypeMPLS, header.EtherTypeMPLSMC:
		return nil
	default:
		return einval("%s: the flow's EtherType %#04x is not IPv4, IPv6, ARP, RARP or MPLS", path, et)
	}
}

// runL2 executes push_eth, pop_eth, add_mpls, push_nsh and pop_nsh on
// the packet. It reports
// false when the action failed and the packet was dropped.
func (w *worker) runL2(c *pktCtx, o *op) bool {
	var err error
	switch o.kind {
	case opPushEth:
		err = pushEth(&c.f, c.noEth, &o.set.eth[0], c.proto)
		c.noEth = err != nil && c.noEth
	case opPopEth:
		if err = popEth(&c.f, c.noEth, c.proto); err == nil {
			c.noEth = true
		}
	case opPushNSH, opPopNSH:
		err = c.nsh(o)
	case opAddMPLS:
		if o.b != 0 {
			// After the MAC header: push_mpls.
			ml := 0
			if !c.noEth {
				var h *pktHeaders
				if h, err = c.headers(); err == nil {
					ml = h.MACLen
				}
			}
			if err == nil {
				err = insertMPLS(&c.f, "add_mpls", ml, o.a, o.c, !c.noEth)
			}
		} else if err = insertMPLS(&c.f, "add_mpls", 0, o.a, o.c, false); err == nil {
			c.noEth = true
		}
		if err == nil {
			c.proto = o.c
		}
	}
	if err != nil {
		w.actionError()
		return false
	}
	c.macProtoChanged()
	c.invalidate()
	return true
}

// macProtoChanged sets the key's MAC protocol from noEth, as the kernel's
// actions set key->mac_proto right before they invalidate the key: an
// upcall of a userspace action carries it with the rest of the key as it
// was (output_userspace does not extract the key again).
func (c *pktCtx) macProtoChanged() {
	if c.noEth {
		c.key.MacProto = flowkeys.MacProtoNone
	} else {
		c.key.MacProto = flowkeys.MacProtoEthernet
	}
}

// pushEth puts an Ethernet header with the addresses of e and EtherType
// proto (the kernel's skb->protocol) in front of an L3 packet, as
// skb_eth_push: a packet that has an Ethernet header (noEth false: its
// network header is not at the start) gives an error, as the kernel's
// EPROTO. It needs 14 bytes of headroom.
func pushEth(f *frameBuf, noEth bool, e *odp.Ethernet, proto uint16) error {
	if err := f.check(); err != nil {
		return fmt.Errorf("push_eth: %w", err)
	}
	if !noEth {
		return fmt.Errorf("push_eth: %w: the packet has an Ethernet header", errWrongProtocol)
	}
	if !f.reserve(header.EthernetMinimumSize) {
		return fmt.Errorf("push_eth: %w: %d bytes in front of the packet and %d after it, 14 needed", errNoHeadroom, f.Off, len(f.Buf)-f.Off-f.Len)
	}
	f.Off -= header.EthernetMinimumSize
	f.Len += header.EthernetMinimumSize
	b := f.Bytes()
	copy(b[0:6], e.Dst[:])
	copy(b[6:12], e.Src[:])
	binary.BigEndian.PutUint16(b[12:14], proto)
	return nil
}

// popEth removes the Ethernet header (14 bytes) of a frame without a
// VLAN tag, as skb_eth_pop: a packet without one (noEth), shorter than
// 14 bytes, or with a VLAN tag (in line, or skb->protocol proto a VLAN
// TPID) gives an error, as the kernel's EPROTO.
func popEth(f *frameBuf, noEth bool, proto uint16) error {
	if err := f.check(); err != nil {
		return fmt.Errorf("pop_eth: %w", err)
	}
	if noEth {
		return fmt.Errorf("pop_eth: %w: the packet has no Ethernet header", errWrongProtocol)
	}
	b := f.Bytes()
	if len(b) < header.EthernetMinimumSize {
		return fmt.Errorf("pop_eth: %w: %d bytes, the Ethernet header needs 14", errTooShort, len(b))
	}
	if header.IsVLAN(header.Ethernet(b).Type()) || header.IsVLAN(proto) {
		return fmt.Errorf("pop_eth: %w: the frame has a VLAN tag", errWrongProtocol)
	}
	f.Off += header.EthernetMinimumSize
	f.Len -= header.EthernetMinimumSize
	return nil
}

// parseHeadersL3 is parseHeaders for a packet without an Ethernet
// header whose EtherType (the kernel's skb->protocol) is proto: the
// network header is at 0, as key_extract resets it for an L3 packet.
func parseHeadersL3(frame []byte, proto uint16, h *pktHeaders) {
	*h = pktHeaders{MACLen: 0, EthType: proto, Protocol: proto, L3: 0, L4: -1}
	switch proto {
	case header.EtherTypeIPv4:
		parseIPv4(frame, h)
	case header.EtherTypeIPv6:
		parseIPv6(frame, h)
	}
}

// reserve makes room for n bytes in front of the packet, as the kernel's
// skb_cow_head reallocates a head too small: when the headroom is short
// the packet moves back within its buffer, if the buffer has the room.
// It reports whether there is room now.
func (f *frameBuf) reserve(n int) bool {
	if f.Off >= n {
		return true
	}
	if len(f.Buf)-f.Len < n {
		return false
	}
	copy(f.Buf[n:n+f.Len], f.Bytes())
	f.Off = n
	return true
}
