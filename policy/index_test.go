package policy

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/ovsdp/ovsdp/flowkeys"
	"github.com/ovsdp/ovsdp/internal/header"
)

// setHashMinRules sets hashMinRules for a test (rule sets built after it
// use it) and restores it at the end.
func setHashMinRules(t testing.TB, n int) {
	t.Helper()
	old := hashMinRules
	hashMinRules = n
	t.Cleanup(func() { hashMinRules = old })
}

// parseWith parses text into a rule set with hashMinRules at n.
func parseWith(t testing.TB, n int, text string) *RuleSet {
	t.Helper()
	old := hashMinRules
	hashMinRules = n
	defer func() { hashMinRules = old }()
	rs, err := ParseRules("t", strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

// linear is a hashMinRules no table reaches: every lookup rule by rule.
const linear = 1 << 30

// The hashed lookup decides what the linear one does: the same rule,
// in every table of random pipelines (priorities and file order mixed),
// for random packets, with every group hashed (1) or groups of two and
// more (2); and its masks are valid megaflow masks.
func TestHashedLookupSameRule(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 71))
	sets := 2000
	if testing.Short() || raceEnabled {
		sets = 200
	}
	hashedTables := 0
	for set := range sets {
		var text strings.Builder
		text.WriteString(randGroup(r, 1))
		text.WriteString(randGroup(r, 2))
		for range 1 + r.IntN(12) {
			text.WriteString(randRule(r, 0) + "\n")
		}
		// Repeated masks: a few rules that differ in values only.
		for range r.IntN(6) {
			fmt.Fprintf(&text, "priority=%d,udp,nw_dst=%s,tp_dst=%d,actions=output:%d\n", 10*r.IntN(4), fmtIP4(pick(r, poolIPv4)), pick(r, poolTp), 1+r.IntN(3))
		}
		for range r.IntN(5) {
			text.WriteString(randRule(r, 1+r.IntN(2)) + "\n")
		}
		lin := parseWith(t, linear, text.String())
		for _, n := range []int{1, 2} {
			hs := parseWith(t, n, text.String())
			if hs.index != nil {
				hashedTables++
			}
			for pkt := range 100 {
				k := randKey(r)
				for table := range 3 {
					dl, dh := lin.DecideAt(&k, table), hs.DecideAt(&k, table)
					if dl.Rule != dh.Rule {
						t.Fatalf("set %d packet %d table %d, hashMinRules %d: linear rule %d, hashed rule %d\nrules:\n%skey %+v", set, pkt, table, n, dl.Rule, dh.Rule, lin, k)
					}
					if msg := maskInvalid(&dh.Mask); msg != "" {
						t.Fatalf("set %d packet %d table %d, hashMinRules %d: mask %+v: %s\nrules:\n%s", set, pkt, table, n, dh.Mask, msg, lin)
					}
				}
			}
		}
	}
	if hashedTables < sets {
		t.Errorf("only %d of %d rule sets had a hashed table", hashedTables, 2*sets)
	}
}

func fmtIP4(a [4]byte) string { return fmt.Sprintf("%d.%d.%d.%d", a[0], a[1], a[2], a[3]) }

// exactRules is n rules each of one UDP 5-tuple (source port 1024+i),
// as the upcall benchmark's tuples workload, and a catch-all drop.
func exactRules(n int) string {
	var s strings.Builder
	for i := range n {
		fmt.Fprintf(&s, "priority=10,udp,nw_src=10.9.0.1,nw_dst=10.9.0.2,tp_src=%d,tp_dst=9,actions=output:2\n", 1024+i)
	}
	s.WriteString("priority=0,actions=drop\n")
	return s.String()
}

// udpKey is the key of a UDP packet 10.9.0.1:sport -> 10.9.0.2:9.
func udpKey(sport uint16) flowkeys.Key {
	var k flowkeys.Key
	k.InPort, k.EthType, k.IPProto, k.IPTTL = 1, ethIPv4, header.IPProtoUDP, 64
	k.IPv4Src, k.IPv4Dst = [4]byte{10, 9, 0, 1}, [4]byte{10, 9, 0, 2}
	k.TpSrc, k.TpDst = sport, 9
	return k
}

// 1000 exact rules, hashed (the default size) as one group: the rule of
// each tuple is found, with the same megaflow mask as the linear walk's
// (the 5-tuple exact); a tuple without a rule drops, masked up to the
// field where it left every rule; an ARP packet costs the Ethernet type
// only, a TCP one the Ethernet type and IP protocol.
func TestHashedExactRules(t *testing.T) {
	text := exactRules(1000)
	hs, lin := parseWith(t, hashMinRules, text), parseWith(t, linear, text)
	if hs.index == nil || hs.index[0] == nil || len(hs.index[0].groups) != 1 {
		t.Fatalf("1000 rules of one mask: not one hashed group (%v)", hs.index != nil)
	}
	for _, sport := range []uint16{1024, 1025, 1500, 2023} {
		k := udpKey(sport)
		dh, dl := hs.Decide(&k), lin.Decide(&k)
		if dh.Rule != int(sport-1024) || dh.Rule != dl.Rule || dh.Mask != dl.Mask {
			t.Errorf("tp_src %d: hashed rule %d mask %+v; linear rule %d mask %+v", sport, dh.Rule, dh.Mask, dl.Rule, dl.Mask)
		}
	}
	k := udpKey(5000)
	d := hs.Decide(&k)
	want := flowkeys.Key{EthType: 0xffff, IPProto: 0xff, IPFrag: 0xff, IPv4Src: [4]byte{255, 255, 255, 255}, IPv4Dst: [4]byte{255, 255, 255, 255}, TpSrc: 0xffff}
	if d.Rule != 1000 || d.Mask != want {
		t.Errorf("tp_src 5000: rule %d mask %+v; want the drop rule (1000) with mask %+v", d.Rule, d.Mask, want)
	}
	var arp flowkeys.Key
	arp.InPort, arp.EthType = 1, 0x0806
	if d := hs.Decide(&arp); d.Rule != 1000 || d.Mask != (flowkeys.Key{EthType: 0xffff}) {
		t.Errorf("ARP: rule %d mask %+v; want the drop rule with the Ethernet type only", d.Rule, d.Mask)
	}
	tcp := udpKey(1024)
	tcp.IPProto = header.IPProtoTCP
	if d := hs.Decide(&tcp); d.Rule != 1000 || d.Mask != (flowkeys.Key{EthType: 0xffff, IPProto: 0xff}) {
		t.Errorf("TCP: rule %d mask %+v; want the drop rule with the Ethernet type and IP protocol", d.Rule, d.Mask)
	}
	// Priorities across groups: a higher rule of another mask before the
	// group wins, a lower one after it does not.
	pr := parseWith(t, 2, "priority=20,udp,tp_src=1500,actions=output:3\n"+exactRules(1000)+"priority=5,udp,actions=output:4\n")
	for _, c := range []struct {
		sport uint16
		rule  int
	}{{1500, 0}, {1501, 478}, {5000, 1001}} {
		k := udpKey(c.sport)
		if d := pr.Decide(&k); d.Rule != c.rule {
			t.Errorf("priorities: tp_src %d gives rule %d, want %d", c.sport, d.Rule, c.rule)
		}
	}
	if n := testing.AllocsPerRun(1000, func() { hs.Decide(&k) }); n != 0 {
		t.Errorf("the hashed lookup allocates %v times", n)
	}
}

// BenchmarkDecideExactRules: 1000 exact 5-tuple rules (the upcall
// benchmark's tuples workload), linear and hashed, for packets of
// random rules and for packets of no rule.
func BenchmarkDecideExactRules(b *testing.B) {
	text := exactRules(1000)
	for _, c := range []struct {
		name string
		min  int
	}{{"linear", linear}, {"hashed", 16}} {
		rs := parseWith(b, c.min, text)
		keys := make([]flowkeys.Key, 256)
		r := rand.New(rand.NewPCG(5, 6))
		for i := range keys {
			keys[i] = udpKey(uint16(1024 + r.IntN(1000)))
		}
		var d Decision
		b.Run(c.name+"/hit", func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				rs.DecideInto(&keys[i%len(keys)], &d)
			}
		})
		miss := udpKey(5000)
		b.Run(c.name+"/miss", func(b *testing.B) {
			for b.Loop() {
				rs.DecideInto(&miss, &d)
			}
		})
	}
}
