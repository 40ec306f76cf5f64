package odp

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"strconv"
	"strings"
	"testing"
)

// wire builds expected netlink bytes from a hand-written description:
// space-separated tokens, each either plain hex bytes ("8100", "0a000001")
// or "n16:V" / "n32:V" for a native-endian integer (V in hex), the way
// the uapi structures lay out host-order fields.
func wire(t *testing.T, desc string) []byte {
	t.Helper()
	var b []byte
	for _, tok := range strings.Fields(desc) {
		switch {
		case strings.HasPrefix(tok, "n16:"):
			v, err := strconv.ParseUint(tok[4:], 16, 16)
			if err != nil {
				t.Fatalf("bad token %q", tok)
			}
			b = binary.NativeEndian.AppendUint16(b, uint16(v))
		case strings.HasPrefix(tok, "n32:"):
			v, err := strconv.ParseUint(tok[4:], 16, 32)
			if err != nil {
				t.Fatalf("bad token %q", tok)
			}
			b = binary.NativeEndian.AppendUint32(b, uint32(v))
		default:
			d, err := hex.DecodeString(tok)
			if err != nil {
				t.Fatalf("bad token %q", tok)
			}
			b = append(b, d...)
		}
	}
	return b
}

// actionVectors: text → exact bytes (from include/uapi/linux/openvswitch.h,
// lengths in hex) → text, one or more for every action type.
var actionVectors = []struct {
	text string
	wire string
}{
	// OUTPUT: u32 port.
	{"2", "n16:8 n16:1 n32:2"},
	{"1,2,3", "n16:8 n16:1 n32:1 n16:8 n16:1 n32:2 n16:8 n16:1 n32:3"},
	// USERSPACE: nested PID(1) u32, USERDATA(2), EGRESS_TUN_PORT(3) u32, ACTIONS(4) flag.
	{"userspace(pid=1,userdata(0102030405060708),actions,tunnel_out_port=5)",
		"n16:24 n16:2 n16:8 n16:1 n32:1 n16:c n16:2 0102030405060708 n16:8 n16:3 n32:5 n16:4 n16:4"},
	{"userspace(pid=9765,slow_path(cfm))",
		"n16:40 n16:2 n16:8 n16:1 n32:2625 n16:34 n16:2 " +
			"n16:2 0000 n32:ffff 00000000000000000000000000000000 0000 0000 n32:1 0000000000000000 0000000000000000"},
	{"userspace(pid=6633,ipfix(output_port=10))",
		"n16:40 n16:2 n16:8 n16:1 n32:19e9 n16:34 n16:2 " +
			"n16:4 0000 n32:ffff 00000000000000000000000000000000 n32:a 00000000 0000000000000000 0000000000000000"},
	// SET: one nested key attribute (IN_PORT 3, u32).
	{"set(in_port(2))", "n16:c n16:3 n16:8 n16:3 n32:2"},
	// SET with eth (4): src, dst.
	{"set(eth(src=00:01:02:03:04:05,dst=10:11:12:13:14:15))", "n16:14 n16:3 n16:10 n16:4 000102030405 101112131415"},
	// SET with tunnel (16): nested ID(0) be64, IPV4_DST(2), TTL(4) u8, DONT_FRAGMENT(5) flag.
	{"set(tunnel(tun_id=0x1,dst=1.1.1.1,ttl=64,flags(df|key)))",
		"n16:28 n16:3 n16:24 n16:10 n16:c n16:0 0000000000000001 n16:8 n16:2 01010101 n16:5 n16:4 40000000 n16:4 n16:5"},
	// SET_MASKED (11): ipv4 (7) value then mask, 12 bytes each.
	{"set(ipv4(ttl=63))", "n16:20 n16:b n16:1c n16:7 00000000 00000000 00 00 3f 00 00000000 00000000 00 00 ff 00"},
	{"set(tcp(src=80/0xff00))", "n16:10 n16:b n16:c n16:9 0050 0000 ff00 0000"},
	// PUSH_VLAN (4): be16 tpid, be16 tci (CFI set).
	{"push_vlan(vid=10,pcp=0)", "n16:8 n16:4 8100 100a"},
	{"push_vlan(tpid=0x88a8,vid=10,pcp=3)", "n16:8 n16:4 88a8 700a"},
	{"push_vlan(vid=10,pcp=0,cfi=0)", "n16:8 n16:4 8100 000a"},
	// POP_VLAN (5): no payload.
	{"pop_vlan", "n16:4 n16:5"},
	// SAMPLE (6): nested PROBABILITY(1) u32, ACTIONS(2).
	{"sample(sample=50.0%,actions(1))", "n16:18 n16:6 n16:8 n16:1 n32:80000000 n16:c n16:2 n16:8 n16:1 n32:1"},
	{"sample(sample=100.0%,actions(drop))", "n16:10 n16:6 n16:8 n16:1 n32:ffffffff n16:4 n16:2"},
	// RECIRC (7): u32.
	{"recirc(0x1)", "n16:8 n16:7 n32:1"},
	{"recirc(0)", "n16:8 n16:7 n32:0"},
	// HASH (8): u32 alg, u32 basis.
	{"hash(l4(0))", "n16:c n16:8 n32:0 n32:0"},
	{"hash(sym_l4(5))", "n16:c n16:8 n32:1 n32:5"},
	// PUSH_MPLS (9): be32 lse, be16 ethertype, 2 bytes padding.
	{"push_mpls(label=10,tc=0,ttl=64,bos=1,eth_type=0x8847)", "n16:c n16:9 0000a140 8847 0000"},
	// POP_MPLS (10): be16 ethertype (then attribute padding).
	{"pop_mpls(eth_type=0x800)", "n16:6 n16:a 0800 0000"},
	// CT (12): nested COMMIT(1), ZONE(2) u16, MARK(3), HELPER(5) string, NAT(6) nested.
	{"ct(commit,zone=5,mark=0x1/0xff,helper=ftp,nat(src=10.0.0.1-10.0.0.2:1000-2000,random))",
		"n16:50 n16:c n16:4 n16:1 n16:6 n16:2 n16:5 0000 n16:c n16:3 n32:1 n32:ff n16:8 n16:5 66747000 " +
			"n16:2c n16:6 n16:4 n16:1 n16:8 n16:3 0a000001 n16:8 n16:4 0a000002 n16:6 n16:5 n16:3e8 0000 n16:6 n16:6 n16:7d0 0000 n16:4 n16:9"},
	{"ct", "n16:4 n16:c"},
	{"ct(nat)", "n16:8 n16:c n16:4 n16:6"},
	{"ct(force_commit,timeout=tp1,eventmask=0x3)", "n16:18 n16:c n16:4 n16:7 n16:8 n16:9 74703100 n16:8 n16:8 n32:3"},
	{"ct(commit,nat(dst=[::1]-[::2]:80))",
		"n16:40 n16:c n16:4 n16:1 n16:38 n16:6 n16:4 n16:2 n16:14 n16:3 00000000000000000000000000000001 " +
			"n16:14 n16:4 00000000000000000000000000000002 n16:6 n16:5 n16:50 0000"},
	// TRUNC (13): u32.
	{"trunc(100)", "n16:8 n16:d n32:64"},
	// PUSH_ETH (14): src, dst.
	{"push_eth(src=00:00:00:00:00:01,dst=00:00:00:00:00:02)", "n16:10 n16:e 000000000001 000000000002"},
	// POP_ETH (15).
	{"pop_eth", "n16:4 n16:f"},
	// CT_CLEAR (16).
	{"ct_clear", "n16:4 n16:10"},
	// PUSH_NSH (17): nested KEY_ATTR_NSH(28) with BASE(1) and MD1(2).
	{"push_nsh(flags=0,ttl=63,mdtype=1,np=3,spi=0x1,si=255,c1=0x1,c2=0x2,c3=0x3,c4=0x4)",
		"n16:28 n16:11 n16:24 n16:1c n16:c n16:1 003f0103 000001ff n16:14 n16:2 00000001 00000002 00000003 00000004"},
	{"push_nsh(flags=0,ttl=63,mdtype=2,np=3,spi=0x1,si=255,md2=0x01020304)",
		"n16:1c n16:11 n16:18 n16:1c n16:c n16:1 003f0203 000001ff n16:8 n16:3 01020304"},
	// POP_NSH (18).
	{"pop_nsh()", "n16:4 n16:12"},
	// METER (19): u32.
	{"meter(7)", "n16:8 n16:13 n32:7"},
	// CLONE (20): the actions directly.
	{"clone(1,2)", "n16:14 n16:14 n16:8 n16:1 n32:1 n16:8 n16:1 n32:2"},
	{"clone(drop)", "n16:4 n16:14"},
	// CHECK_PKT_LEN (21): nested PKT_LEN(1) u16, GREATER(2), LESS_EQUAL(3).
	{"check_pkt_len(size=200,gt(1),le(drop))", "n16:1c n16:15 n16:6 n16:1 n16:c8 0000 n16:c n16:2 n16:8 n16:1 n32:1 n16:4 n16:3"},
	// ADD_MPLS (22): be32 lse, be16 ethertype, u16 tun_flags.
	{"add_mpls(label=200,tc=7,ttl=64,bos=1,eth_type=0x8847)", "n16:c n16:16 000c8f40 8847 n16:0"},
	{"add_mpls(label=1,tc=0,ttl=1,bos=1,eth_type=0x8847,tun_flags=0x1)", "n16:c n16:16 00001101 8847 n16:1"},
	// DEC_TTL (23): nested ACTION(1) holding the actions.
	{"dec_ttl(le_1(1))", "n16:10 n16:17 n16:c n16:1 n16:8 n16:1 n32:1"},
	{"dec_ttl(le_1(drop))", "n16:8 n16:17 n16:4 n16:1"},
	// DROP (24): u32 reason.
	{"1,drop", "n16:8 n16:1 n32:1 n16:8 n16:18 n32:0"},
	{"drop(5)", "n16:8 n16:18 n32:5"},
	{"drop", ""},
	// PSAMPLE (25): nested GROUP(1) u32, COOKIE(2) bytes.
	{"psample(group=12,cookie=0xf102)", "n16:14 n16:19 n16:8 n16:1 n32:c n16:6 n16:2 f102 0000"},
	{"psample(group=12,cookie=0x102)", "n16:14 n16:19 n16:8 n16:1 n32:c n16:6 n16:2 0102 0000"},
	{"psample(group=12,cookie=0x0001)", "n16:14 n16:19 n16:8 n16:1 n32:c n16:6 n16:2 0001 0000"},
	{"psample(group=1)", "n16:c n16:19 n16:8 n16:1 n32:1"},
	// TUNNEL_PUSH (26, userspace): u32 tnl_port, out_port, header_len, tnl_type, header.
	{"tnl_push(tnl_port(4),header(size=42,type=3,eth(dst=f8:bc:12:44:34:b6,src=f8:bc:12:46:58:e0,dl_type=0x0800),ipv4(src=1.1.2.88,dst=1.1.2.92,proto=47,tos=0,ttl=64,frag=0x4000),gre((flags=0x2000,proto=0x6558),key=0x1e241)),out_port(1))",
		"n16:3e n16:1a n32:4 n32:1 n32:2a n32:3 f8bc124434b6 f8bc124658e0 0800 " +
			"4500 0000 0000 4000 402f 341a 01010258 0101025c 2000 6558 0001e241 0000"},
	{"tnl_push(tnl_port(1),header(size=14,type=99,raw=0102030405060708090a0b0c0d0e),out_port(2))",
		"n16:22 n16:1a n32:1 n32:2 n32:e n32:63 0102030405060708090a0b0c0d0e 0000"},
	// TUNNEL_POP (27), LB_OUTPUT (28): u32.
	{"tnl_pop(4)", "n16:8 n16:1b n32:4"},
	{"lb_output(1)", "n16:8 n16:1c n32:1"},
	// An unknown type is kept as bytes.
	{"action40(01 02)", "n16:6 n16:28 0102 0000"},
	{"action41", "n16:4 n16:29"},
}

func TestActionVectors(t *testing.T) {
	for _, v := range actionVectors {
		as, err := ParseActions(v.text)
		if err != nil {
			t.Errorf("%s: parse: %v", v.text, err)
			continue
		}
		got, err := MarshalActions(as)
		if err != nil {
			t.Errorf("%s: marshal: %v", v.text, err)
			continue
		}
		want := wire(t, v.wire)
		if !bytes.Equal(got, want) {
			t.Errorf("%s: bytes\n got  %x\n want %x", v.text, got, want)
			continue
		}
		back, err := UnmarshalActions(want)
		if err != nil {
			t.Errorf("%s: unmarshal: %v", v.text, err)
			continue
		}
		if s := FormatActions(back); s != v.text {
			t.Errorf("%s: formats back as %s", v.text, s)
		}
	}
}

// TestActionTypesCovered checks that the vectors include every action
// type this package defines.
func TestActionTypesCovered(t *testing.T) {
	seen := map[ActionType]bool{}
	var walk func(as Actions)
	walk = func(as Actions) {
		for _, a := range as {
			seen[a.ActionType()] = true
		}
	}
	for _, v := range actionVectors {
		as, err := UnmarshalActions(wire(t, v.wire))
		if err != nil {
			t.Fatal(err)
		}
		walk(as)
	}
	for typ := ActionOutput; typ <= ActionLBOutput; typ++ {
		if !seen[typ] {
			t.Errorf("no vector for %s", typ)
		}
	}
}
