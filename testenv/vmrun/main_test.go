package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func buildVmrun(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "vmrun")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func exitCode(t *testing.T, err error) int {
	t.Helper()
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("running vmrun: %v", err)
	}
	return ee.ExitCode()
}

// TestDirectExec: with -vm never the program runs on the host, in the same
// directory, with the same environment, and its status comes back.
func TestDirectExec(t *testing.T) {
	bin := buildVmrun(t)
	dir := t.TempDir()
	cmd := exec.Command(bin, "-vm", "never", "/bin/sh", "-c", `echo "$PWD $FOO $1"; exit 5`, "sh", "arg one")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "FOO=bar")
	out, err := cmd.Output()
	if code := exitCode(t, err); code != 5 {
		t.Fatalf("exit status %d, want 5", code)
	}
	if got, want := string(out), dir+" bar arg one\n"; got != want {
		t.Fatalf("output %q, want %q", got, want)
	}
}

func TestUsageErrors(t *testing.T) {
	bin := buildVmrun(t)
	for _, args := range [][]string{{}, {"-vm", "sometimes", "/bin/true"}, {"-timeout", "0s", "/bin/true"}, {"-nosuchflag"}} {
		out, err := exec.Command(bin, args...).CombinedOutput()
		if code := exitCode(t, err); code != 2 {
			t.Errorf("vmrun %v: exit %d, want 2\n%s", args, code, out)
		}
		if !strings.Contains(string(out), "vmrun") && !strings.Contains(string(out), "usage") && !strings.Contains(string(out), "flag") {
			t.Errorf("vmrun %v: no explanation: %s", args, out)
		}
	}
	cmd := exec.Command(bin, "/bin/true")
	cmd.Env = append(os.Environ(), "OVSDP_VM_TIMEOUT=later")
	out, err := cmd.CombinedOutput()
	if code := exitCode(t, err); code != 2 || !strings.Contains(string(out), "OVSDP_VM_TIMEOUT") {
		t.Errorf("bad OVSDP_VM_TIMEOUT: exit %d: %s", code, out)
	}
	out, err = exec.Command(bin, "-vm", "never", "/no/such/program").CombinedOutput()
	if code := exitCode(t, err); code != 127 {
		t.Errorf("missing program: exit %d: %s", code, out)
	}
}
