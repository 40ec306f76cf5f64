package userdp

import (
	"encoding/binary"
	"fmt"

	"github.com/ovsdp/ovsdp/flowkeys"
	"github.com/ovsdp/ovsdp/internal/header"
	"github.com/ovsdp/ovsdp/odp"
)

// NSH (RFC 8300) push and pop as the Linux 6.1 kernel's
// (net/openvswitch/actions.c push_nsh/pop_nsh, net/nsh/nsh.c nsh_push and
// nsh_pop, flow_netlink.c nsh_hdr_from_nlattr and
// nsh_key_put_from_nlattr).
//
// push_nsh puts the header in front of the packet: in front of the
// Ethernet header of a frame (next protocol 3, Ethernet), or in front of
// an L3 packet (next protocol from its EtherType: 1 IPv4, 2 IPv6, 4 NSH,
// 5 MPLS; any other drops the packet, the kernel's EAFNOSUPPORT). The
// kernel overwrites the action's np with that value, and so does this
// datapath. The packet is then an L3 NSH packet (EtherType 0x894f).
//
// pop_nsh removes the NSH header at the start of the packet (the kernel's
// skb->data: for an Ethernet frame that is its Ethernet header, so Open
// vSwitch pops the Ethernet header first) and gives the packet the
// EtherType of its next protocol; next protocol 3 makes it an Ethernet
// frame. A header shorter than 8 bytes by its length field, cut, or of
// an unknown next protocol drops the packet.
//
// set(nsh(...)) and its masked form are EINVAL, as Linux 6.1 (Debian's
// 6.1.0-57) answers both: crosscheck's TestIntegrationActionSupport puts
// them on the kernel. The masked form fails nsh_key_put_from_nlattr's
// length check (it wants each nested attribute at its plain length); the
// plain form is refused too. Its execution in the kernel source would
// misread the mask anyway (validate_set turns it into a masked set whose
// mask follows the whole attribute, while set_nsh reads each nested
// attribute as value then mask), and later kernels removed set(nsh).

// TUN_P_* next protocol values of the NSH header.
const (
	nshNPIPv4     = 1
	nshNPIPv6     = 2
	nshNPEthernet = 3
	nshNPNSH      = 4
	nshNPMPLS     = 5
)

// nshProtos pairs the NSH next protocols with their EtherTypes, as the
// kernel's tun_p_from_eth_p and tun_p_to_eth_p map them.
var nshProtos = [...]struct {
	np uint8
	et uint16
}{
	{nshNPIPv4, header.EtherTypeIPv4},
	{nshNPIPv6, header.EtherTypeIPv6},
	{nshNPEthernet, header.EtherTypeTEB},
	{nshNPNSH, header.EtherTypeNSH},
	{nshNPMPLS, header.EtherTypeMPLS},
}

// nshNPFromEthType is tun_p_from_eth_p: 0 for an EtherType NSH cannot
// carry.
func nshNPFromEthType(et uint16) uint8 {
	for _, p := range nshProtos {
		if p.et == et {
			return p.np
		}
	}
	return 0
}

// nshEthTypeFromNP is tun_p_to_eth_p: 0 for an unknown next protocol.
func nshEthTypeFromNP(np uint8) uint16 {
	for _, p := range nshProtos {
		if p.np == np {
			return p.et
		}
	}
	return 0
}

// nshMaxMD2 is the longest MD type 2 metadata whose header length (8
// bytes plus the metadata, in 4-byte words) the 6-bit length field
// holds.
const nshMaxMD2 = 63*4 - 8

// compilePushNSH validates push_nsh as __ovs_nla_copy_actions does and
// builds the header it pushes (nsh_hdr_from_nlattr), np to be replaced
// when it runs.
func (c *compiler) compilePushNSH(a odp.PushNSH, path string) (op, error) {
	k := &c.key
	if k.MacProto != flowkeys.MacProtoEthernet && nshNPFromEthType(k.EthType) == 0 {
		return op{}, einval("%s: NSH cannot carry EtherType %#04x", path, k.EthType)
	}
	var md []byte
	switch a.MDType {
	case odp.NSHMDType1:
		md = make([]byte, 16)
		for i, w := range a.Context {
			binary.BigEndian.PutUint32(md[4*i:], w)
		}
	case odp.NSHMDType2:
		if len(a.MD2) == 0 {
			return op{}, einval("%s: mdtype 2 without md2 metadata", path)
		}
		if len(a.MD2) > 248 {
			return op{}, einval("%s: md2 of %d bytes exceeds 248", path, len(a.MD2))
		}
		if len(a.MD2)%4 != 0 || len(a.MD2) > nshMaxMD2 {
			// The kernel pushes a header cut to what its length
			// field says (none at all for 248 bytes, whose next
			// protocol byte it then writes into the packet).
			return op{}, fmt.Errorf("%s: md2 of %d bytes: the kernel pushes only the %d bytes its length field counts, which this datapath does not imitate (want a multiple of 4, at most %d): %w",
				path, len(a.MD2), ((8+len(a.MD2))>>2&0x3f)<<2, nshMaxMD2, odp.ErrUnsupported)
		}
		md = a.MD2
	default:
		return op{}, einval("%s: mdtype %d: push_nsh needs the metadata of type 1 or 2", path, a.MDType)
	}
	hdr := make([]byte, 8+len(md))
	n := uint16(len(hdr))
	binary.BigEndian.PutUint16(hdr, uint16(a.Flags)<<12&0x3000|uint16(a.TTL)<<6&0x0fc0|n>>2&0x3f)
	hdr[2] = a.MDType
	hdr[3] = a.NP
	binary.BigEndian.PutUint32(hdr[4:], a.SPI<<8|uint32(a.SI))
	copy(hdr[8:], md)
	k.MacProto = flowkeys.MacProtoNone
	return op{kind: opPushNSH, set: &setArgs{nsh: hdr}}, nil
}

// compilePopNSH validates pop_nsh as __ovs_nla_copy_actions does: the
// flow's EtherType must be NSH and its key's next protocol known; the
// packet is an Ethernet frame afterwards if that is 3.
func (c *compiler) compilePopNSH(path string) (op, error) {
	k := &c.key
	if k.EthType != header.EtherTypeNSH {
		return op{}, einval("%s: the flow's EtherType %#04x is not NSH", path, k.EthType)
	}
	if nshEthTypeFromNP(k.NSHNP) == 0 {
		return op{}, einval("%s: the flow's NSH next protocol %d is unknown", path, k.NSHNP)
	}
	if k.NSHNP == nshNPEthernet {
		k.MacProto = flowkeys.MacProtoEthernet
	} else {
		k.MacProto = flowkeys.MacProtoNone
	}
	return op{kind: opPopNSH}, nil
}

// nsh executes push_nsh and pop_nsh on the packet (runL2 does the rest).
func (c *pktCtx) nsh(o *op) error {
	if o.kind == opPushNSH {
		np := uint8(nshNPEthernet)
		if c.noEth {
			np = nshNPFromEthType(c.proto)
		}
		err := pushNSH(&c.f, o.set.nsh, np)
		if err == nil {
			c.proto, c.noEth = header.EtherTypeNSH, true
		}
		return err
	}
	et, err := popNSH(&c.f)
	if err == nil {
		c.proto, c.noEth = et, et != header.EtherTypeTEB
	}
	return err
}

// pushNSH puts hdr, an NSH header, in front of the packet with next
// protocol np (0: the packet's EtherType has none, an error as the
// kernel's EAFNOSUPPORT). It needs len(hdr) bytes of headroom.
func pushNSH(f *frameBuf, hdr []byte, np uint8) error {
	if err := f.check(); err != nil {
		return fmt.Errorf("push_nsh: %w", err)
	}
	if np == 0 {
		return fmt.Errorf("push_nsh: %w: NSH cannot carry the packet's EtherType", errWrongProtocol)
	}
	if !f.reserve(len(hdr)) {
		return fmt.Errorf("push_nsh: %w: %d bytes in front of the packet and %d after it, %d needed", errNoHeadroom, f.Off, len(f.Buf)-f.Off-f.Len, len(hdr))
	}
	f.Off -= len(hdr)
	f.Len += len(hdr)
	b := f.Bytes()
	copy(b, hdr)
	b[3] = np
	return nil
}

// popNSH removes the NSH header at the start of the packet and returns
// the EtherType of its next protocol, as nsh_pop.
func popNSH(f *frameBuf) (uint16, error) {
	if err := f.check(); err != nil {
		return 0, fmt.Errorf("pop_nsh: %w", err)
	}
	b := f.Bytes()
	if len(b) < 8 {
		return 0, fmt.Errorf("pop_nsh: %w: %d bytes, the NSH base header needs 8", errTooShort, len(b))
	}
	n := int(binary.BigEndian.Uint16(b)&0x3f) * 4
	if n < 8 {
		return 0, fmt.Errorf("pop_nsh: %w: NSH length field says %d bytes, less than the base header", errWrongProtocol, n)
	}
	et := nshEthTypeFromNP(b[3])
	if len(b) < n {
		return 0, fmt.Errorf("pop_nsh: %w: %d bytes, the NSH header needs %d", errTooShort, len(b), n)
	}
	if et == 0 {
		return 0, fmt.Errorf("pop_nsh: %w: NSH next protocol %d is unknown", errWrongProtocol, b[3])
	}
	f.Off += n
	f.Len -= n
	return et, nil
}
