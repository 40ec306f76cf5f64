package conntrack

import (
	"errors"
	"net/netip"
	"syscall"
	"testing"

	"github.com/ovsdp/ovsdp/flowkeys"
	"github.com/ovsdp/ovsdp/odp"
)

func tcpBytes(flags uint8, opts []byte, payload int) []byte {
	h := make([]byte, 20+len(opts)+payload)
	h[0], h[1], h[2], h[3] = 0x9c, 0x40, 0, 80 // 40000 → 80
	h[4], h[7] = 0, 100                        // seq 100
	h[11] = 7                                  // ack 7
	h[12] = byte((20+len(opts))/4) << 4
	h[13] = flags
	h[14], h[15] = 0x12, 0x34
	copy(h[20:], opts)
	return h
}

func TestFromKeyTCP(t *testing.T) {
	k := flowkeys.Key{EthType: 0x0800, IPProto: ProtoTCP, IPv4Src: [4]byte{10, 0, 0, 1}, IPv4Dst: [4]byte{10, 0, 0, 2}}
	// MSS, SACK-permitted, NOP, window scale 7, then a SACK block.
	opts := []byte{2, 4, 5, 0xb4, 4, 2, 1, 3, 3, 7, 5, 10, 0, 0, 0, 1, 0, 0, 0, 9, 0, 0, 0, 0}
	var p Packet
	if err := FromKey(&k, tcpBytes(TCPSyn, opts, 10), 64, &p); err != nil {
		t.Fatal(err)
	}
	want := TCPInfo{Flags: TCPSyn, Seq: 100, Ack: 7, Window: 0x1234, DataLen: 10, HasOptions: true,
		WScale: 7, HasWScale: true, SACKPerm: true, SACK: 9, HasSACK: true}
	if p.Malformed || p.TCP != want {
		t.Fatalf("got %+v, malformed %v\nwant %+v", p.TCP, p.Malformed, want)
	}
	if p.Tuple != tuple(t, "10.0.0.1", "10.0.0.2", ProtoTCP, 40000, 80) || p.Len != 64 {
		t.Fatalf("tuple %v len %d", p.Tuple, p.Len)
	}
	for name, b := range map[string][]byte{
		"short":               tcpBytes(TCPSyn, nil, 0)[:19],
		"offset below 5":      func() []byte { b := tcpBytes(TCPSyn, nil, 0); b[12] = 4 << 4; return b }(),
		"offset past the end": func() []byte { b := tcpBytes(TCPSyn, nil, 0); b[12] = 6 << 4; return b }(),
	} {
		if err := FromKey(&k, b, 40, &p); err != nil || !p.Malformed {
			t.Errorf("%s: err %v, malformed %v", name, err, p.Malformed)
		}
	}
	// An option running past the header stops the parse quietly.
	if err := FromKey(&k, tcpBytes(TCPSyn, []byte{3, 9, 1, 0}, 0), 44, &p); err != nil || p.Malformed || p.TCP.HasWScale {
		t.Errorf("partial option: %v %+v", err, p.TCP)
	}
}

func TestFromKeyICMPErrorAndErrors(t *testing.T) {
	k := flowkeys.Key{EthType: 0x0800, IPProto: ProtoICMP, IPv4Src: [4]byte{10, 0, 0, 254}, IPv4Dst: [4]byte{10, 0, 0, 1}}
	icmp := []byte{3, 3, 0, 0, 0, 0, 0, 0,
		0x45, 0, 0, 28, 0, 0, 0, 0, 64, ProtoUDP, 0, 0, 10, 0, 0, 1, 10, 0, 0, 9, 0x0f, 0xa0, 0, 53, 0, 8, 0, 0}
	var p Packet
	if err := FromKey(&k, icmp, 56, &p); err != nil || p.Malformed || !p.HasInner {
		t.Fatalf("err %v %+v", err, p)
	}
	if want := tuple(t, "10.0.0.1", "10.0.0.9", ProtoUDP, 4000, 53); p.Inner != want {
		t.Fatalf("inner %v, want %v", p.Inner, want)
	}
	if err := FromKey(&k, icmp[:20], 40, &p); err != nil || !p.Malformed {
		t.Errorf("cut inner header: %v malformed %v", err, p.Malformed)
	}
	if err := FromKey(&k, []byte{30, 0, 0, 0, 0, 0, 0, 0}, 28, &p); err != nil || !p.Malformed {
		t.Errorf("ICMP type 30: %v malformed %v", err, p.Malformed)
	}
	echo := []byte{8, 0, 0, 0, 0x12, 0x34, 0, 1}
	if err := FromKey(&k, echo, 28, &p); err != nil || p.Tuple.ICMPID() != 0x1234 || p.Tuple.ICMPType() != 8 {
		t.Errorf("echo: %v %v", err, p.Tuple)
	}
	if err := FromKey(&flowkeys.Key{EthType: 0x0806}, nil, 0, &p); !errors.Is(err, ErrNotIP) {
		t.Errorf("ARP: %v", err)
	}
	k.IPFrag = flowkeys.FragLater
	if err := FromKey(&k, nil, 0, &p); !errors.Is(err, ErrFragment) {
		t.Errorf("fragment: %v", err)
	}
}

func TestToKey(t *testing.T) {
	tr, _ := newTestTracker(t, Config{})
	echo := &Packet{Tuple: tuple(t, "10.0.0.1", "10.0.0.2", ProtoICMP, 77, 8<<8)}
	s := mustState(t, tr, echo, Action{Commit: true, Zone: 4, MarkValue: 9, MarkMask: 0xff}, trkNew)
	k := flowkeys.Key{EthType: 0x0800}
	s.ToKey(&k)
	if k.CTState != trkNew || k.CTZone != 4 || k.CTMark != 9 || k.CTOrigProto != ProtoICMP ||
		k.CTOrigIPv4Src != [4]byte{10, 0, 0, 1} || k.CTOrigTpSrc != 8 || k.CTOrigTpDst != 0 {
		t.Fatalf("key %+v", k)
	}
	// An IPv6 key gets no IPv4 original tuple.
	k6 := flowkeys.Key{EthType: 0x86dd}
	s.ToKey(&k6)
	if k6.CTOrigProto != 0 || k6.CTState != trkNew {
		t.Fatalf("IPv6 key %+v", k6)
	}
}

func TestCompileAction(t *testing.T) {
	ip := netip.MustParseAddr
	for _, tc := range []struct {
		name string
		ct   odp.CT
		eth  uint16
		want error
	}{
		{"plain", odp.CT{}, 0x0800, nil},
		{"not IP", odp.CT{}, 0x0806, syscall.EINVAL},
		{"mark without commit", odp.CT{HasMark: true, MarkValue: 1, MarkMask: 1}, 0x0800, syscall.EINVAL},
		{"mark mask 0", odp.CT{Commit: true, HasMark: true, MarkValue: 1}, 0x0800, syscall.EINVAL},
		{"labels without commit", odp.CT{HasLabels: true, LabelsMask: [16]byte{1}}, 0x0800, syscall.EINVAL},
		// As the kernel without the helper modules; a policy it cannot
		// find it ignores (TestIntegrationCTHelperTimeout).
		{"helper", odp.CT{Commit: true, Helper: "ftp"}, 0x0800, syscall.EINVAL},
		{"helper without commit", odp.CT{Helper: "tftp"}, 0x0800, syscall.EINVAL},
		{"timeout", odp.CT{Commit: true, Timeout: "pol"}, 0x0800, nil},
		{"nat src without commit", odp.CT{NAT: &odp.NAT{Src: true, IPMin: ip("1.1.1.1")}}, 0x0800, syscall.EINVAL},
		{"nat src and dst", odp.CT{Commit: true, NAT: &odp.NAT{Src: true, Dst: true}}, 0x0800, syscall.ERANGE},
		{"nat flags without type", odp.CT{NAT: &odp.NAT{ProtoRandom: true}}, 0x0800, syscall.EINVAL},
		{"nat v6 range on v4", odp.CT{Commit: true, NAT: &odp.NAT{Src: true, IPMin: ip("fd00::1")}}, 0x0800, syscall.EINVAL},
		{"nat empty port range", odp.CT{Commit: true, NAT: &odp.NAT{Src: true, IPMin: ip("1.1.1.1"), ProtoMin: 9, ProtoMax: 8}}, 0x0800, syscall.EINVAL},
		{"nat empty address range", odp.CT{Commit: true, NAT: &odp.NAT{Src: true, IPMin: ip("1.1.1.9"), IPMax: ip("1.1.1.1")}}, 0x0800, syscall.EINVAL},
		{"plain nat", odp.CT{NAT: &odp.NAT{}}, 0x86dd, nil},
		{"snat", odp.CT{Commit: true, NAT: &odp.NAT{Src: true, IPMin: ip("fd00::1"), ProtoMin: 5}}, 0x86dd, nil},
	} {
		a, err := CompileAction(&tc.ct, tc.eth)
		if tc.want == nil {
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
			}
			continue
		}
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: %v (%+v), want %v", tc.name, err, a, tc.want)
		}
	}
	a, err := CompileAction(&odp.CT{ForceCommit: true, HasZone: true, Zone: 3,
		NAT: &odp.NAT{Src: true, IPMin: ip("1.1.1.1"), ProtoMin: 5}}, 0x0800)
	if err != nil || !a.Commit || !a.Force || a.Zone != 3 || a.NAT.ProtoMax != 5 || a.NAT.IPMax != v4("1.1.1.1") {
		t.Fatalf("%v %+v", err, a)
	}
}
