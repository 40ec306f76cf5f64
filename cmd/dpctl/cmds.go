package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/ovsdp/ovsdp/genl"
	"github.com/ovsdp/ovsdp/internal/monoclock"
	"github.com/ovsdp/ovsdp/odp"
)

// Global options, accepted before or after the command name as
// ovs-dpctl's getopt does.
var globalFlags = []cli.Flag{
	&cli.BoolFlag{Name: "statistics", Aliases: []string{"s"}, Usage: "print statistics (show, mod-flow, del-flow; dump-conntrack: counters and timeouts)"},
	&cli.BoolFlag{Name: "more", Aliases: []string{"m"}, Usage: "more verbose output (dump-flows, get-flow: UFIDs and wildcarded fields; dump-conntrack, ct-stats-show: IDs, status and TCP details)"},
	&cli.BoolFlag{Name: "names", Usage: "show port names instead of numbers in flows"},
	&cli.BoolFlag{Name: "no-names", Usage: "show port numbers in flows (default)"},
	&cli.BoolFlag{Name: "may-create", Usage: "mod-flow: create the flow if it does not exist"},
	&cli.BoolFlag{Name: "clear", Usage: "mod-flow: reset the flow's statistics"},
	&cli.StringFlag{Name: "format", Aliases: []string{"f"}, Value: "text", Usage: "output format: text or json"},
	&cli.StringFlag{Name: "netns", Usage: "act inside the network namespace `NAME` (as with ip netns exec NAME)"},
	&cli.StringFlag{Name: "group", Usage: "add-dp netdev@NAME: let the members of group `G` use the datapath (its sockets become 0660 in a 0750 directory; default: root only)"},
}

// permuteFlags moves the global options found after the command name to
// the front, so that "dpctl dump-flows -m" works like "dpctl -m
// dump-flows", as with ovs-dpctl. Arguments after "--" stay in place.
func permuteFlags(args []string) []string {
	if len(args) < 2 {
		return args
	}
	// The spellings of the global options, and those that take a value
	// (as printOptions tells them apart).
	known, valued := map[string]bool{}, map[string]bool{}
	for _, f := range globalFlags {
		tf, ok := f.(cli.DocGenerationFlag)
		takes := ok && tf.TakesValue()
		for _, n := range f.Names() {
			s := "--" + n
			if len(n) == 1 {
				s = "-" + n
			}
			known[s], valued[s] = true, takes
		}
	}
	var flags, rest, features []string
	for i := 1; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			rest = append(rest, args[i:]...)
			break
		}
		if repl, ok := normalizeCompatArg(a); ok {
			flags = append(flags, repl...)
			continue
		}
		name, _, hasValue := strings.Cut(a, "=")
		if a == "-V" && i+1 < len(args) && addDPFeaturesArg(args[1:i], valued) {
			// add-dp -V VERSION:FEATURES: add-dp's own option, put
			// right after the command name (where urfave/cli reads a
			// command's options) below.
			features = append(features, "--features", args[i+1])
			i++
			continue
		}
		if known[name] {
			flags = append(flags, a)
			if valued[name] && !hasValue && i+1 < len(args) {
				i++
				flags = append(flags, args[i])
			}
			continue
		}
		rest = append(rest, a)
	}
	out := append([]string{args[0]}, flags...)
	if len(features) > 0 && len(rest) > 0 {
		out = append(out, rest[0])
		out = append(out, features...)
		rest = rest[1:]
	}
	return append(out, rest...)
}

// env is what every command needs: a context, the options and the
// output.
type env struct {
	ctx  context.Context
	c    *cli.Context
	out  io.Writer
	json bool

	// The datapath's ports, read once when a command needs them.
	portName map[uint32]string
	portNum  map[string]uint32
}

func newEnv(c *cli.Context) (*env, error) {
	f := c.String("format")
	if f != "text" && f != "json" {
		return nil, fmt.Errorf("--format %q: want text or json", f)
	}
	return &env{ctx: c.Context, c: c, out: c.App.Writer, json: f == "json"}, nil
}

// printJSON writes v as one JSON document.
func (e *env) printJSON(v any) error {
	enc := json.NewEncoder(e.out)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// action wraps a command body with the common environment.
func action(fn func(e *env, args []string) error) cli.ActionFunc {
	return func(c *cli.Context) error {
		e, err := newEnv(c)
		if err != nil {
			return err
		}
		return fn(e, c.Args().Slice())
	}
}

func needArgs(args []string, min, max int, usage string) error {
	if len(args) < min || (max >= 0 && len(args) > max) {
		return fmt.Errorf("wrong number of arguments; usage: %s", usage)
	}
	return nil
}

func datapathCommands() []*cli.Command {
	return []*cli.Command{
		{Name: "add-dp", Usage: "create datapath DP, optionally with interfaces", ArgsUsage: "[-V [VERSION:]FEATURES] DP [IFACE...]", Action: action(cmdAddDPFeatures),
			Flags: []cli.Flag{&cli.StringFlag{Name: "features", Usage: "create a kernel datapath with these user features instead of negotiating them: per-cpu, per-vport, names joined by + (unaligned, vport-pids, tc-recirc-sharing, dispatch-upcall-per-cpu) or a number; VERSION: checks the ovs_datapath version (2); also spelt -V after add-dp"}}},
		{Name: "del-dp", Usage: "delete datapath DP", ArgsUsage: "DP", Action: action(cmdDelDP)},
		{Name: "dump-dps", Usage: "list every datapath", Action: action(cmdDumpDPs)},
		{Name: "show", Usage: "show datapaths, their ports and statistics", ArgsUsage: "[DP...]", Action: action(cmdShow)},
		{Name: "add-if", Usage: "add interfaces to DP", ArgsUsage: "DP IFACE[,type=TYPE][,port_no=N][,OPTION=VALUE]...", Action: action(cmdAddIf)},
		{Name: "set-if", Usage: "change interface options", ArgsUsage: "DP IFACE[,type=TYPE][,OPTION=VALUE]...", Action: action(cmdSetIf)},
		{Name: "del-if", Usage: "delete interfaces from DP (with -d, also delete each network device)", ArgsUsage: "[-d] DP IFACE...", Action: action(cmdDelIf),
			Flags: []cli.Flag{&cli.BoolFlag{Name: "delete-link", Aliases: []string{"d"}, Usage: "also delete the network device (ip link del) once the port is gone"}}},
		{Name: "dump-flows", Usage: "print the flows of DP (type=TYPE[,TYPE]: ovs, non-offloaded and all select every flow, the offload types none; pmd=-1 selects every flow of netdev@, pmd=N none)", ArgsUsage: "[DP] [filter=FLOW] [type=TYPE] [pmd=N]", Action: action(cmdDumpFlows)},
		{Name: "add-flow", Usage: "add a flow", ArgsUsage: "[DP] FLOW ACTIONS", Action: action(cmdAddFlow)},
		{Name: "mod-flow", Usage: "change a flow's actions", ArgsUsage: "[DP] FLOW ACTIONS", Action: action(cmdModFlow)},
		{Name: "get-flow", Usage: "print one flow", ArgsUsage: "[DP] ufid:UFID", Action: action(cmdGetFlow)},
		{Name: "del-flow", Usage: "delete a flow", ArgsUsage: "[DP] FLOW", Action: action(cmdDelFlow)},
		{Name: "add-flows", Usage: "add the flows listed in FILE (- for standard input)", ArgsUsage: "[DP] FILE", Action: action(cmdFlowsFile(fileAdd))},
		{Name: "mod-flows", Usage: "modify the flows listed in FILE", ArgsUsage: "[DP] FILE", Action: action(cmdFlowsFile(fileMod))},
		{Name: "del-flows", Usage: "delete every flow, or the flows listed in FILE", ArgsUsage: "[DP] [FILE]", Action: action(cmdDelFlows)},
		{Name: "cache-get-size", Usage: "show the cache sizes of DP", ArgsUsage: "[DP]", Action: action(cmdCacheGetSize)},
		{Name: "cache-set-size", Usage: "set a cache size of DP", ArgsUsage: "DP CACHE SIZE", Action: action(cmdCacheSetSize)},
	}
}

func cmdAddDP(e *env, args []string) error {
	if err := needArgs(args, 1, -1, "add-dp DP [IFACE...]"); err != nil {
		return err
	}
	d, err := parseDPName(args[0])
	if err != nil {
		return err
	}
	if g := e.c.String("group"); g != "" {
		gc, ok := backends[d.typ].(groupCreator)
		if !ok {
			return fmt.Errorf("add-dp %s: --group applies to netdev@ datapaths only (a kernel datapath is driven over netlink, which needs CAP_NET_ADMIN)", d)
		}
		err = gc.createWithGroup(e.ctx, d.name, g)
	} else {
		err = backends[d.typ].create(e.ctx, d.name)
	}
	if err != nil {
		return fmt.Errorf("add-dp %s: %w", d, err)
	}
	if len(args) > 1 {
		return cmdAddIf(e, args)
	}
	return nil
}

func cmdDelDP(e *env, args []string) error {
	if err := needArgs(args, 1, 1, "del-dp DP"); err != nil {
		return err
	}
	d, err := parseDPName(args[0])
	if err != nil {
		return err
	}
	if err := backends[d.typ].del(e.ctx, d.name); err != nil {
		return fmt.Errorf("del-dp %s: %w", d, err)
	}
	return nil
}

func cmdDumpDPs(e *env, args []string) error {
	if err := needArgs(args, 0, 0, "dump-dps"); err != nil {
		return err
	}
	all, err := allDatapaths(e.ctx)
	if err != nil {
		return err
	}
	if e.json {
		names := make([]string, len(all))
		for i, d := range all {
			names[i] = d.String()
		}
		return e.printJSON(names)
	}
	for _, d := range all {
		fmt.Fprintln(e.out, d)
	}
	return nil
}

// showJSON is the JSON form of one datapath in show.
type showJSON struct {
	Name  string           `json:"name"`
	Info  odp.DatapathInfo `json:"info"`
	Ports []odp.Port       `json:"ports"`
}

func cmdShow(e *env, args []string) error {
	var names []dpName
	if len(args) == 0 {
		all, err := allDatapaths(e.ctx)
		if err != nil {
			return err
		}
		names = all
	} else {
		for _, a := range args {
			d, err := parseDPName(a)
			if err != nil {
				return err
			}
			names = append(names, d)
		}
	}
	var (
		out     []showJSON
		lastErr error
	)
	for _, d := range names {
		dp, err := openDP(e.ctx, d.String())
		if err != nil {
			reportError(e.c.App.ErrWriter, err)
			lastErr = err
			continue
		}
		info, err := dp.Info(e.ctx)
		if err == nil {
			var ports []odp.Port
			ports, err = dp.Ports(e.ctx)
			if err == nil {
				if e.json {
					if ports == nil {
						ports = []odp.Port{}
					}
					out = append(out, showJSON{Name: d.String(), Info: info, Ports: ports})
				} else {
					var b strings.Builder
					formatShow(&b, d, info, ports, e.c.Bool("statistics"))
					io.WriteString(e.out, b.String())
				}
			}
		}
		dp.Close()
		if err != nil {
			reportError(e.c.App.ErrWriter, fmt.Errorf("%s: %w", d, err))
			lastErr = err
		}
	}
	if e.json {
		if out == nil {
			out = []showJSON{}
		}
		if err := e.printJSON(out); err != nil {
			return err
		}
	}
	if lastErr != nil {
		return cli.Exit("", 1)
	}
	return nil
}

// parseIfaceArg parses "IFACE[,type=TYPE][,port_no=N][,KEY=VALUE]...".
func parseIfaceArg(s string) (odp.PortSpec, error) {
	parts := strings.Split(s, ",")
	spec := odp.PortSpec{Name: parts[0], Type: odp.PortNetdev}
	if spec.Name == "" {
		return spec, fmt.Errorf("%q is not a valid network device name", s)
	}
	for _, opt := range parts[1:] {
		k, v, ok := strings.Cut(opt, "=")
		if !ok || k == "" {
			return spec, fmt.Errorf("%q: option %q is not KEY=VALUE", s, opt)
		}
		switch k {
		case "type":
			spec.Type = odp.PortType(v)
			if v == "system" {
				spec.Type = odp.PortNetdev
			}
		case "port_no":
			n, err := strconv.ParseUint(v, 10, 32)
			if err != nil {
				return spec, fmt.Errorf("%q: bad port_no %q", s, v)
			}
			spec.Number = uint32(n)
		default:
			if spec.Options == nil {
				spec.Options = map[string]string{}
			}
			spec.Options[k] = v
		}
	}
	return spec, nil
}

func cmdAddIf(e *env, args []string) error {
	return eachIface(e, args, "add-if DP IFACE...", func(dp odp.Datapath, a string) error {
		spec, err := parseIfaceArg(a)
		var p odp.Port
		if err == nil {
			p, err = dp.AddPort(e.ctx, spec)
		}
		if err != nil {
			return fmt.Errorf("adding %s to %s failed: %w", a, args[0], err)
		}
		if why := p.Options["xdp_fallback"]; why != "" {
			fmt.Fprintf(e.c.App.ErrWriter, "dpctl: %s: %s\n", spec.Name, why)
		}
		return nil
	})
}

// eachIface opens the datapath args[0] and calls fn for every further
// argument, reporting each failure and going on, as ovs-dpctl's add-if
// and del-if do; the exit status is non-zero if any failed.
func eachIface(e *env, args []string, usage string, fn func(dp odp.Datapath, arg string) error) error {
	if err := needArgs(args, 2, -1, usage); err != nil {
		return err
	}
	dp, err := openDP(e.ctx, args[0])
	if err != nil {
		return err
	}
	defer dp.Close()
	failed := false
	for _, a := range args[1:] {
		if err := fn(dp, a); err != nil {
			reportError(e.c.App.ErrWriter, err)
			failed = true
		}
	}
	if failed {
		return cli.Exit("", 1)
	}
	return nil
}

// portByName finds a port of dp by name.
func portByName(e *env, dp odp.Datapath, name string) (odp.Port, error) {
	ports, err := dp.Ports(e.ctx)
	if err != nil {
		return odp.Port{}, err
	}
	for _, p := range ports {
		if p.Name == name {
			return p, nil
		}
	}
	return odp.Port{}, notExist("no port named %s in %s@%s", name, dp.Type(), dp.Name())
}

func cmdSetIf(e *env, args []string) error {
	if err := needArgs(args, 2, -1, "set-if DP IFACE..."); err != nil {
		return err
	}
	dp, err := openDP(e.ctx, args[0])
	if err != nil {
		return err
	}
	defer dp.Close()
	for _, a := range args[1:] {
		spec, err := parseIfaceArg(a)
		if err != nil {
			return err
		}
		p, err := portByName(e, dp, spec.Name)
		if err != nil {
			return err
		}
		if strings.Contains(a, ",type=") && spec.Type != p.Type {
			return fmt.Errorf("%s: can't change type from %s to %s", spec.Name, p.Type, spec.Type)
		}
		if spec.Number != 0 && spec.Number != p.Number {
			return fmt.Errorf("%s: can't change port number from %d to %d", spec.Name, p.Number, spec.Number)
		}
		spec.Type, spec.Number = p.Type, p.Number
		if err := dp.SetPort(e.ctx, spec); err != nil {
			return fmt.Errorf("set-if %s: %w", a, err)
		}
	}
	return nil
}

func cmdDelIf(e *env, args []string) error {
	return eachIface(e, args, "del-if DP IFACE...", func(dp odp.Datapath, name string) error {
		p, err := portByName(e, dp, name)
		if err == nil {
			if p.Number == 0 {
				err = fmt.Errorf("%s is the datapath's local port and can't be deleted", name)
			} else {
				err = dp.DelPort(e.ctx, p.Number)
			}
		}
		if err != nil {
			return fmt.Errorf("deleting port %s from %s failed: %w", name, args[0], err)
		}
		if e.c.Bool("delete-link") && p.Type != odp.PortType("memory") {
			if err := deleteLink(name); err != nil {
				return fmt.Errorf("port %s deleted from %s, but: %w", name, args[0], err)
			}
		}
		return nil
	})
}

// flowJSON is the JSON form of a flow.
type flowJSON struct {
	UFID    string        `json:"ufid,omitempty"`
	Match   string        `json:"match,omitempty"`
	Actions string        `json:"actions"`
	Stats   odp.FlowStats `json:"stats"`
}

func toFlowJSON(f *odp.Flow, opts odp.FormatOptions) flowJSON {
	j := flowJSON{Actions: odp.FormatActionsWith(f.Actions, opts), Stats: f.Stats}
	if !f.UFID.IsZero() {
		j.UFID = f.UFID.String()
	}
	if f.Key != nil {
		j.Match = odp.FormatKeyWith(f.Key, f.Mask, opts)
	}
	return j
}

func cmdDumpFlows(e *env, args []string) error {
	sel, args, err := parseDumpSelectors(args)
	if err != nil {
		return err
	}
	dp, args, err := openDPArgs(e, args, 1, 0, 0, "dump-flows")
	if err != nil {
		return err
	}
	defer dp.Close()
	match, err := newFlowFilter(sel.filter, portNumbers(e, dp))
	if err != nil {
		return err
	}
	if !sel.selects(dp.Type()) {
		match = func(*odp.Flow) bool { return false }
	}
	opts := formatOptions(e, dp)
	now := monoclock.Millis()
	w := bufio.NewWriterSize(e.out, 64*1024)
	defer w.Flush()
	if e.json {
		w.WriteString("[")
	}
	first := true
	if err := dumpFlowsParallel(e.ctx, dp, func(f *odp.Flow) (string, bool, error) {
		if !match(f) {
			return "", false, nil
		}
		if !e.json {
			return formatFlow(f, opts, now), true, nil
		}
		b, err := json.Marshal(toFlowJSON(f, opts))
		return string(b), true, err
	}, func(entry string) error {
		if e.json {
			if !first {
				w.WriteByte(',')
			}
			w.WriteString("\n  ")
		}
		first = false
		w.WriteString(entry)
		if !e.json {
			return w.WriteByte('\n')
		}
		return nil
	}); err != nil {
		return err
	}
	if e.json {
		w.WriteString("\n]\n")
	}
	return nil
}

// rawDumper is a datapath that can dump its flows undecoded (genl's
// *Datapath): dump-flows then decodes on several goroutines.
type rawDumper interface {
	DumpFlowsRaw(ctx context.Context, opts odp.DumpOptions, fn func([]byte) error) error
}

// dumpChunk is a run of consecutive flows of a dump, raw (from a
// rawDumper) or decoded, and where its formatted entries go.
type dumpChunk struct {
	raw   [][]byte
	flows []*odp.Flow
	done  chan dumpResult
}

type dumpResult struct {
	entries []string
	err     error
}

// dumpChunkLen is how many flows a chunk holds.
const dumpChunkLen = 64

// dumpFlowsParallel dumps dp's flows, formats each with format (which
// also filters: keep false drops the flow) on two worker goroutines, and
// hands the entries to write in the dump's order. This goroutine only
// receives (and, for a datapath that cannot dump raw, decodes); decoding
// and formatting, most of a large dump's CPU time, run on both CPUs
// (ovs-dpctl does all of it in one thread).
func dumpFlowsParallel(ctx context.Context, dp odp.Datapath, format func(*odp.Flow) (string, bool, error), write func(string) error) error {
	parallelStages()
	work := make(chan *dumpChunk, 8)
	ordered := make(chan *dumpChunk, 8)
	var failed atomic.Bool // a chunk failed: stop dumping
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := range work {
				c.done <- formatChunk(c, format)
			}
		}()
	}
	writeErr := make(chan error, 1)
	go func() {
		var err error
		for c := range ordered {
			r := <-c.done
			if err != nil {
				continue // drain until the dump stops
			}
			if err = r.err; err == nil {
				for _, s := range r.entries {
					if err = write(s); err != nil {
						err = fmt.Errorf("dump-flows: writing: %w", err)
						break
					}
				}
			}
			if err != nil {
				failed.Store(true)
			}
		}
		writeErr <- err
	}()
	cur := &dumpChunk{}
	send := func() {
		cur.done = make(chan dumpResult, 1)
		ordered <- cur
		work <- cur
		cur = &dumpChunk{}
	}
	var err error
	if rd, ok := dp.(rawDumper); ok {
		err = rd.DumpFlowsRaw(ctx, odp.DumpOptions{}, func(b []byte) error {
			if failed.Load() {
				return errDumpStopped
			}
			cur.raw = append(cur.raw, bytes.Clone(b))
			if len(cur.raw) == dumpChunkLen {
				send()
			}
			return nil
		})
	} else {
		err = dp.DumpFlows(ctx, odp.DumpOptions{}, func(f *odp.Flow) error {
			if failed.Load() {
				return errDumpStopped
			}
			cur.flows = append(cur.flows, f)
			if len(cur.flows) == dumpChunkLen {
				send()
			}
			return nil
		})
	}
	if len(cur.raw)+len(cur.flows) > 0 {
		send()
	}
	close(work)
	close(ordered)
	wg.Wait()
	if werr := <-writeErr; werr != nil {
		return werr
	}
	if err != nil {
		return fmt.Errorf("failed to dump flows from datapath: %w", err)
	}
	return nil
}

// formatChunk decodes (if raw) and formats a chunk's flows.
func formatChunk(c *dumpChunk, format func(*odp.Flow) (string, bool, error)) dumpResult {
	var r dumpResult
	one := func(f *odp.Flow) bool {
		s, keep, err := format(f)
		if err != nil {
			r.err = err
			return false
		}
		if keep {
			r.entries = append(r.entries, s)
		}
		return true
	}
	for _, b := range c.raw {
		f, err := genl.DecodeFlow(b)
		if err != nil {
			r.err = fmt.Errorf("failed to dump flows from datapath: genl: ovs_flow dump: %w", err)
			return r
		}
		if !one(f) {
			return r
		}
	}
	for _, f := range c.flows {
		if !one(f) {
			return r
		}
	}
	return r
}

// errDumpStopped stops a dump whose output failed (the writer's own
// error is reported).
var errDumpStopped = errors.New("dump stopped: output failed")

// parseFlowArg parses "[ufid:UFID,]FLOW" as ovs-dpctl's put and del do.
func parseFlowArg(s string, portNumber func(string) (uint32, bool)) (odp.UFID, odp.FlowKey, odp.FlowKey, error) {
	var ufid odp.UFID
	if strings.HasPrefix(s, "ufid:") {
		end := strings.IndexAny(s, ", ")
		if end < 0 {
			end = len(s)
		}
		u, err := odp.ParseUFID(s[:end])
		if err != nil {
			return ufid, nil, nil, err
		}
		ufid = u
		s = strings.TrimLeft(s[end:], ", ")
	}
	if s == "" {
		return ufid, nil, nil, nil
	}
	k, m, err := odp.ParseMaskedKeyWith(s, portNumber)
	if err != nil {
		return ufid, nil, nil, fmt.Errorf("parsing flow key: %w", err)
	}
	return ufid, k, m, nil
}

// putFlow adds or modifies one flow from its text.
func putFlow(e *env, dp odp.Datapath, flowText, actionsText string, flags odp.PutFlags) (odp.FlowStats, error) {
	f, err := buildFlow(e, dp, flowText, actionsText)
	if err != nil {
		return odp.FlowStats{}, err
	}
	st, err := dp.PutFlow(e.ctx, f, flags)
	if err != nil {
		return st, fmt.Errorf("updating flow table: %w", explainPut(f, err))
	}
	return st, nil
}

// explainPut adds to a kernel's EINVAL for a flow the reason that odp's
// copy of the kernel's key rules gives ("the kernel requires icmp() when
// ipv4 proto=1"), since the kernel itself only writes it to its log.
func explainPut(f *odp.Flow, err error) error {
	if !errors.Is(err, syscall.EINVAL) {
		return err
	}
	_, _, verr := odp.ToFlowKeys(f.Key, f.Mask)
	var ke *odp.KeyError
	if !errors.As(verr, &ke) || !errors.Is(ke, syscall.EINVAL) {
		return err
	}
	return &explainedError{err: err, why: ke.Attr + ": " + ke.Reason}
}

// explainedError is a kernel error with the reason odp predicts for it.
type explainedError struct {
	err error
	why string
}

func (e *explainedError) Error() string { return e.err.Error() }
func (e *explainedError) Unwrap() error { return e.err }

// buildFlow parses a flow and its actions and makes them acceptable to
// the kernel where ovs-dpctl would fail (see putFlow).
func buildFlow(e *env, dp odp.Datapath, flowText, actionsText string) (*odp.Flow, error) {
	ufid, key, mask, err := parseFlowArg(flowText, portNumbers(e, dp))
	if err != nil {
		return nil, err
	}
	if key == nil {
		return nil, fmt.Errorf("parsing flow key: empty flow")
	}
	acts, err := odp.ParseActions(actionsText)
	if err != nil {
		return nil, fmt.Errorf("parsing actions: %w", err)
	}
	// The kernel wants the attributes match_validate expects (tcp_flags
	// beside tcp, icmp for ipv4 proto=1, ...: added as wildcards), and no
	// value bits outside a masked set's mask; ovs-dpctl fails on both.
	key, mask = odp.AddRequiredKeys(key, mask)
	acts = odp.NormalizeActions(acts)
	if hasExplicitDrop(acts) && !supportsDrop(dp) {
		acts = truncateAtDrop(acts)
	}
	return &odp.Flow{UFID: ufid, Key: key, Mask: mask, Actions: acts}, nil
}

func cmdAddFlow(e *env, args []string) error {
	dp, args, err := openDPArgs(e, args, 3, 2, 2, "add-flow [DP] FLOW ACTIONS")
	if err != nil {
		return err
	}
	defer dp.Close()
	_, err = putFlow(e, dp, args[0], args[1], odp.PutCreate)
	return err
}

func modFlags(e *env) odp.PutFlags {
	flags := odp.PutModify
	if e.c.Bool("may-create") {
		flags |= odp.PutCreate
	}
	if e.c.Bool("clear") {
		flags |= odp.PutZeroStats
	}
	return flags
}

func cmdModFlow(e *env, args []string) error {
	dp, args, err := openDPArgs(e, args, 3, 2, 2, "mod-flow [DP] FLOW ACTIONS")
	if err != nil {
		return err
	}
	defer dp.Close()
	st, err := putFlow(e, dp, args[0], args[1], modFlags(e))
	if err != nil {
		return err
	}
	return printStats(e, st)
}

// printStats prints a flow's statistics with -s (mod-flow, del-flow).
func printStats(e *env, st odp.FlowStats) error {
	if !e.c.Bool("statistics") {
		return nil
	}
	if e.json {
		return e.printJSON(st)
	}
	var b strings.Builder
	formatStats(&b, st, monoclock.Millis())
	_, err := fmt.Fprintln(e.out, b.String())
	return err
}

func cmdGetFlow(e *env, args []string) error {
	dp, args, err := openDPArgs(e, args, 2, 1, 1, "get-flow [DP] ufid:UFID")
	if err != nil {
		return err
	}
	defer dp.Close()
	ufid, err := odp.ParseUFID(args[0])
	if err != nil {
		return fmt.Errorf("parsing flow ufid: %w", err)
	}
	f, err := dp.GetFlow(e.ctx, odp.FlowID{UFID: ufid})
	if err != nil {
		return fmt.Errorf("getting flow: %w", err)
	}
	opts := formatOptions(e, dp)
	if e.json {
		return e.printJSON(toFlowJSON(f, opts))
	}
	fmt.Fprintln(e.out, formatFlow(f, opts, monoclock.Millis()))
	return nil
}

// delFlow deletes one flow given as text.
func delFlow(e *env, dp odp.Datapath, flowText string) (odp.FlowStats, error) {
	ufid, key, _, err := parseFlowArg(flowText, portNumbers(e, dp))
	if err != nil {
		return odp.FlowStats{}, err
	}
	st, err := dp.DelFlow(e.ctx, odp.FlowID{UFID: ufid, Key: key})
	if err != nil {
		err = fmt.Errorf("deleting flow: %w", err)
		if errors.Is(err, os.ErrNotExist) && ufid.IsZero() {
			err = fmt.Errorf("%w (perhaps you need to specify a UFID?)", err)
		}
	}
	return st, err
}

func cmdDelFlow(e *env, args []string) error {
	dp, args, err := openDPArgs(e, args, 2, 1, 1, "del-flow [DP] FLOW")
	if err != nil {
		return err
	}
	defer dp.Close()
	st, err := delFlow(e, dp, args[0])
	if err != nil {
		return err
	}
	return printStats(e, st)
}

func cmdDelFlows(e *env, args []string) error {
	// With a FILE argument (one more than a datapath), delete the listed
	// flows; otherwise flush.
	if len(args) == 2 || (len(args) == 1 && !dpExists(e.ctx, args[0])) {
		return cmdFlowsFile(fileDel)(e, args)
	}
	dp, args, err := openDPArgs(e, args, 1, 0, 0, "del-flows")
	if err != nil {
		return err
	}
	defer dp.Close()
	if err := dp.FlushFlows(e.ctx); err != nil {
		return fmt.Errorf("deleting all flows: %w", err)
	}
	return nil
}

func cmdCacheGetSize(e *env, args []string) error {
	var names []dpName
	if len(args) > 0 {
		d, err := parseDPName(args[0])
		if err != nil {
			return err
		}
		names = []dpName{d}
	} else {
		all, err := allDatapaths(e.ctx)
		if err != nil {
			return err
		}
		names = all
	}
	type cacheJSON struct {
		Name       string `json:"name"`
		MasksCache uint32 `json:"masks-cache"`
	}
	out := []cacheJSON{}
	for _, d := range names {
		dp, err := openDP(e.ctx, d.String())
		if err != nil {
			return err
		}
		info, err := dp.Info(e.ctx)
		dp.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", d, err)
		}
		if e.json {
			out = append(out, cacheJSON{Name: d.String(), MasksCache: info.MasksCacheSize})
			continue
		}
		fmt.Fprintf(e.out, "%s:\n  caches:\n    masks-cache: size:%d\n", d, info.MasksCacheSize)
	}
	if e.json {
		return e.printJSON(out)
	}
	return nil
}

// cacheSizer is implemented by datapaths whose mask cache size can be set.
type cacheSizer interface {
	SetMasksCacheSize(ctx context.Context, size uint32) error
}

func cmdCacheSetSize(e *env, args []string) error {
	if err := needArgs(args, 3, 3, "cache-set-size DP CACHE SIZE"); err != nil {
		return err
	}
	size, err := strconv.ParseUint(args[2], 10, 32)
	if err != nil {
		return fmt.Errorf("size is malformed: %q", args[2])
	}
	if args[1] != "masks-cache" {
		return fmt.Errorf("unknown cache %q (the datapath has: masks-cache)", args[1])
	}
	dp, err := openDP(e.ctx, args[0])
	if err != nil {
		return err
	}
	defer dp.Close()
	cs, ok := dp.(cacheSizer)
	if !ok {
		return fmt.Errorf("setting caches not supported by %s", args[0])
	}
	if err := cs.SetMasksCacheSize(e.ctx, uint32(size)); err != nil {
		return fmt.Errorf("setting masks-cache size: %w", err)
	}
	if e.json {
		return e.printJSON(map[string]uint32{"masks-cache": uint32(size)})
	}
	fmt.Fprintf(e.out, "Setting cache size successful, new size %d.\n", size)
	return nil
}
