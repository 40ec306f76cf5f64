// Command dpctl controls Open vSwitch datapaths, the kernel's (system@NAME)
// and ovsdp's userspace one (netdev@NAME), with the commands, flow syntax
// and output of ovs-dpctl.
package main

import (
	"os"
)

func main() {
	args := permuteFlags(os.Args)
	if ns, rest := netnsArg(args); ns != "" && os.Getenv("OVSDP_IN_NETNS") != ns {
		err := enterNetns(ns, rest)
		reportError(os.Stderr, err)
		os.Exit(1)
	}
	app := newApp(os.Stdin, os.Stdout, os.Stderr)
	if err := app.Run(args); err != nil {
		reportError(os.Stderr, err)
		os.Exit(exitCode(err))
	}
}

// netnsArg finds --netns NAME (or --netns=NAME) among the leading global
// options and returns NAME and the arguments without it.
func netnsArg(args []string) (string, []string) {
	for i := 1; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--netns" && i+1 < len(args):
			rest := append(append([]string{}, args[:i]...), args[i+2:]...)
			return args[i+1], rest
		case len(a) > 8 && a[:8] == "--netns=":
			rest := append(append([]string{}, args[:i]...), args[i+1:]...)
			return a[8:], rest
		}
	}
	return "", args
}
