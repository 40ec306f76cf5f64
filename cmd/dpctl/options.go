package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/ovsdp/ovsdp/genl"
)

// ovs-dpctl's remaining global options (utilities/ovs-dpctl.c): the
// timeout, read-only mode, version, option list and logging.
var compatFlags = []cli.Flag{
	&cli.StringFlag{Name: "timeout", Aliases: []string{"t"}, Usage: "give up after `SECS` seconds (a positive integer)"},
	&cli.BoolFlag{Name: "read-only", Usage: "refuse the commands that change a datapath"},
	&cli.BoolFlag{Name: "version", Aliases: []string{"V"}, Usage: "print the version, commit, Go version and the kernel's datapath features"},
	&cli.BoolFlag{Name: "option", Aliases: []string{"o"}, Usage: "list the global options, one spelling a line (as ovs-dpctl -o)"},
	&cli.BoolFlag{Name: "verbose", Aliases: []string{"v"}, Usage: "log the netlink exchange at debug level on standard error (--verbose=SPEC is accepted as ovs-dpctl's; SPEC is ignored)"},
	&cli.StringFlag{Name: "log-file", Usage: "with --verbose, write the log to `FILE` instead of standard error"},
	&cli.StringFlag{Name: "syslog-method", Usage: "refused: dpctl does not log to syslog"},
	&cli.StringFlag{Name: "syslog-target", Usage: "refused: dpctl does not log to syslog"},
}

func init() { globalFlags = append(globalFlags, compatFlags...) }

// normalizeCompatArg rewrites ovs-dpctl's spellings that urfave/cli does
// not parse: -v and --verbose with an attached vlog SPEC ("-vdbg",
// "--verbose=dpif:dbg") become --verbose, and -tN becomes -t N. It
// returns the arguments to use in place of a and whether a was one of
// those.
func normalizeCompatArg(a string) ([]string, bool) {
	switch {
	case strings.HasPrefix(a, "--verbose="):
		return []string{"--verbose"}, true
	case len(a) > 2 && strings.HasPrefix(a, "-v") && !strings.HasPrefix(a, "--"):
		return []string{"--verbose"}, true
	case len(a) > 2 && strings.HasPrefix(a, "-t") && !strings.HasPrefix(a, "--"):
		return []string{"-t", a[2:]}, true
	}
	return nil, false
}

// addDPFeaturesArg reports whether a -V at this place is add-dp's
// "-V VERSION:FEATURES" (the command, the first word of before that is
// not an option, is add-dp) rather than the global --version.
func addDPFeaturesArg(before []string, valued map[string]bool) bool {
	for i := 0; i < len(before); i++ {
		a := before[i]
		if valued[a] {
			i++
			continue
		}
		if strings.HasPrefix(a, "-") {
			continue
		}
		return a == "add-dp"
	}
	return false
}

// readWriteCommands are the commands that change a datapath: --read-only
// refuses them, as ovs-dpctl does for its DP_RW commands. ovs-dpctl marks
// ct-set-limits and ct-del-limits read-only (a slip in lib/dpctl.c);
// dpctl refuses them too, since they change the datapath.
var readWriteCommands = map[string]bool{
	"add-dp": true, "del-dp": true, "add-if": true, "del-if": true, "set-if": true,
	"add-flow": true, "mod-flow": true, "del-flow": true,
	"add-flows": true, "mod-flows": true, "del-flows": true,
	"cache-set-size": true, "add-meter": true, "del-meter": true,
	"ct-set-limits": true, "ct-del-limits": true,
	"flush-conntrack": true, "ct-set-maxconns": true, "ct-enable-tcp-seq-chk": true, "ct-disable-tcp-seq-chk": true,
	"ct-set-sweep-interval": true, "ipf-set-enabled": true, "ipf-set-disabled": true, "ipf-set-min-frag": true, "ipf-set-max-nfrags": true,
}

// refuseInReadOnly is the Before hook of the read-write commands.
func refuseInReadOnly(c *cli.Context) error {
	if c.Bool("read-only") {
		return fmt.Errorf("'%s' command does not work in read only mode", c.Command.Name)
	}
	return nil
}

// timeoutExit is what happens when --timeout expires: by default the
// process reports it and exits, as ovs-dpctl's alarm ends it. Tests
// replace it.
var timeoutExit = func(w io.Writer, secs uint64) {
	fmt.Fprintf(w, "dpctl: timed out after %d seconds\n", secs)
	os.Exit(1)
}

// parseTimeout parses -t's value as ovs-dpctl does: a positive integer.
func parseTimeout(s string) (uint64, error) {
	n, err := strconv.ParseUint(s, 10, 32)
	if err != nil || n == 0 {
		return 0, fmt.Errorf("value %s on -t or --timeout is invalid", s)
	}
	return n, nil
}

// beforeCommand applies the global options before any command runs:
// --timeout, --verbose and --log-file, then -V and -o (which print and
// stop).
func beforeCommand(c *cli.Context) error {
	for _, n := range []string{"syslog-method", "syslog-target"} {
		if c.IsSet(n) {
			return fmt.Errorf("--%s: dpctl does not log to syslog (use --verbose, with --log-file FILE)", n)
		}
	}
	if s := c.String("timeout"); c.IsSet("timeout") {
		secs, err := parseTimeout(s)
		if err != nil {
			return err
		}
		// As ovs-dpctl's alarm: the process ends when it expires,
		// whatever the command is waiting for.
		errw := c.App.ErrWriter
		t := time.AfterFunc(time.Duration(secs)*time.Second, func() { timeoutExit(errw, secs) })
		stopTimers = append(stopTimers, func() { t.Stop() })
	}
	if c.Bool("verbose") {
		var w io.Writer = c.App.ErrWriter
		if path := c.String("log-file"); path != "" {
			f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
			if err != nil {
				return fmt.Errorf("--log-file: %w", err)
			}
			w = f
		}
		genl.SetDebugLogger(slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug})))
	} else if c.IsSet("log-file") {
		return errors.New("--log-file needs --verbose (dpctl logs nothing else)")
	}
	if c.Bool("version") {
		if err := printVersion(c.Context, c.App.Writer); err != nil {
			return err
		}
		return cli.Exit("", 0)
	}
	if c.Bool("option") {
		printOptions(c.App.Writer, c.App.Flags)
		return cli.Exit("", 0)
	}
	return nil
}

// stopTimers undoes what beforeCommand started (the timeout), for tests
// that run many commands in one process.
var stopTimers []func()

// resetGlobals stops the timeout and the netlink log of the last command.
func resetGlobals() {
	for _, f := range stopTimers {
		f()
	}
	stopTimers = nil
	genl.SetDebugLogger(nil)
}

// printOptions lists the global options as ovs-dpctl -o does
// (ovs_cmdl_print_options): "--NAME" or "--NAME=ARG", then "-X " or
// "-X ARG" for a short spelling.
func printOptions(w io.Writer, flags []cli.Flag) {
	var b strings.Builder
	for _, f := range flags {
		names := f.Names()
		arg := ""
		if tf, ok := f.(cli.DocGenerationFlag); ok && tf.TakesValue() {
			arg = "ARG"
		}
		if names[0] == "verbose" {
			arg = "[ARG]" // ovs-dpctl's -v takes an optional SPEC
		}
		long := "--" + names[0]
		if arg != "" {
			long += "=" + arg
		}
		b.WriteString(long + "\n")
		for _, n := range names[1:] {
			if len(n) == 1 {
				b.WriteString("-" + n + " " + arg + "\n")
			}
		}
	}
	b.WriteString("--help\n-h \n")
	io.WriteString(w, b.String())
}

// helpCommands are help and list-commands, as ovs-dpctl has them.
func helpCommands() []*cli.Command {
	return []*cli.Command{
		{Name: "help", Usage: "print the usage (as dpctl --help)", Action: func(c *cli.Context) error {
			return cli.ShowAppHelp(c)
		}},
		{Name: "list-commands", Usage: "list every command with its arguments", Action: func(c *cli.Context) error {
			var b strings.Builder
			b.WriteString("The available commands are:\n")
			for _, cmd := range c.App.Commands {
				if cmd.Hidden {
					continue
				}
				fmt.Fprintf(&b, "  %-23s %s\n", cmd.Name, cmd.ArgsUsage)
			}
			_, err := io.WriteString(c.App.Writer, b.String())
			return err
		}},
	}
}

// featureCreator is a backend that can create a datapath with given user
// features (the kernel's).
type featureCreator interface {
	createWithFeatures(ctx context.Context, name string, features uint32) error
}

// cmdAddDPFeatures is add-dp: with -V/--features it creates the kernel
// datapath with those user features, otherwise it is cmdAddDP.
func cmdAddDPFeatures(e *env, args []string) error {
	if !e.c.IsSet("features") {
		return cmdAddDP(e, args)
	}
	if err := needArgs(args, 1, -1, "add-dp [-V [VERSION:]FEATURES] DP [IFACE...]"); err != nil {
		return err
	}
	d, err := parseDPName(args[0])
	if err != nil {
		return err
	}
	features, err := parseFeatures(e.c.String("features"))
	if err != nil {
		return fmt.Errorf("add-dp %s: %w", d, err)
	}
	fc, ok := backends[d.typ].(featureCreator)
	if !ok {
		return fmt.Errorf("add-dp %s: user features (-V/--features) apply to kernel datapaths only", d)
	}
	if err := fc.createWithFeatures(e.ctx, d.name, features); err != nil {
		return fmt.Errorf("add-dp %s: %w", d, err)
	}
	if len(args) > 1 {
		return cmdAddIf(e, args)
	}
	return nil
}
