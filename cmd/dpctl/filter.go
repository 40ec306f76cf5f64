package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/ovsdp/ovsdp/flowkeys"
	"github.com/ovsdp/ovsdp/odp"
	"github.com/ovsdp/ovsdp/policy"
)

// newFlowFilter returns the predicate of dump-flows' filter=FLOW. FLOW
// is in the OpenFlow match syntax of ovs-ofctl (the subset package policy
// parses: in_port, dl_src, dl_dst, dl_type, dl_vlan, nw_src, nw_dst,
// nw_proto, nw_tos, nw_ttl, tp_src, tp_dst, icmp_type, icmp_code,
// arp_spa, arp_tpa, ipv6_src, ipv6_dst and the shorthands ip, ipv6, tcp,
// udp, icmp, icmp6, arp); in_port may name a port. As in ovs-dpctl, a
// flow passes when its key equals the filter on every bit that both the
// filter and the flow's mask cover: a field the flow wildcards does not
// exclude it. A flow whose key cannot be read as a flowkeys.Key (a
// terse flow, or a key that uses attributes outside it) does not pass.
func newFlowFilter(filter string, portNumber func(string) (uint32, bool)) (func(*odp.Flow) bool, error) {
	if filter == "" {
		return func(*odp.Flow) bool { return true }, nil
	}
	text, err := resolvePortNames(filter, portNumber)
	if err != nil {
		return nil, fmt.Errorf("failed to parse filter (%w)", err)
	}
	m, err := policy.ParseMatch(text)
	if err != nil {
		return nil, fmt.Errorf("failed to parse filter %q (%w)", filter, err)
	}
	return func(f *odp.Flow) bool {
		if f.Key == nil {
			return false
		}
		return filterMatches(&m, f.Key, f.Mask)
	}, nil
}

// filterMatches reports whether the flow key/mask passes filter m.
func filterMatches(m *policy.Match, key, mask odp.FlowKey) bool {
	k, km, err := odp.ToFlowKeys(key, mask)
	if err != nil {
		return false
	}
	both := km
	bw, fw := both.Words(), m.Mask.Words()
	for i := range bw {
		bw[i] &= fw[i]
	}
	return flowkeys.EqualMasked(&k, &m.Value, &both, flowkeys.FullRange)
}

// resolvePortNames replaces "in_port=NAME" by the port's number.
func resolvePortNames(s string, portNumber func(string) (uint32, bool)) (string, error) {
	if !strings.Contains(s, "in_port=") {
		return s, nil
	}
	var b strings.Builder
	i := 0
	for i < len(s) {
		j := strings.Index(s[i:], "in_port=")
		if j < 0 {
			b.WriteString(s[i:])
			break
		}
		j += i
		start := j + len("in_port=")
		end := start
		for end < len(s) && !strings.ContainsRune(", \t\r", rune(s[end])) {
			end++
		}
		name := s[start:end]
		b.WriteString(s[i:start])
		if _, err := strconv.ParseUint(name, 0, 32); err == nil || name == "" || (j > 0 && !strings.ContainsRune(", \t\r", rune(s[j-1]))) {
			b.WriteString(name)
		} else if n, ok := portNumber(name); ok {
			b.WriteString(strconv.FormatUint(uint64(n), 10))
		} else {
			return "", fmt.Errorf("column %d: in_port=%s: no port has this name", start+1, name)
		}
		i = end
	}
	return b.String(), nil
}

// dumpSelectors are dump-flows' trailing filter=, type= and pmd=
// arguments.
type dumpSelectors struct {
	filter string
	// offloadOnly: every type given is an offload type (tc, dpdk,
	// offloaded, partially-offloaded), which selects no flow: dpctl's
	// datapaths offload nothing.
	offloadOnly bool
	// pmd is the pmd= thread; hasPMD tells whether it was given.
	pmd    int
	hasPMD bool
}

// selects reports whether the type= and pmd= selectors keep the flows of
// a datapath of type dpType ("system" or "netdev"). Neither datapath has
// PMD threads: a netdev@ datapath's flows are those of the non-PMD
// thread (pmd=-1, as in Open vSwitch's userspace datapath); a system@
// datapath's belong to no thread, so any pmd= selects none of them, as
// with ovs-dpctl.
func (s dumpSelectors) selects(dpType string) bool {
	if s.offloadOnly {
		return false
	}
	if s.hasPMD {
		return dpType == "netdev" && s.pmd == -1
	}
	return true
}

// parseDumpSelectors takes dump-flows' filter=, type= and pmd= off the
// end of args (in any order, each once), as ovs-dpctl does. ovs-dpctl
// refuses type= ("use ovs-appctl dpctl/dump-flows"); dpctl accepts it
// with ovs-appctl's meaning.
func parseDumpSelectors(args []string) (dumpSelectors, []string, error) {
	var s dumpSelectors
	seen := map[string]bool{}
	for len(args) > 0 {
		a := args[len(args)-1]
		name, val, ok := strings.Cut(a, "=")
		if !ok || (name != "filter" && name != "type" && name != "pmd") {
			break
		}
		if seen[name] {
			return s, nil, fmt.Errorf("dump-flows: %s= given twice", name)
		}
		seen[name] = true
		args = args[:len(args)-1]
		switch name {
		case "filter":
			s.filter = val
		case "type":
			s.offloadOnly = true
			for _, t := range strings.Split(val, ",") {
				switch t {
				case "ovs", "non-offloaded", "all":
					s.offloadOnly = false
				case "tc", "dpdk", "offloaded", "partially-offloaded":
				default:
					return s, nil, fmt.Errorf("dump-flows: failed to parse type (%q): want ovs, tc, dpdk, offloaded, non-offloaded, partially-offloaded or all", t)
				}
			}
		case "pmd":
			n, err := strconv.Atoi(val)
			if err != nil || n < -1 {
				return s, nil, fmt.Errorf("dump-flows: pmd=%s: want a core number, or -1 for the non-PMD thread", val)
			}
			s.pmd, s.hasPMD = n, true
		}
	}
	return s, args, nil
}
