package policy

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/ovsdp/ovsdp/flowkeys"
	"github.com/ovsdp/ovsdp/internal/header"
)

// Small value pools, so that random rules and packets meet.
var (
	poolMACs = [][6]byte{
		{0x00, 0x00, 0x00, 0x00, 0x00, 0x01},
		{0x00, 0x00, 0x00, 0x00, 0x00, 0x02},
		{0x02, 0x00, 0x00, 0x00, 0x00, 0x03},
		{0xff, 0xff, 0xff, 0xff, 0xff, 0xff},
		{0x01, 0x00, 0x5e, 0x00, 0x00, 0x01},
	}
	poolIPv4 = [][4]byte{{10, 0, 0, 1}, {10, 0, 0, 2}, {10, 1, 2, 3}, {11, 0, 0, 1}, {192, 168, 1, 1}, {10, 0, 1, 1}}
	poolIPv6 = [][16]byte{
		{0xfe, 0x80, 15: 1},
		{0x20, 0x01, 0x0d, 0xb8, 15: 1},
		{0x20, 0x01, 0x0d, 0xb8, 15: 2},
		{0x20, 0x01, 0x0d, 0xb9, 15: 2},
	}
	poolPorts  = []uint32{1, 2, 3, 4}
	poolTp     = []uint16{0, 22, 53, 80, 0x1234, 8080}
	poolTTL    = []uint8{0, 1, 2, 3, 64, 255}
	poolTOS    = []uint8{0, 3, 4, 0x20, 0xfc}
	poolVLAN   = []uint16{10, 20, 4095}
	poolProtoI = []uint8{1, 6, 17, 50}
	poolProto6 = []uint8{6, 17, 58, 50}
	// ct_state values: untracked, new, established, reply, invalid,
	// related, NATed.
	poolCTState = []uint8{0, 0x21, 0x22, 0x2a, 0x30, 0x24, 0x62, 0xa2}
)

func pick[T any](r *rand.Rand, s []T) T { return s[r.IntN(len(s))] }

// randKey returns a plausible packet key (fields of the wrong protocol
// are sometimes set too: soundness must hold for any key).
func randKey(r *rand.Rand) flowkeys.Key {
	var k flowkeys.Key
	k.MacProto = flowkeys.MacProtoEthernet
	k.InPort = pick(r, poolPorts)
	k.EthSrc = pick(r, poolMACs)
	k.EthDst = pick(r, poolMACs)
	switch r.IntN(5) {
	case 1:
		k.VLANTCI = flowkeys.VLANTagPresent | pick(r, poolVLAN) | uint16(r.IntN(8))<<13
		k.VLANTPID = flowkeys.EthTypeVLAN
	case 2:
		k.VLANTCI = flowkeys.VLANTagPresent | pick(r, poolVLAN)
		k.VLANTPID = flowkeys.EthTypeQinQ
		k.CVLANTCI = flowkeys.VLANTagPresent | pick(r, poolVLAN)
		k.CVLANTPID = flowkeys.EthTypeVLAN
	case 3:
		// Priority-tagged (VID 0), sometimes over an inner tag.
		k.VLANTCI = flowkeys.VLANTagPresent | uint16(r.IntN(8))<<13
		k.VLANTPID = pick(r, []uint16{flowkeys.EthTypeVLAN, flowkeys.EthTypeQinQ})
		if r.IntN(2) == 0 {
			break
		}
		k.CVLANTCI = flowkeys.VLANTagPresent | pick(r, poolVLAN)
		k.CVLANTPID = flowkeys.EthTypeVLAN
	}
	switch r.IntN(6) {
	case 0, 1:
		k.EthType = ethIPv4
		k.IPProto = pick(r, poolProtoI)
		k.IPv4Src, k.IPv4Dst = pick(r, poolIPv4), pick(r, poolIPv4)
	case 2:
		k.EthType = ethIPv6
		k.IPProto = pick(r, poolProto6)
		k.IPv6Src, k.IPv6Dst = pick(r, poolIPv6), pick(r, poolIPv6)
	case 3:
		k.EthType = ethARP
		k.IPProto = uint8(1 + r.IntN(2))
		k.IPv4Src, k.IPv4Dst = pick(r, poolIPv4), pick(r, poolIPv4)
	case 4:
		k.EthType = 0x1234
	default:
		k.EthType = pick(r, []uint16{ethIPv4, ethIPv6, ethARP, 0x88cc})
		k.IPProto = pick(r, poolProtoI)
		k.IPv4Src, k.IPv4Dst = pick(r, poolIPv4), pick(r, poolIPv4)
		k.IPv6Src = pick(r, poolIPv6)
	}
	// Conntrack fields, as after a ct action (or not).
	if r.IntN(2) == 0 {
		k.CTState = pick(r, poolCTState)
		k.CTZone = pick(r, []uint16{0, 1, 5})
		k.CTMark = pick(r, []uint32{0, 1, 2, 0x10})
	}
	if k.EthType == ethIPv4 || k.EthType == ethIPv6 {
		k.IPTTL, k.IPTOS = pick(r, poolTTL), pick(r, poolTOS)
		k.IPFrag = uint8(r.IntN(3))
		if k.IPFrag != flowkeys.FragLater && k.IPProto != 50 {
			k.TpSrc, k.TpDst = pick(r, poolTp), pick(r, poolTp)
		}
	}
	return k
}

// randVLANs returns a random VLAN configuration of poolPorts (some
// ports left out: trunks of every VLAN), with VLANs the keys use.
func randVLANs(r *rand.Rand) *VLANTable {
	vids := []uint16{0, 10, 20, 4095}
	ports := map[uint32]PortVLAN{}
	for _, p := range poolPorts {
		var c PortVLAN
		switch r.IntN(5) {
		case 0:
			continue
		case 1:
			c = PortVLAN{Mode: VLANAccess, Tag: pick(r, vids)}
		case 2:
			c = PortVLAN{Mode: VLANTrunk}
		case 3:
			c = PortVLAN{Mode: VLANNativeTagged, Tag: pick(r, vids)}
		default:
			c = PortVLAN{Mode: VLANNativeUntagged, Tag: pick(r, vids)}
		}
		if c.Mode != VLANAccess && r.IntN(2) == 0 {
			c.Trunks = []uint16{pick(r, vids), pick(r, vids)}
			if c.Trunks[0] == c.Trunks[1] {
				c.Trunks = c.Trunks[:1]
			}
		}
		ports[p] = c
	}
	return NewVLANTable(ports)
}

// randRule returns a random rule of table in the text syntax. It always
// obeys the prerequisites.
func randRule(r *rand.Rand, table int) string {
	var parts []string
	add := func(s string, args ...any) { parts = append(parts, fmt.Sprintf(s, args...)) }
	if table != 0 {
		add("table=%d", table)
	}
	add("priority=%d", 10*r.IntN(4))
	class := pick(r, []string{"", "", "ip", "ipv6", "arp", "tcp", "udp", "icmp", "tcp6", "udp6", "icmp6", "dl_type=0x1234"})
	if class != "" {
		add("%s", class)
	}
	maybe := func() bool { return r.IntN(4) == 0 }
	if maybe() {
		add("in_port=%d", pick(r, poolPorts))
	}
	mac := func(name string) {
		m := pick(r, poolMACs)
		switch r.IntN(3) {
		case 0:
			add("%s=%s", name, fmtMAC(m))
		case 1:
			add("%s=%s/01:00:00:00:00:00", name, fmtMAC(m))
		default:
			add("%s=%s/ff:ff:ff:00:00:00", name, fmtMAC(m))
		}
	}
	if maybe() {
		mac("dl_src")
	}
	if maybe() {
		mac("dl_dst")
	}
	if maybe() {
		if r.IntN(3) == 0 {
			add("dl_vlan=0xffff")
		} else {
			add("dl_vlan=%d", pick(r, poolVLAN))
		}
	}
	ip4 := func(name string) {
		a := pick(r, poolIPv4)
		add("%s=%d.%d.%d.%d/%d", name, a[0], a[1], a[2], a[3], pick(r, []int{8, 16, 24, 31, 32}))
	}
	isIP := strings.HasPrefix(class, "ip") || strings.HasPrefix(class, "tcp") || strings.HasPrefix(class, "udp") || strings.HasPrefix(class, "icmp")
	is6 := class == "ipv6" || strings.HasSuffix(class, "6")
	switch {
	case class == "arp" || isIP && !is6:
		if r.IntN(2) == 0 {
			ip4("nw_src")
		}
		if r.IntN(2) == 0 {
			ip4("nw_dst")
		}
	case is6:
		for _, n := range []string{"ipv6_src", "ipv6_dst"} {
			if r.IntN(2) == 0 {
				a := pick(r, poolIPv6)
				add("%s=%x:%x:%x::%x/%d", n, uint16(a[0])<<8|uint16(a[1]), uint16(a[2])<<8|uint16(a[3]), 0, a[15], pick(r, []int{16, 32, 64, 128}))
			}
		}
	}
	if (class == "ip" || class == "ipv6" || class == "arp") && maybe() {
		add("nw_proto=%d", pick(r, poolProtoI))
	}
	if isIP && maybe() {
		add("nw_tos=%d", pick(r, poolTOS)&0xfc)
	}
	if isIP && maybe() {
		add("nw_ttl=%d", pick(r, poolTTL))
	}
	if r.IntN(8) == 0 || table > 0 && r.IntN(3) == 0 {
		add("%s", pick(r, []string{"ct_state=+trk", "ct_state=-trk", "ct_state=+trk+est", "ct_state=+trk+new",
			"ct_state=+trk+est-new", "ct_state=+trk+est+rpl", "ct_state=+inv+trk", "ct_state=+snat", "ct_zone=5", "ct_mark=1", "ct_mark=0x10/0x10"}))
	}
	switch class {
	case "tcp", "udp", "tcp6", "udp6":
		for _, n := range []string{"tp_src", "tp_dst"} {
			switch r.IntN(4) {
			case 0:
				add("%s=%d", n, pick(r, poolTp))
			case 1:
				add("%s=%d/0xff00", n, pick(r, poolTp))
			}
		}
	case "icmp", "icmp6":
		if r.IntN(2) == 0 {
			add("icmp_type=%d", pick(r, poolTp)&0xff)
		}
	}
	var acts []string
	for range 1 + r.IntN(4) {
		acts = append(acts, pick(r, []string{
			"output:1", "output:2", "3", "normal", "normal", "flood", "all", "controller", "controller(userdata=abcd)",
			"output:2", "output:3", "4", "normal", "output:1", "output:4", "flood", "normal",
			"mod_vlan_vid:7", "strip_vlan", "mod_dl_src:00:00:00:00:00:09", "mod_dl_dst:00:00:00:00:00:02",
			"mod_nw_src:10.0.0.9", "mod_nw_dst:10.1.2.3", "mod_nw_tos:8", "mod_nw_ttl:1", "mod_nw_ttl:5",
			"dec_ttl", "dec_ttl", "mod_tp_src:99", "mod_tp_dst:80", "mod_vlan_vid:10", "mod_vlan_vid:0",
			"push_vlan:0x8100", "push_vlan:0x88a8", "pop_vlan", "mod_vlan_pcp:3", "set_field:5->vlan_pcp",
			"set_field:2001:db8::9->ipv6_src", "set_field:fe80::1->ipv6_dst", "set_field:00:00:00:00:00:07->eth_dst",
			"set_field:12->ip_dscp", "set_field:4106->vlan_vid", "group:1", "group:2",
		}))
	}
	if r.IntN(6) == 0 {
		acts = slices.Insert(acts, r.IntN(len(acts)+1), "ct_clear")
	}
	if isIP && r.IntN(4) == 0 {
		// Some conntrack, before the other actions: a ct without
		// table= goes on with them.
		nat := "nat(src=10.0.0.9)"
		if is6 {
			nat = "nat(dst=[2001:db8::9]:80)"
		}
		acts = slices.Insert(acts, 0, pick(r, []string{"ct", "ct(commit)", "ct(commit,zone=5,mark=1/0xff)", "ct(commit," + nat + ")", "ct(nat)", "ct(force,zone=1)"}))
	}
	// Resubmits forward, mostly (a loop drops the packet once past the
	// bounds).
	switch at := r.IntN(len(acts) + 1); {
	case table < 2 && r.IntN(3) == 0:
		acts = slices.Insert(acts, at, fmt.Sprintf("resubmit(,%d)", table+1+r.IntN(2-table)))
	case r.IntN(40) == 0:
		acts = slices.Insert(acts, at, fmt.Sprintf("resubmit(,%d)", r.IntN(table+1)))
	}
	switch {
	case isIP && table < 2 && r.IntN(4) == 0:
		// Recirculation, forward.
		acts = append(acts, fmt.Sprintf("%stable=%d)", pick(r, []string{"ct(", "ct(commit,", "ct(zone=5,", "ct(nat,"}), table+1+r.IntN(2-table)))
	case table < 2 && r.IntN(3) == 0:
		acts = append(acts, fmt.Sprintf("goto_table:%d", table+1+r.IntN(2-table)))
	}
	if r.IntN(8) == 0 {
		acts = []string{"drop"}
	}
	return strings.Join(parts, ",") + ",actions=" + strings.Join(acts, ",")
}

// randMirrors returns one to three random mirrors of poolPorts: by
// source, destination or both, sometimes all, sometimes narrowed to
// VLANs the keys use.
func randMirrors(r *rand.Rand) []Mirror {
	var ms []Mirror
	for i := range 1 + r.IntN(3) {
		m := Mirror{Name: fmt.Sprint("m", i), Out: pick(r, poolPorts)}
		for _, p := range poolPorts {
			if p == m.Out {
				continue
			}
			switch r.IntN(4) {
			case 0:
				m.SrcPorts = append(m.SrcPorts, p)
			case 1:
				m.DstPorts = append(m.DstPorts, p)
			case 2:
				m.SrcPorts, m.DstPorts = append(m.SrcPorts, p), append(m.DstPorts, p)
			}
		}
		m.All = r.IntN(8) == 0
		if r.IntN(2) == 0 {
			m.VLANs = []uint16{pick(r, []uint16{0, 10, 20})}
		}
		ms = append(ms, m)
	}
	return ms
}

// randGroup returns a random group id in the text syntax (group 2 may
// use group 1).
func randGroup(r *rand.Rand, id int) string {
	typ := pick(r, []string{"all", "select", "select", "fast_failover"})
	s := fmt.Sprintf("group_id=%d,type=%s", id, typ)
	for range 1 + r.IntN(3) {
		s += ",bucket="
		if typ == "select" && r.IntN(3) == 0 {
			s += fmt.Sprintf("weight:%d,", r.IntN(3))
		}
		if typ == "fast_failover" || r.IntN(3) == 0 {
			s += fmt.Sprintf("watch_port:%d,", pick(r, poolPorts))
		}
		acts := []string{"output:1", "output:2", "3", "normal", "mod_nw_ttl:5,output:2", "mod_vlan_vid:7,output:3",
			"dec_ttl,output:4", "flood", "mod_nw_src:10.0.0.9,4", "ct(commit),2", "mod_tp_dst:80,1", "strip_vlan,2"}
		if id == 2 {
			acts = append(acts, "group:1", "mod_dl_dst:00:00:00:00:00:02,group:1")
		}
		s += "actions=" + pick(r, acts)
	}
	return s + "\n"
}

type megaflow struct {
	key, mask flowkeys.Key
	d         Decision
	acts      string
}

// checkSoundness runs packets through a simulated megaflow cache in front
// of the policy (Decide with the given fault) and returns the first
// packet whose cached result differs from the policy's direct one.
func checkSoundness(t *testing.T, seed uint64, sets, packets int, b fault) (failure string) {
	setTestFault(t, b)
	var hits, hitsForwarded, misses int
	defer func() {
		if failure == "" {
			t.Logf("%d rule sets, %d packets: %d megaflow hits (%d with a non-empty action list), %d misses", sets, sets*packets, hits, hitsForwarded, misses)
			if hits < sets*packets/4 || hitsForwarded < hits/10 {
				t.Errorf("too few megaflow hits for the test to mean anything")
			}
		}
	}()
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	// Mirrors come from a stream of their own, so that the rules and
	// packets are those of the tests before mirrors.
	rm := rand.New(rand.NewPCG(seed, 0x6d6972726f7273))
	for set := range sets {
		var text strings.Builder
		text.WriteString(randGroup(r, 1))
		text.WriteString(randGroup(r, 2))
		for range 1 + r.IntN(8) {
			text.WriteString(randRule(r, 0))
			text.WriteByte('\n')
		}
		// The pipeline's later tables.
		for range r.IntN(5) {
			text.WriteString(randRule(r, 1+r.IntN(2)))
			text.WriteByte('\n')
		}
		// Sometimes a later table ends in a catch-all (where
		// recirculated packets go).
		for tbl := 1; tbl <= 2; tbl++ {
			if r.IntN(2) == 0 {
				fmt.Fprintf(&text, "table=%d,priority=0,actions=%s\n", tbl, pick(r, []string{"normal", "output:2", "mod_nw_ttl:9,output:1", "flood"}))
			}
		}
		rs, err := ParseRules("random", strings.NewReader(text.String()))
		if err != nil {
			t.Fatalf("set %d: generated rules do not parse: %v\n%s", set, err, text.String())
		}
		sw := NewLearningSwitch(LearningOptions{})
		for _, m := range poolMACs[:3] {
			for _, vlan := range []uint16{0, 10, 20, 4095} {
				if r.IntN(3) > 0 {
					sw.LearnVLAN(vlan, m, pick(r, poolPorts))
				}
			}
		}
		// The recirculation IDs of the rules' ct(table=N), and the
		// tables they go on in.
		rt := NewRecircTable()
		var recircIDs []uint32
		recircTable := map[uint32]int{}
		for i := range rs.Rules {
			for _, a := range rs.Rules[i].Actions {
				if a.Type == ActCT && a.CT.HasTable {
					id := rt.RecircID(a.CT.ctKey(a.Table), int(a.Table))
					if _, ok := recircTable[id]; !ok {
						recircIDs = append(recircIDs, id)
					}
					recircTable[id] = int(a.Table)
				}
			}
		}
		up := map[uint32]bool{}
		for _, p := range poolPorts {
			up[p] = r.IntN(3) > 0
		}
		env := &Env{Ports: poolPorts, Switch: sw, ControllerPID: 77, Recirc: rt, PortUp: func(p uint32) bool { return up[p] }}
		if r.IntN(2) > 0 {
			env.VLANs = randVLANs(r)
		}
		if rm.IntN(3) == 0 {
			env.Mirrors = randMirrors(rm)
		}
		var cache []megaflow
		for pkt := range packets {
			k := randKey(r)
			table := 0
			if len(recircIDs) > 0 && r.IntN(4) == 0 {
				// A packet back from recirculation.
				k.RecircID = pick(r, recircIDs)
				table = recircTable[k.RecircID]
			}
			var d Decision
			rs.decideAt(&k, table, &d)
			env.mirrorMask(&d, &k)
			direct := Translate(&d, &k, env).String()
			if b == faultNone {
				// Translation consults nothing outside the mask (it
				// starts from it, as Translate does).
				tm := d.Mask
				var w walker
				w.init(&k, &tm, &translator{ports: env.Ports, sw: sw, vlans: env.VLANs, recirc: rt, portUp: env.PortUp})
				w.rs = rs
				w.translate(&d, env)
				tm = w.mask
				for i, x := range tm.Words() {
					if x&^d.Mask.Words()[i] != 0 {
						t.Fatalf("set %d packet %d: translation reads word %d bits %#x outside the mask\nrules:\n%skey %+v", set, pkt, i, x&^d.Mask.Words()[i], rs, k)
					}
				}
			}
			if msg := maskInvalid(&d.Mask); msg != "" {
				return fmt.Sprintf("set %d packet %d: mask %+v cannot be a datapath megaflow: %s\nrules:\n%skey %+v", set, pkt, d.Mask, msg, rs, k)
			}
			hit := -1
			for i := range cache {
				if flowkeys.EqualMasked(&k, &cache[i].key, &cache[i].mask, flowkeys.FullRange) {
					hit = i
					break
				}
			}
			if hit < 0 {
				mf := megaflow{mask: d.Mask, d: d, acts: direct}
				flowkeys.ApplyMask(&mf.key, &k, &d.Mask, flowkeys.FullRange)
				cache = append(cache, mf)
				misses++
				continue
			}
			hits++
			if direct != "drop" {
				hitsForwarded++
			}
			c := &cache[hit]
			if c.d.Rule != d.Rule || c.acts != direct {
				return fmt.Sprintf("set %d packet %d: megaflow %d gives rule %d actions %s, policy gives rule %d actions %s\nrules:\n%skey %+v",
					set, pkt, hit, c.d.Rule, c.acts, d.Rule, direct, rs, k)
			}
		}
	}
	return ""
}

// TestSoundness runs the property test with the rule-by-rule lookup
// (every table's rules fewer than hashMinRules) and with the hashed one
// (index.go) made to hash every group, or groups of two or more.
func TestSoundness(t *testing.T) {
	const seed = 20240607
	sets, packets := 3000, 150
	if testing.Short() || raceEnabled {
		sets = 300
	}
	for _, n := range []int{hashMinRules, 1, 2} {
		t.Run(fmt.Sprintf("hashMinRules=%d", n), func(t *testing.T) {
			setHashMinRules(t, n)
			if f := checkSoundness(t, seed, sets, packets, faultNone); f != "" {
				t.Fatal(f)
			}
		})
	}
}

// TestSoundnessCatchesBugs proves that the property test can fail: each
// deliberately unsound variant of Decide is caught (those of the hashed
// lookup with every group hashed).
func TestSoundnessCatchesBugs(t *testing.T) {
	for _, tc := range []struct {
		name   string
		b      fault
		hashed bool
	}{
		{"failing rules add no mask", faultNoFailMask, false},
		{"dec_ttl does not mask the TTL", faultNoTTLMask, false},
		{"output does not mask in_port", faultNoInPortMask, false},
		{"a failing field's proof misses the differing bit", faultFailBitsShort, false},
		{"a failing field's proof misses its prerequisites", faultNoPrereq, false},
		{"mod_vlan_vid does not mask the PCP it keeps", faultNoPCPMask, false},
		{"normal does not mask the VLAN ID", faultNoVLANMask, false},
		{"the tag restored after normal is not masked", faultNoRestoreMask, false},
		{"lookups after table 0 add nothing to the mask", faultNoTableMask, false},
		{"mirrors do not mask in_port", faultNoMirrorMask, false},
		{"mirrors selecting VLANs do not mask the VLAN", faultNoMirrorVLANMask, false},
		{"decisions do not read recirc_id", faultNoRecircMask, false},
		{"a rule failing on ct_state, ct_zone or ct_mark adds no mask", faultNoCTFailMask, false},
		{"a select group does not mask the fields it hashes", faultSelectNoHashMask, false},
		{"hashed: a group's proof is one field short", faultGroupProofShort, true},
		{"hashed: failing groups add no mask", faultNoFailMask, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.hashed {
				setHashMinRules(t, 1)
			}
			f := checkSoundness(t, 1, 3000, 150, tc.b)
			if f == "" {
				t.Fatalf("the property test did not catch the bug")
			}
			t.Logf("caught: %s", strings.SplitN(f, "\n", 2)[0])
		})
	}
}

// TestMegaflowsSmall checks that masks hold only what the decision
// needed.
func TestMegaflowsSmall(t *testing.T) {
	rs, err := ParseRules("small", strings.NewReader("dl_type=0x0800,nw_dst=10.0.0.0/8,actions=1\n"))
	if err != nil {
		t.Fatal(err)
	}
	var k flowkeys.Key
	k.InPort, k.EthType, k.IPProto, k.TpSrc, k.TpDst, k.IPTTL = 2, ethIPv4, header.IPProtoTCP, 1234, 80, 64
	k.EthSrc, k.EthDst = poolMACs[0], poolMACs[1]
	k.IPv4Src = [4]byte{1, 2, 3, 4}

	check := func(name string, dst [4]byte, want flowkeys.Key) {
		t.Helper()
		k.IPv4Dst = dst
		d := rs.Decide(&k)
		if d.Mask != want {
			t.Errorf("%s: mask %+v\nwant %+v", name, d.Mask, want)
		}
		if d.Mask.TpSrc != 0 || d.Mask.EthSrc != [6]byte{} || d.Mask.IPv4Src != [4]byte{} {
			t.Errorf("%s: mask has tp_src, eth_src or nw_src", name)
		}
	}
	// Matched: the rule's fields, and in_port because output skips the input port.
	check("10.1.2.3", [4]byte{10, 1, 2, 3}, flowkeys.Key{InPort: 0xffffffff, EthType: 0xffff, IPv4Dst: [4]byte{0xff}})
	// Failed on the first bit of nw_dst.
	check("192.168.0.1", [4]byte{192, 168, 0, 1}, flowkeys.Key{EthType: 0xffff, IPv4Dst: [4]byte{0x80}})
	// Failed on the last bit of the /8.
	check("11.0.0.1", [4]byte{11, 0, 0, 1}, flowkeys.Key{EthType: 0xffff, IPv4Dst: [4]byte{0xff}})
	// Not IPv4: only the Ethernet type.
	k.EthType = ethIPv6
	if d := rs.Decide(&k); d.Mask != (flowkeys.Key{EthType: 0xffff}) {
		t.Errorf("IPv6: mask %+v", d.Mask)
	}

	// L4 fields bring the fragment type; dec_ttl brings the TTL.
	rs, err = ParseRules("l4", strings.NewReader("tcp,tp_dst=80,actions=dec_ttl,2\n"))
	if err != nil {
		t.Fatal(err)
	}
	k.EthType = ethIPv4
	d := rs.Decide(&k)
	want := flowkeys.Key{InPort: 0xffffffff, EthType: 0xffff, IPProto: 0xff, IPFrag: 0xff, TpDst: 0xffff, IPTTL: 0xff}
	if d.Mask != want {
		t.Errorf("tcp,tp_dst=80: mask %+v\nwant %+v", d.Mask, want)
	}
	// A TTL of 1 needs only the bits above the lowest, and the packet
	// goes nowhere (so in_port is not consulted).
	k.IPTTL = 1
	d = rs.Decide(&k)
	want.IPTTL, want.InPort = 0xfe, 0
	if d.Mask != want {
		t.Errorf("ttl 1: mask %+v\nwant %+v", d.Mask, want)
	}
	if acts := Translate(&d, &k, &Env{}); len(acts) != 0 {
		t.Errorf("ttl 1: actions %s", acts)
	}

	// The learning switch masks in_port, both addresses and the VLAN it
	// keys its table by: for an untagged frame the tag-present bit
	// alone, for a tagged one the VID too, for a priority-tagged one
	// (VID 0, which it may re-tag) also the PCP and TPID; nothing else.
	normalMask := flowkeys.Key{InPort: 0xffffffff, EthSrc: [6]byte{255, 255, 255, 255, 255, 255}, EthDst: [6]byte{255, 255, 255, 255, 255, 255}}
	for _, tc := range []struct {
		tci, tpid      uint16
		maskTCI, maskT uint16
	}{
		{0, 0, flowkeys.VLANTagPresent, 0},
		{0xa000 | flowkeys.VLANTagPresent | 10, flowkeys.EthTypeVLAN, 0x1fff, 0},
		{0xa000 | flowkeys.VLANTagPresent, flowkeys.EthTypeVLAN, 0xffff, 0xffff},
	} {
		k.VLANTCI, k.VLANTPID = tc.tci, tc.tpid
		d = DefaultRules().Decide(&k)
		want := normalMask
		want.VLANTCI, want.VLANTPID = tc.maskTCI, tc.maskT
		if d.Mask != want || !d.Normal || d.NormalTCI != tc.tci&0x1fff {
			t.Errorf("normal, tci %#x: mask %+v normal %v tci %#x\nwant %+v", tc.tci, d.Mask, d.Normal, d.NormalTCI, want)
		}
	}
	k.VLANTCI, k.VLANTPID = 0, 0
}

func TestDecideAllocs(t *testing.T) {
	rs, err := ParseRules("a", strings.NewReader(
		"priority=9,tcp,nw_dst=10.0.0.0/8,tp_dst=22,actions=drop\n"+
			"priority=8,udp,actions=mod_nw_tos:8,dec_ttl,normal\n"+
			"priority=7,ip,nw_src=192.168.0.0/16,actions=mod_vlan_vid:3,flood\n"+
			"priority=1,actions=normal\n"))
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	keys := make([]flowkeys.Key, 64)
	for i := range keys {
		keys[i] = randKey(r)
	}
	i := 0
	var d Decision
	if n := testing.AllocsPerRun(1000, func() {
		rs.DecideInto(&keys[i%len(keys)], &d)
		i++
	}); n != 0 {
		t.Errorf("DecideInto allocates %v times", n)
	}
	if n := testing.AllocsPerRun(1000, func() {
		d = rs.Decide(&keys[i%len(keys)])
		i++
	}); n != 0 {
		t.Errorf("Decide allocates %v times", n)
	}
}

func BenchmarkDecide(b *testing.B) {
	var text strings.Builder
	r := rand.New(rand.NewPCG(3, 4))
	// randRule may name groups 1 and 2, as in the soundness test.
	text.WriteString(randGroup(r, 1))
	text.WriteString(randGroup(r, 2))
	for range 32 {
		text.WriteString(randRule(r, 0))
		text.WriteByte('\n')
	}
	rs, err := ParseRules("bench", strings.NewReader(text.String()))
	if err != nil {
		b.Fatal(err)
	}
	keys := make([]flowkeys.Key, 256)
	for i := range keys {
		keys[i] = randKey(r)
	}
	var d Decision
	b.Run("rules=32", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			rs.DecideInto(&keys[i%len(keys)], &d)
		}
	})
	// Baseline: the bare masked comparisons of the same rules, without
	// any mask bookkeeping.
	b.Run("baseline-match-only", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			k := &keys[i%len(keys)]
			for j := range rs.Rules {
				if rs.Rules[j].Match.Matches(k) {
					break
				}
			}
		}
	})
}

// maskInvalid checks the rules the kernel imposes on a megaflow mask
// (net/openvswitch/flow_netlink.c): L3 fields only with an exact
// Ethernet type, L4 fields only with an exact IP protocol too, and (ours)
// the fragment type with L4 fields; exact in_port and Ethernet type when
// masked at all.
func maskInvalid(m *flowkeys.Key) string {
	l3 := m.IPv4Src != [4]byte{} || m.IPv4Dst != [4]byte{} || m.IPv6Src != [16]byte{} || m.IPv6Dst != [16]byte{} ||
		m.IPTOS != 0 || m.IPTTL != 0 || m.IPProto != 0 || m.IPFrag != 0
	l4 := m.TpSrc != 0 || m.TpDst != 0
	switch {
	case m.InPort != 0 && m.InPort != 0xffffffff:
		return "partial in_port mask"
	case m.EthType != 0 && m.EthType != 0xffff:
		return "partial Ethernet type mask"
	case (l3 || l4) && m.EthType != 0xffff:
		return "L3/L4 fields without an exact Ethernet type"
	case l4 && (m.IPProto != 0xff || m.IPFrag != 0xff):
		return "L4 fields without an exact IP protocol and fragment type"
	case m.VLANTCI != 0 && m.VLANTCI&flowkeys.VLANTagPresent == 0:
		return "VLAN TCI mask without the tag-present bit"
	case (m.CVLANTCI != 0 || m.CVLANTPID != 0) && (m.VLANTCI&flowkeys.VLANTagPresent == 0 || m.CVLANTCI&flowkeys.VLANTagPresent == 0):
		return "inner VLAN mask without both tag-present bits"
	}
	return ""
}
