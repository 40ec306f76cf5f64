package main

import (
	"fmt"
	"io"

	"github.com/urfave/cli/v2"

	"github.com/ovsdp/ovsdp/internal/buildinfo"
)

// versionFlag is -V/--version, as ovs-dpctl spells it.
var versionFlag = &cli.BoolFlag{Name: "version", Aliases: []string{"V"}, Usage: "print the version, the commit and the Go version, and exit"}

// printVersion prints dpctl's version line: "dpctl VERSION (commit
// COMMIT, GOVERSION)".
func printVersion(w io.Writer) error {
	_, err := fmt.Fprintf(w, "dpctl %s\n", buildinfo.Get())
	return err
}
