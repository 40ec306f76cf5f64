package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/ovsdp/ovsdp/internal/runsock"
	"github.com/ovsdp/ovsdp/userdp/ctl"
)

// upcalldPath finds the upcalld binary: beside dpctl, else in PATH.
func upcalldPath() (string, error) {
	if exe, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(exe), "upcalld")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	p, err := exec.LookPath("upcalld")
	if err != nil {
		return "", fmt.Errorf("a userspace datapath runs inside upcalld, which was found neither beside dpctl nor in PATH: %w", err)
	}
	return p, nil
}

// logPath is where the upcalld that dpctl starts for netdev@name logs.
func logPath(name string) string { return filepath.Join(ctl.Dir(), name+".log") }

// startUserspaceDatapath starts an upcalld process that hosts the
// userspace datapath name without a policy (like a kernel datapath with
// no handler: misses are counted as lost), for root and, when group is
// not "", the members of group, and waits until its control socket
// answers. The run directory and the log are made with explicit modes,
// and upcalld starts with umask 077: a permissive umask of the caller
// is not passed on.
func startUserspaceDatapath(ctx context.Context, name, group string) error {
	access, err := runsock.LookupGroup(group)
	if err != nil {
		return fmt.Errorf("--group: %w", err)
	}
	bin, err := upcalldPath()
	if err != nil {
		return err
	}
	if err := runsock.PrepareDir(ctl.Dir(), access, ""); err != nil {
		return err
	}
	lp := logPath(name)
	logf, err := runsock.CreateFile(lp, access)
	if err != nil {
		return err
	}
	defer logf.Close()
	args := []string{"--datapath", "netdev@" + name, "--no-handlers", "--del-dp-on-exit"}
	if group != "" {
		args = append(args, "--group", group)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	// The child inherits the umask; dpctl creates no file meanwhile.
	old := syscall.Umask(0o077)
	err = cmd.Start()
	syscall.Umask(old)
	if err != nil {
		return fmt.Errorf("starting %s: %w", bin, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if c, err := ctl.Dial(name); err == nil {
			c.Close()
			return nil
		}
		select {
		case err := <-exited:
			return fmt.Errorf("upcalld for netdev@%s exited (%v); see %s", name, err, lp)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return fmt.Errorf("upcalld for netdev@%s did not open %s within 10s; see %s", name, ctl.SocketPath(name), lp)
}

// stopUserspaceDatapath asks the process hosting netdev@name to delete
// the datapath, waits until its socket is gone, and removes the log that
// add-dp made.
func stopUserspaceDatapath(ctx context.Context, name string) error {
	c, err := ctl.Dial(name)
	if err != nil {
		return err
	}
	err = c.Delete(ctx)
	c.Close()
	if err != nil {
		return err
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		c, err := ctl.Dial(name)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				if err := os.Remove(logPath(name)); err != nil && !errors.Is(err, os.ErrNotExist) {
					return fmt.Errorf("netdev@%s deleted, but its log stays: %w", name, err)
				}
				return nil
			}
			return err
		}
		c.Close()
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("netdev@%s still answers 10s after delete", name)
}
