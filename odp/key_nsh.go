package odp

import (
	"encoding/binary"
	"fmt"
)

// The OVS_NSH_KEY_ATTR_* nested attribute types of OVS_KEY_ATTR_NSH.
const (
	nshBase = 1
	nshMD1  = 2
	nshMD2  = 3
)

// NSH is OVS_KEY_ATTR_NSH: the Network Service Header fields as nested
// OVS_NSH_KEY_ATTR_* attributes (BASE: struct ovs_nsh_key_base; MD1: four
// be32 context words; MD2: variable-length TLVs). Text:
// nsh(flags=0,ttl=63,mdtype=1,np=3,spi=0x123,si=255,c1=0x1,c2=0x2,c3=0x3,c4=0x4).
// Open vSwitch's text form has no MD2; it is kept in the attribute only.
type NSH struct {
	// HasBase, HasMD1 say whether the BASE and MD1 attributes are there.
	HasBase, HasMD1 bool
	// Flags, TTL, MDType and NP are the base header fields.
	Flags, TTL, MDType, NP uint8
	// PathHdr is the service path header: SPI in the top 24 bits, SI in
	// the low 8.
	PathHdr uint32
	// Context is the MD type 1 context.
	Context [4]uint32
	// MD2 holds the MD type 2 TLVs, nil when absent.
	MD2 []byte
	// Unknown holds nested attributes this package does not know.
	Unknown []UnknownKey
}

// SPI is the service path identifier.
func (n NSH) SPI() uint32 { return n.PathHdr >> 8 }

// SI is the service index.
func (n NSH) SI() uint8 { return uint8(n.PathHdr) }

// KeyType implements KeyAttr.
func (NSH) KeyType() KeyType { return KeyNSH }

func (n NSH) appendPayload(b []byte) ([]byte, error) {
	if n.HasBase {
		b = appendAttrHeader(b, nshBase, 8)
		b = append(b, n.Flags, n.TTL, n.MDType, n.NP)
		b = binary.BigEndian.AppendUint32(b, n.PathHdr)
	}
	if n.HasMD1 {
		b = appendAttrHeader(b, nshMD1, 16)
		for _, c := range n.Context {
			b = binary.BigEndian.AppendUint32(b, c)
		}
	}
	if n.MD2 != nil {
		if len(n.MD2) > maxAttrLen {
			return b, fmt.Errorf("nsh md2 of %d bytes is too long", len(n.MD2))
		}
		b = appendAttr(b, nshMD2, n.MD2)
	}
	for _, u := range n.Unknown {
		if len(u.Data) > maxAttrLen {
			return b, fmt.Errorf("nsh attribute %d of %d bytes is too long", u.Type, len(u.Data))
		}
		b = appendAttr(b, uint16(u.Type), u.Data)
	}
	return b, nil
}

func (n NSH) format(f *textBuf, mask KeyAttr, _ bool) {
	k := n
	if !k.HasBase {
		k.Flags, k.TTL, k.MDType, k.NP, k.PathHdr = 0, 0, 0, 0, 0
	}
	if !k.HasMD1 {
		k.Context = [4]uint32{}
	}
	mm, ok := mask.(NSH)
	if !ok {
		fmt.Fprintf(f, "flags=%d,ttl=%d,mdtype=%d,np=%d,spi=0x%x,si=%d",
			k.Flags, k.TTL, k.MDType, k.NP, k.SPI(), k.SI())
		if k.MDType == 1 {
			for i, c := range k.Context {
				fmt.Fprintf(f, ",c%d=0x%x", i+1, c)
			}
		}
		return
	}
	// Mask fields Open vSwitch does not find in the mask stay all ones.
	m := NSH{Flags: 0xff, TTL: 0xff, MDType: 0xff, NP: 0xff, PathHdr: 0xffffffff,
		Context: [4]uint32{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}}
	if mm.HasBase {
		m.Flags, m.TTL, m.MDType, m.NP, m.PathHdr = mm.Flags, mm.TTL, mm.MDType, mm.NP, mm.PathHdr
	}
	if mm.HasMD1 {
		m.Context = mm.Context
	}
	w := fw{f: f}
	u8 := func(name string, v, mv uint8) {
		if mv == 0 {
			return
		}
		w.sep()
		if mv == 0xff {
			fmt.Fprintf(f, "%s=%d", name, v)
		} else {
			fmt.Fprintf(f, "%s=0x%02x/0x%02x", name, v, mv)
		}
	}
	b32 := func(name string, v, mv uint32) {
		if mv == 0 {
			return
		}
		w.sep()
		if mv == 0xffffffff {
			fmt.Fprintf(f, "%s=0x%x", name, v)
		} else {
			fmt.Fprintf(f, "%s=0x%x/0x%08x", name, v, mv)
		}
	}
	spiMask := m.SPI()
	if spiMask == 0xffffff {
		spiMask = 0xffffffff
	}
	u8("flags", k.Flags, m.Flags)
	u8("ttl", k.TTL, m.TTL)
	u8("mdtype", k.MDType, m.MDType)
	u8("np", k.NP, m.NP)
	b32("spi", k.SPI(), spiMask)
	u8("si", k.SI(), m.SI())
	for i := range k.Context {
		b32(fmt.Sprintf("c%d", i+1), k.Context[i], m.Context[i])
	}
}

func init() {
	keyDecoders[KeyNSH] = func(a *rawAttr, path string, _ int) (KeyAttr, error) {
		var n NSH
		w := newAttrWalker(a.Data, a.Offset+nlaHdrLen)
		for c := range w.All() {
			switch c.Type {
			case nshBase:
				d, err := decodeFixed(c, path+".base", 8)
				if err != nil {
					return nil, err
				}
				n.HasBase = true
				n.Flags, n.TTL, n.MDType, n.NP = d[0], d[1], d[2], d[3]
				n.PathHdr = binary.BigEndian.Uint32(d[4:])
			case nshMD1:
				d, err := decodeFixed(c, path+".md1", 16)
				if err != nil {
					return nil, err
				}
				n.HasMD1 = true
				for i := range n.Context {
					n.Context[i] = binary.BigEndian.Uint32(d[4*i:])
				}
			case nshMD2:
				n.MD2 = append([]byte{}, c.Data...)
			default:
				n.Unknown = append(n.Unknown, UnknownKey{Type: KeyType(c.Type), Data: append([]byte{}, c.Data...)})
			}
		}
		if err := w.attrErr(path); err != nil {
			return nil, err
		}
		return n, nil
	}
	keyParsers["nsh"] = func(sc *scanner) (KeyAttr, KeyAttr, error) {
		k := NSH{HasBase: true}
		m := NSH{HasBase: true, HasMD1: true}
		var spi, mspi uint32
		var si, msi uint8
		fields := []fieldSpec{
			{"flags", pU8(&k.Flags, &m.Flags)},
			{"ttl", pU8(&k.TTL, &m.TTL)},
			{"mdtype", pU8(&k.MDType, &m.MDType)},
			{"np", pU8(&k.NP, &m.NP)},
			{"spi", pU32(&spi, &mspi)},
			{"si", pU8(&si, &msi)},
		}
		for i := range k.Context {
			fields = append(fields, fieldSpec{fmt.Sprintf("c%d", i+1), pU32(&k.Context[i], &m.Context[i])})
		}
		if err := parseFields(sc, "nsh", fields); err != nil {
			return nil, nil, err
		}
		k.PathHdr = spi<<8 | uint32(si)
		m.PathHdr = mspi<<8 | uint32(msi)
		k.HasMD1 = k.MDType == 1
		return k, m, nil
	}
}
