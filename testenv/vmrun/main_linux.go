// Command vmrun runs a program, normally a Go test binary, against a Linux
// kernel that has the openvswitch module. Use it as
//
//	go test -tags integration -exec "$(pwd)/bin/vmrun" ./...
//
// When the host kernel has the module (or OVSDP_VM=never), vmrun executes
// the program directly. Otherwise (or with OVSDP_VM=always) it boots
// Debian's kernel under QEMU (TCG) and runs the program there with the same
// arguments, environment and working directory; see package
// github.com/ovsdp/ovsdp/testenv/vm. The kernel, QEMU and busybox-static
// are prepared by scripts/vm/fetch-kernel.sh.
//
// Usage:
//
//	vmrun [-timeout D] [-vm auto|always|never] [-debug] PROGRAM [ARG...]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"github.com/ovsdp/ovsdp/testenv/vm"
)

// timeoutFlag is -timeout: the syntax and limits of vm.ParseTimeout, the
// same as the environment variable vm.EnvTimeout.
type timeoutFlag struct{ d *time.Duration }

func (f timeoutFlag) String() string {
	if f.d == nil {
		return ""
	}
	return f.d.String()
}

func (f timeoutFlag) Set(s string) error {
	d, err := vm.ParseTimeout(s)
	if err != nil {
		return err
	}
	*f.d = d
	return nil
}

func main() {
	os.Exit(run())
}

func run() int {
	cfg, err := vm.ConfigFromEnv()
	if err != nil {
		fmt.Fprintf(os.Stderr, "vmrun: %v\n", err)
		return 2
	}
	fs := flag.NewFlagSet("vmrun", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: vmrun [flags] PROGRAM [ARG...]\n\nRuns PROGRAM in a VM with the openvswitch kernel module when the host lacks it.\nEnvironment: %s, %s, %s, %s, %s.\n\nFlags:\n",
			vm.EnvCache, vm.EnvTimeout, vm.EnvMode, vm.EnvShare, vm.EnvDebug)
		fs.PrintDefaults()
	}
	timeout := cfg.Timeout
	fs.Var(timeoutFlag{&timeout}, "timeout", "kill the VM after this long: a `duration` like 20m, or a number of seconds; at most "+vm.MaxTimeout.String())
	mode := fs.String("vm", cfg.Mode, "auto (VM only without a host openvswitch module), always or never")
	debug := fs.Bool("debug", cfg.Debug, "print the QEMU command line, timing and the guest console")
	cache := fs.String("cache", cfg.Cache, "kernel cache directory (written by "+vm.FetchScript+")")
	if err := fs.Parse(os.Args[1:]); err != nil {
		return 2
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return 2
	}
	switch *mode {
	case "auto", "always", "never":
	default:
		fmt.Fprintf(os.Stderr, "vmrun: -vm %q: want auto, always or never\n", *mode)
		return 2
	}
	cfg.Timeout, cfg.Mode, cfg.Debug, cfg.Cache = timeout, *mode, *debug, *cache
	argv := fs.Args()

	// A test binary whose -test.run/-test.bench select nothing (a package
	// without kernel tests under -run '^TestIntegration') needs no VM.
	direct := !vm.NeedVM(cfg) || vm.SelectsNothing(argv, os.Environ(), "")
	if direct {
		prog, err := exec.LookPath(argv[0])
		if err != nil {
			fmt.Fprintf(os.Stderr, "vmrun: %v\n", err)
			return 127
		}
		err = syscall.Exec(prog, argv, os.Environ())
		fmt.Fprintf(os.Stderr, "vmrun: exec %s: %v\n", prog, err)
		return 126
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	defer stop()
	status, err := vm.Run(ctx, cfg, argv, os.Environ(), "")
	if err != nil {
		fmt.Fprintf(os.Stderr, "vmrun: %v\n", err)
		return 1
	}
	return status
}
