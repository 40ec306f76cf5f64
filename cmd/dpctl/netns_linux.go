package main

import (
	"fmt"
	"os"
	"runtime"
	"syscall"

	"github.com/vishvananda/netns"
)

// enterNetns re-executes dpctl inside the named network namespace, with
// the same arguments less --netns. A process's sockets belong to the
// namespace of the thread that creates them, and a Go program runs on
// many threads; entering the namespace on one locked thread and then
// exec'ing makes the whole new process start inside it.
func enterNetns(name string, args []string) error {
	runtime.LockOSThread()
	h, err := netns.GetFromName(name)
	if err != nil {
		return fmt.Errorf("--netns %s: %w", name, err)
	}
	if err := netns.Set(h); err != nil {
		return fmt.Errorf("--netns %s: entering the namespace: %w", name, err)
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("--netns %s: %w", name, err)
	}
	env := append(os.Environ(), "OVSDP_IN_NETNS="+name)
	return fmt.Errorf("--netns %s: exec: %w", name, syscall.Exec(exe, args, env))
}
