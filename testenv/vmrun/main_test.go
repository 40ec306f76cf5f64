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

// TestTimeoutLimits: -timeout and OVSDP_VM_TIMEOUT share vm.ParseTimeout's
// syntax (a duration or seconds) and refuse, naming the value and the
// maximum, timeouts that overflow time.Duration (issue 21).
func TestTimeoutLimits(t *testing.T) {
	bin := buildVmrun(t)
	for _, tc := range []struct {
		args, env []string
		want      string
	}{
		{args: []string{"-timeout", "9227000000"}, want: `"9227000000" seconds is too large: the maximum is 9223372036 seconds`},
		{args: []string{"-timeout", "2562048h"}, want: `"2562048h" is too large: the maximum is 2562047h47m16.854775807s`},
		{env: []string{"OVSDP_VM_TIMEOUT=9227000000"}, want: `OVSDP_VM_TIMEOUT: timeout "9227000000" seconds is too large`},
		{args: []string{"-timeout", "-5"}, want: `"-5" must be positive`},
	} {
		cmd := exec.Command(bin, append(append([]string{"-vm", "never"}, tc.args...), "/bin/true")...)
		cmd.Env = append(os.Environ(), tc.env...)
		out, err := cmd.CombinedOutput()
		if code := exitCode(t, err); code != 2 || !strings.Contains(string(out), tc.want) {
			t.Errorf("vmrun %v with %v: exit %d, want 2 and %q in:\n%s", tc.args, tc.env, code, tc.want, out)
		}
	}
	for _, ok := range []string{"90", "20m", "9223372036"} {
		out, err := exec.Command(bin, "-vm", "never", "-timeout", ok, "/bin/true").CombinedOutput()
		if code := exitCode(t, err); code != 0 {
			t.Errorf("vmrun -timeout %s: exit %d, want 0\n%s", ok, code, out)
		}
	}
}
