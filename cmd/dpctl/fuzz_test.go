package main

import (
	"strings"
	"testing"

	"github.com/ovsdp/ovsdp/flowkeys"
	"github.com/ovsdp/ovsdp/odp"
)

// FuzzArgParsers feeds the argument parsers dpctl adds to ovs-dpctl's
// syntax: no panic, and an accepted value is consistent.
func FuzzArgParsers(f *testing.F) {
	for _, s := range []string{"zone=1,limit=5", "zone=65535,limit=0", "zone=,limit=1", "zone=1,2,3", "rate=1000,burst=100", "kbps,rate=1", "in_port=p1,tcp", "tcp,in_port=1", "p1,type=memory,port_no=9,mtu=9000"} {
		f.Add(s)
	}
	ports := func(name string) (uint32, bool) { return 7, name == "p1" }
	f.Fuzz(func(t *testing.T, s string) {
		if zl, err := parseZoneLimit(s); err == nil && (zl.Zone < 0 || zl.Zone > 65535) {
			t.Errorf("parseZoneLimit(%q) = zone %d", s, zl.Zone)
		}
		if zs, err := parseZoneList(s); err == nil && len(zs) == 0 {
			t.Errorf("parseZoneList(%q): no zones and no error", s)
		}
		if m, err := parseMeterSpec(1, strings.Fields(s)); err == nil && len(m.Bands) == 0 {
			t.Errorf("parseMeterSpec(%q): no bands and no error", s)
		}
		if out, err := resolvePortNames(s, ports); err == nil && !strings.Contains(s, "in_port=") && out != s {
			t.Errorf("resolvePortNames(%q) = %q, changed text without in_port", s, out)
		}
		_, _ = newFlowFilter(s, ports)
		_, _ = parseIfaceArg(s)
		_, _, _ = parseFlowLine(fileAdd, s)
	})
}

// FuzzTraceInputs feeds what trace, normalize-actions and dump-flows'
// selectors parse: no panic; a packet built from an exact flow is at
// least an Ethernet header and extracts; a hex packet is decoded
// exactly.
func FuzzTraceInputs(f *testing.F) {
	for _, s := range []string{
		"in_port(1),eth(src=00:00:00:00:00:01,dst=00:00:00:00:00:02),eth_type(0x0800),ipv4(src=10.0.0.1,dst=10.0.0.2,proto=17,tos=0,ttl=64,frag=no),udp(src=1,dst=2)",
		"in_port(1),eth(),eth_type(0x8100),vlan(vid=5,pcp=0),encap(eth_type(0x86dd),ipv6(proto=58),icmpv6(type=135),nd(target=::1))",
		"in_port(2),eth(),eth_type(0x8847),mpls(label=1,tc=0,ttl=1,bos=1)",
		"0000000000020000000000010800", "0x00 11 22", "type=ovs,tc", "pmd=-1",
	} {
		f.Add(s, "push_vlan(vid=9,pcp=0),2,pop_vlan,1")
	}
	f.Fuzz(func(t *testing.T, s, acts string) {
		if b, isHex, err := parseHexPacket(s); isHex && err == nil && len(b) < 14 {
			t.Errorf("parseHexPacket(%q) = %d bytes", s, len(b))
		}
		if key, err := odp.ParseKey(s); err == nil {
			if k, err := odp.ToFlowKeysExact(key); err == nil {
				if pkt, err := composePacket(&k); err == nil {
					var got flowkeys.Key
					md := flowkeys.Metadata{InPort: k.InPort}
					if len(pkt) < 14 {
						t.Errorf("%q: built %d bytes", s, len(pkt))
					} else if err := flowkeys.Extract(pkt, &md, &got); err != nil {
						t.Errorf("%q: the built packet does not extract: %v", s, err)
					}
				}
			}
			_ = keyState(key)
		}
		_ = resolveActionNames(acts, map[string]uint32{"p": 3, "x": 9})
		_, _, _ = parseDumpSelectors(strings.Fields(s))
		_, _ = parseFeatures(s)
		_, _ = parseTopFields(s)
	})
}
