package odp

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"strconv"
	"testing"
)

// Byte builders for the expected wire form, written from the uapi layout.
// Native-endian pieces use the host order, as the kernel does.

func nla(t uint16, payload ...[]byte) []byte {
	p := bytes.Join(payload, nil)
	b := binary.NativeEndian.AppendUint16(nil, uint16(4+len(p)))
	b = binary.NativeEndian.AppendUint16(b, t)
	b = append(b, p...)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

func n32(v uint32) []byte { return binary.NativeEndian.AppendUint32(nil, v) }
func n16(v uint16) []byte { return binary.NativeEndian.AppendUint16(nil, v) }
func b16(v uint16) []byte { return binary.BigEndian.AppendUint16(nil, v) }
func b32(v uint32) []byte { return binary.BigEndian.AppendUint32(nil, v) }
func b64(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }

// n128 is a 128-bit number (big-endian bytes) in host byte order.
func n128(b []byte) []byte {
	out := append([]byte(nil), b...)
	if binary.NativeEndian.Uint16([]byte{1, 0}) == 1 {
		for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
			out[i], out[j] = out[j], out[i]
		}
	}
	return out
}

func raw(b ...byte) []byte { return b }
func hx(s string) []byte {
	b, err := hex.DecodeString(s)
	if err != nil {
		panic(err)
	}
	return b
}

var (
	mac1 = hx("000102030405")
	mac2 = hx("101112131415")
	v6a  = hx("00000000000000000000000000000001")
	v6b  = hx("00000000000000000000000000000002")
)

// keyTable covers every key attribute: text (exact, as "dpctl
// parse-keys" prints it) and the bytes MarshalKey must produce.
var keyTable = []struct {
	text string
	wire []byte
}{
	{"skb_priority(0x1234)", nla(2, n32(0x1234))},
	{"in_port(7)", nla(3, n32(7))},
	{"skb_mark(0)", nla(15, n32(0))},
	{"recirc_id(0x5)", nla(20, n32(5))},
	{"dp_hash(0x12345678)", nla(19, n32(0x12345678))},
	{"eth(src=00:01:02:03:04:05,dst=10:11:12:13:14:15)", nla(4, mac1, mac2)},
	{"eth_type(0x0800)", nla(6, b16(0x0800))},
	{"eth_type(0x8100),vlan(vid=99,pcp=7),encap(eth_type(0x0800))",
		bytes.Join([][]byte{nla(6, b16(0x8100)), nla(5, b16(0xf063)), nla(1, nla(6, b16(0x0800)))}, nil)},
	{"eth_type(0x88a8),vlan(vid=10,pcp=0),encap(eth_type(0x8100),vlan(vid=20,pcp=1,cfi=0),encap(eth_type(0x86dd)))",
		bytes.Join([][]byte{nla(6, b16(0x88a8)), nla(5, b16(0x100a)), nla(1, nla(6, b16(0x8100)), nla(5, b16(0x2014)), nla(1, nla(6, b16(0x86dd))))}, nil)},
	{"encap()", nla(1)},
	{"ipv4(src=35.8.2.41,dst=172.16.0.20,proto=6,tos=0x80,ttl=128,frag=first)",
		nla(7, raw(35, 8, 2, 41, 172, 16, 0, 20, 6, 0x80, 128, 1))},
	{"ipv6(src=::1,dst=::2,label=0x12345,proto=58,tclass=0x70,hlimit=128,frag=later)",
		nla(8, v6a, v6b, b32(0x12345), raw(58, 0x70, 128, 2))},
	{"tcp(src=80,dst=8080)", nla(9, b16(80), b16(8080))},
	{"udp(src=81,dst=6632)", nla(10, b16(81), b16(6632))},
	{"sctp(src=1,dst=2)", nla(17, b16(1), b16(2))},
	{"icmp(type=8,code=0)", nla(11, raw(8, 0))},
	{"icmpv6(type=136,code=0)", nla(12, raw(136, 0))},
	{"arp(sip=1.2.3.4,tip=5.6.7.8,op=1,sha=00:01:02:03:04:05,tha=10:11:12:13:14:15)",
		nla(13, raw(1, 2, 3, 4, 5, 6, 7, 8), b16(1), mac1, mac2, raw(0, 0))},
	{"nd(target=::1,sll=00:01:02:03:04:05,tll=10:11:12:13:14:15)", nla(14, v6a, mac1, mac2)},
	{"nd_ext(nd_reserved=0x20000000,nd_options_type=2)", nla(30, b32(0x20000000), raw(2, 0, 0, 0))},
	{"tcp_flags(syn|ack)", nla(18, b16(0x012))},
	{"tcp_flags(fin|psh|[200])", nla(18, b16(0x209))},
	{"ct_label(0x1234567890abcdef1234567890abcdef)", nla(25, n128(hx("1234567890abcdef1234567890abcdef")))},
	{"mpls(label=100,tc=3,ttl=64,bos=0,label=200,tc=0,ttl=63,bos=1)",
		nla(21, b32(100<<12|3<<9|64), b32(200<<12|1<<8|63))},
	{"ct_state(0x21)", nla(22, n32(0x21))},
	{"ct_zone(0x5)", nla(23, n16(5))},
	{"ct_mark(0x12345678)", nla(24, n32(0x12345678))},
	{"ct_tuple4(src=10.10.10.10,dst=20.20.20.20,proto=17,tp_src=1,tp_dst=2)",
		nla(26, raw(10, 10, 10, 10, 20, 20, 20, 20), b16(1), b16(2), raw(17, 0, 0, 0))},
	{"ct_tuple6(src=::1,dst=::2,proto=6,src_port=1,dst_port=2)",
		nla(27, v6a, v6b, b16(1), b16(2), raw(6, 0, 0, 0))},
	{"packet_type(ns=1,id=0x800)", nla(29, b32(0x00010800))},
	{"ipv6_exthdrs(0x41)", nla(32, n16(0x41))},
	{"key99(0102)", nla(99, raw(1, 2))},
	{"tunnel(tun_id=0x7f10354,src=10.10.10.10,dst=20.20.20.20,tos=0x8,ttl=64,tp_src=1000,tp_dst=4789,flags(oam|df|csum|key))",
		nla(16, nla(0, b64(0x7f10354)), nla(1, raw(10, 10, 10, 10)), nla(2, raw(20, 20, 20, 20)),
			nla(3, raw(8)), nla(4, raw(64)), nla(5), nla(6), nla(9, b16(1000)), nla(10, b16(4789)), nla(7))},
	{"tunnel(ipv6_src=::1,ipv6_dst=::2,ttl=64,flags(0))",
		nla(16, nla(12, v6a), nla(13, v6b), nla(4, raw(64)))},
	{"tunnel(tun_id=0x1,geneve({class=0xffff,type=0x80,len=4,0xa}{class=0x1,type=0x2,len=0}),flags(key))",
		nla(16, nla(0, b64(1)), nla(8, hx("ffff8001"), hx("0000000a"), hx("00010200")))},
	{"tunnel(tun_id=0x1,vxlan(gbp(id=10,flags=0xb)),flags(key))",
		nla(16, nla(0, b64(1)), nla(11, nla(1, n32(0xb000a))))},
	{"tunnel(tun_id=0x1,erspan(ver=1,idx=0x7),flags(key))",
		nla(16, nla(0, b64(1)), nla(15, n32(1), b32(7), raw(0, 0, 0, 0)))},
	{"tunnel(tun_id=0x1,erspan(ver=2,dir=1,hwid=0x7),flags(key))",
		nla(16, nla(0, b64(1)), nla(15, n32(2), raw(0, 0, 0, 0, 0, 0, 0, 0x78)))},
	{"tunnel(tun_id=0x1,gtpu(flags=0x30,msgtype=255),flags(key))",
		nla(16, nla(0, b64(1)), nla(16, raw(0x30, 255)))},
	{"tunnel(tun_id=0x1,key42(abcd),flags(key))",
		nla(16, nla(0, b64(1)), nla(42, raw(0xab, 0xcd)))},
	{"nsh(flags=0,ttl=63,mdtype=1,np=3,spi=0x123,si=255,c1=0x1,c2=0x2,c3=0x3,c4=0x4)",
		nla(28, nla(1, raw(0, 63, 1, 3), b32(0x123<<8|255)), nla(2, b32(1), b32(2), b32(3), b32(4)))},
	{"nsh(flags=0,ttl=0,mdtype=2,np=1,spi=0x1,si=1)",
		nla(28, nla(1, raw(0, 0, 2, 1), b32(0x101)))},
}

func TestKeyTable(t *testing.T) {
	for _, tc := range keyTable {
		k, err := ParseKey(tc.text)
		if err != nil {
			t.Errorf("ParseKey(%q): %v", tc.text, err)
			continue
		}
		b, err := MarshalKey(k)
		if err != nil {
			t.Errorf("MarshalKey(%q): %v", tc.text, err)
			continue
		}
		if !bytes.Equal(b, tc.wire) {
			t.Errorf("MarshalKey(%q)\n got  %x\n want %x", tc.text, b, tc.wire)
			continue
		}
		k2, err := UnmarshalKey(tc.wire)
		if err != nil {
			t.Errorf("UnmarshalKey(%q): %v", tc.text, err)
			continue
		}
		if got := FormatKey(k2, nil, true); got != tc.text {
			t.Errorf("round trip\n got  %s\n want %s", got, tc.text)
		}
	}
	// Every known attribute type appears in the table.
	seen := map[KeyType]bool{}
	var walk func(FlowKey)
	walk = func(k FlowKey) {
		for _, a := range k {
			seen[a.KeyType()] = true
			if e, ok := a.(Encap); ok {
				walk(e.Key)
			}
		}
	}
	for _, tc := range keyTable {
		k, _ := UnmarshalKey(tc.wire)
		walk(k)
	}
	for kt := KeyEncap; kt <= KeyIPv6ExtHdrs; kt++ {
		if kt == KeyTunnelInfo {
			continue // kernel-internal, never on the wire
		}
		if !seen[kt] {
			t.Errorf("key attribute %s has no table entry", kt)
		}
	}
}

// TestKeyAliases checks input forms that format differently.
func TestKeyAliases(t *testing.T) {
	for in, want := range map[string]string{
		"key32(4100)":                 "ipv6_exthdrs(" + cx(uint64(binary.NativeEndian.Uint16([]byte{0x41, 0}))) + ")",
		"key3(05000000)":              "in_port(" + itoaU(binary.NativeEndian.Uint32(hx("05000000"))) + ")",
		"in_port(0x10) skb_mark(010)": "in_port(16),skb_mark(0x8)",
		"ufid:01020304-0506-0708-090a-0b0c0d0e0f10 in_port(1)": "in_port(1)",
		"ct_tuple6(src=::1,dst=::2,proto=6,tp_src=1,tp_dst=2)": "ct_tuple6(src=::1,dst=::2,proto=6,src_port=1,dst_port=2)",
		"ipv6(src=::1.2.3.4,dst=::ffff:1.2.3.4)":               "ipv6(src=::1.2.3.4,dst=::ffff:1.2.3.4,label=0,proto=0,tclass=0,hlimit=0,frag=no)",
		"in_port(-1)":                                          "in_port(4294967295)",
	} {
		got, err := RoundTripKey(in, false)
		if err != nil || got != want {
			t.Errorf("RoundTripKey(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

func itoaU(v uint32) string { return strconv.FormatUint(uint64(v), 10) }
