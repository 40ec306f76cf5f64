package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/urfave/cli/v2"
)

// newApp builds the command line with its standard streams, so that tests
// can run commands and compare their output.
func newApp(stdin io.Reader, stdout, stderr io.Writer) *cli.App {
	return &cli.App{
		Name:      "dpctl",
		Usage:     "control Open vSwitch datapaths (kernel system@NAME, userspace netdev@NAME)",
		Reader:    stdin,
		Writer:    stdout,
		ErrWriter: stderr,
		// Errors are printed once, by main, as "dpctl: ...".
		ExitErrHandler:       func(*cli.Context, error) {},
		EnableBashCompletion: true,
		HideHelpCommand:      true,
		Flags:                globalFlags,
		Commands:             commands(),
		Before:               beforeCommand,
		// Usage mistakes print one error line, not the whole help.
		OnUsageError: func(_ *cli.Context, err error, _ bool) error {
			return fmt.Errorf("%w (see dpctl --help)", err)
		},
		Action: func(c *cli.Context) error {
			if c.Args().Present() {
				return fmt.Errorf("unknown command %q (see dpctl --help)", c.Args().First())
			}
			return errors.New("missing command name; use --help for help")
		},
	}
}

// commands lists every command, in the order of the help text.
func commands() []*cli.Command {
	cmds := datapathCommands()
	cmds = append(cmds, kernelFamilyCommands()...)
	cmds = append(cmds, parseKeysCommand(), parseWcKeysCommand(), parseActionsCommand())
	cmds = append(cmds, compatCommands()...)
	cmds = append(cmds, traceCommand(), monitorCommand(), psampleEventsCommand(), topCommand())
	cmds = append(cmds, helpCommands()...)
	cmds = append(cmds, genCommands()...)
	for _, c := range cmds {
		if readWriteCommands[c.Name] && c.Before == nil {
			c.Before = refuseInReadOnly
		}
		if c.OnUsageError == nil {
			c.OnUsageError = func(_ *cli.Context, err error, _ bool) error {
				return fmt.Errorf("%w (see dpctl --help)", err)
			}
		}
	}
	return cmds
}

// errFailedLines is returned by the round-trip commands when some input
// lines failed; each failure has been printed already.
var errFailedLines = errors.New("some lines failed to parse")

// exitCode maps an error to the process exit status.
func exitCode(err error) int {
	var ec cli.ExitCoder
	if errors.As(err, &ec) {
		return ec.ExitCode()
	}
	return 1
}
