package main

import (
	"errors"
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
		Commands: append(datapathCommands(),
			parseKeysCommand(),
			parseWcKeysCommand(),
			parseActionsCommand(),
		),
	}
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
