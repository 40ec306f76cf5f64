package odp_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/ovsdp/ovsdp/flowkeys"
	"github.com/ovsdp/ovsdp/flowkeys/flowkeystest"
	"github.com/ovsdp/ovsdp/odp"
)

func isVLANType(t uint16) bool { return t == 0x8100 || t == 0x88a8 }

// observable is what the attributes of k carry: KeyFromFlowKeys drops
// the label stack entries of a truncated MPLS stack (the kernel puts an
// empty mpls attribute) and the TPID that a truncated VLAN tag's eth_type
// was (the kernel puts eth_type(0),vlan(0),encap()); ToFlowKeysExact
// takes that TPID as 0x8100.
func observable(k flowkeys.Key) (flowkeys.Key, bool) {
	changed := false
	if k.MPLSLabelsMask == 0 && k.MPLSLSE != [3]uint32{} {
		k.MPLSLSE = [3]uint32{}
		changed = true
	}
	if k.MacProto == flowkeys.MacProtoEthernet && isVLANType(k.EthType) &&
		(k.VLANTCI == 0 || k.CVLANTCI == 0) {
		if k.EthType != 0x8100 {
			k.EthType = 0x8100
			changed = true
		}
	}
	return k, changed
}

// TestRoundTripCorpus: for every corpus packet (truncations included),
// Extract → KeyFromFlowKeys → MarshalKey → UnmarshalKey → ToFlowKeysExact
// gives back Extract's key.
func TestRoundTripCorpus(t *testing.T) {
	n, lossy, strictOK, emptyMPLS := 0, 0, 0, 0
	for _, p := range flowkeystest.Corpus() {
		var k flowkeys.Key
		if err := flowkeys.Extract(p.Data, &flowkeys.Metadata{InPort: p.InPort}, &k); err != nil {
			continue
		}
		attrs := odp.KeyFromFlowKeys(&k)
		b, err := odp.MarshalKey(attrs)
		if err != nil {
			t.Fatalf("%s: MarshalKey(%s): %v", p.Name, attrs, err)
		}
		dec, err := odp.UnmarshalKey(b)
		if err != nil {
			t.Fatalf("%s: UnmarshalKey: %v", p.Name, err)
		}
		if m, ok := dec.Find(odp.KeyMPLS).(odp.MPLS); ok && len(m) == 0 {
			emptyMPLS++
		}
		if b2, err := odp.MarshalKey(dec); err != nil || string(b2) != string(b) {
			t.Errorf("%s: re-encoding the decoded key gives %x (%v), want %x", p.Name, b2, err, b)
		}
		got, err := odp.ToFlowKeysExact(dec)
		if err != nil {
			t.Fatalf("%s: ToFlowKeysExact(%s): %v", p.Name, dec, err)
		}
		want, changed := observable(k)
		if changed {
			lossy++
		}
		if got != want {
			t.Errorf("%s: round trip changed the key\nattrs: %s\ngot  %+v\nwant %+v", p.Name, dec, got, want)
		}
		// The flow-put path accepts the same key as an exact flow
		// unless it is one of the kernel's truncated forms, and gives
		// the key masked by the exact mask.
		fk, fm, err := odp.ToFlowKeys(dec, nil)
		if err == nil {
			strictOK++
			w := got
			for i, mw := range fm.Words() {
				w.Words()[i] &= mw
			}
			if fk != w {
				t.Errorf("%s: ToFlowKeys(exact) = %+v, want %+v", p.Name, fk, w)
			}
		} else if !changed && !strings.Contains(err.Error(), "EINVAL") {
			t.Errorf("%s: ToFlowKeys: %v", p.Name, err)
		}
		n++
	}
	if n < 500 {
		t.Fatalf("only %d corpus packets round-tripped", n)
	}
	if emptyMPLS == 0 {
		t.Errorf("no corpus key has the kernel's empty mpls attribute (truncated label stack)")
	}
	t.Logf("%d keys round-tripped (%d with documented losses); %d accepted as exact flows; %d with an empty mpls",
		n, lossy, strictOK, emptyMPLS)
}

const pre = "recirc_id(0),dp_hash(0),skb_priority(0),in_port(1),skb_mark(0),ct_state(0),ct_zone(0),ct_mark(0),ct_label(0),"
const ethA = "eth(src=02:00:00:00:00:01,dst=02:00:00:00:00:02),"

func corpusPacket(t *testing.T, name string) []byte {
	t.Helper()
	return flowkeystest.CorpusPacket(t, name)
}

func hexBytes(t *testing.T, s string) []byte {
	t.Helper()
	s = strings.ReplaceAll(s, " ", "")
	b := make([]byte, len(s)/2)
	for i := range b {
		var v byte
		for _, c := range s[2*i : 2*i+2] {
			v <<= 4
			switch {
			case c >= '0' && c <= '9':
				v |= byte(c - '0')
			case c >= 'a' && c <= 'f':
				v |= byte(c - 'a' + 10)
			default:
				t.Fatalf("bad hex %q", s)
			}
		}
		b[i] = v
	}
	return b
}

// TestKeyFromFlowKeysText checks the attributes of representative
// packets against text written down from the kernel's __ovs_nla_put_key.
func TestKeyFromFlowKeysText(t *testing.T) {
	vlanARP := hexBytes(t, "020000000002 020000000001 8100 a00a 0806 0001 0800 06 04 0002"+
		"0a0b0c0d0e0f c0a80001 1a1b1c1d1e1f c0a80002")
	tests := []struct {
		name string
		data []byte
		md   flowkeys.Metadata
		want string
	}{
		{"ipv4/tcp", corpusPacket(t, "ipv4/tcp"), flowkeys.Metadata{InPort: 1},
			pre + ethA + "eth_type(0x0800),ipv4(src=10.0.0.1,dst=10.0.0.2,proto=6,tos=0x10,ttl=64,frag=no),tcp(src=1234,dst=80),tcp_flags(psh|ack)"},
		{"vlan/arp", vlanARP, flowkeys.Metadata{InPort: 1},
			pre + ethA + "eth_type(0x8100),vlan(vid=10,pcp=5),encap(eth_type(0x0806),arp(sip=192.168.0.1,tip=192.168.0.2,op=2,sha=0a:0b:0c:0d:0e:0f,tha=1a:1b:1c:1d:1e:1f))"},
		{"qinq/ipv6/tcp", corpusPacket(t, "qinq/ipv6/tcp"), flowkeys.Metadata{InPort: 1},
			pre + ethA + "eth_type(0x88a8),vlan(vid=100,pcp=0),encap(eth_type(0x8100),vlan(vid=10,pcp=7),encap(eth_type(0x86dd),ipv6(src=fe80::1,dst=fe80::2,label=0x12345,proto=6,tclass=0xb8,hlimit=64,frag=no),ipv6_exthdrs(0),tcp(src=80,dst=8080),tcp_flags(fin|ack)))"},
		{"vlan/triple-tag", corpusPacket(t, "vlan/triple-tag"), flowkeys.Metadata{InPort: 1},
			pre + ethA + "eth_type(0x8100),vlan(vid=1,pcp=0),encap(eth_type(0x8100),vlan(vid=2,pcp=0),encap(eth_type(0x8100)))"},
		{"vlan/truncated-inner", corpusPacket(t, "vlan/inner-8021ad-type"), flowkeys.Metadata{InPort: 1},
			pre + ethA + "eth_type(0x8100),vlan(vid=4095,pcp=0),encap(eth_type(0x0000),vlan(vid=0,pcp=0,cfi=0),encap())"},
		{"nd/ns-sll", corpusPacket(t, "nd/ns-sll"), flowkeys.Metadata{InPort: 1},
			pre + ethA + "eth_type(0x86dd),ipv6(src=fe80::1,dst=fe80::2,label=0,proto=58,tclass=0,hlimit=64,frag=no),ipv6_exthdrs(0),icmpv6(type=135,code=0),nd(target=2001:db8::9,sll=02:11:22:33:44:55,tll=00:00:00:00:00:00)"},
		{"ipv4/frag-later", corpusPacket(t, "ipv4/frag-later"), flowkeys.Metadata{InPort: 1},
			pre + ethA + "eth_type(0x0800),ipv4(src=10.0.0.1,dst=10.0.0.2,proto=17,tos=0,ttl=64,frag=later)"},
		{"ipv6/frag-later-udp", corpusPacket(t, "ipv6/frag-later-udp"), flowkeys.Metadata{InPort: 1},
			pre + ethA + "eth_type(0x86dd),ipv6(src=fe80::1,dst=fe80::2,label=0,proto=44,tclass=0,hlimit=64,frag=later),ipv6_exthdrs(0x10)"},
		{"mpls/two-labels", corpusPacket(t, "mpls/two-labels"), flowkeys.Metadata{InPort: 1},
			pre + ethA + "eth_type(0x8847),mpls(label=100,tc=1,ttl=64,bos=0,label=200,tc=0,ttl=63,bos=1)"},
		{"mpls/no-bottom-of-stack", corpusPacket(t, "mpls/no-bottom-of-stack"), flowkeys.Metadata{InPort: 1},
			pre + ethA + "eth_type(0x8847),mpls((bad key length 0))"},
		{"llc/stp (802.3, no eth_type)", corpusPacket(t, "llc/stp"), flowkeys.Metadata{InPort: 1},
			pre + strings.TrimSuffix(ethA, ",")},
		{"arp/op-above-255", corpusPacket(t, "arp/op-above-255"), flowkeys.Metadata{InPort: 1},
			pre + ethA + "eth_type(0x0806),arp(sip=166.167.168.169,tip=176.177.178.179,op=0,sha=a0:a1:a2:a3:a4:a5,tha=aa:ab:ac:ad:ae:af)"},
		{"nsh/md1", corpusPacket(t, "nsh/md1"), flowkeys.Metadata{InPort: 1}, ""},
		{"l3 ipv4 (no Ethernet), no in_port", corpusPacket(t, "ipv4/udp")[14:],
			flowkeys.Metadata{InPort: odp.DPMaxPorts, L3: true, EthType: 0x0800, Priority: 7, SkbMark: 0x42},
			"recirc_id(0),dp_hash(0),skb_priority(0x7),skb_mark(0x42),ct_state(0),ct_zone(0),ct_mark(0),ct_label(0),eth_type(0x0800),ipv4(src=10.0.0.1,dst=10.0.0.2,proto=17,tos=0,ttl=1,frag=no),udp(src=5353,dst=53)"},
		{"tunnel and conntrack", corpusPacket(t, "ipv4/udp"), flowkeys.Metadata{InPort: 3, RecircID: 5, DPHash: 9,
			Tunnel: flowkeys.Tunnel{Proto: flowkeys.TunProtoIPv4, ID: 0x1234, IPv4Src: [4]byte{1, 1, 1, 1}, IPv4Dst: [4]byte{2, 2, 2, 2},
				Flags: odp.KernelTunnelKey | odp.KernelTunnelCSUM, TTL: 64, TpDst: 4789},
			CTState: 0x21, CTZone: 5, CTMark: 6, CTOrigProto: 17, CTOrigIPv4Src: [4]byte{10, 0, 0, 1}, CTOrigIPv4Dst: [4]byte{10, 0, 0, 2},
			CTOrigTpSrc: 5353, CTOrigTpDst: 53},
			"recirc_id(0x5),dp_hash(0x9),skb_priority(0),tunnel(tun_id=0x1234,src=1.1.1.1,dst=2.2.2.2,ttl=64,tp_dst=4789,flags(csum|key)),in_port(3),skb_mark(0),ct_state(0x21),ct_zone(0x5),ct_mark(0x6),ct_label(0),ct_tuple4(src=10.0.0.1,dst=10.0.0.2,proto=17,tp_src=5353,tp_dst=53)," +
				ethA + "eth_type(0x0800),ipv4(src=10.0.0.1,dst=10.0.0.2,proto=17,tos=0,ttl=1,frag=no),udp(src=5353,dst=53)"},
	}
	for _, tc := range tests {
		var k flowkeys.Key
		if err := flowkeys.Extract(tc.data, &tc.md, &k); err != nil {
			t.Fatalf("%s: Extract: %v", tc.name, err)
		}
		got := odp.FormatKey(odp.KeyFromFlowKeys(&k), nil, true)
		if tc.name == "nsh/md1" {
			// The NSH text form is Open vSwitch's; check the
			// attribute itself.
			a, ok := odp.KeyFromFlowKeys(&k).Find(odp.KeyNSH).(odp.NSH)
			if !ok || !a.HasBase || !a.HasMD1 || a.MDType != 1 || a.Context != k.NSHContext || a.PathHdr != k.NSHPathHdr {
				t.Errorf("nsh/md1: nsh attribute %+v from key %+v", a, k)
			}
			if !strings.HasPrefix(got, pre+ethA+"eth_type(0x894f),nsh(") {
				t.Errorf("nsh/md1: %s", got)
			}
			continue
		}
		if got != tc.want {
			t.Errorf("%s:\ngot  %s\nwant %s", tc.name, got, tc.want)
		}
	}
}

// TestMaskFromFlowKeys: masks as the kernel dumps them, and ToFlowKeys
// of a dumped flow gives the flow back.
func TestMaskFromFlowKeys(t *testing.T) {
	// Masked text (Open vSwitch's dump-flows form) of the dumped key and
	// mask. The kernel dumps an ARP opcode mask as 0xff: it keeps the
	// opcode in the 8-bit ip.proto.
	tests := []struct{ in, want string }{
		{"in_port(1),eth(),eth_type(0x0800),ipv4(src=10.0.0.0/255.0.0.0,proto=6,frag=no),tcp(dst=80),tcp_flags(0/0)",
			"in_port(1),eth(),eth_type(0x0800),ipv4(src=10.0.0.0/255.0.0.0,proto=6,frag=no),tcp(dst=80)"},
		{"in_port(2),eth(dst=01:00:00:00:00:00/01:00:00:00:00:00),eth_type(0x8100),vlan(vid=5,pcp=0),encap(eth_type(0x0806),arp(op=1))",
			"in_port(2),eth(dst=01:00:00:00:00:00/01:00:00:00:00:00),eth_type(0x8100),vlan(vid=5,pcp=0),encap(eth_type(0x0806),arp(op=1/0xff))"},
		// Without in_port the kernel's key has in_port 65535
		// (DP_MAX_PORTS) and its mask 0; the stored key is masked, so
		// a dump shows in_port 0 with the mask's upper 16 bits set.
		{"skb_mark(0x5/0xf),eth(),eth_type(0x86dd),ipv6(proto=58,frag=no),icmpv6(type=135),nd(target=::1)",
			"in_port(0/0xffff0000),skb_mark(0x5/0xf),eth(),eth_type(0x86dd),ipv6(proto=58,frag=no),icmpv6(type=135),nd(target=::1)"},
		// ERSPAN metadata as the kernel dumps it and ovs-dpctl prints
		// it (checked in the VM): v2's dir and hwid are bit fields of
		// a byte, so an exact mask shows as /0x1 and /0xf.
		{"in_port(1),tunnel(dst=1.2.3.4,ttl=64,erspan(ver=1,idx=0x7/0xff)),eth(),eth_type(0x88b5)",
			"tunnel(dst=1.2.3.4,ttl=64,erspan(ver=1,idx=0x7/0xff)),in_port(1),eth(),eth_type(0x88b5)"},
		{"in_port(1),tunnel(dst=1.2.3.4,ttl=64,erspan(ver=2,dir=1,hwid=0x7)),eth(),eth_type(0x88b5)",
			"tunnel(dst=1.2.3.4,ttl=64,erspan(ver=2,dir=1/0x1,hwid=0x7/0xf)),in_port(1),eth(),eth_type(0x88b5)"},
		{"in_port(1),tunnel(dst=1.2.3.4,ttl=64,erspan(ver=2,dir=0/0,hwid=0x3/0xf)),eth(),eth_type(0x88b5)",
			"tunnel(dst=1.2.3.4,ttl=64,erspan(ver=2,hwid=0x3/0xf)),in_port(1),eth(),eth_type(0x88b5)"},
	}
	for _, tc := range tests {
		key, mask, err := odp.ParseMaskedKey(tc.in)
		if err != nil {
			t.Fatalf("ParseMaskedKey(%s): %v", tc.in, err)
		}
		k, m, err := odp.ToFlowKeys(key, mask)
		if err != nil {
			t.Fatalf("ToFlowKeys(%s): %v", tc.in, err)
		}
		dk, dm := odp.KeyFromFlowKeys(&k), odp.MaskFromFlowKeys(&m, &k)
		if got := odp.FormatKey(dk, dm, false); got != tc.want {
			t.Errorf("dump of %s:\ngot  %s\nwant %s", tc.in, got, tc.want)
		}
		// The mask attributes themselves, as the kernel writes them.
		for _, a := range dm {
			switch v := a.(type) {
			case odp.InPort:
				if v != 0xffffffff && strings.HasPrefix(tc.in, "in_port") {
					t.Errorf("%s: in_port mask %#x, want 0xffffffff", tc.in, uint32(v))
				}
			case odp.Ethertype:
				if v != 0xffff {
					t.Errorf("%s: eth_type mask %#x, want 0xffff", tc.in, uint16(v))
				}
			}
		}
		if dm.Find(odp.KeyTunnel) == nil {
			t.Errorf("%s: dumped mask has no tunnel attribute", tc.in)
		}
		k2, m2, err := odp.ToFlowKeys(dk, dm)
		if err != nil {
			t.Fatalf("re-putting the dump of %s (%s / %s): %v", tc.in, odp.FormatKey(dk, nil, true), odp.FormatKey(dm, nil, true), err)
		}
		// The dumped mask always has a tunnel attribute, which makes
		// the re-put flow match tun_proto exactly, as in the kernel.
		m2.TunProto = m.TunProto
		if !strings.HasPrefix(tc.in, "in_port") {
			// And the dumped in_port(0/0xffff0000) puts back an
			// exact in_port 0.
			if m2.InPort != 0xffff {
				t.Errorf("%s: re-put in_port mask %#x, want 0xffff", tc.in, m2.InPort)
			}
			m2.InPort = m.InPort
		}
		if k2 != k || m2 != m {
			t.Errorf("dump and re-put of %s changed it\nkey  %+v\n  -> %+v\nmask %+v\n  -> %+v", tc.in, k, k2, m, m2)
		}
	}
}

// TestKeyFromFlowKeysAllocs measures the allocations of the upcall path.
func TestKeyFromFlowKeysAllocs(t *testing.T) {
	for _, name := range []string{"ipv4/tcp", "ipv6/udp", "vlan/ipv4/udp", "arp/request"} {
		var k flowkeys.Key
		if err := flowkeys.Extract(corpusPacket(t, name), &flowkeys.Metadata{InPort: 1}, &k); err != nil {
			t.Fatal(err)
		}
		dst := make(odp.FlowKey, 0, 32)
		allocs := testing.AllocsPerRun(200, func() { dst = odp.AppendKeyFromFlowKeys(dst[:0], &k) })
		// Each attribute whose value is neither pre-boxed nor a
		// small integer costs one allocation (boxing into KeyAttr).
		limit := map[string]float64{"ipv4/tcp": 4, "ipv6/udp": 4, "vlan/ipv4/udp": 8, "arp/request": 3}[name]
		t.Logf("%s: %.0f allocations per AppendKeyFromFlowKeys", name, allocs)
		if allocs > limit {
			t.Errorf("%s: %.0f allocations, want at most %.0f", name, allocs, limit)
		}
	}
}

func BenchmarkAppendKeyFromFlowKeys(b *testing.B) {
	var k flowkeys.Key
	if err := flowkeys.Extract(corpusPacketB(b, "ipv4/tcp"), &flowkeys.Metadata{InPort: 1}, &k); err != nil {
		b.Fatal(err)
	}
	dst := make(odp.FlowKey, 0, 32)
	b.ReportAllocs()
	for b.Loop() {
		dst = odp.AppendKeyFromFlowKeys(dst[:0], &k)
	}
}

func BenchmarkToFlowKeys(b *testing.B) {
	key, mask, err := odp.ParseMaskedKey("in_port(1),eth(),eth_type(0x0800),ipv4(src=10.0.0.0/255.0.0.0,proto=6,frag=no),tcp(dst=80),tcp_flags(0/0)")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := odp.ToFlowKeys(key, mask); err != nil {
			b.Fatal(err)
		}
	}
}

func corpusPacketB(b *testing.B, name string) []byte {
	for _, p := range flowkeystest.Corpus() {
		if p.Name == name {
			return p.Data
		}
	}
	b.Fatalf("no corpus packet %q", name)
	return nil
}

// TestEmptyMPLSAttribute: the kernel's upcall key for a label stack cut
// short (eth_type 0x8847 followed by a 0-byte mpls attribute) decodes,
// re-encodes to the same bytes, converts back to the key Extract gives,
// and formats as Open vSwitch formats it; a length that is not a
// multiple of 4 is still an error naming the attribute and its offset.
func TestEmptyMPLSAttribute(t *testing.T) {
	// eth_type(0x8847) then mpls with no payload, as __ovs_nla_put_key
	// writes them (native-endian netlink headers, x86).
	wire := hexBytes(t, "0600 0600 8847 0000 0400 1500")
	k, err := odp.UnmarshalKey(wire)
	if err != nil {
		t.Fatalf("UnmarshalKey(%x): %v", wire, err)
	}
	m, ok := k.Find(odp.KeyMPLS).(odp.MPLS)
	if !ok || len(m) != 0 {
		t.Fatalf("decoded %#v, want an empty MPLS", k)
	}
	b, err := odp.MarshalKey(k)
	if err != nil || string(b) != string(wire) {
		t.Errorf("MarshalKey = %x (%v), want %x", b, err, wire)
	}
	if got, want := odp.FormatKey(k, nil, true), "eth_type(0x8847),mpls((bad key length 0))"; got != want {
		t.Errorf("FormatKey = %s, want %s", got, want)
	}
	// Open vSwitch checks the key's size before the mask's.
	if got, want := odp.FormatKey(k, odp.FlowKey{odp.Ethertype(0xffff), odp.MPLS{0xffffffff}}, false), "eth_type(0x8847),mpls((bad key length 0))"; got != want {
		t.Errorf("masked FormatKey = %s, want %s", got, want)
	}

	// The same bytes as the kernel sends them for a truncated stack.
	var fk flowkeys.Key
	if err := flowkeys.Extract(corpusPacket(t, "mpls/no-bottom-of-stack"), &flowkeys.Metadata{InPort: 1}, &fk); err != nil {
		t.Fatal(err)
	}
	kb, err := odp.MarshalKey(odp.KeyFromFlowKeys(&fk))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(kb), string(wire)) {
		t.Errorf("key of a truncated stack %x does not contain %x", kb, wire)
	}
	dec, err := odp.UnmarshalKey(kb)
	if err != nil {
		t.Fatalf("UnmarshalKey(%x): %v", kb, err)
	}
	got, err := odp.ToFlowKeysExact(dec)
	if err != nil {
		t.Fatalf("ToFlowKeysExact: %v", err)
	}
	if want, _ := observable(fk); got != want {
		t.Errorf("ToFlowKeysExact = %+v, want %+v", got, want)
	}
	// A flow cannot have it: the kernel refuses an empty mpls in a flow.
	if _, _, err := odp.ToFlowKeys(dec, nil); err == nil || !strings.Contains(err.Error(), "EINVAL") {
		t.Errorf("ToFlowKeys of an empty mpls: err = %v, want EINVAL", err)
	}
	// mpls() in text is one all-zero entry (Open vSwitch's parser).
	pk, err := odp.ParseKey("eth_type(0x8847),mpls()")
	if err != nil {
		t.Fatal(err)
	}
	if m, _ := pk.Find(odp.KeyMPLS).(odp.MPLS); len(m) != 1 || m[0] != 0 {
		t.Errorf("mpls() parses to %#v, want one zero entry", m)
	}

	bad := hexBytes(t, "0600 0600 8847 0000 0600 1500 0102 0000")
	_, err = odp.UnmarshalKey(bad)
	var de *odp.DecodeError
	if !errors.As(err, &de) || de.Offset != 8 || !strings.Contains(err.Error(), "mpls") || !strings.Contains(err.Error(), "2 bytes") {
		t.Errorf("UnmarshalKey(%x) = %v, want a DecodeError for mpls at offset 8 saying 2 bytes", bad, err)
	}
}
