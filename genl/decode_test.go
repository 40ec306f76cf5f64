package genl

import (
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"github.com/ovsdp/ovsdp/odp"
)

// attr builds one netlink attribute (header, payload, padding).
func attr(typ uint16, payload []byte) []byte {
	b := binary.NativeEndian.AppendUint16(nil, uint16(4+len(payload)))
	b = binary.NativeEndian.AppendUint16(b, typ)
	b = append(b, payload...)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

func u32b(v uint32) []byte { return binary.NativeEndian.AppendUint32(nil, v) }

func cat(bs ...[]byte) []byte {
	var out []byte
	for _, b := range bs {
		out = append(out, b...)
	}
	return out
}

var hdr = u32b(7) // struct ovs_header, dp_ifindex 7

func goodDatapath() []byte {
	return cat(hdr, attr(dpAttrName, []byte("br0\x00")), attr(dpAttrStats, make([]byte, 32)),
		attr(dpAttrMegaflowStats, make([]byte, 32)), attr(dpAttrUserFeatures, u32b(9)))
}

func goodVport() []byte {
	return cat(hdr, attr(vportAttrPortNo, u32b(1)), attr(vportAttrType, u32b(uint32(VportVXLAN))), attr(vportAttrName, []byte("vx\x00")),
		attr(vportAttrOptions, attr(tunnelAttrDstPort, []byte{0xb5, 0x12})), attr(vportAttrStats, make([]byte, 64)),
		attr(vportAttrUpcallPID, cat(u32b(1), u32b(2))))
}

func inPortKey(p uint32) []byte { return attr(uint16(odp.KeyInPort), u32b(p)) }

func goodFlow() []byte {
	return cat(hdr, attr(flowAttrKey, inPortKey(1)), attr(flowAttrMask, inPortKey(0xffffffff)),
		attr(flowAttrActions, attr(1, u32b(2))), attr(flowAttrStats, make([]byte, 16)), attr(flowAttrUsed, make([]byte, 8)),
		attr(flowAttrTCPFlags, []byte{2}), attr(flowAttrUFID, make([]byte, 16)))
}

func goodUpcall() []byte {
	return cat(hdr, attr(packetAttrPacket, []byte("0123456789abcdef")), attr(packetAttrKey, inPortKey(3)),
		attr(packetAttrUserdata, []byte{1, 2, 3, 4}), attr(packetAttrMRU, []byte{0xdc, 0x05}), attr(packetAttrHash, make([]byte, 8)))
}

func TestDecodeGood(t *testing.T) {
	d, err := DecodeDatapath(goodDatapath())
	if err != nil || d.Name != "br0" || d.Index != 7 || d.UserFeatures != 9 || d.UpcallMode() != UpcallModePerCPU {
		t.Errorf("DecodeDatapath = %+v, %v", d, err)
	}
	v, err := DecodeVport(goodVport())
	if err != nil || v.Options.DstPort != binary.NativeEndian.Uint16([]byte{0xb5, 0x12}) || len(v.UpcallPIDs) != 2 || v.Type != VportVXLAN {
		t.Errorf("DecodeVport = %+v, %v", v, err)
	}
	f, err := DecodeFlow(goodFlow())
	if err != nil || len(f.Key) != 1 || len(f.Actions) != 1 || f.Stats.TCPFlags != 2 {
		t.Errorf("DecodeFlow = %+v, %v", f, err)
	}
	var u odp.Upcall
	if err := DecodeUpcall(packetCmdAction, goodUpcall(), &u); err != nil || u.Port != 3 || u.Kind != odp.UpcallAction ||
		string(u.Packet) != "0123456789abcdef" || len(u.Userdata) != 4 || u.MRU != 1500 {
		t.Errorf("DecodeUpcall = %+v, %v", u, err)
	}
}

// egressTunKey is an OVS_PACKET_ATTR_EGRESS_TUN_KEY payload as the
// kernel's __ip_tun_to_nlattr writes it for a geneve port: tun_id,
// src, dst, ttl, df, tp_src, tp_dst and one Geneve option, built by
// hand.
func egressTunKey() []byte {
	return cat(attr(0, []byte{0, 0, 0, 0, 0, 0, 0, 0x2a}), attr(1, []byte{192, 0, 2, 1}), attr(2, []byte{192, 0, 2, 2}),
		attr(4, []byte{64}), attr(5, nil), attr(9, []byte{0xc3, 0x50}), attr(10, []byte{0x17, 0xc1}),
		attr(8, []byte{0x01, 0x02, 0x03, 0x01, 0xde, 0xad, 0xbe, 0xef}))
}

// TestDecodeUpcallEgressTunKey: the egress tunnel key of a userspace
// action with tunnel_out_port is decoded into Upcall.EgressTunnel, and
// an upcall without one leaves it nil.
func TestDecodeUpcallEgressTunKey(t *testing.T) {
	var u odp.Upcall
	if err := DecodeUpcall(packetCmdAction, cat(goodUpcall(), attr(packetAttrEgressTunKey, egressTunKey())), &u); err != nil {
		t.Fatal(err)
	}
	if u.EgressTunnel == nil {
		t.Fatal("EgressTunnel is nil")
	}
	got := odp.FormatKey(odp.FlowKey{*u.EgressTunnel}, nil, false)
	const want = "tunnel(tun_id=0x2a,src=192.0.2.1,dst=192.0.2.2,ttl=64,tp_src=50000,tp_dst=6081,geneve({class=0x102,type=0x3,len=4,0xdeadbeef}),flags(df|key))"
	if got != want {
		t.Errorf("EgressTunnel = %s\nwant          %s", got, want)
	}
	if err := DecodeUpcall(packetCmdAction, goodUpcall(), &u); err != nil || u.EgressTunnel != nil {
		t.Errorf("without the attribute: EgressTunnel %v, %v; want nil", u.EgressTunnel, err)
	}
	// A bad key fails the upcall with the attribute's name.
	bad := cat(goodUpcall(), attr(packetAttrEgressTunKey, attr(1, []byte{192, 0, 2})))
	if err := DecodeUpcall(packetCmdAction, bad, &u); err == nil || !strings.Contains(err.Error(), "OVS_PACKET_ATTR_EGRESS_TUN_KEY") || !strings.Contains(err.Error(), "src") {
		t.Errorf("a 3-byte tunnel src: %v, want an error naming OVS_PACKET_ATTR_EGRESS_TUN_KEY and src", err)
	}
}

func TestDecodeMalformed(t *testing.T) {
	for _, tc := range []struct {
		name string
		dec  func([]byte) error
		in   []byte
		want string // in the error
	}{
		{"dp empty", decDP, nil, "too short for struct ovs_header"},
		{"dp no name", decDP, cat(hdr, attr(dpAttrStats, make([]byte, 32))), "missing attribute OVS_DP_ATTR_NAME"},
		{"dp no stats", decDP, cat(hdr, attr(dpAttrName, []byte("x"))), "missing attribute OVS_DP_ATTR_STATS"},
		{"dp short stats", decDP, cat(hdr, attr(dpAttrName, []byte("x")), attr(dpAttrStats, make([]byte, 31))), "OVS_DP_ATTR_STATS at offset 12: 31 bytes, want at least 32"},
		{"dp short megaflow", decDP, cat(goodDatapath(), attr(dpAttrMegaflowStats, make([]byte, 8))), "OVS_DP_ATTR_MEGAFLOW_STATS"},
		{"dp features u16", decDP, cat(goodDatapath(), attr(dpAttrUserFeatures, []byte{1, 2})), "OVS_DP_ATTR_USER_FEATURES"},
		{"dp pids odd", decDP, cat(goodDatapath(), attr(dpAttrPerCPUPIDs, []byte{1, 2, 3})), "not a multiple of 4"},
		{"dp truncated attr", decDP, cat(goodDatapath(), []byte{40, 0, 1, 0, 0}), "length 40 out of range"},
		{"dp trailing bytes", decDP, cat(goodDatapath(), []byte{1, 2}), "2 trailing bytes"},
		{"dp zero length attr", decDP, cat(hdr, []byte{0, 0, 1, 0}), "length 0 out of range"},
		{"vport missing type", decVport, cat(hdr, attr(vportAttrPortNo, u32b(1)), attr(vportAttrName, []byte("x"))), "missing attribute OVS_VPORT_ATTR_TYPE"},
		{"vport short stats", decVport, cat(goodVport(), attr(vportAttrStats, make([]byte, 60))), "OVS_VPORT_ATTR_STATS"},
		{"vport bad options", decVport, cat(goodVport(), attr(vportAttrOptions, []byte{9, 0, 1, 0})), "length 9 out of range"},
		{"vport bad dst_port", decVport, cat(goodVport(), attr(vportAttrOptions, attr(tunnelAttrDstPort, u32b(1)))), "OVS_TUNNEL_ATTR_DST_PORT"},
		{"vport bad upcall stats", decVport, cat(goodVport(), attr(vportAttrUpcallStats, attr(0, []byte{1}))), "OVS_VPORT_UPCALL_ATTR_SUCCESS"},
		{"flow nothing", decFlow, hdr, "missing attribute OVS_FLOW_ATTR_KEY"},
		{"flow bad key", decFlow, cat(hdr, attr(flowAttrKey, []byte{200, 0, 3, 0})), "OVS_FLOW_ATTR_KEY"},
		{"flow bad in_port", decFlow, cat(hdr, attr(flowAttrKey, attr(uint16(odp.KeyInPort), []byte{1}))), "OVS_FLOW_ATTR_KEY"},
		{"flow bad mask", decFlow, cat(goodFlow(), attr(flowAttrMask, []byte{1})), "OVS_FLOW_ATTR_MASK"},
		{"flow bad actions", decFlow, cat(goodFlow(), attr(flowAttrActions, attr(1, []byte{1}))), "OVS_FLOW_ATTR_ACTIONS"},
		{"flow short stats", decFlow, cat(goodFlow(), attr(flowAttrStats, make([]byte, 8))), "OVS_FLOW_ATTR_STATS"},
		{"flow long ufid", decFlow, cat(goodFlow(), attr(flowAttrUFID, make([]byte, 17))), "OVS_FLOW_ATTR_UFID"},
		{"flow empty tcp flags", decFlow, cat(goodFlow(), attr(flowAttrTCPFlags, nil)), "OVS_FLOW_ATTR_TCP_FLAGS"},
		{"flow used u32", decFlow, cat(goodFlow(), attr(flowAttrUsed, u32b(1))), "OVS_FLOW_ATTR_USED"},
		{"upcall no packet", decUpcall, cat(hdr, attr(packetAttrKey, inPortKey(1))), "missing attribute OVS_PACKET_ATTR_PACKET"},
		{"upcall no key", decUpcall, cat(hdr, attr(packetAttrPacket, []byte{1})), "missing attribute OVS_PACKET_ATTR_KEY"},
		{"upcall bad mru", decUpcall, cat(goodUpcall(), attr(packetAttrMRU, u32b(1))), "OVS_PACKET_ATTR_MRU"},
		{"upcall bad hash", decUpcall, cat(goodUpcall(), attr(packetAttrHash, u32b(1))), "OVS_PACKET_ATTR_HASH"},
		{"upcall bad len", decUpcall, cat(goodUpcall(), attr(packetAttrLen, []byte{1})), "OVS_PACKET_ATTR_LEN"},
		{"upcall bad in_port", decUpcall, cat(hdr, attr(packetAttrPacket, []byte{1}), attr(packetAttrKey, attr(uint16(odp.KeyInPort), []byte{1, 2}))), "in_port"},
		{"upcall bad key framing", decUpcall, cat(hdr, attr(packetAttrPacket, []byte{1}), attr(packetAttrKey, []byte{99, 0, 3, 0})), "out of range"},
		{"upcall short", decUpcall, []byte{1}, "too short"},
		{"upcall bad actions", decUpcall, cat(goodUpcall(), attr(packetAttrActions, attr(1, []byte{1}))), "OVS_PACKET_ATTR_ACTIONS"},
		{"meter short stats", decMeter, cat(hdr, attr(meterAttrStats, make([]byte, 4))), "OVS_METER_ATTR_STATS"},
		{"meter bad band", decMeter, cat(hdr, attr(meterAttrBands, attr(0, attr(bandAttrRate, []byte{1})))), "OVS_BAND_ATTR_RATE"},
		{"meter features no max", decMeterFeatures, hdr, "OVS_METER_ATTR_MAX_METERS"},
		{"zone limits odd", decZones, cat(hdr, attr(ctLimitAttrZoneLimit, make([]byte, 13))), "multiple of struct ovs_zone_limit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.dec(tc.in)
			if err == nil {
				t.Fatalf("no error, want one containing %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not contain %q", err, tc.want)
			}
			var de *odp.DecodeError
			if !errors.As(err, &de) {
				t.Errorf("error %v is not a *DecodeError", err)
			}
		})
	}
	var u odp.Upcall
	if err := DecodeUpcall(packetCmdExecute, goodUpcall(), &u); err == nil {
		t.Error("DecodeUpcall accepted command EXECUTE")
	}
}

func decDP(b []byte) error            { _, err := DecodeDatapath(b); return err }
func decVport(b []byte) error         { _, err := DecodeVport(b); return err }
func decFlow(b []byte) error          { _, err := DecodeFlow(b); return err }
func decUpcall(b []byte) error        { var u odp.Upcall; return DecodeUpcall(packetCmdMiss, b, &u) }
func decMeter(b []byte) error         { _, err := decodeMeter(b); return err }
func decMeterFeatures(b []byte) error { _, err := decodeMeterFeatures(b); return err }
func decZones(b []byte) error         { _, err := decodeZoneLimits(b); return err }

func TestParseUpcallAllocs(t *testing.T) {
	b := goodUpcall()
	var r RawUpcall
	n := testing.AllocsPerRun(1000, func() {
		if err := ParseUpcall(packetCmdMiss, b, &r); err != nil {
			t.Fatal(err)
		}
	})
	if n != 0 {
		t.Errorf("ParseUpcall allocates %.1f times per call, want 0", n)
	}
	if r.InPort != 3 || r.MRU != 1500 || string(r.Userdata) != "\x01\x02\x03\x04" {
		t.Errorf("ParseUpcall = %+v", r)
	}
}

func TestVportTypeNames(t *testing.T) {
	for typ, name := range vportTypeNames {
		if got, ok := ParseVportType(name); !ok || got != typ || typ.String() != name {
			t.Errorf("%d <-> %q: got %v %v", typ, name, got, ok)
		}
	}
	if VportType(99).String() != "type-99" {
		t.Error(VportType(99).String())
	}
	if _, ok := ParseVportType("nope"); ok {
		t.Error("ParseVportType(nope) succeeded")
	}
}

// The fuzz targets: every decoder must return a value or an error, never
// panic, and a decoded flow must encode back to attributes that decode to
// the same text.

func FuzzDecodeDatapath(f *testing.F) {
	f.Add(goodDatapath())
	f.Add(cat(goodDatapath(), attr(dpAttrPerCPUPIDs, cat(u32b(1), u32b(2)))))
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := DecodeDatapath(b)
		if err == nil && d == nil {
			t.Fatal("nil datapath without error")
		}
	})
}

func FuzzDecodeVport(f *testing.F) {
	f.Add(goodVport())
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := DecodeVport(b)
		if err == nil {
			_ = v.Port()
		}
	})
}

func FuzzDecodeFlow(f *testing.F) {
	f.Add(goodFlow())
	f.Add(cat(hdr, attr(flowAttrUFID, make([]byte, 16)), attr(flowAttrStats, make([]byte, 16))))
	f.Fuzz(func(t *testing.T, b []byte) {
		fl, err := DecodeFlow(b)
		if err != nil {
			return
		}
		kb, err := odp.MarshalKey(fl.Key)
		if err != nil {
			return // e.g. an attribute too long to encode again
		}
		k2, err := odp.UnmarshalKey(kb)
		if err != nil {
			t.Fatalf("re-encoded key does not decode: %v", err)
		}
		if a, b := odp.FormatKey(fl.Key, nil, true), odp.FormatKey(k2, nil, true); a != b {
			t.Fatalf("key changed through encode/decode:\n%s\n%s", a, b)
		}
	})
}

func FuzzDecodeUpcall(f *testing.F) {
	f.Add(uint8(packetCmdMiss), goodUpcall())
	f.Add(uint8(packetCmdAction), cat(goodUpcall(), attr(packetAttrActions, attr(1, u32b(1)))))
	f.Add(uint8(packetCmdAction), cat(goodUpcall(), attr(packetAttrEgressTunKey, egressTunKey())))
	f.Fuzz(func(t *testing.T, cmd uint8, b []byte) {
		var r RawUpcall
		rawErr := ParseUpcall(cmd, b, &r)
		var u odp.Upcall
		err := DecodeUpcall(cmd, b, &u)
		if rawErr != nil && err == nil {
			t.Fatalf("ParseUpcall failed (%v) but DecodeUpcall did not", rawErr)
		}
		if err == nil && (u.Port != r.InPort || len(u.Packet) != len(r.Packet)) {
			t.Fatalf("DecodeUpcall %+v disagrees with ParseUpcall %+v", u, r)
		}
	})
}

// BenchmarkDecodeFlow decodes a flow as the kernel dumps it (the key with
// every metadata attribute the kernel adds, a mask and actions), with
// DecodeFlow and, as the baseline, only splitting its attributes.
func BenchmarkDecodeFlow(b *testing.B) {
	key, mask, err := odp.ParseMaskedKey("recirc_id(0),dp_hash(0/0),skb_priority(0/0),in_port(1),skb_mark(0/0),ct_state(0/0),ct_zone(0/0),ct_mark(0/0),ct_label(0/0),eth(src=00:00:00:00:00:01/00:00:00:00:00:00,dst=00:00:00:00:00:02/00:00:00:00:00:00),eth_type(0x0800),ipv4(src=10.0.0.1,dst=0.0.0.0/0.0.0.0,proto=0/0,tos=0/0,ttl=0/0,frag=no)")
	if err != nil {
		b.Fatal(err)
	}
	acts, err := odp.ParseActions("2")
	if err != nil {
		b.Fatal(err)
	}
	kb, _ := odp.MarshalKey(key)
	mb, _ := odp.MarshalKey(mask)
	ab, _ := odp.MarshalActions(acts)
	msg := cat(hdr, attr(flowAttrKey, kb), attr(flowAttrUFID, make([]byte, 16)), attr(flowAttrMask, mb),
		attr(flowAttrStats, make([]byte, 16)), attr(flowAttrActions, ab))
	b.Run("DecodeFlow", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if _, err := DecodeFlow(msg); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("baseline-walk-only", func(b *testing.B) {
		b.ReportAllocs()
		n := 0
		for i := 0; i < b.N; i++ {
			_ = walkAttrs(msg[4:], 4, "flow", func(uint16, []byte, int) error { n++; return nil })
		}
	})
}

// TestParseUpcallKeyTrailingBytes: a key with 1 to 3 bytes after its last
// attribute is malformed; the fast path (ParseUpcall) must refuse it as
// DecodeUpcall does, rather than hand the handler a key that is not one.
func TestParseUpcallKeyTrailingBytes(t *testing.T) {
	for n := 1; n <= 3; n++ {
		key := append(inPortKey(3), make([]byte, n)...)
		b := cat(hdr, attr(packetAttrPacket, []byte("0123456789abcdef")), attr(packetAttrKey, key))
		var r RawUpcall
		err := ParseUpcall(packetCmdMiss, b, &r)
		var de *odp.DecodeError
		if !errors.As(err, &de) || !strings.Contains(err.Error(), "trailing bytes") {
			t.Errorf("%d trailing bytes: ParseUpcall = %v, want a DecodeError about trailing bytes", n, err)
		}
		var u odp.Upcall
		if DecodeUpcall(packetCmdMiss, b, &u) == nil {
			t.Errorf("%d trailing bytes: DecodeUpcall accepted the key", n)
		}
	}
}

// TestParseUpcallKeyErrorOffsets: a malformed attribute inside the
// upcall's key is reported at its own offset in the message (it was
// always 0), as the one odp.DecodeError every decoder returns.
func TestParseUpcallKeyErrorOffsets(t *testing.T) {
	pkt := attr(packetAttrPacket, []byte("0123456789abcdef")) // 20 bytes
	keyOff := len(hdr) + len(pkt)
	for _, tc := range []struct {
		name string
		key  []byte
		attr string
		off  int // in the message
	}{
		{"short in_port", cat(attr(uint16(odp.KeyPriority), u32b(1)), attr(uint16(odp.KeyInPort), []byte{1, 2})), "OVS_PACKET_ATTR_KEY.in_port", keyOff + 4 + 8},
		{"length past end", cat(attr(uint16(odp.KeyInPort), u32b(1)), []byte{99, 0, 3, 0}), "OVS_PACKET_ATTR_KEY", keyOff + 4 + 8},
	} {
		b := cat(hdr, pkt, attr(packetAttrKey, tc.key))
		var r RawUpcall
		err := ParseUpcall(packetCmdMiss, b, &r)
		var de *odp.DecodeError
		if !errors.As(err, &de) || de.What != "upcall" || de.Attr != tc.attr || de.Offset != tc.off {
			t.Errorf("%s: ParseUpcall = %v (%+v), want a DecodeError for %s at offset %d", tc.name, err, de, tc.attr, tc.off)
		}
	}
}
