package main

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/ovsdp/ovsdp/odp"
)

// compatCommands are ovs-dpctl's commands that have no datapath-model
// counterpart elsewhere in dpctl: normalize-actions, offload-stats-show,
// and the conntrack and fragment reassembly ones.
func compatCommands() []*cli.Command {
	cmds := []*cli.Command{
		{Name: "normalize-actions", Usage: "print ACTIONS grouped by the VLAN and MPLS headers each applies to (as ovs-dpctl)", ArgsUsage: "FLOW ACTIONS [NAME=NUMBER...]", Action: action(cmdNormalizeActions)},
		{Name: "offload-stats-show", Usage: "show hardware offload statistics (dpctl's datapaths offload nothing)", ArgsUsage: "[DP]", Action: action(cmdOffloadStatsShow)},
	}
	// ovs-dpctl's order: dump-conntrack, dump-conntrack-exp, flush-conntrack...
	ct := conntrackCommands()
	cmds = append(cmds, ct[0])
	for _, c := range refusedConntrackCommands {
		msg := c[2]
		cmds = append(cmds, &cli.Command{Name: c[0], ArgsUsage: c[1], Category: "conntrack (not yet)",
			Usage: "refused: " + msg, Action: func(*cli.Context) error {
				return fmt.Errorf("'%s' is not supported: %s", c[0], msg)
			}})
	}
	cmds = append(cmds, ct[1:]...)
	return cmds
}

// refusedConntrackCommands are ovs-dpctl's conntrack commands that dpctl
// refuses: name, ovs-dpctl's arguments, why.
var refusedConntrackCommands = [][3]string{
	{"dump-conntrack-exp", "[DP] [zone=N]", "conntrack expectations are not read yet (dump-conntrack shows the related connections with -m, parent=...)"},
}

// vlanHdr is one VLAN header of normalize-actions' packet state.
type vlanHdr struct{ tpid, tci uint16 }

// normState is the packet's headers that normalize-actions follows: two
// VLAN headers (outermost first, as Open vSwitch's struct flow keeps
// them) and the top MPLS label stack entry.
type normState struct {
	vlans   [2]vlanHdr
	hasMPLS bool
	mpls    uint32
}

// less orders states as ovs-dpctl does (flow_compare_3way, a memcmp of
// struct flow: the VLAN headers' big-endian TPID and TCI in order).
func (s normState) less(o normState) bool {
	for i := range s.vlans {
		if s.vlans[i].tpid != o.vlans[i].tpid {
			return s.vlans[i].tpid < o.vlans[i].tpid
		}
		if s.vlans[i].tci != o.vlans[i].tci {
			return s.vlans[i].tci < o.vlans[i].tci
		}
	}
	return false
}

// prefix is the state as normalize-actions prints it before the actions.
func (s normState) prefix() string {
	var b strings.Builder
	for i, v := range s.vlans {
		if v.tci == 0 {
			if i == 0 {
				b.WriteString("no vlan: ")
			}
			break
		}
		b.WriteString("vlan(")
		if v.tpid != 0x8100 {
			fmt.Fprintf(&b, "tpid=0x%04x,", v.tpid)
		}
		fmt.Fprintf(&b, "vid=%d,pcp=%d): ", v.tci&0x0fff, v.tci>>13)
	}
	if s.hasMPLS {
		fmt.Fprintf(&b, "mpls(label=%d,tc=%d,ttl=%d): ", s.mpls>>12, (s.mpls>>9)&7, s.mpls&0xff)
	} else {
		b.WriteString("no mpls: ")
	}
	return b.String()
}

// keyState reads normalize-actions' initial state from a flow key: the
// VLAN headers (an eth_type of a VLAN TPID with its vlan attribute, and
// one more inside encap) and the first MPLS label stack entry.
func keyState(key odp.FlowKey) normState {
	var s normState
	level := 0
	for k := key; k != nil && level <= len(s.vlans); {
		var next odp.FlowKey
		var et uint16
		var tci odp.VLAN
		hasTCI := false
		for _, a := range k {
			switch v := a.(type) {
			case odp.Ethertype:
				et = uint16(v)
			case odp.VLAN:
				tci, hasTCI = v, true
			case odp.Encap:
				next = v.Key
			case odp.MPLS:
				if len(v) > 0 {
					s.hasMPLS, s.mpls = true, v[0]
				}
			}
		}
		if hasTCI && level < len(s.vlans) {
			s.vlans[level] = vlanHdr{tpid: et, tci: uint16(tci)}
			level++
		}
		k = next
	}
	return s
}

// portAssign is one NAME=NUMBER argument of normalize-actions.
var portAssign = regexp.MustCompile(`^([^=]{1,15})=(-?[0-9]+)`)

// resolveActionNames replaces the top-level words of an action list
// that are port names (output to a named port) by their numbers.
func resolveActionNames(s string, names map[string]uint32) string {
	if len(names) == 0 {
		return s
	}
	var b strings.Builder
	depth, start := 0, 0
	flush := func(end int) {
		w := s[start:end]
		if n, ok := names[strings.TrimSpace(w)]; ok && depth == 0 {
			w = strconv.FormatUint(uint64(n), 10)
		}
		b.WriteString(w)
	}
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(':
			depth++
		case ')':
			if depth > 0 {
				depth--
			}
		case ',':
			if depth == 0 {
				flush(i)
				b.WriteByte(',')
				start = i + 1
			}
		}
	}
	flush(len(s))
	return b.String()
}

// sortOutputRuns sorts every run of consecutive output actions by port,
// as ovs-dpctl's sort_output_actions does.
func sortOutputRuns(as odp.Actions) {
	for i := 0; i < len(as); {
		if _, ok := as[i].(odp.Output); !ok {
			i++
			continue
		}
		j := i
		for j < len(as) {
			if _, ok := as[j].(odp.Output); !ok {
				break
			}
			j++
		}
		run := as[i:j]
		sort.SliceStable(run, func(a, b int) bool { return run[a].(odp.Output).Port < run[b].(odp.Output).Port })
		i = j
	}
}

// cmdNormalizeActions is ovs-dpctl's normalize-actions FLOW ACTIONS
// [NAME=NUMBER...]: it follows the VLAN headers that ACTIONS push and
// pop, starting from FLOW's, and prints the other actions grouped by the
// headers they apply to, output ports sorted within each run, so that
// equivalent action lists print the same. Unlike ovs-dpctl it needs only
// the key's VLAN and MPLS attributes (ovs-dpctl fails on a key that does
// not convert to a complete flow), ends each group with a newline
// (ovs-dpctl prints the groups on one line) and prints a TPID in the
// right byte order (ovs-dpctl prints 0x88a8 as 0xa888).
func cmdNormalizeActions(e *env, args []string) error {
	if len(args) < 2 {
		return fmt.Errorf("'normalize-actions' command requires at least 2 arguments; usage: normalize-actions FLOW ACTIONS [NAME=NUMBER...]")
	}
	names := map[string]uint32{}
	for _, a := range args[2:] {
		m := portAssign.FindStringSubmatch(a)
		if m == nil {
			return fmt.Errorf("%s: expected NAME=NUMBER", a)
		}
		n, err := strconv.ParseInt(m[2], 10, 64)
		if err != nil || n < 0 || n > 0xffffffff {
			return fmt.Errorf("%s: port number %s out of range", a, m[2])
		}
		names[m[1]] = uint32(n)
	}
	lookup := func(s string) (uint32, bool) { n, ok := names[s]; return n, ok }
	key, _, err := odp.ParseMaskedKeyWith(args[0], lookup)
	if err != nil {
		return fmt.Errorf("parsing flow key: %w", err)
	}
	opts := odp.FormatOptions{Verbose: e.c.Bool("more")}
	var b strings.Builder
	fmt.Fprintf(&b, "input flow: %s\n", odp.FormatKeyWith(key, nil, opts))
	acts, err := odp.ParseActions(resolveActionNames(args[1], names))
	if err != nil {
		e.out.Write([]byte(b.String()))
		return fmt.Errorf("parsing actions: %w", err)
	}
	if opts.Verbose {
		fmt.Fprintf(&b, "input actions: %s\n", odp.FormatActionsWith(acts, opts))
	}
	type group struct {
		st   normState
		acts odp.Actions
	}
	var groups []*group
	st := keyState(key)
	for _, a := range acts {
		switch v := a.(type) {
		case odp.PopVLAN:
			st.vlans[0], st.vlans[1] = st.vlans[1], vlanHdr{}
			continue
		case odp.PushVLAN:
			st.vlans[1], st.vlans[0] = st.vlans[0], vlanHdr{tpid: v.TPID, tci: v.TCI}
			continue
		}
		var g *group
		for _, x := range groups {
			if x.st == st {
				g = x
				break
			}
		}
		if g == nil {
			g = &group{st: st}
			groups = append(groups, g)
		}
		g.acts = append(g.acts, a)
	}
	sort.SliceStable(groups, func(i, j int) bool { return groups[i].st.less(groups[j].st) })
	for _, g := range groups {
		sortOutputRuns(g.acts)
		fmt.Fprintf(&b, "%s%s\n", g.st.prefix(), odp.FormatActionsWith(g.acts, opts))
	}
	_, err = e.out.Write([]byte(b.String()))
	return err
}

// cmdOffloadStatsShow is offload-stats-show [DP]: neither of dpctl's
// datapaths offloads flows to hardware, so the report has no counters.
// (ovs-dpctl 3.1 fails with "Operation not supported" on a kernel
// datapath, which has no offload statistics either.)
func cmdOffloadStatsShow(e *env, args []string) error {
	if len(args) > 1 {
		return fmt.Errorf("'offload-stats-show' command takes at most 1 arguments")
	}
	dp, _, err := optDP(e.ctx, args, 1)
	if err != nil {
		return err
	}
	dp.Close()
	if e.json {
		return e.printJSON(map[string]any{})
	}
	_, err = fmt.Fprintln(e.out, "HW Offload stats:")
	return err
}
