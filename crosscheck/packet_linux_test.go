package crosscheck

import (
	"bytes"
	"encoding/binary"
	"net"
	"strings"
	"testing"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"

	"github.com/ovsdp/ovsdp/internal/header"
	"github.com/ovsdp/ovsdp/internal/header/headertest"
)

// serialize builds a frame with gopacket, checksums computed by it: an
// independent reference for our builders.
func serialize(t *testing.T, ls ...gopacket.SerializableLayer) []byte {
	t.Helper()
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{ComputeChecksums: true, FixLengths: true}, ls...); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestBuildersMatchGopacket(t *testing.T) {
	eth := func(typ layers.EthernetType) *layers.Ethernet {
		return &layers.Ethernet{SrcMAC: net.HardwareAddr(MAC1[:]), DstMAC: net.HardwareAddr(MAC2[:]), EthernetType: typ}
	}
	ip4 := func(p layers.IPProtocol) *layers.IPv4 {
		return &layers.IPv4{Version: 4, IHL: 5, TTL: 64, TOS: 0x10, Id: 7, Flags: layers.IPv4DontFragment, Protocol: p,
			SrcIP: net.IP(A1[:]), DstIP: net.IP(A2[:])}
	}
	ip6 := func(p layers.IPProtocol) *layers.IPv6 {
		return &layers.IPv6{Version: 6, HopLimit: 9, TrafficClass: 0xb8, FlowLabel: 0x12345, NextHeader: p,
			SrcIP: net.IP(B1[:]), DstIP: net.IP(B2[:])}
	}
	payload := []byte("some payload bytes")
	h4 := func(p uint8) headertest.IPv4Hdr {
		return headertest.IPv4Hdr{Src: A1, Dst: A2, Proto: p, TOS: 0x10, TTL: 64, ID: 7, DF: true}
	}
	cases := []struct {
		name      string
		ours, ref func() []byte
	}{
		{"udp4", func() []byte {
			return headertest.Eth(MAC2, MAC1, header.EtherTypeIPv4, headertest.IPv4(h4(header.IPProtoUDP), headertest.UDP(1234, 53, payload)))
		},
			func() []byte {
				i := ip4(layers.IPProtocolUDP)
				u := &layers.UDP{SrcPort: 1234, DstPort: 53}
				u.SetNetworkLayerForChecksum(i)
				return serialize(t, eth(layers.EthernetTypeIPv4), i, u, gopacket.Payload(payload))
			}},
		{"tcp4", func() []byte {
			return headertest.Eth(MAC2, MAC1, header.EtherTypeIPv4, headertest.IPv4(h4(header.IPProtoTCP), headertest.TCP(40000, 80, 1000, 2000, header.TCPFlagAck|header.TCPFlagPsh, payload)))
		}, func() []byte {
			i := ip4(layers.IPProtocolTCP)
			tc := &layers.TCP{SrcPort: 40000, DstPort: 80, Seq: 1000, Ack: 2000, ACK: true, PSH: true, Window: 8192, DataOffset: 5}
			tc.SetNetworkLayerForChecksum(i)
			return serialize(t, eth(layers.EthernetTypeIPv4), i, tc, gopacket.Payload(payload))
		}},
		{"icmp4", func() []byte {
			return headertest.Eth(MAC2, MAC1, header.EtherTypeIPv4, headertest.IPv4(h4(header.IPProtoICMP), headertest.ICMP(8, 0, 0x00050006, payload)))
		}, func() []byte {
			return serialize(t, eth(layers.EthernetTypeIPv4), ip4(layers.IPProtocolICMPv4),
				&layers.ICMPv4{TypeCode: layers.CreateICMPv4TypeCode(8, 0), Id: 5, Seq: 6}, gopacket.Payload(payload))
		}},
		{"udp6", func() []byte {
			return headertest.Eth(MAC2, MAC1, header.EtherTypeIPv6, headertest.IPv6(B1, B2, header.IPProtoUDP, 9, 0xb8, 0x12345, headertest.UDP(1, 2, payload)))
		}, func() []byte {
			i := ip6(layers.IPProtocolUDP)
			u := &layers.UDP{SrcPort: 1, DstPort: 2}
			u.SetNetworkLayerForChecksum(i)
			return serialize(t, eth(layers.EthernetTypeIPv6), i, u, gopacket.Payload(payload))
		}},
		{"icmp6", func() []byte {
			return headertest.Eth(MAC2, MAC1, header.EtherTypeIPv6, headertest.IPv6(B1, B2, header.IPProtoICMPv6, 9, 0xb8, 0x12345, headertest.ICMP(128, 0, 0x00010002, payload)))
		}, func() []byte {
			i := ip6(layers.IPProtocolICMPv6)
			ic := &layers.ICMPv6{TypeCode: layers.CreateICMPv6TypeCode(128, 0)}
			ic.SetNetworkLayerForChecksum(i)
			return serialize(t, eth(layers.EthernetTypeIPv6), i, ic, &layers.ICMPv6Echo{Identifier: 1, SeqNumber: 2}, gopacket.Payload(payload))
		}},
		{"arp", func() []byte {
			return headertest.Eth(Bcast, MAC1, header.EtherTypeARP, headertest.ARP(1, MAC1, A1, [6]byte{}, A2))
		},
			func() []byte {
				e := eth(layers.EthernetTypeARP)
				e.DstMAC = net.HardwareAddr(Bcast[:])
				return serialize(t, e, &layers.ARP{AddrType: layers.LinkTypeEthernet, Protocol: layers.EthernetTypeIPv4,
					HwAddressSize: 6, ProtAddressSize: 4, Operation: 1, SourceHwAddress: MAC1[:], SourceProtAddress: A1[:],
					DstHwAddress: make([]byte, 6), DstProtAddress: A2[:]})
			}},
	}
	for _, c := range cases {
		ours, ref := c.ours(), c.ref()
		// gopacket pads short frames to 60 bytes; we do not.
		if len(ref) == 60 && len(ours) < 60 && bytes.Equal(ref[len(ours):], make([]byte, 60-len(ours))) {
			ref = ref[:len(ours)]
		}
		if !bytes.Equal(ours, ref) {
			t.Errorf("%s:\nours %x\nref  %x", c.name, ours, ref)
		}
		if p := VerifyChecksums(ours); p != "" {
			t.Errorf("%s: VerifyChecksums: %s", c.name, p)
		}
	}
}

func TestVerifyChecksumsFindsCorruption(t *testing.T) {
	frames := map[string][]byte{
		"udp4":  headertest.Eth(MAC2, MAC1, header.EtherTypeIPv4, headertest.IPv4(headertest.IPv4Hdr{Src: A1, Dst: A2, Proto: header.IPProtoUDP, TTL: 64}, headertest.UDP(1, 2, []byte("x")))),
		"tcp6":  headertest.Eth(MAC2, MAC1, header.EtherTypeIPv6, headertest.IPv6(B1, B2, header.IPProtoTCP, 64, 0, 0, headertest.TCP(1, 2, 3, 4, header.TCPFlagSyn, nil))),
		"icmp4": headertest.Eth(MAC2, MAC1, header.EtherTypeIPv4, headertest.IPv4(headertest.IPv4Hdr{Src: A1, Dst: A2, Proto: header.IPProtoICMP, TTL: 64}, headertest.ICMP(8, 0, 1, nil))),
	}
	for name, f := range frames {
		if p := VerifyChecksums(f); p != "" {
			t.Fatalf("%s: intact frame reported: %s", name, p)
		}
		for _, off := range []int{len(f) - 1, 22} { // transport, then IPv4 TTL / IPv6 address byte
			g := append([]byte(nil), f...)
			g[off] ^= 0x40
			if p := VerifyChecksums(g); p == "" {
				t.Errorf("%s: corruption at byte %d not found", name, off)
			}
		}
	}
	// A zero UDP checksum over IPv4 means none, and is fine.
	f := zeroUDPChecksum(udp4(headertest.IPv4Hdr{}, 1, 2, "x"))
	if p := VerifyChecksums(f); p != "" {
		t.Errorf("zero IPv4 UDP checksum reported: %s", p)
	}
	if !strings.Contains(Describe(f), "csum ok") {
		t.Errorf("Describe: %s", Describe(f))
	}
}

func TestParseMalformed(t *testing.T) {
	for i, f := range MalformedFrames() {
		p := Parse(f)
		if p.L3 >= len(f) || p.L4 > len(f) || (p.L4 >= 0 && p.L4+p.L4Len > len(f)) {
			t.Errorf("frame %d: offsets beyond the frame: %+v (len %d)", i, p, len(f))
		}
		_ = Describe(f)
	}
	// IPv4 with options: the transport header follows them.
	f := MalformedFrames()[0]
	if p := Parse(f); p.L4 != 14+28 || p.Proto != header.IPProtoUDP {
		t.Errorf("options: %+v", p)
	}
	// A later fragment is a fragment; its transport checksum is not checked.
	if p := Parse(MalformedFrames()[2]); !p.Fragment {
		t.Errorf("later fragment not seen as one: %+v", p)
	}
}

func TestStackNormalizer(t *testing.T) {
	mk := func(id uint16, isn, peer uint32) [][]byte {
		syn := headertest.Eth(MAC2, MAC1, header.EtherTypeIPv4, headertest.IPv4(headertest.IPv4Hdr{Src: A1, Dst: A2, Proto: header.IPProtoTCP, TTL: 64, ID: id, DF: true},
			headertest.TCP(40000, 80, isn, 0, header.TCPFlagSyn, nil)))
		ack := headertest.Eth(MAC2, MAC1, header.EtherTypeIPv4, headertest.IPv4(headertest.IPv4Hdr{Src: A1, Dst: A2, Proto: header.IPProtoTCP, TTL: 64, ID: id + 1, DF: true},
			headertest.TCP(40000, 80, isn+1, peer+1, header.TCPFlagAck, []byte("data"))))
		return [][]byte{syn, ack}
	}
	a, b := mk(100, 12345, 999), mk(5000, 0xfffffff0, 77777)
	na, nb := NewStackNormalizer(), NewStackNormalizer()
	for i := range a {
		na.Normalize(a[i])
		nb.Normalize(b[i])
		if !bytes.Equal(a[i], b[i]) {
			t.Errorf("frame %d differs after normalization:\n%x\n%x", i, a[i], b[i])
		}
	}
	// The sequence number is relative: 1 after the SYN.
	p := Parse(a[1])
	if seq := binary.BigEndian.Uint32(a[1][p.L4+4:]); seq != 1 {
		t.Errorf("relative seq %d, want 1", seq)
	}
	// Payload differences survive normalization.
	c := mk(100, 12345, 999)
	c[1][len(c[1])-1] = 'X'
	nc := NewStackNormalizer()
	for i := range c {
		nc.Normalize(c[i])
	}
	if bytes.Equal(c[1], a[1]) {
		t.Error("a payload difference was normalized away")
	}
}

func TestIsNoise(t *testing.T) {
	mld := headertest.Eth(headertest.MAC("33:33:00:00:00:16"), MAC1, header.EtherTypeIPv6, headertest.IPv6(B1, headertest.IP6("ff02::16"), 0, 1, 0, 0,
		append([]byte{header.IPProtoICMPv6, 0, 5, 2, 0, 0, 1, 0}, headertest.ICMP(143, 0, 1, make([]byte, 20))...)))
	if !IsNoise(mld) {
		t.Errorf("MLDv2 report behind hop-by-hop not noise: %s", Describe(mld))
	}
	ns := headertest.Eth(headertest.MAC("33:33:ff:00:00:02"), MAC1, header.EtherTypeIPv6, headertest.IPv6(B1, headertest.IP6("ff02::1:ff00:2"), header.IPProtoICMPv6, 255, 0, 0, headertest.ICMP(135, 0, 0, B2[:])))
	if IsNoise(ns) {
		t.Error("a neighbour solicitation is scenario traffic, not noise")
	}
	if IsNoise(udp4(headertest.IPv4Hdr{}, 1, 2, "x")) || IsNoise(nil) {
		t.Error("IPv4 or nothing seen as noise")
	}
}

func TestDiff(t *testing.T) {
	if d := Diff("a", "x\ny\n", "b", "x\ny\n"); d != "" {
		t.Errorf("equal inputs: %q", d)
	}
	a := "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n"
	b := "1\n2\n3\n4\nfive\n6\n7\n8\n9\n10\n11\n"
	// Changes six lines apart or less share a hunk, as in GNU diff.
	want := "--- a\n+++ b\n@@ -2,9 +2,10 @@\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n 9\n 10\n+11\n"
	if d := Diff("a", a, "b", b); d != want {
		t.Errorf("diff:\n%s\nwant:\n%s", d, want)
	}
	a = "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n13\n"
	b = "0\n1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n"
	want = "--- a\n+++ b\n@@ -1,3 +1,4 @@\n+0\n 1\n 2\n 3\n@@ -10,4 +11,3 @@\n 10\n 11\n 12\n-13\n"
	if d := Diff("a", a, "b", b); d != want {
		t.Errorf("diff:\n%s\nwant:\n%s", d, want)
	}
	if d := Diff("a", "", "b", "x\n"); d != "--- a\n+++ b\n@@ -1,0 +1,1 @@\n+x\n" {
		t.Errorf("from empty: %q", d)
	}
}

func TestDiffMultisetFallback(t *testing.T) {
	defer func(n int) { maxLCSCells = n }(maxLCSCells)
	maxLCSCells = 1
	d := Diff("a", "h\nx\ny\nz\nt\n", "b", "h\nz\nw\nx\nt\n")
	want := "--- a\n+++ b\n@@ -1,5 +1,5 @@\n h\n x\n-y\n z\n+w\n t\n"
	if d != want {
		t.Errorf("multiset diff:\n%s\nwant:\n%s", d, want)
	}
}

func TestGenerator(t *testing.T) {
	a, b := NewGenerator(7).Packets(3000), NewGenerator(7).Packets(3000)
	c := NewGenerator(8).Packets(3000)
	same, kinds := 0, map[uint16]int{}
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			t.Fatalf("packet %d differs for the same seed", i)
		}
		if bytes.Equal(a[i], c[i]) {
			same++
		}
		if len(a[i]) < MinFrame || len(a[i]) > MaxFrame {
			t.Fatalf("packet %d: %d bytes", i, len(a[i]))
		}
		for _, h := range [][6]byte{MAC1, MAC2, MAC3} {
			if [6]byte(a[i][:6]) == h {
				t.Fatalf("packet %d is addressed to a host: %x", i, a[i][:6])
			}
		}
		kinds[Parse(a[i]).EthType]++
	}
	if same > 30 {
		t.Errorf("%d of 3000 packets equal across seeds", same)
	}
	for _, k := range []uint16{header.EtherTypeIPv4, header.EtherTypeIPv6, header.EtherTypeARP, 0x8847} {
		if kinds[k] < 50 {
			t.Errorf("only %d packets of ethertype %#04x: %v", kinds[k], k, kinds)
		}
	}
}

func TestRenderAndCompare(t *testing.T) {
	mk := func() *Observation {
		return &Observation{Datapath: "system",
			Received: []Received{{Host: "h2", Frames: []ObservedFrame{{Summary: "one", Data: []byte{1}}, {Summary: "two", Data: []byte{2}}}}},
			Flows:    []ObservedFlow{{Text: "in_port(1) actions:2", Packets: 2, Bytes: 100}},
			Upcalls:  []ObservedUpcall{{Kind: "miss", Port: 1, Key: "k", Packet: []byte{9}, Extracted: "k"}},
		}
	}
	a, b := mk(), mk()
	b.Datapath = "netdev"
	if d := Compare(a, b, CompareOptions{}); d != "" {
		t.Fatalf("equal observations differ:\n%s", d)
	}
	b.Flows[0].Packets = 3
	if d := Compare(a, b, CompareOptions{}); !strings.Contains(d, "-  in_port(1) actions:2 packets:2") || !strings.Contains(d, "+  in_port(1) actions:2 packets:3") {
		t.Errorf("stats difference not shown:\n%s", d)
	}
	b.Received = append(b.Received, Received{Host: "h3"})
	d := Compare(a, b, CompareOptions{})
	for _, want := range []string{"== flows: flows (1) | flows (1)\n", "== h3 received: (none) | h3 received (0 frames)\n"} {
		if !strings.Contains(d, want) {
			t.Errorf("compare lacks %q:\n%s", want, d)
		}
	}
	if strings.Contains(d, "h2 received") {
		t.Errorf("an equal section is shown:\n%s", d)
	}
	b.Received = b.Received[:1]
	if d := Compare(a, b, CompareOptions{IgnoreFlowStats: true}); d != "" {
		t.Errorf("IgnoreFlowStats still shows:\n%s", d)
	}
	b = mk()
	b.Received[0].Frames[0], b.Received[0].Frames[1] = b.Received[0].Frames[1], b.Received[0].Frames[0]
	if Compare(a, b, CompareOptions{}) == "" {
		t.Error("frame order difference not shown")
	}
	if d := Compare(a, b, CompareOptions{UnorderedFrames: true}); d != "" {
		t.Errorf("UnorderedFrames still shows:\n%s", d)
	}
	// A repeated frame shows unless DedupFrames; a different frame always.
	b = mk()
	b.Received[0].Frames = append(b.Received[0].Frames, b.Received[0].Frames[0])
	if Compare(a, b, CompareOptions{UnorderedFrames: true}) == "" {
		t.Error("repeated frame not shown")
	}
	if d := Compare(a, b, CompareOptions{UnorderedFrames: true, DedupFrames: true}); d != "" {
		t.Errorf("DedupFrames still shows a repeated frame:\n%s", d)
	}
	b.Received[0].Frames[len(b.Received[0].Frames)-1].Data = []byte{1, 2, 3}
	if Compare(a, b, CompareOptions{UnorderedFrames: true, DedupFrames: true}) == "" {
		t.Error("DedupFrames hides a different frame")
	}
	// MergeHosts: the same frames split differently between h2 and h3
	// compare equal; a frame missing from the union does not.
	split := func(h2, h3 []ObservedFrame, meters uint64) *Observation {
		o := mk()
		o.Received = []Received{{Host: "h2", Frames: h2}, {Host: "h3", Frames: h3}}
		o.Meters = []ObservedMeter{{ID: 1, Packets: meters, Bands: [][2]uint64{{1, 2}}}}
		return o
	}
	one, two := ObservedFrame{Summary: "one", Data: []byte{1}}, ObservedFrame{Summary: "two", Data: []byte{2}}
	x, y := split([]ObservedFrame{one}, []ObservedFrame{two}, 5), split([]ObservedFrame{two, one}, nil, 5)
	if Compare(x, y, CompareOptions{}) == "" {
		t.Error("a different split is not shown without MergeHosts")
	}
	if d := Compare(x, y, CompareOptions{MergeHosts: []string{"h2", "h3"}}); d != "" {
		t.Errorf("MergeHosts still shows the split:\n%s", d)
	}
	if d := Compare(x, split([]ObservedFrame{two}, nil, 5), CompareOptions{MergeHosts: []string{"h2", "h3"}}); !strings.Contains(d, "h2+h3 received") {
		t.Errorf("MergeHosts hides a missing frame:\n%s", d)
	}
	if d := Compare(x, split([]ObservedFrame{one}, []ObservedFrame{two}, 6), CompareOptions{}); !strings.Contains(d, "meter:1 packets:6") {
		t.Errorf("meter statistics difference not shown:\n%s", d)
	}
	b = mk()
	b.Upcalls[0].Extracted = "other"
	if ms := b.KeyMismatches(); len(ms) != 1 || !strings.Contains(ms[0], "flowkeys.Extract") {
		t.Errorf("key mismatch not reported: %q", ms)
	}
	if ms := a.KeyMismatches(); len(ms) != 0 {
		t.Errorf("spurious key mismatch: %q", ms)
	}
}

func FuzzFrame(f *testing.F) {
	for _, p := range MalformedFrames() {
		f.Add(p)
	}
	for _, p := range NewGenerator(3).Packets(50) {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		p := Parse(b)
		if p.L3 >= len(b) || p.L4 > len(b) || (p.L4 >= 0 && p.L4+p.L4Len > len(b)) {
			t.Fatalf("offsets beyond the frame: %+v (len %d)", p, len(b))
		}
		VerifyChecksums(b)
		Describe(b)
		IsNoise(b)
		c := append([]byte(nil), b...)
		NewStackNormalizer().Normalize(c)
		if len(c) != len(b) {
			t.Fatal("normalization changed the length")
		}
		withAuxVLAN(b, nil)
	})
}

func FuzzDiff(f *testing.F) {
	f.Add("a\nb\nc\n", "a\nc\nd\n")
	f.Fuzz(func(t *testing.T, a, b string) {
		d := Diff("a", a, "b", b)
		if (d == "") != (a == b) {
			t.Fatalf("Diff(%q, %q) = %q", a, b, d)
		}
		if d == "" {
			return
		}
		// Every removed line is a line of a, every added one a line of b.
		al := map[string]bool{}
		for _, l := range splitLines(a) {
			al[l] = true
		}
		bl := map[string]bool{}
		for _, l := range splitLines(b) {
			bl[l] = true
		}
		for _, l := range strings.Split(d, "\n")[2:] {
			if l == "" || strings.HasPrefix(l, "@@") {
				continue
			}
			if (l[0] == '-' && !al[l[1:]]) || (l[0] == '+' && !bl[l[1:]]) {
				t.Fatalf("Diff(%q, %q): line %q is not from its side:\n%s", a, b, l, d)
			}
		}
	})
}
