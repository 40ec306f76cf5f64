package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/ovsdp/ovsdp/internal/kernelct"
	"github.com/ovsdp/ovsdp/odp"
)

// ovs-dpctl's conntrack and fragment reassembly commands (Open vSwitch's
// lib/dpctl.c): the same arguments and output. On system@ they read the
// kernel's conntrack table (package kernelct); on netdev@ they use the
// datapath's odp.Conntracker, CTTuner and FragReassembler where it has
// them.

// conntrackCategory groups the commands in the help text.
const conntrackCategory = "conntrack"

func conntrackCommands() []*cli.Command {
	c := func(name, args, usage string, fn func(*env, []string) error) *cli.Command {
		return &cli.Command{Name: name, ArgsUsage: args, Usage: usage, Category: conntrackCategory, Action: action(fn)}
	}
	return []*cli.Command{
		c("dump-conntrack", "[-m] [-s] [DP] [zone=N]", "print the tracked connections (-m: IDs, status and TCP details; -s: counters and timeouts)", cmdDumpConntrack),
		c("flush-conntrack", "[DP] [zone=N] [ct-orig-tuple [ct-reply-tuple]]", "delete tracked connections: all, a zone's, or those matching the tuples (ct_nw_src=IP,ct_nw_dst=IP,ct_nw_proto=N,ct_tp_src=P,ct_tp_dst=P,icmp_id/type/code; ct_ipv6_src/dst)", cmdFlushConntrack),
		c("ct-stats-show", "[DP] [zone=N] [verbose]", "count the tracked connections per protocol (verbose or -m: per TCP state)", cmdCTStatsShow),
		c("ct-bkts", "[DP] [gt=N]", "show the connections per hash bucket (Open vSwitch's userspace tracker only)", cmdCTBkts),
		c("ct-set-maxconns", "[DP] MAXCONNS", "set the maximum number of tracked connections (system@: nf_conntrack_max)", cmdCTSetMaxConns),
		c("ct-get-maxconns", "[DP]", "print the maximum number of tracked connections", cmdCTGetCount("ct-get-maxconns", "maxconns", odp.Conntracker.MaxConns)),
		c("ct-get-nconns", "[DP]", "print the number of tracked connections", cmdCTGetCount("ct-get-nconns", "nconns", odp.Conntracker.ConntrackCount)),
		c("ct-enable-tcp-seq-chk", "[DP]", "check TCP sequence numbers (userspace trackers; the kernel has no such setting)", cmdCTSetTCPSeqChk(true)),
		c("ct-disable-tcp-seq-chk", "[DP]", "do not check TCP sequence numbers (userspace trackers)", cmdCTSetTCPSeqChk(false)),
		c("ct-get-tcp-seq-chk", "[DP]", "print whether TCP sequence numbers are checked (userspace trackers)", cmdCTGetTCPSeqChk),
		c("ct-get-sweep-interval", "[DP]", "print the expiry sweeper's interval in milliseconds (userspace trackers)", cmdCTGetSweep),
		c("ct-set-sweep-interval", "[DP] MS", "set the expiry sweeper's interval (userspace trackers)", cmdCTSetSweep),
		c("ipf-set-enabled", "[DP] v4|v6", "turn fragment reassembly on (userspace datapaths; the kernel always reassembles)", cmdIPFSetEnabled(true)),
		c("ipf-set-disabled", "[DP] v4|v6", "turn fragment reassembly off (userspace datapaths)", cmdIPFSetEnabled(false)),
		c("ipf-set-min-frag", "[DP] v4|v6 MINFRAGMENT", "set the smallest fragment accepted (userspace datapaths)", cmdIPFSetMinFrag),
		c("ipf-set-max-nfrags", "[DP] MAXFRAGS", "set the maximum number of fragments held (userspace datapaths)", cmdIPFSetMaxNFrags),
		c("ipf-get-status", "[DP]", "show the fragment reassembler's settings and counters (userspace datapaths)", cmdIPFGetStatus),
	}
}

// noMeaningError is the error of a command that the datapath has no
// meaning for (on the kernel: ovs-dpctl's words with its
// strerror(EOPNOTSUPP), and why). It matches syscall.EOPNOTSUPP and
// odp.ErrUnsupported.
type noMeaningError struct{ msg string }

func (e *noMeaningError) Error() string { return e.msg }

// Is reports whether target is EOPNOTSUPP or odp.ErrUnsupported.
func (e *noMeaningError) Is(target error) bool {
	return target == syscall.EOPNOTSUPP || target == odp.ErrUnsupported
}

// kernelNoMeaning returns a noMeaningError for dp.
func kernelNoMeaning(dp odp.Datapath, what, why string) error {
	return &noMeaningError{fmt.Sprintf("%s (Operation not supported): %s@%s: %s", what, dp.Type(), dp.Name(), why)}
}

// ctFeatureNotYet is the error on a datapath whose connection tracker
// lacks what a command needs (what names it).
func ctFeatureNotYet(dp odp.Datapath, what string) error {
	return &noMeaningError{fmt.Sprintf("%s (Operation not supported): %s@%s: not available on this datapath's tracker yet", what, dp.Type(), dp.Name())}
}

// ctNotYet is the error on a datapath without a connection tracker.
func ctNotYet(dp odp.Datapath) error {
	return &noMeaningError{fmt.Sprintf("%s@%s: conntrack not available on this datapath yet", dp.Type(), dp.Name())}
}

// ctDP opens the datapath of a conntrack command whose arguments, after
// the optional DP, are tail: args has tail or tail+1 items, the first
// then naming the datapath (ovs-dpctl's opt_dpif_open).
func ctDP(e *env, name string, args []string, tail int, usage string) (odp.Datapath, []string, error) {
	switch {
	case len(args) == tail+1:
		dp, err := openDP(e.ctx, args[0])
		return dp, args[1:], err
	case len(args) == tail:
		dp, _, err := optDP(e.ctx, nil, 1)
		return dp, args, err
	}
	return nil, nil, fmt.Errorf("%s: wrong number of arguments; usage: %s %s", name, name, usage)
}

// conntrackerOf returns dp's connection tracker and what closes it.
func conntrackerOf(dp odp.Datapath) (odp.Conntracker, func(), error) {
	if _, ok := dp.(systemDP); ok {
		t, err := kernelct.Open()
		if err != nil {
			return nil, nil, err
		}
		return t, func() { t.Close() }, nil
	}
	if ct, ok := dp.(odp.Conntracker); ok {
		return ct, func() {}, nil
	}
	return nil, nil, ctNotYet(dp)
}

// withConntracker runs fn with the tracker of the datapath that args name.
func withConntracker(e *env, name string, args []string, tail int, usage string, fn func(odp.Datapath, odp.Conntracker, []string) error) error {
	dp, rest, err := ctDP(e, name, args, tail, usage)
	if err != nil {
		return err
	}
	defer dp.Close()
	ct, done, err := conntrackerOf(dp)
	if err != nil {
		return err
	}
	defer done()
	return fn(dp, ct, rest)
}

// parseZoneArg parses "zone=N".
func parseZoneArg(s string) (uint16, error) {
	z, err := strconv.ParseUint(strings.TrimPrefix(s, "zone="), 10, 16)
	if err != nil {
		return 0, fmt.Errorf("%q: the zone is not a number from 0 to 65535", s)
	}
	return uint16(z), nil
}

// takeZone removes a trailing "zone=N" from args.
func takeZone(args []string, f *odp.CTFilter) ([]string, error) {
	if n := len(args); n > 0 && strings.HasPrefix(args[n-1], "zone=") {
		z, err := parseZoneArg(args[n-1])
		if err != nil {
			return nil, err
		}
		f.HasZone, f.Zone = true, z
		return args[:n-1], nil
	}
	return args, nil
}

// collect dumps the entries that f selects.
func collect(ctx context.Context, ct odp.Conntracker, f odp.CTFilter) ([]odp.CTEntry, error) {
	var out []odp.CTEntry
	err := ct.DumpConntrack(ctx, f, func(e *odp.CTEntry) error {
		if !f.HasZone || e.Zone == f.Zone {
			out = append(out, *e)
		}
		return nil
	})
	if err != nil {
		return out, fmt.Errorf("dumping conntrack entry: %w", err)
	}
	return out, nil
}

func cmdDumpConntrack(e *env, args []string) error {
	var f odp.CTFilter
	args, err := takeZone(args, &f)
	if err != nil {
		return fmt.Errorf("dump-conntrack: %w", err)
	}
	return withConntracker(e, "dump-conntrack", args, 0, "[-m] [-s] [DP] [zone=N]", func(_ odp.Datapath, ct odp.Conntracker, _ []string) error {
		entries, err := collect(e.ctx, ct, f)
		if e.json && err == nil {
			if entries == nil {
				entries = []odp.CTEntry{}
			}
			return e.printJSON(entries)
		}
		verbose, stats := e.c.Bool("more"), e.c.Bool("statistics")
		for i := range entries {
			fmt.Fprintln(e.out, odp.FormatCTEntry(&entries[i], verbose, stats, nil))
		}
		return err
	})
}

func cmdFlushConntrack(e *env, args []string) error {
	// The DP is the first argument when it is not a zone or a tuple (both
	// have "=", or are empty).
	tail := len(args)
	if len(args) > 0 && args[0] != "" && !strings.Contains(args[0], "=") {
		tail--
	}
	var rest []string
	if tail < len(args) {
		rest = args[1:]
	} else {
		rest = args
	}
	f, err := odp.ParseCTFilter(rest)
	if err != nil {
		return fmt.Errorf("flush-conntrack: %w", err)
	}
	return withConntracker(e, "flush-conntrack", args, tail, "[DP] [zone=N] [ct-orig-tuple [ct-reply-tuple]]", func(_ odp.Datapath, ct odp.Conntracker, _ []string) error {
		if err := ct.FlushConntrack(e.ctx, f); err != nil {
			return fmt.Errorf("failed to flush conntrack: %w", err)
		}
		return nil
	})
}

// ctProtoOrder is the order in which ct-stats-show prints protocols,
// with their names there.
var ctProtoOrder = []struct {
	proto uint8
	name  string
}{
	{odp.IPProtoTCP, "TCP"}, {odp.IPProtoUDP, "UDP"}, {odp.IPProtoUDPLite, "UDPLITE"},
	{odp.IPProtoSCTP, "SCTP"}, {odp.IPProtoICMP, "ICMP"}, {odp.IPProtoDCCP, "DCCP"}, {odp.IPProtoIGMP, "IGMP"},
}

// writeCTStats is ct-stats-show's output for entries (dpctl_ct_stats_show):
// ICMPv6 entries count in the total only, as there.
func writeCTStats(w io.Writer, entries []odp.CTEntry, verbose bool) {
	perProto := map[uint8]int{}
	other := 0
	var perState [odp.CTTCPMaxNum + 1]int
	for i := range entries {
		p := entries[i].Orig.Proto
		known := p == odp.IPProtoICMPv6
		for _, k := range ctProtoOrder {
			known = known || k.proto == p
		}
		if !known {
			other++
			continue
		}
		perProto[p]++
		if p == odp.IPProtoTCP {
			s := entries[i].ProtoInfo.State()
			if int(s) < len(perState) {
				perState[s]++
			}
		}
	}
	fmt.Fprintf(w, "Connections Stats:\n    Total: %d\n", len(entries))
	for _, k := range ctProtoOrder {
		n := perProto[k.proto]
		if n == 0 {
			continue
		}
		fmt.Fprintf(w, "  %s: %d\n", k.name, n)
		if k.proto == odp.IPProtoTCP && verbose {
			fmt.Fprintf(w, "    Conn per TCP states:\n")
			for s := odp.CTTCPState(0); s < odp.CTTCPMaxNum; s++ {
				if perState[s] != 0 {
					fmt.Fprintf(w, "\t  [%s]=%d\n", s, perState[s])
				}
			}
		}
	}
	if other != 0 {
		fmt.Fprintf(w, "  Other: %d\n", other)
	}
}

func cmdCTStatsShow(e *env, args []string) error {
	var f odp.CTFilter
	verbose := e.c.Bool("more")
	// ovs-dpctl takes "verbose" and "zone=N" from the end, in any order.
	for changed := true; changed && len(args) > 0; {
		changed = false
		last := args[len(args)-1]
		switch {
		case strings.HasPrefix(last, "verbose"):
			if last != "verbose" {
				return fmt.Errorf("ct-stats-show: %q: did you mean verbose?", last)
			}
			verbose, changed = true, true
		case strings.HasPrefix(last, "zone="):
			z, err := parseZoneArg(last)
			if err != nil {
				return fmt.Errorf("ct-stats-show: %w", err)
			}
			f.HasZone, f.Zone, changed = true, z, true
		}
		if changed {
			args = args[:len(args)-1]
		}
	}
	return withConntracker(e, "ct-stats-show", args, 0, "[DP] [zone=N] [verbose]", func(_ odp.Datapath, ct odp.Conntracker, _ []string) error {
		entries, err := collect(e.ctx, ct, f)
		if err != nil {
			return err
		}
		if e.json {
			stats, err := ct.ConntrackStats(e.ctx)
			if err != nil {
				return err
			}
			return e.printJSON(ctStatsJSON(entries, stats))
		}
		writeCTStats(e.out, entries, verbose)
		return nil
	})
}

// ctStatsJSONDoc is the JSON form of ct-stats-show: the per-protocol
// counts and the tracker's own counters (ctnetlink's per-CPU statistics
// summed, on the kernel datapath).
type ctStatsJSONDoc struct {
	Total       int            `json:"total"`
	PerProto    map[string]int `json:"per_protocol"`
	PerTCPState map[string]int `json:"per_tcp_state"`
	Tracker     odp.CTStats    `json:"tracker"`
}

func ctStatsJSON(entries []odp.CTEntry, s odp.CTStats) ctStatsJSONDoc {
	d := ctStatsJSONDoc{Total: len(entries), PerProto: map[string]int{}, PerTCPState: map[string]int{}, Tracker: s}
	for i := range entries {
		d.PerProto[odp.CTProtoName(entries[i].Orig.Proto)]++
		if entries[i].Orig.Proto == odp.IPProtoTCP {
			d.PerTCPState[entries[i].ProtoInfo.State().String()]++
		}
	}
	return d
}

// writeCTBkts is ct-bkts' output (dpctl_ct_bkts) for a table of total
// buckets.
func writeCTBkts(w io.Writer, entries []odp.CTEntry, total int, gt uint16) {
	fmt.Fprintf(w, "Total Buckets: %d\n", total)
	per := make([]uint32, total)
	for i := range entries {
		b := entries[i].Bucket
		if b >= 0 && b < int64(total) {
			per[b]++
		} else {
			fmt.Fprintf(w, "Bucket nr out of range: %d >= %d\n", b, total)
		}
	}
	fmt.Fprintf(w, "Current Connections: %d\n\n", len(entries))
	if total == 0 || len(entries) == 0 {
		return
	}
	fmt.Fprintf(w, "+-----------+-----------------------------------------+\n")
	fmt.Fprintf(w, "|  Buckets  |         Connections per Buckets         |\n")
	fmt.Fprintf(w, "+-----------+-----------------------------------------+")
	for i := 0; i < total; i++ {
		if i%8 == 0 {
			fmt.Fprintf(w, "\n %3d..%3d   | ", i, i+7)
		}
		if per[i] > uint32(gt) {
			fmt.Fprintf(w, "%5d", per[i])
		} else {
			fmt.Fprintf(w, "%5s", ".")
		}
	}
	fmt.Fprintf(w, "\n\n")
}

func cmdCTBkts(e *env, args []string) error {
	var gt uint16
	if n := len(args); n > 0 && strings.HasPrefix(args[n-1], "gt=") {
		v, err := strconv.ParseUint(args[n-1][len("gt="):], 10, 16)
		if err != nil {
			return fmt.Errorf("ct-bkts: %q: the threshold is not a number from 0 to 65535", args[n-1])
		}
		gt, args = uint16(v), args[:n-1]
	}
	return withConntracker(e, "ct-bkts", args, 0, "[DP] [gt=N]", func(dp odp.Datapath, ct odp.Conntracker, _ []string) error {
		bc, ok := ct.(odp.CTBucketCounter)
		if !ok && dp.Type() != "system" {
			return ctFeatureNotYet(dp, "ct-bkts: the tracker's buckets")
		}
		if !ok {
			// ovs-dpctl's answer on the kernel datapath, with success.
			fmt.Fprintf(e.out, "Command is available for UserSpace ConnTracker only.\n")
			return nil
		}
		total, err := bc.ConntrackBuckets(e.ctx)
		if err != nil {
			return fmt.Errorf("starting conntrack dump: %w", err)
		}
		entries, err := collect(e.ctx, ct, odp.CTFilter{})
		writeCTBkts(e.out, entries, total, gt)
		return err
	})
}

// parseU32Arg parses a number as ovs-dpctl's "%"SCNu32 does, strictly.
func parseU32Arg(s, what string) (uint32, error) {
	v, err := strconv.ParseUint(s, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("%s missing or malformed: %q is not a number from 0 to 4294967295", what, s)
	}
	return uint32(v), nil
}

func cmdCTSetMaxConns(e *env, args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("ct-set-maxconns: maxconns missing or malformed; usage: ct-set-maxconns [DP] MAXCONNS")
	}
	n, err := parseU32Arg(args[len(args)-1], "maxconns")
	if err != nil {
		return fmt.Errorf("ct-set-maxconns: %w", err)
	}
	return withConntracker(e, "ct-set-maxconns", args, 1, "[DP] MAXCONNS", func(_ odp.Datapath, ct odp.Conntracker, _ []string) error {
		if err := ct.SetMaxConns(e.ctx, n); err != nil {
			return fmt.Errorf("ct set maxconns failed: %w", err)
		}
		fmt.Fprint(e.out, "setting maxconns successful")
		return nil
	})
}

// cmdCTGetCount is ct-get-maxconns and ct-get-nconns: the number that
// get reads, on a line; what names it in ovs-dpctl's error.
func cmdCTGetCount(name, what string, get func(odp.Conntracker, context.Context) (uint32, error)) func(*env, []string) error {
	return func(e *env, args []string) error {
		return withConntracker(e, name, args, 0, "[DP]", func(_ odp.Datapath, ct odp.Conntracker, _ []string) error {
			n, err := get(ct, e.ctx)
			if err != nil {
				return fmt.Errorf("%s could not be retrieved: %w", what, err)
			}
			fmt.Fprintf(e.out, "%d\n", n)
			return nil
		})
	}
}

// Why the kernel datapath has no CTTuner or FragReassembler settings.
const (
	kernelNoTuner = "the kernel's conntrack has no such setting (its TCP window checks follow the nf_conntrack_tcp_be_liberal sysctl, its garbage collector is not tunable)"
	kernelNoIPF   = "the kernel's ct action reassembles fragments itself (nf_defrag_ipv4/ipv6), with no such settings"
)

// withFeature runs fn with the optional interface T (odp.CTTuner,
// odp.FragReassembler) of the datapath that args name, and then prints
// ok, ovs-dpctl's message of success (none when empty). On system@ it
// fails with ovs-dpctl's words (what) and why the kernel has no such
// thing; on a datapath without T, with ctNotYet; an error of fn is
// prefixed with what.
func withFeature[T any](e *env, name string, args []string, tail int, usage, what, why, ok string, fn func(T) error) error {
	dp, _, err := ctDP(e, name, args, tail, usage)
	if err != nil {
		return err
	}
	defer dp.Close()
	if _, isKernel := dp.(systemDP); isKernel {
		return kernelNoMeaning(dp, what, why)
	}
	t, has := dp.(T)
	if !has {
		if _, tracks := dp.(odp.Conntracker); tracks {
			return ctFeatureNotYet(dp, what)
		}
		return ctNotYet(dp)
	}
	if err := fn(t); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	fmt.Fprint(e.out, ok)
	return nil
}

// withTuner is withFeature for odp.CTTuner.
func withTuner(e *env, name string, args []string, tail int, usage, what, ok string, fn func(odp.CTTuner) error) error {
	return withFeature(e, name, args, tail, usage, what, kernelNoTuner, ok, fn)
}

// withIPF is withFeature for odp.FragReassembler.
func withIPF(e *env, name string, args []string, tail int, usage, what, ok string, fn func(odp.FragReassembler) error) error {
	return withFeature(e, name, args, tail, usage, what, kernelNoIPF, ok, fn)
}

func cmdCTSetTCPSeqChk(on bool) func(*env, []string) error {
	verb, name := "disabling", "ct-disable-tcp-seq-chk"
	if on {
		verb, name = "enabling", "ct-enable-tcp-seq-chk"
	}
	return func(e *env, args []string) error {
		return withTuner(e, name, args, 0, "[DP]", verb+" TCP sequence checking failed", verb+" TCP sequence checking successful",
			func(t odp.CTTuner) error { return t.SetTCPSeqCheck(e.ctx, on) })
	}
}

func cmdCTGetTCPSeqChk(e *env, args []string) error {
	return withTuner(e, "ct-get-tcp-seq-chk", args, 0, "[DP]", "TCP sequence checking query failed", "", func(t odp.CTTuner) error {
		on, err := t.TCPSeqCheck(e.ctx)
		if err == nil {
			fmt.Fprintf(e.out, "TCP sequence checking: %s\n", map[bool]string{false: "disabled", true: "enabled"}[on])
		}
		return err
	})
}

func cmdCTSetSweep(e *env, args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("ct-set-sweep-interval: invalid sweep value; usage: ct-set-sweep-interval [DP] MS")
	}
	ms, err := strconv.ParseUint(args[len(args)-1], 10, 32)
	if err != nil || ms == 0 {
		return fmt.Errorf("ct-set-sweep-interval: invalid sweep value %q (milliseconds, 1 to 4294967295)", args[len(args)-1])
	}
	return withTuner(e, "ct-set-sweep-interval", args, 1, "[DP] MS", "failed to set the sweep interval", "setting sweep interval successful\n",
		func(t odp.CTTuner) error { return t.SetSweepInterval(e.ctx, uint32(ms)) })
}

func cmdCTGetSweep(e *env, args []string) error {
	return withTuner(e, "ct-get-sweep-interval", args, 0, "[DP]", "failed to get the sweep interval", "", func(t odp.CTTuner) error {
		ms, err := t.SweepInterval(e.ctx)
		if err == nil {
			fmt.Fprintf(e.out, "%d", ms)
		}
		return err
	})
}

// parseFamily parses ipf's "v4" or "v6".
func parseFamily(s string) (v6 bool, err error) {
	switch s {
	case "v4":
		return false, nil
	case "v6":
		return true, nil
	}
	return false, fmt.Errorf("parameter missing: 'v4' for IPv4 or 'v6' for IPv6 (got %q)", s)
}

func cmdIPFSetEnabled(on bool) func(*env, []string) error {
	verb, name := "disabling", "ipf-set-disabled"
	if on {
		verb, name = "enabling", "ipf-set-enabled"
	}
	return func(e *env, args []string) error {
		if len(args) == 0 {
			return fmt.Errorf("%s: parameter missing: 'v4' for IPv4 or 'v6' for IPv6", name)
		}
		v6, err := parseFamily(args[len(args)-1])
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		return withIPF(e, name, args, 1, "[DP] v4|v6", verb+" fragmentation reassembly failed", verb+" fragmentation reassembly successful",
			func(r odp.FragReassembler) error { return r.SetIPFEnabled(e.ctx, v6, on) })
	}
}

func cmdIPFSetMinFrag(e *env, args []string) error {
	if len(args) < 2 {
		return fmt.Errorf("ipf-set-min-frag: wrong number of arguments; usage: ipf-set-min-frag [DP] v4|v6 MINFRAGMENT")
	}
	v6, err := parseFamily(args[len(args)-2])
	if err != nil {
		return fmt.Errorf("ipf-set-min-frag: %w", err)
	}
	size, err := strconv.ParseUint(args[len(args)-1], 10, 32)
	if err != nil {
		return fmt.Errorf("ipf-set-min-frag: parameter missing for minimum fragment size: %q is not a number", args[len(args)-1])
	}
	return withIPF(e, "ipf-set-min-frag", args, 2, "[DP] v4|v6 MINFRAGMENT", "requested minimum fragment size too small; see documentation", "setting minimum fragment size successful",
		func(r odp.FragReassembler) error { return r.SetIPFMinFrag(e.ctx, v6, uint32(size)) })
}

func cmdIPFSetMaxNFrags(e *env, args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("ipf-set-max-nfrags: parameter missing for maximum fragments; usage: ipf-set-max-nfrags [DP] MAXFRAGS")
	}
	n, err := strconv.ParseUint(args[len(args)-1], 10, 32)
	if err != nil {
		return fmt.Errorf("ipf-set-max-nfrags: parameter missing for maximum fragments: %q is not a number", args[len(args)-1])
	}
	return withIPF(e, "ipf-set-max-nfrags", args, 1, "[DP] MAXFRAGS", "setting maximum fragments failed", "setting maximum fragments successful",
		func(r odp.FragReassembler) error { return r.SetIPFMaxFrags(e.ctx, uint32(n)) })
}

// ipfFamily is one family's status, with its name as ipf-get-status
// prints it.
type ipfFamily struct {
	name string
	st   odp.IPFStatus
}

func ipfFamilies(s odp.IPFStatusAll) []ipfFamily { return []ipfFamily{{"v4", s.V4}, {"v6", s.V6}} }

// writeIPFStatus is ipf-get-status' output (dpctl_ct_ipf_get_status).
func writeIPFStatus(w io.Writer, s odp.IPFStatusAll) {
	b := func(v bool) int {
		if v {
			return 1
		}
		return 0
	}
	fmt.Fprintf(w, "        Fragmentation Module Status\n")
	fmt.Fprintf(w, "        ---------------------------\n")
	fmt.Fprintf(w, "        v4 enabled: %d\n", b(s.V4.Enabled))
	fmt.Fprintf(w, "        v6 enabled: %d\n", b(s.V6.Enabled))
	fmt.Fprintf(w, "        max num frags (v4/v6): %d\n", s.MaxFrags)
	fmt.Fprintf(w, "        num frag: %d\n", s.NFrags)
	for _, f := range ipfFamilies(s) {
		fmt.Fprintf(w, "        min %s frag size: %d\n", f.name, f.st.MinFragSize)
		fmt.Fprintf(w, "        %s frags accepted: %d\n", f.name, f.st.Accepted)
		fmt.Fprintf(w, "        %s frags completed: %d\n", f.name, f.st.CompletedSent)
		fmt.Fprintf(w, "        %s frags expired: %d\n", f.name, f.st.ExpiredSent)
		fmt.Fprintf(w, "        %s frags too small: %d\n", f.name, f.st.TooSmall)
		fmt.Fprintf(w, "        %s frags overlapped: %d\n", f.name, f.st.Overlap)
		fmt.Fprintf(w, "        %s frags purged: %d\n", f.name, f.st.Purged)
	}
}

func cmdIPFGetStatus(e *env, args []string) error {
	return withIPF(e, "ipf-get-status", args, 0, "[DP]", "ipf status could not be retrieved", "", func(r odp.FragReassembler) error {
		s, err := r.IPFStatus(e.ctx)
		if err != nil {
			return err
		}
		var qs []odp.IPFQueue
		if e.c.Bool("more") {
			if qs, err = r.IPFQueues(e.ctx); err != nil {
				return fmt.Errorf("starting ipf list dump: %w", err)
			}
		}
		if e.json {
			return e.printJSON(struct {
				odp.IPFStatusAll
				Queues []odp.IPFQueue `json:",omitempty"`
			}{s, qs})
		}
		writeIPFStatus(e.out, s)
		if e.c.Bool("more") {
			writeIPFQueues(e.out, s, qs)
		}
		return nil
	})
}

// writeIPFQueues is ipf-get-status -m's addition: the counters
// ovs-dpctl does not have, then ovs-dpctl's "Fragment Lists" in
// ipf_dump_create's format (the lists are not keyed by recirc_id, as the
// kernel's are not: it is 0).
func writeIPFQueues(w io.Writer, s odp.IPFStatusAll, qs []odp.IPFQueue) {
	for _, f := range ipfFamilies(s) {
		fmt.Fprintf(w, "        %s frags refused for lack of room: %d\n", f.name, f.st.NoRoom)
		fmt.Fprintf(w, "        %s frags invalid: %d\n", f.name, f.st.Invalid)
	}
	fmt.Fprintf(w, "\n        Fragment Lists:\n\n")
	for _, q := range qs {
		dl := 0x0800
		if q.Src.Is6() && !q.Src.Is4In6() {
			dl = 0x86dd
		}
		state := "other frag"
		switch {
		case q.First && q.Last:
			state = "first/last frag"
		case q.First:
			state = "first frag"
		case q.Last:
			state = "last frag"
		}
		fmt.Fprintf(w, "(src=%s,dst=%s,recirc_id=0,ip_id=%d,dl_type=0x%x,zone=%d,nw_proto=%d,num_fragments=%d,state=%s)\n",
			q.Src, q.Dst, q.ID, dl, q.Zone, q.Proto, q.Frags, state)
	}
}
