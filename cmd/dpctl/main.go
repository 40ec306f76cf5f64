// Command dpctl controls Open vSwitch datapaths, the kernel's (system@NAME)
// and ovsdp's userspace one (netdev@NAME), with the commands, flow syntax
// and output of ovs-dpctl.
package main

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
)

func main() {
	// dpctl is short-lived and its garbage (decoded flows) is transient:
	// collect less often, which matters in large dumps and flow files.
	debug.SetGCPercent(400)
	// dpctl's work is one netlink conversation at a time: a second P
	// buys nothing and costs futex wake-ups and thread hand-offs on every
	// blocking receive, which on a slow (emulated) machine made dump,
	// add and del flows 2-5 times slower. GOMAXPROCS in the environment
	// still wins.
	if os.Getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(1)
	}
	// (dump-flows, whose two stages run in parallel, asks for two:
	// parallelStages.)
	// OVSDP_CPUPROFILE=FILE writes a CPU profile of the command (for
	// measuring dpctl against ovs-dpctl).
	if path := os.Getenv("OVSDP_CPUPROFILE"); path != "" {
		if f, err := os.Create(path); err == nil {
			if pprof.StartCPUProfile(f) == nil {
				code := run()
				pprof.StopCPUProfile()
				f.Close()
				os.Exit(code)
			}
		}
	}
	os.Exit(run())
}

// run runs the command and returns the exit status.
func run() int {
	args := permuteFlags(os.Args)
	if ns, rest := netnsArg(args); ns != "" && os.Getenv("OVSDP_IN_NETNS") != ns {
		err := enterNetns(ns, rest)
		reportError(os.Stderr, err)
		return 1
	}
	app := newApp(os.Stdin, os.Stdout, os.Stderr)
	if err := app.Run(args); err != nil {
		reportError(os.Stderr, err)
		return exitCode(err)
	}
	return 0
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

// parallelStages lets a command that runs two busy goroutines (dump-flows'
// decoder and formatter) use two CPUs, unless GOMAXPROCS is set in the
// environment.
func parallelStages() {
	if os.Getenv("GOMAXPROCS") == "" && runtime.NumCPU() > 1 {
		runtime.GOMAXPROCS(2)
	}
}
