package odp

import (
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/ovsdp/ovsdp/internal/header"
)

// Fixed-size actions: VLAN, MPLS and Ethernet push/pop, recirc, hash,
// trunc, meter, drop, ct_clear, pop_nsh, lb_output and tnl_pop.

// PopVLAN removes the outermost VLAN tag (OVS_ACTION_ATTR_POP_VLAN, no
// payload). Text: "pop_vlan".
type PopVLAN struct{}

// ActionType implements Action.
func (PopVLAN) ActionType() ActionType                 { return ActionPopVLAN }
func (PopVLAN) appendPayload(b []byte) ([]byte, error) { return b, nil }
func (PopVLAN) format(f *textBuf)                      { f.WriteString("pop_vlan") }

// PopEth removes the Ethernet header (OVS_ACTION_ATTR_POP_ETH, no
// payload). Text: "pop_eth".
type PopEth struct{}

// ActionType implements Action.
func (PopEth) ActionType() ActionType                 { return ActionPopEth }
func (PopEth) appendPayload(b []byte) ([]byte, error) { return b, nil }
func (PopEth) format(f *textBuf)                      { f.WriteString("pop_eth") }

// CTClear clears the packet's conntrack state (OVS_ACTION_ATTR_CT_CLEAR,
// no payload). Text: "ct_clear".
type CTClear struct{}

// ActionType implements Action.
func (CTClear) ActionType() ActionType                 { return ActionCTClear }
func (CTClear) appendPayload(b []byte) ([]byte, error) { return b, nil }
func (CTClear) format(f *textBuf)                      { f.WriteString("ct_clear") }

// PopNSH removes the NSH header (OVS_ACTION_ATTR_POP_NSH, no payload).
// Text: "pop_nsh()".
type PopNSH struct{}

// ActionType implements Action.
func (PopNSH) ActionType() ActionType                 { return ActionPopNSH }
func (PopNSH) appendPayload(b []byte) ([]byte, error) { return b, nil }
func (PopNSH) format(f *textBuf)                      { f.WriteString("pop_nsh()") }

// EthTypeVLAN and EthTypeQinQ are the 802.1Q and 802.1ad TPIDs (package
// header's EtherTypes, typed for push_vlan's TPID).
const (
	EthTypeVLAN uint16 = header.EtherTypeVLAN
	EthTypeQinQ uint16 = header.EtherTypeQinQ
)

// VLAN TCI bits.
const (
	vlanCFI      = 0x1000
	vlanVIDMask  = 0x0fff
	vlanPCPShift = 13
)

// PushVLAN pushes a VLAN tag (OVS_ACTION_ATTR_PUSH_VLAN, struct
// ovs_action_push_vlan: big-endian TPID then TCI). The kernel requires
// the CFI (VLAN_TAG_PRESENT) bit to be set in TCI. Text:
// "push_vlan(tpid=0x88a8,vid=10,pcp=0)" (tpid shown when not 0x8100,
// ",cfi=0" when the CFI bit is clear).
type PushVLAN struct {
	// TPID is the tag protocol identifier (EthTypeVLAN, EthTypeQinQ, ...).
	TPID uint16
	// TCI is the tag control information: PCP (3 bits), CFI, VID (12 bits).
	TCI uint16
}

// ActionType implements Action.
func (PushVLAN) ActionType() ActionType { return ActionPushVLAN }

func (p PushVLAN) appendPayload(b []byte) ([]byte, error) {
	b = binary.BigEndian.AppendUint16(b, p.TPID)
	return binary.BigEndian.AppendUint16(b, p.TCI), nil
}

func (p PushVLAN) format(f *textBuf) {
	f.WriteString("push_vlan(")
	if p.TPID != EthTypeVLAN {
		fmt.Fprintf(f, "tpid=0x%04x,", p.TPID)
	}
	fmt.Fprintf(f, "vid=%d,pcp=%d", p.TCI&vlanVIDMask, p.TCI>>vlanPCPShift)
	if p.TCI&vlanCFI == 0 {
		f.WriteString(",cfi=0")
	}
	f.WriteByte(')')
}

func parsePushVLAN(sc *scanner, _ int) (Action, error) {
	p := PushVLAN{TPID: EthTypeVLAN}
	var vid, pcp uint64
	cfi := uint64(1)
	have := map[string]bool{}
	err := actParseFields(sc, "push_vlan", func(name string) error {
		var err error
		switch name {
		case "tpid":
			var v uint64
			v, err = sc.actUint(16, "tpid")
			p.TPID = uint16(v)
		case "vid":
			vid, err = sc.actUint(12, "vid (0-4095)")
		case "pcp":
			pcp, err = sc.actUint(3, "pcp (0-7)")
		case "cfi":
			cfi, err = sc.actUint(1, "cfi (0 or 1)")
		default:
			return errUnknownField
		}
		have[name] = true
		return err
	})
	if err != nil {
		return nil, err
	}
	if !have["vid"] || !have["pcp"] {
		return nil, sc.errorf("push_vlan needs vid= and pcp=")
	}
	p.TCI = uint16(vid) | uint16(pcp)<<vlanPCPShift
	if cfi != 0 {
		p.TCI |= vlanCFI
	}
	return p, nil
}

// errUnknownField is returned by actParseFields callbacks for a name they
// do not know; actParseFields turns it into a SyntaxError.
var errUnknownField = fmt.Errorf("unknown field")

// actParseFields parses "(name=value,name=value,...)" after an action
// name, calling fn for each name with the scanner just after "=". Bare
// names (no "=") are passed too, with the scanner after the name. A name
// may appear once.
func actParseFields(sc *scanner, ctx string, fn func(name string) error) error {
	if err := sc.actExpect("(", ctx); err != nil {
		return err
	}
	seen := map[string]bool{}
	for {
		sc.skipSpace()
		if sc.accept(")") {
			return nil
		}
		start := sc.pos
		name := sc.ident()
		if name == "" {
			return sc.errorf("expected a field name or ')' in %s", ctx)
		}
		if seen[name] {
			return sc.errorAt(start, "%s given twice in %s", name, ctx)
		}
		seen[name] = true
		sc.accept("=")
		if err := fn(name); err != nil {
			if err == errUnknownField {
				return sc.errorAt(start, "unknown field %q in %s", name, ctx)
			}
			return err
		}
		sc.skipSpace()
		if sc.accept(")") {
			return nil
		}
		if !sc.accept(",") {
			return sc.errorf("expected ',' or ')' in %s", ctx)
		}
	}
}

// MPLS label stack entry fields.
const (
	mplsLabelShift = 12
	mplsTCShift    = 9
	mplsBOSShift   = 8
)

// formatLSE writes "label=L,tc=T,ttl=TTL,bos=B".
func formatLSE(f *textBuf, lse uint32) {
	fmt.Fprintf(f, "label=%d,tc=%d,ttl=%d,bos=%d", lse>>mplsLabelShift, (lse>>mplsTCShift)&7, lse&0xff, (lse>>mplsBOSShift)&1)
}

// parseLSEFields parses "(label=,tc=,ttl=,bos=,eth_type=[,tun_flags=])"
// into an LSE and an EtherType.
func parseLSEFields(sc *scanner, ctx string, allowFlags bool) (lse uint32, ethType, flags uint16, err error) {
	var label, tc, ttl, bos, et uint64
	have := map[string]bool{}
	err = actParseFields(sc, ctx, func(name string) error {
		var err error
		switch name {
		case "label":
			label, err = sc.actUint(20, "label")
		case "tc":
			tc, err = sc.actUint(3, "tc")
		case "ttl":
			ttl, err = sc.actUint(8, "ttl")
		case "bos":
			bos, err = sc.actUint(1, "bos")
		case "eth_type":
			et, err = sc.actUint(16, "eth_type")
		case "tun_flags":
			if !allowFlags {
				return errUnknownField
			}
			var v uint64
			v, err = sc.actUint(16, "tun_flags")
			flags = uint16(v)
		default:
			return errUnknownField
		}
		have[name] = true
		return err
	})
	if err != nil {
		return
	}
	for _, n := range []string{"label", "tc", "ttl", "bos", "eth_type"} {
		if !have[n] {
			return 0, 0, 0, sc.errorf("%s needs %s=", ctx, n)
		}
	}
	lse = uint32(label)<<mplsLabelShift | uint32(tc)<<mplsTCShift | uint32(bos)<<mplsBOSShift | uint32(ttl)
	return lse, uint16(et), flags, nil
}

// PushMPLS pushes an MPLS label stack entry (OVS_ACTION_ATTR_PUSH_MPLS,
// struct ovs_action_push_mpls: big-endian LSE, big-endian EtherType, 2
// bytes of padding). Text:
// "push_mpls(label=L,tc=T,ttl=TTL,bos=B,eth_type=0x8847)".
type PushMPLS struct {
	// LSE is the label stack entry: label (20 bits), TC (3), BOS (1), TTL (8).
	LSE uint32
	// EthType is the new EtherType (0x8847 or 0x8848).
	EthType uint16
}

// ActionType implements Action.
func (PushMPLS) ActionType() ActionType { return ActionPushMPLS }

func (p PushMPLS) appendPayload(b []byte) ([]byte, error) {
	b = binary.BigEndian.AppendUint32(b, p.LSE)
	b = binary.BigEndian.AppendUint16(b, p.EthType)
	return append(b, 0, 0), nil
}

func (p PushMPLS) format(f *textBuf) {
	f.WriteString("push_mpls(")
	formatLSE(f, p.LSE)
	fmt.Fprintf(f, ",eth_type=0x%x)", p.EthType)
}

// AddMPLS adds an MPLS label stack entry at the start of the packet
// (OVS_ACTION_ATTR_ADD_MPLS, struct ovs_action_add_mpls: big-endian LSE,
// big-endian EtherType, u16 tunnel flags in host order). Text:
// "add_mpls(label=L,tc=T,ttl=TTL,bos=B,eth_type=0x8847)", with
// ",tun_flags=N" added when the flags are not zero (Open vSwitch never
// sets them and does not print them).
type AddMPLS struct {
	// LSE is the label stack entry.
	LSE uint32
	// EthType is the new EtherType.
	EthType uint16
	// TunFlags: bit 0 (MPLS_L3_TUNNEL_FLAG_MASK) means the packet is L3
	// (no Ethernet header).
	TunFlags uint16
}

// ActionType implements Action.
func (AddMPLS) ActionType() ActionType { return ActionAddMPLS }

func (p AddMPLS) appendPayload(b []byte) ([]byte, error) {
	b = binary.BigEndian.AppendUint32(b, p.LSE)
	b = binary.BigEndian.AppendUint16(b, p.EthType)
	return binary.NativeEndian.AppendUint16(b, p.TunFlags), nil
}

func (p AddMPLS) format(f *textBuf) {
	f.WriteString("add_mpls(")
	formatLSE(f, p.LSE)
	fmt.Fprintf(f, ",eth_type=0x%x", p.EthType)
	if p.TunFlags != 0 {
		fmt.Fprintf(f, ",tun_flags=0x%x", p.TunFlags)
	}
	f.WriteByte(')')
}

// PopMPLS pops the outermost MPLS label stack entry
// (OVS_ACTION_ATTR_POP_MPLS, big-endian EtherType of the payload). Text:
// "pop_mpls(eth_type=0x800)".
type PopMPLS struct {
	// EthType is the EtherType after the pop.
	EthType uint16
}

// ActionType implements Action.
func (PopMPLS) ActionType() ActionType { return ActionPopMPLS }

func (p PopMPLS) appendPayload(b []byte) ([]byte, error) {
	return binary.BigEndian.AppendUint16(b, p.EthType), nil
}

func (p PopMPLS) format(f *textBuf) { fmt.Fprintf(f, "pop_mpls(eth_type=0x%x)", p.EthType) }

// Recirc recirculates the packet with a new recirculation ID
// (OVS_ACTION_ATTR_RECIRC, u32). Text: "recirc(0x1)" (hex, as Open vSwitch
// prints it; decimal is accepted too).
type Recirc struct {
	// ID is the recirculation ID the packet gets.
	ID uint32
}

// ActionType implements Action.
func (Recirc) ActionType() ActionType { return ActionRecirc }

func (r Recirc) appendPayload(b []byte) ([]byte, error) {
	return binary.NativeEndian.AppendUint32(b, r.ID), nil
}

func (r Recirc) format(f *textBuf) {
	if r.ID == 0 {
		f.WriteString("recirc(0)")
		return
	}
	fmt.Fprintf(f, "recirc(%#x)", r.ID)
}

// Hash algorithms of OVS_ACTION_ATTR_HASH.
const (
	// HashL4 hashes the 5-tuple (OVS_HASH_ALG_L4).
	HashL4 uint32 = 0
	// HashSymL4 hashes the 5-tuple symmetrically (OVS_HASH_ALG_SYM_L4).
	HashSymL4 uint32 = 1
)

// Hash computes a packet hash into dp_hash (OVS_ACTION_ATTR_HASH, struct
// ovs_action_hash: u32 algorithm, u32 basis, host order). Text:
// "hash(l4(BASIS))" or "hash(sym_l4(BASIS))"; an algorithm this package
// does not know is shown as "hash(algN(BASIS))" (Open vSwitch prints a
// message that cannot be parsed back).
//
// The value differs between datapaths: the kernel takes the packet's skb
// hash, whose flow-dissector seed is random per boot, and the userspace
// datapath its own hash of the 5-tuple, so the same packet gets
// different dp_hash values on system@ and netdev@ (and on two boots).
// Flows may rely on the distribution over dp_hash, never on a value;
// crosscheck's hash-recirc-split scenario compares the split, not which
// packet went where.
type Hash struct {
	// Alg is the algorithm (HashL4, HashSymL4).
	Alg uint32
	// Basis is the hash seed.
	Basis uint32
}

// ActionType implements Action.
func (Hash) ActionType() ActionType { return ActionHash }

func (h Hash) appendPayload(b []byte) ([]byte, error) {
	b = binary.NativeEndian.AppendUint32(b, h.Alg)
	return binary.NativeEndian.AppendUint32(b, h.Basis), nil
}

func (h Hash) format(f *textBuf) {
	switch h.Alg {
	case HashL4:
		fmt.Fprintf(f, "hash(l4(%d))", h.Basis)
	case HashSymL4:
		fmt.Fprintf(f, "hash(sym_l4(%d))", h.Basis)
	default:
		fmt.Fprintf(f, "hash(alg%d(%d))", h.Alg, h.Basis)
	}
}

func parseHash(sc *scanner, _ int) (Action, error) {
	if err := sc.actExpect("(", "hash"); err != nil {
		return nil, err
	}
	start := sc.pos
	name := sc.ident()
	var h Hash
	switch {
	case name == "l4":
		h.Alg = HashL4
	case name == "sym_l4":
		h.Alg = HashSymL4
	case strings.HasPrefix(name, "alg") && len(name) > 3:
		ns := newScanner(name[3:])
		v, err := ns.cnum(32)
		if err != nil || !ns.eof() {
			return nil, sc.errorAt(start, "bad hash algorithm %q", name)
		}
		h.Alg = uint32(v)
	default:
		return nil, sc.errorAt(start, "unknown hash algorithm %q (want l4 or sym_l4)", name)
	}
	if err := sc.actExpect("(", "hash"); err != nil {
		return nil, err
	}
	v, err := sc.actUint(32, "hash basis")
	if err != nil {
		return nil, err
	}
	h.Basis = uint32(v)
	if err := sc.actExpect("))", "hash"); err != nil {
		return nil, err
	}
	return h, nil
}

// Trunc truncates the packet to at most MaxLen bytes on output
// (OVS_ACTION_ATTR_TRUNC, struct ovs_action_trunc: u32). Text: "trunc(100)".
type Trunc struct {
	// MaxLen is the maximum packet length.
	MaxLen uint32
}

// ActionType implements Action.
func (Trunc) ActionType() ActionType { return ActionTrunc }

func (t Trunc) appendPayload(b []byte) ([]byte, error) {
	return binary.NativeEndian.AppendUint32(b, t.MaxLen), nil
}

func (t Trunc) format(f *textBuf) { fmt.Fprintf(f, "trunc(%d)", t.MaxLen) }

// Meter applies a meter (OVS_ACTION_ATTR_METER, u32 meter ID). Text:
// "meter(N)".
type Meter struct {
	// ID is the meter ID.
	ID uint32
}

// ActionType implements Action.
func (Meter) ActionType() ActionType { return ActionMeter }

func (m Meter) appendPayload(b []byte) ([]byte, error) {
	return binary.NativeEndian.AppendUint32(b, m.ID), nil
}

func (m Meter) format(f *textBuf) { fmt.Fprintf(f, "meter(%d)", m.ID) }

// Drop drops the packet explicitly (OVS_ACTION_ATTR_DROP, u32 error
// code: zero for a plain drop, else the reason counted by the kernel as
// an explicit drop with error). Text: "drop" for reason 0; "drop(N)"
// otherwise (Open vSwitch prints "drop" for every reason, losing it).
type Drop struct {
	// Reason is the error code (Open vSwitch's enum xlate_error), 0 for none.
	Reason uint32
}

// ActionType implements Action.
func (Drop) ActionType() ActionType { return ActionDrop }

func (d Drop) appendPayload(b []byte) ([]byte, error) {
	return binary.NativeEndian.AppendUint32(b, d.Reason), nil
}

func (d Drop) format(f *textBuf) {
	if d.Reason == 0 {
		f.WriteString("drop")
		return
	}
	fmt.Fprintf(f, "drop(%d)", d.Reason)
}

func parseDrop(sc *scanner, _ int) (Action, error) {
	if !sc.accept("(") {
		return Drop{}, nil
	}
	v, err := sc.actUint(32, "drop reason")
	if err != nil {
		return nil, err
	}
	if err := sc.actExpect(")", "drop"); err != nil {
		return nil, err
	}
	return Drop{Reason: uint32(v)}, nil
}

// LBOutput outputs to a balanced bond (Open vSwitch's userspace
// OVS_ACTION_ATTR_LB_OUTPUT, u32 bond ID; the kernel rejects it). Text:
// "lb_output(N)".
type LBOutput struct {
	// BondID is the bond's ID.
	BondID uint32
}

// ActionType implements Action.
func (LBOutput) ActionType() ActionType { return ActionLBOutput }

func (l LBOutput) appendPayload(b []byte) ([]byte, error) {
	return binary.NativeEndian.AppendUint32(b, l.BondID), nil
}

func (l LBOutput) format(f *textBuf) { fmt.Fprintf(f, "lb_output(%d)", l.BondID) }

// TunnelPop decapsulates a tunnel packet and receives it on a tunnel port
// (Open vSwitch's userspace OVS_ACTION_ATTR_TUNNEL_POP, u32 port; the
// kernel rejects it). Text: "tnl_pop(N)".
type TunnelPop struct {
	// Port is the tunnel port the decapsulated packet is received on.
	Port uint32
}

// ActionType implements Action.
func (TunnelPop) ActionType() ActionType { return ActionTunnelPop }

func (t TunnelPop) appendPayload(b []byte) ([]byte, error) {
	return binary.NativeEndian.AppendUint32(b, t.Port), nil
}

func (t TunnelPop) format(f *textBuf) {
	f.WriteString("tnl_pop(")
	f.writePort(t.Port)
	f.WriteByte(')')
}

// PushEth pushes an Ethernet header (OVS_ACTION_ATTR_PUSH_ETH, struct
// ovs_action_push_eth: source then destination address). Text:
// "push_eth(src=MAC,dst=MAC)".
type PushEth struct {
	// Src and Dst are the new header's addresses.
	Src, Dst [6]byte
}

// ActionType implements Action.
func (PushEth) ActionType() ActionType { return ActionPushEth }

func (p PushEth) appendPayload(b []byte) ([]byte, error) {
	b = append(b, p.Src[:]...)
	return append(b, p.Dst[:]...), nil
}

func (p PushEth) format(f *textBuf) {
	f.WriteString("push_eth(src=")
	writeMAC(f, p.Src)
	f.WriteString(",dst=")
	writeMAC(f, p.Dst)
	f.WriteByte(')')
}

func parsePushEth(sc *scanner, _ int) (Action, error) {
	var p PushEth
	have := map[string]bool{}
	err := actParseFields(sc, "push_eth", func(name string) error {
		var err error
		switch name {
		case "src":
			p.Src, err = sc.mac()
		case "dst":
			p.Dst, err = sc.mac()
		case "type":
			// Open vSwitch's parser wants a type= it then ignores.
			_, err = sc.actUint(16, "type")
		default:
			return errUnknownField
		}
		have[name] = true
		return err
	})
	if err != nil {
		return nil, err
	}
	if !have["src"] || !have["dst"] {
		return nil, sc.errorf("push_eth needs src= and dst=")
	}
	return p, nil
}

// actParseParenU32 parses "(N)" for the u32-argument actions.
func actParseParenU32(sc *scanner, what string) (uint32, error) {
	if err := sc.actExpect("(", what); err != nil {
		return 0, err
	}
	sc.skipSpace()
	v, err := sc.actUint(32, what)
	if err != nil {
		return 0, err
	}
	sc.skipSpace()
	if err := sc.actExpect(")", what); err != nil {
		return 0, err
	}
	return uint32(v), nil
}

// actDecodeU32Action registers a decoder for an action with a u32 payload.
func actDecodeU32Action(t ActionType, mk func(uint32) Action) {
	actionDecoders[t] = func(a *rawAttr, path string, _ int) (Action, error) {
		v, err := actU32(a, path)
		if err != nil {
			return nil, err
		}
		return mk(v), nil
	}
}

// actDecodeEmptyAction registers a decoder for an action with no payload.
func actDecodeEmptyAction(t ActionType, v Action) {
	actionDecoders[t] = func(a *rawAttr, path string, _ int) (Action, error) {
		if err := actFlag(a, path); err != nil {
			return nil, err
		}
		return v, nil
	}
}

func init() {
	actDecodeEmptyAction(ActionPopVLAN, PopVLAN{})
	actDecodeEmptyAction(ActionPopEth, PopEth{})
	actDecodeEmptyAction(ActionCTClear, CTClear{})
	actDecodeEmptyAction(ActionPopNSH, PopNSH{})
	actionParsers["pop_vlan"] = func(*scanner, int) (Action, error) { return PopVLAN{}, nil }
	actionParsers["pop_eth"] = func(*scanner, int) (Action, error) { return PopEth{}, nil }
	actionParsers["ct_clear"] = func(*scanner, int) (Action, error) { return CTClear{}, nil }
	actionParsers["pop_nsh"] = func(sc *scanner, _ int) (Action, error) {
		sc.accept("()")
		return PopNSH{}, nil
	}

	actDecodeU32Action(ActionRecirc, func(v uint32) Action { return Recirc{ID: v} })
	actDecodeU32Action(ActionTrunc, func(v uint32) Action { return Trunc{MaxLen: v} })
	actDecodeU32Action(ActionMeter, func(v uint32) Action { return Meter{ID: v} })
	actDecodeU32Action(ActionDrop, func(v uint32) Action { return Drop{Reason: v} })
	actDecodeU32Action(ActionLBOutput, func(v uint32) Action { return LBOutput{BondID: v} })
	actDecodeU32Action(ActionTunnelPop, func(v uint32) Action { return TunnelPop{Port: v} })
	u32Parser := func(name string, mk func(uint32) Action) {
		actionParsers[name] = func(sc *scanner, _ int) (Action, error) {
			v, err := actParseParenU32(sc, name)
			if err != nil {
				return nil, err
			}
			return mk(v), nil
		}
	}
	u32Parser("recirc", func(v uint32) Action { return Recirc{ID: v} })
	u32Parser("trunc", func(v uint32) Action { return Trunc{MaxLen: v} })
	u32Parser("meter", func(v uint32) Action { return Meter{ID: v} })
	u32Parser("lb_output", func(v uint32) Action { return LBOutput{BondID: v} })
	u32Parser("tnl_pop", func(v uint32) Action { return TunnelPop{Port: v} })
	actionParsers["drop"] = parseDrop

	actionDecoders[ActionPushVLAN] = func(a *rawAttr, path string, _ int) (Action, error) {
		if err := wantLen(a, path, 4); err != nil {
			return nil, err
		}
		return PushVLAN{TPID: binary.BigEndian.Uint16(a.Data), TCI: binary.BigEndian.Uint16(a.Data[2:])}, nil
	}
	actionParsers["push_vlan"] = parsePushVLAN

	actionDecoders[ActionPushMPLS] = func(a *rawAttr, path string, _ int) (Action, error) {
		if err := wantLen(a, path, 8); err != nil {
			return nil, err
		}
		return PushMPLS{LSE: binary.BigEndian.Uint32(a.Data), EthType: binary.BigEndian.Uint16(a.Data[4:])}, nil
	}
	actionParsers["push_mpls"] = func(sc *scanner, _ int) (Action, error) {
		lse, et, _, err := parseLSEFields(sc, "push_mpls", false)
		if err != nil {
			return nil, err
		}
		return PushMPLS{LSE: lse, EthType: et}, nil
	}
	actionDecoders[ActionAddMPLS] = func(a *rawAttr, path string, _ int) (Action, error) {
		if err := wantLen(a, path, 8); err != nil {
			return nil, err
		}
		return AddMPLS{LSE: binary.BigEndian.Uint32(a.Data), EthType: binary.BigEndian.Uint16(a.Data[4:]),
			TunFlags: binary.NativeEndian.Uint16(a.Data[6:])}, nil
	}
	actionParsers["add_mpls"] = func(sc *scanner, _ int) (Action, error) {
		lse, et, fl, err := parseLSEFields(sc, "add_mpls", true)
		if err != nil {
			return nil, err
		}
		return AddMPLS{LSE: lse, EthType: et, TunFlags: fl}, nil
	}
	actionDecoders[ActionPopMPLS] = func(a *rawAttr, path string, _ int) (Action, error) {
		if err := wantLen(a, path, 2); err != nil {
			return nil, err
		}
		return PopMPLS{EthType: binary.BigEndian.Uint16(a.Data)}, nil
	}
	actionParsers["pop_mpls"] = func(sc *scanner, _ int) (Action, error) {
		var et uint64
		have := false
		err := actParseFields(sc, "pop_mpls", func(name string) error {
			if name != "eth_type" {
				return errUnknownField
			}
			have = true
			var err error
			et, err = sc.actUint(16, "eth_type")
			return err
		})
		if err != nil {
			return nil, err
		}
		if !have {
			return nil, sc.errorf("pop_mpls needs eth_type=")
		}
		return PopMPLS{EthType: uint16(et)}, nil
	}
	actionDecoders[ActionHash] = func(a *rawAttr, path string, _ int) (Action, error) {
		if err := wantLen(a, path, 8); err != nil {
			return nil, err
		}
		return Hash{Alg: binary.NativeEndian.Uint32(a.Data), Basis: binary.NativeEndian.Uint32(a.Data[4:])}, nil
	}
	actionParsers["hash"] = parseHash
	actionDecoders[ActionPushEth] = func(a *rawAttr, path string, _ int) (Action, error) {
		if err := wantLen(a, path, 12); err != nil {
			return nil, err
		}
		var p PushEth
		copy(p.Src[:], a.Data)
		copy(p.Dst[:], a.Data[6:])
		return p, nil
	}
	actionParsers["push_eth"] = parsePushEth
}
