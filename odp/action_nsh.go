package odp

import (
	"encoding/binary"
	"fmt"
)

// OVS_NSH_KEY_ATTR_* types.
const (
	nshKeyAttrBase = 1
	nshKeyAttrMD1  = 2
	nshKeyAttrMD2  = 3
)

// NSH metadata types.
const (
	NSHMDType1 uint8 = 1
	NSHMDType2 uint8 = 2
)

// PushNSH pushes an NSH header (OVS_ACTION_ATTR_PUSH_NSH: a nested
// OVS_KEY_ATTR_NSH holding OVS_NSH_KEY_ATTR_BASE — flags, ttl, mdtype, np,
// big-endian path header SPI<<8|SI — and MD1, the four big-endian context
// words, or MD2, variable-length TLVs).
//
// Text: "push_nsh(flags=0,ttl=63,mdtype=1,np=3,spi=0x0,si=255,c1=0x0,
// c2=0x0,c3=0x0,c4=0x0)", or with mdtype=2 ",md2=0xHEX" instead of the
// context words (the bytes in full; omitted when empty). Parsing defaults
// are Open vSwitch's: ttl 63, mdtype 1, np 3 (Ethernet), si 255.
type PushNSH struct {
	// Flags, TTL, MDType and NP are the base header fields.
	Flags, TTL, MDType, NP uint8
	// SPI (24 bits) and SI form the service path header.
	SPI uint32
	SI  uint8
	// Context is the MD type 1 context (C1..C4).
	Context [4]uint32
	// MD2 is the MD type 2 metadata.
	MD2 []byte
}

// ActionType implements Action.
func (PushNSH) ActionType() ActionType { return ActionPushNSH }

func (p PushNSH) appendPayload(b []byte) ([]byte, error) {
	if p.SPI > 0xffffff {
		return b, fmt.Errorf("nsh spi %#x exceeds 24 bits", p.SPI)
	}
	b, start := beginNested(b, uint16(KeyNSH))
	b = appendAttrHeader(b, nshKeyAttrBase, 8)
	b = append(b, p.Flags, p.TTL, p.MDType, p.NP)
	b = binary.BigEndian.AppendUint32(b, p.SPI<<8|uint32(p.SI))
	switch p.MDType {
	case NSHMDType1:
		b = appendAttrHeader(b, nshKeyAttrMD1, 16)
		for _, c := range p.Context {
			b = binary.BigEndian.AppendUint32(b, c)
		}
	case NSHMDType2:
		if len(p.MD2) > 0 {
			if len(p.MD2) > 248 {
				return b, fmt.Errorf("nsh md2 of %d bytes exceeds 248", len(p.MD2))
			}
			b = appendAttr(b, nshKeyAttrMD2, p.MD2)
		}
	}
	return endNested(b, start)
}

func (p PushNSH) format(f *textBuf) {
	fmt.Fprintf(f, "push_nsh(flags=%d,ttl=%d,mdtype=%d,np=%d,spi=0x%x,si=%d", p.Flags, p.TTL, p.MDType, p.NP, p.SPI, p.SI)
	switch p.MDType {
	case NSHMDType1:
		for i, c := range p.Context {
			fmt.Fprintf(f, ",c%d=0x%x", i+1, c)
		}
	case NSHMDType2:
		if len(p.MD2) > 0 {
			f.WriteString(",md2=0x")
			writeHex(f, p.MD2)
		}
	}
	f.WriteByte(')')
}

func decodePushNSH(a *rawAttr, path string, _ int) (Action, error) {
	var p PushNSH
	var haveKey bool
	err := actNested(a, path, map[uint16]string{uint16(KeyNSH): "nsh"}, func(k *rawAttr, kp string) error {
		if KeyType(k.Type) != KeyNSH {
			return actDecodeErr(k, kp, "push_nsh holds key attribute %d, want nsh", k.Type)
		}
		haveKey = true
		var haveBase, haveMD1, haveMD2 bool
		err := actNested(k, kp, map[uint16]string{nshKeyAttrBase: "base", nshKeyAttrMD1: "md1", nshKeyAttrMD2: "md2"}, func(n *rawAttr, np string) error {
			switch n.Type {
			case nshKeyAttrBase:
				if err := wantLen(n, np, 8); err != nil {
					return err
				}
				p.Flags, p.TTL, p.MDType, p.NP = n.Data[0], n.Data[1], n.Data[2], n.Data[3]
				ph := binary.BigEndian.Uint32(n.Data[4:])
				p.SPI, p.SI = ph>>8, uint8(ph)
				haveBase = true
			case nshKeyAttrMD1:
				if err := wantLen(n, np, 16); err != nil {
					return err
				}
				for i := range p.Context {
					p.Context[i] = binary.BigEndian.Uint32(n.Data[4*i:])
				}
				haveMD1 = true
			case nshKeyAttrMD2:
				if len(n.Data) == 0 || len(n.Data) > 248 {
					return actDecodeErr(n, np, "md2 of %d bytes, want 1 to 248", len(n.Data))
				}
				p.MD2 = append([]byte{}, n.Data...)
				haveMD2 = true
			default:
				return actDecodeErr(n, np, "unknown nsh attribute %d", n.Type)
			}
			return nil
		})
		if err != nil {
			return err
		}
		switch {
		case !haveBase:
			return actDecodeErr(k, kp, "nsh without base attribute")
		case p.MDType == NSHMDType1 && (!haveMD1 || haveMD2):
			return actDecodeErr(k, kp, "mdtype 1 needs md1 and no md2")
		case p.MDType == NSHMDType2 && haveMD1:
			return actDecodeErr(k, kp, "mdtype 2 with md1 context")
		case p.MDType != NSHMDType1 && p.MDType != NSHMDType2:
			return actDecodeErr(k, kp, "unknown nsh mdtype %d", p.MDType)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if !haveKey {
		return nil, actDecodeErr(a, path, "push_nsh without nsh key attribute")
	}
	return p, nil
}

func parsePushNSH(sc *scanner, _ int) (Action, error) {
	p := PushNSH{TTL: 63, MDType: NSHMDType1, NP: 3, SI: 255}
	err := actParseFields(sc, "push_nsh", func(name string) error {
		var v uint64
		var err error
		switch name {
		case "flags", "ttl", "np", "si", "mdtype":
			v, err = sc.actUint(8, name)
			switch name {
			case "flags":
				p.Flags = uint8(v)
			case "ttl":
				p.TTL = uint8(v)
			case "np":
				p.NP = uint8(v)
			case "si":
				p.SI = uint8(v)
			case "mdtype":
				if err == nil && v != 1 && v != 2 {
					return sc.errorf("nsh mdtype must be 1 or 2")
				}
				p.MDType = uint8(v)
			}
		case "spi":
			v, err = sc.actUintBase(24, 16, "spi")
			p.SPI = uint32(v)
		case "c1", "c2", "c3", "c4":
			v, err = sc.actUintBase(32, 16, name)
			p.Context[name[1]-'1'] = uint32(v)
		case "md2":
			if !sc.accept("0x") {
				return sc.errorf("md2 must be hex starting with 0x")
			}
			var d []byte
			d, err = sc.hexBytes("md2")
			for len(d)%4 != 0 {
				d = append(d, 0)
			}
			if len(d) > 248 {
				return sc.errorf("nsh md2 of %d bytes exceeds 248", len(d))
			}
			p.MD2 = d
		default:
			return errUnknownField
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if p.MDType != NSHMDType1 {
		p.Context = [4]uint32{}
	}
	if p.MDType != NSHMDType2 {
		p.MD2 = nil
	}
	return p, nil
}

func init() {
	actionDecoders[ActionPushNSH] = decodePushNSH
	actionParsers["push_nsh"] = parsePushNSH
}
