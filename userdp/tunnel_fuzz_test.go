package userdp

import (
	"bytes"
	"errors"
	"testing"

	"github.com/ovsdp/ovsdp/flowkeys"
	"github.com/ovsdp/ovsdp/odp"
)

// FuzzDecapTunnel decapsulates arbitrary outer packets on every kind of
// tunnel port: nothing panics, a refusal wraps errTunnelDrop, and what
// is accepted lies inside the packet, is at least an Ethernet header, and
// re-encapsulates (with the metadata it gave, as set(tunnel) would) into
// a packet that decapsulates to the same inner frame.
func FuzzDecapTunnel(f *testing.F) {
	inner := udpFrame(1, 2, 1000)
	f.Add(udpOuter(0, 6081, true, append(mustHex(f, "0140 6558 000001 00 0102 80 00"), inner...)), uint8(0))
	f.Add(udpOuter(3, 4789, false, append(mustHex(f, "8848000a 00000100"), inner...)), uint8(2))
	f.Add(outer(0, 47, append(mustHex(f, "2000 6558 01020304"), inner...)), uint8(3))
	f.Add(append(mustHex(f, "60000000 0050 11 40 fd000000000000000000000000000002 fd000000000000000000000000000001 15b3 12b5 0050 0000 08000000 00000100"), inner...), uint8(1))
	f.Fuzz(func(t *testing.T, pkt []byte, sel uint8) {
		cfgs := []tunnelConfig{{kind: tunnelGeneve, dstPort: 6081}, {kind: tunnelVXLAN, dstPort: 4789},
			{kind: tunnelVXLAN, dstPort: 4789, gbp: true}, {kind: tunnelGRE}}
		c := cfgs[int(sel)%len(cfgs)]
		var md flowkeys.Tunnel
		var opts [256]byte
		p := append([]byte(nil), pkt...)
		off, n, nopts, err := decapTunnel(p, &c, &md, &opts)
		if err != nil {
			if !errors.Is(err, errTunnelDrop) {
				t.Fatalf("error %v does not wrap errTunnelDrop", err)
			}
			return
		}
		if off < 0 || n < 14 || off+n > len(p) || nopts < 0 || nopts > 252 {
			t.Fatalf("decapsulated [%d:+%d] (%d option bytes) of %d bytes", off, n, nopts, len(p))
		}
		frame := p[off : off+n]
		ot := odp.Tunnel{Present: odp.TunnelHasTTL | odp.TunnelHasID, TTL: md.TTL, TOS: md.TOS, ID: md.ID}
		if md.Proto == flowkeys.TunProtoIPv6 {
			ot.Present |= odp.TunnelHasIPv6Dst | odp.TunnelHasIPv6Src
			ot.IPv6Src, ot.IPv6Dst = md.IPv6Dst, md.IPv6Src
		} else {
			ot.Present |= odp.TunnelHasIPv4Dst | odp.TunnelHasIPv4Src
			ot.IPv4Src, ot.IPv4Dst = md.IPv4Dst, md.IPv4Src
		}
		if ot.IPv4Dst == [4]byte{} && ot.IPv6Dst == [16]byte{} {
			return // no destination to send back to
		}
		if nopts > 0 {
			ot.Present |= odp.TunnelHasGeneve
			ot.Geneve = opts[:nopts]
		}
		if md.Flags&odp.KernelTunnelVXLANOpt != 0 {
			ot.Present |= odp.TunnelHasVXLAN
			ot.VXLANGBP = md.GBP
		}
		if c.kind != tunnelGRE { // a gre port takes no checksums
			ot.Flags |= odp.TunnelCSUM
		}
		ti, err := compileSetTunnel(ot, "fuzz")
		if err != nil {
			return // options that set(tunnel) refuses
		}
		if ti.v6 && c.kind == tunnelGRE {
			return
		}
		ep := encapParams{hopLimit: 64, l3: 14, proto: 0x0800, portMin: 32768, portMax: 61000}
		buf := make([]byte, ti.encapOverhead(&c)+len(frame))
		in := append([]byte(nil), frame...)
		m := encapTunnel(buf, in, &c, ti, &ep)
		var md2 flowkeys.Tunnel
		off2, n2, _, err := decapTunnel(buf[:m], &c, &md2, &opts)
		if err != nil {
			t.Fatalf("re-encapsulated packet refused: %v", err)
		}
		if !bytes.Equal(buf[off2:off2+n2], in) && md.TOS&3 != 3 {
			t.Fatalf("re-encapsulated frame differs")
		}
	})
}
