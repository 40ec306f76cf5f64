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

// startUserspaceDatapath starts an upcalld process that hosts the
// userspace datapath name without a policy (like a kernel datapath with
// no handler: misses are counted as lost), and waits until its control
// socket answers.
func startUserspaceDatapath(ctx context.Context, name string) error {
	bin, err := upcalldPath()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(ctl.Dir(), 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", ctl.Dir(), err)
	}
	logPath := filepath.Join(ctl.Dir(), name+".log")
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("opening %s: %w", logPath, err)
	}
	defer logf.Close()
	cmd := exec.Command(bin, "--datapath", "netdev@"+name, "--no-handlers", "--del-dp-on-exit")
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
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
			return fmt.Errorf("upcalld for netdev@%s exited (%v); see %s", name, err, logPath)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return fmt.Errorf("upcalld for netdev@%s did not open %s within 10s; see %s", name, ctl.SocketPath(name), logPath)
}

// stopUserspaceDatapath asks the process hosting netdev@name to delete
// the datapath, and waits until its socket is gone.
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
				return nil
			}
			return err
		}
		c.Close()
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("netdev@%s still answers 10s after delete", name)
}
