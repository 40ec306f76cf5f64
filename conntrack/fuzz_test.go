package conntrack

import (
	"encoding/binary"
	"errors"
	"testing"
	"time"

	"github.com/ovsdp/ovsdp/flowkeys"
)

// FuzzTracker drives the tracker's input path with arbitrary packets:
// each chunk of the input is a packet's L4 bytes and a few header
// choices (protocol, addresses from a small set so that packets meet
// their connections, direction, zone, commit, NAT, clock steps). Nothing
// may panic, every error must be one of Execute's, and the counts must
// agree with a dump after the run.
func FuzzTracker(f *testing.F) {
	f.Add([]byte("\x06\x00\x00\x00\x50\x00\x00\x00\x01\x00\x00\x00\x00\x50\x02\xff\xff\x00\x00\x00\x00"))
	f.Add([]byte("\x11\x01\x02\x03\x00\x35\x00\x35\x00\x08\x00\x00"))
	f.Add([]byte("\x01\x04\x00\x00\x08\x00\x00\x00\x00\x07\x00\x01\x03\x03\x00\x00\x00\x00\x00\x00\x45\x00\x00\x1c\x00\x00\x00\x00\x40\x11\x00\x00\x0a\x00\x00\x01\x0a\x00\x00\x02\x00\x35\x00\x35"))
	f.Fuzz(func(t *testing.T, data []byte) {
		clk := &fakeClock{}
		clk.t.Store(1)
		tr := New(Config{MaxConns: 64, Clock: clk.now})
		tr.SetZoneLimit(1, 3)
		protos := [...]uint8{ProtoTCP, ProtoUDP, ProtoICMP, ProtoICMPv6, 47, 132}
		states := map[uint32]State{}
		for len(data) >= 4 {
			hdr := data[:4]
			n := int(hdr[3] % 64)
			data = data[4:]
			if n > len(data) {
				n = len(data)
			}
			l4 := data[:n]
			data = data[n:]
			var k flowkeys.Key
			v6 := hdr[0]&0x80 != 0
			k.IPProto = protos[int(hdr[0]&0x7f)%len(protos)]
			if v6 {
				k.EthType = 0x86dd
				k.IPv6Src[15], k.IPv6Dst[15] = hdr[1]&3, hdr[1]>>2&3
			} else {
				k.EthType = 0x0800
				k.IPv4Src = [4]byte{10, 0, 0, hdr[1] & 3}
				k.IPv4Dst = [4]byte{10, 0, 0, hdr[1] >> 2 & 3}
			}
			if hdr[2]&0x80 != 0 {
				k.IPFrag = flowkeys.FragFirst
			}
			var p Packet
			if err := FromKey(&k, l4, uint32(len(l4)+20), &p); err != nil {
				if err != ErrFragment {
					t.Fatalf("FromKey: %v", err)
				}
				continue
			}
			a := Action{Commit: hdr[2]&1 != 0, Force: hdr[2]&2 != 0, Zone: uint16(hdr[2] >> 2 & 1)}
			if hdr[2]&4 != 0 {
				a.MarkValue, a.MarkMask = uint32(hdr[1]), 0xff
			}
			switch hdr[2] >> 3 & 3 {
			case 1:
				a.HasNAT = true
			case 2:
				a.HasNAT, a.NAT = true, NATRange{Src: true, HasIP: true, V6: v6, HasProto: true, ProtoMin: 100, ProtoMax: 101}
				a.NAT.IPMin[0], a.NAT.IPMax[0] = 192, 192
				if !v6 {
					a.NAT.IPMin[3], a.NAT.IPMax[3] = 1, 2
				}
			case 3:
				a.HasNAT, a.NAT = true, NATRange{Dst: true, HasIP: true, V6: v6, IPMin: a.NAT.IPMin}
				a.NAT.IPMin[0] = 10
				a.NAT.IPMax = a.NAT.IPMin
			}
			key := binary.BigEndian.Uint32(p.Tuple.Src[12:]) ^ uint32(p.Tuple.Src[3])
			s := states[key]
			if hdr[2]&0x40 != 0 {
				s = State{}
			}
			err := tr.Execute(&p, &a, &s)
			switch err {
			case nil:
				if s.Flags&StateTracked == 0 {
					t.Fatalf("ct_state %#x without +trk", s.Flags)
				}
				if s.Flags&StateInvalid != 0 && s.Flags&(StateNew|StateEstablished|StateRelated) != 0 {
					t.Fatalf("ct_state %s", stateString(s.Flags))
				}
			default:
				for _, e := range []error{ErrTableFull, ErrZoneLimit, ErrNATExhausted, ErrClash, ErrNATFamily} {
					if errors.Is(err, e) {
						err = nil
					}
				}
				if err != nil {
					t.Fatalf("unexpected error %v", err)
				}
			}
			states[key] = s
			clk.advance(time.Duration(hdr[1]) * time.Second)
		}
		tr.Sweep()
		n := 0
		tr.Dump(Filter{}, func(*Entry) error { n++; return nil })
		if n != tr.Count() {
			t.Fatalf("dump has %d entries, count %d", n, tr.Count())
		}
		if _, z1, _ := tr.ZoneLimit(1); z1 > 3 {
			t.Fatalf("zone 1 holds %d connections over its limit 3", z1)
		}
	})
}
