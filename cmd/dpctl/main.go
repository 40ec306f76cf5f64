// Command dpctl controls Open vSwitch datapaths, the kernel's (system@NAME)
// and ovsdp's userspace one (netdev@NAME), with the commands, flow syntax
// and output of ovs-dpctl.
package main

import (
	"fmt"
	"os"
)

func main() {
	app := newApp(os.Stdin, os.Stdout, os.Stderr)
	if err := app.Run(os.Args); err != nil {
		fmt.Fprintf(os.Stderr, "dpctl: %v\n", err)
		os.Exit(exitCode(err))
	}
}
