package policy

import (
	"os"
	"strings"
	"testing"

	"github.com/ovsdp/ovsdp/flowkeys"
	"github.com/ovsdp/ovsdp/internal/header"
)

func TestCTParseRoundTrip(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"ip,actions=ct", "priority=32768,ip,actions=ct"},
		{"ip,actions=ct(table=1)", "priority=32768,ip,actions=ct(table=1)"},
		{"tcp,actions=ct(commit,zone=5,mark=7,table=2)", "priority=32768,tcp,actions=ct(commit,zone=5,mark=0x7,table=2)"},
		{"ip,actions=ct(commit,exec(set_field:0x10/0xf0->ct_mark))", "priority=32768,ip,actions=ct(commit,mark=0x10/0xf0)"},
		{"ip,actions=ct(commit,nat(src=10.0.0.1-10.0.0.9:1000-2000,random),table=3)", "priority=32768,ip,actions=ct(commit,nat(src=10.0.0.1-10.0.0.9:1000-2000,random),table=3)"},
		{"ip,actions=ct(commit,nat(dst=10.0.0.3:80))", "priority=32768,ip,actions=ct(commit,nat(dst=10.0.0.3:80))"},
		{"ipv6,actions=ct(commit,nat(src=[2001:db8::1]-[2001:db8::9]:5-6,hash,persistent))", "priority=32768,ipv6,actions=ct(commit,nat(src=[2001:db8::1]-[2001:db8::9]:5-6,hash,persistent))"},
		{"ip,actions=ct(nat,table=1)", "priority=32768,ip,actions=ct(nat,table=1)"},
		{"ip,actions=ct(force,zone=3)", "priority=32768,ip,actions=ct(force,zone=3)"},
		{"ct_state=+trk+est-new,actions=output:1", "priority=32768,ct_state=-new+est+trk,actions=output:1"},
		{"ct_state=0x20/0x21,ct_zone=5,ct_mark=0x1/0xff,actions=ct_clear,output:1", "priority=32768,ct_state=-new+trk,ct_zone=5,ct_mark=0x1/0xff,actions=ct_clear,output:1"},
		{"ct_mark=9,actions=drop", "priority=32768,ct_mark=0x9,actions=drop"},
	} {
		r, err := ParseRule(tc.in)
		if err != nil {
			t.Errorf("%s: %v", tc.in, err)
			continue
		}
		if got := r.String(); got != tc.want {
			t.Errorf("%s: got %s, want %s", tc.in, got, tc.want)
		}
		r2, err := ParseRule(r.String())
		if err != nil || !r2.Equal(&r) {
			t.Errorf("%s: does not parse back: %v", r.String(), err)
		}
	}
}

func TestCTParseErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"actions=ct(commit)", "column 9: ct requires ip or ipv6 in the match"},
		{"arp,actions=ct(commit)", "ct requires ip or ipv6"},
		{"ip,actions=ct(mark=1)", "setting the connection mark requires commit"},
		{"ip,actions=ct(nat(src=10.0.0.1))", "require commit"},
		{"ip,actions=ct(table=1),output:2", "column 24: ct(...,table=N) must be the last action"},
		{"ip,actions=ct(zone=70000)", "expected a zone (0-65535)"},
		{"ip,actions=ct(commit,commit)", "commit given twice"},
		{"ip,actions=ct(bogus)", "unknown argument \"bogus\""},
		{"ip,actions=ct(commit,nat(src=10.0.0.9-10.0.0.1))", "is empty"},
		{"ip,actions=ct(commit,nat(src=10.0.0.1-[::1]))", "mixes IPv4 and IPv6"},
		{"ip,actions=ct(commit,nat(src=:0))", "expected a port (1-65535)"},
		{"ip,actions=ct(commit,nat(src=10.0.0.1,random,hash))", "random and hash exclude each other"},
		{"ip,actions=ct(commit,nat(src=[2001:db8::1]))", "not of the match's family"},
		{"ip,actions=ct(commit,mark=0/0)", "mask not 0"},
		{"ip,actions=ct(commit,exec(set_field:1->reg0))", "exec() takes only"},
		{"ip,actions=ct(table=255)", "expected a table number (0-254)"},
		{"ip,actions=ct_clear:1", "unexpected \":1\" after ct_clear"},
		{"ct_state=+trk+bogus,actions=drop", "expected conntrack state flags"},
		{"ct_state=+trk-trk,actions=drop", "expected conntrack state flags"},
		{"ct_zone=0x10000,actions=drop", "expected a zone"},
	} {
		_, err := ParseRule(tc.in)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want it to contain %q", tc.in, err, tc.want)
		}
	}
}

// ctKey is a TCP packet from 10.0.0.1:1234 to 10.0.0.2:80 on port 1.
func ctKey() flowkeys.Key {
	var k flowkeys.Key
	k.InPort, k.EthType, k.IPProto, k.IPTTL = 1, ethIPv4, header.IPProtoTCP, 64
	k.EthSrc, k.EthDst = poolMACs[0], poolMACs[1]
	k.IPv4Src, k.IPv4Dst = [4]byte{10, 0, 0, 1}, [4]byte{10, 0, 0, 2}
	k.TpSrc, k.TpDst = 1234, 80
	return k
}

// firewallRules is contrib/firewall/firewall.rules (the stateful
// firewall of the tests and the demo) with port 1 inside: it may open
// connections to port 2, port 2 may not open any, and replies flow.
func firewallRules(t *testing.T) string {
	b, err := os.ReadFile("../contrib/firewall/firewall.rules")
	if err != nil {
		t.Fatal(err)
	}
	return strings.ReplaceAll(string(b), "fw-inside", "1")
}

func TestCTTranslate(t *testing.T) {
	rs, err := ParseRules("fw", strings.NewReader(firewallRules(t)))
	if err != nil {
		t.Fatal(err)
	}
	rt := NewRecircTable()
	env := &Env{Ports: []uint32{1, 2}, Recirc: rt}
	k := ctKey()
	d := rs.Decide(&k)
	if got := Translate(&d, &k, env).String(); got != "ct,recirc(0x1)" {
		t.Errorf("table 0: %s, want ct,recirc(0x1)", got)
	}
	// Only what table 0 read: recirc_id, the Ethernet type; the ct
	// action adds nothing else.
	if want := (flowkeys.Key{RecircID: ^uint32(0), EthType: 0xffff}); d.Mask != want {
		t.Errorf("table 0 mask %+v, want %+v", d.Mask, want)
	}
	// The same action gives the same ID.
	k2 := k
	k2.TpSrc = 999
	d2 := rs.Decide(&k2)
	if got := Translate(&d2, &k2, env).String(); got != "ct,recirc(0x1)" {
		t.Errorf("second packet: %s", got)
	}
	// Recirculated, new, from port 1: committed, to table 2 (a new ID).
	tbl, ok := rt.Table(1)
	if !ok || tbl != 1 {
		t.Fatalf("recirc 1: table %d %v", tbl, ok)
	}
	k.RecircID, k.CTState = 1, 0x21
	d = rs.DecideAt(&k, tbl)
	if got := Translate(&d, &k, env).String(); got != "ct(commit),recirc(0x2)" {
		t.Errorf("new from 1: %s", got)
	}
	// The mask: recirc_id exact, and the ct_state bits the rule read
	// (+trk+new), in_port (its match), the Ethernet type.
	want := flowkeys.Key{RecircID: ^uint32(0), CTState: 0x21, InPort: 0xffffffff, EthType: 0xffff}
	if d.Mask != want {
		t.Errorf("new from 1: mask %+v, want %+v", d.Mask, want)
	}
	// New from port 2: fails in_port, then est: the est bit proves it.
	k.InPort = 2
	d = rs.DecideAt(&k, tbl)
	if got := Translate(&d, &k, env).String(); got != "drop" {
		t.Errorf("new from 2: %s", got)
	}
	if d.Mask.CTState&0x02 == 0 || d.Mask.RecircID != ^uint32(0) {
		t.Errorf("new from 2: mask %+v", d.Mask)
	}
	// Established reply from port 2: to table 2 by resubmit, normal.
	k.CTState = 0x2a
	d = rs.DecideAt(&k, tbl)
	if got := Translate(&d, &k, env).String(); got != "1" {
		t.Errorf("est from 2: %s", got)
	}
	tbl2, _ := rt.Table(2)
	if tbl2 != 2 {
		t.Errorf("recirc 2 goes to table %d", tbl2)
	}
	// Not IP: normal, and recirc_id is read (rules with recirculation).
	k = ctKey()
	k.EthType = ethARP
	d = rs.Decide(&k)
	if d.Mask.RecircID != ^uint32(0) || Translate(&d, &k, env).String() != "2" {
		t.Errorf("arp: %s mask %+v", Translate(&d, &k, env), d.Mask)
	}
	// Without a Recirculator, a ct(table=N) drops.
	k = ctKey()
	d = rs.Decide(&k)
	if got := Translate(&d, &k, &Env{Ports: []uint32{1, 2}}).String(); got != "drop" {
		t.Errorf("no recirculator: %s", got)
	}
}

func TestCTTranslateArgs(t *testing.T) {
	for _, tc := range []struct{ rule, want string }{
		{"ip,actions=mod_nw_tos:8,ct(commit,zone=5,mark=0x3/0xf,nat(src=10.0.0.9:100-200)),output:2",
			"set(ipv4(tos=0x8/0xfc)),ct(commit,zone=5,mark=0x3/0xf,nat(src=10.0.0.9:100-200)),2"},
		{"ip,actions=ct(force,nat),2", "ct(force_commit,nat),2"},
		{"ip,actions=ct_clear,2", "ct_clear,2"},
		{"ip,actions=ct(commit,nat(dst=10.0.0.3),table=4)", "ct(commit,nat(dst=10.0.0.3)),recirc(0x1)"},
	} {
		rs, err := ParseRules("t", strings.NewReader(tc.rule))
		if err != nil {
			t.Fatal(err)
		}
		k := ctKey()
		d := rs.Decide(&k)
		if got := Translate(&d, &k, &Env{Ports: []uint32{1, 2}, Recirc: NewRecircTable()}).String(); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.rule, got, tc.want)
		}
	}
}

// TestCTClearConstant: after ct_clear a later table's ct_state match
// reads a constant (0), so the megaflow does not match the packet's
// ct_state.
func TestCTClearConstant(t *testing.T) {
	rs, err := ParseRules("c", strings.NewReader("ip,actions=ct_clear,resubmit(,1)\ntable=1,ct_state=+trk,actions=output:2\ntable=1,priority=0,actions=output:3\n"))
	if err != nil {
		t.Fatal(err)
	}
	k := ctKey()
	k.CTState = 0x22
	d := rs.Decide(&k)
	if got := Translate(&d, &k, &Env{}).String(); got != "ct_clear,3" {
		t.Errorf("actions %s", got)
	}
	if d.Mask.CTState != 0 {
		t.Errorf("mask reads ct_state %#x", d.Mask.CTState)
	}
}

func TestRecircTableLifecycle(t *testing.T) {
	rt := NewRecircTable()
	a := rt.RecircID("ct(table=1)", 1)
	b := rt.RecircID("ct", 2)
	if a == b || a == 0 || b == 0 || rt.RecircID("ct(table=1)", 1) != a {
		t.Fatalf("ids %d %d", a, b)
	}
	rs, _ := ParseRules("t", strings.NewReader("ip,actions=ct(table=1)"))
	k := ctKey()
	d := rs.Decide(&k)
	acts := Translate(&d, &k, &Env{Recirc: rt})
	rt.Ref(acts)
	rt.Ref(acts)
	if rt.Refs(a) != 2 {
		t.Fatalf("refs %d", rt.Refs(a))
	}
	// b was never referred to: freed by the second sweep (the first is
	// its grace period), a is kept while referred to.
	if f := rt.Sweep(); len(f) != 0 {
		t.Errorf("first sweep freed %v", f)
	}
	if f := rt.Sweep(); len(f) != 1 || f[0] != b {
		t.Errorf("second sweep freed %v, want [%d]", f, b)
	}
	if _, ok := rt.Table(b); ok {
		t.Errorf("%d still live", b)
	}
	rt.Unref(acts)
	rt.Sweep()
	if _, ok := rt.Table(a); !ok {
		t.Errorf("%d freed while referred to", a)
	}
	rt.Unref(acts)
	rt.Sweep() // grace
	if _, ok := rt.Table(a); !ok {
		t.Errorf("%d freed without a grace period", a)
	}
	if f := rt.Sweep(); len(f) != 1 || f[0] != a {
		t.Errorf("sweep freed %v, want [%d]", f, a)
	}
	// A new ID is not a freed one.
	if c := rt.RecircID("ct(table=1)", 1); c == a || c == b {
		t.Errorf("reused freed id %d", c)
	}
	rt.Reserve(100)
	if c := rt.RecircID("ct", 9); c != 101 {
		t.Errorf("after Reserve(100): %d", c)
	}
	if rt.Len() != 2 {
		t.Errorf("len %d", rt.Len())
	}
}

// TestCTUntrackedAfter: after a ct without table=, later lookups of the
// pass see the packet untracked (Open vSwitch's "A ct action always sets
// the packet to an untracked state"), whatever its ct_state was.
func TestCTUntrackedAfter(t *testing.T) {
	rs, err := ParseRules("u", strings.NewReader("ip,actions=ct(commit),resubmit(,1)\ntable=1,ct_state=+trk,actions=output:2\ntable=1,priority=0,actions=output:3\n"))
	if err != nil {
		t.Fatal(err)
	}
	k := ctKey()
	k.CTState = 0x22
	d := rs.Decide(&k)
	if got := Translate(&d, &k, &Env{}).String(); got != "ct(commit),3" {
		t.Errorf("actions %s, want ct(commit),3", got)
	}
	if d.Mask.CTState != 0 {
		t.Errorf("mask reads ct_state %#x", d.Mask.CTState)
	}
}
