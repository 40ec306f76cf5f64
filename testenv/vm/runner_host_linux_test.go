//go:build !integration

// These tests boot VMs from the host, so they are not built with the
// integration tag (whose tests run inside the VM).

package vm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// requireVMHost fails unless this machine can boot the VM.
func requireVMHost(t *testing.T) Config {
	t.Helper()
	if os.Getenv(EnvGuest) == "1" {
		t.Fatalf("runner tests boot VMs and cannot run inside one; they run on the host without -tags integration")
	}
	cfg, err := ConfigFromEnv()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := FindKernel(cfg.Cache); err != nil {
		t.Fatal(err)
	}
	cfg.Mode = "always"
	return cfg
}

func leftovers(t *testing.T) []string {
	t.Helper()
	var out []string
	ents, _ := os.ReadDir(os.TempDir())
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), fmt.Sprintf("%s%d-", RunDirPrefix, os.Getpid())) {
			out = append(out, "dir "+e.Name())
		}
	}
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		if _, err := strconv.Atoi(p.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + p.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) > 1 && f[1] == strconv.Itoa(os.Getpid()) && strings.Contains(s[:i], "qemu") {
			out = append(out, "process "+s[:i+1])
		}
	}
	return out
}

func TestRunnerEndToEnd(t *testing.T) {
	cfg := requireVMHost(t)
	var stdout, stderr, log bytes.Buffer
	cfg.Stdout, cfg.Stderr, cfg.Log = &stdout, &stderr, &log
	dir := t.TempDir()
	env := append(os.Environ(), helperEnv+"=echo", "OVSDP_TEST_MARKER=it's here")
	start := time.Now()
	status, err := Run(context.Background(), cfg, []string{os.Args[0], "a b", "c'd"}, env, dir)
	elapsed := time.Since(start)
	if err != nil {
		t.Fatalf("Run: %v\nlog: %s", err, log.String())
	}
	t.Logf("boot + run + power off: %v", elapsed.Round(time.Millisecond))
	if status != 7 {
		t.Errorf("exit status %d, want 7", status)
	}
	out := stdout.String()
	for _, want := range []string{`args=["a b" "c'd"]`, "wd=" + dir + "\n", "marker=it's here guest=1\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q", want)
		}
	}
	for _, bad := range []string{"not writable", "no openvswitch module", "write error"} {
		if strings.Contains(out, bad) {
			t.Errorf("guest reported a problem: %s", out[strings.Index(out, bad):][:min(200, len(out)-strings.Index(out, bad))])
		}
	}
	if n := strings.Count(out, strings.Repeat("x", 99)+"\n"); n != 20000 {
		t.Errorf("stdout has %d of the 20000 long lines", n)
	}
	if !strings.HasSuffix(out, "last stdout line\n") {
		t.Errorf("stdout does not end with the last line: ...%q", out[max(0, len(out)-80):])
	}
	if stderr.String() != "a line on stderr\n" {
		t.Errorf("stderr = %q", stderr.String())
	}
	if b, err := os.ReadFile(filepath.Join(dir, "from-guest.txt")); err != nil || string(b) != "written in the guest\n" {
		t.Errorf("file written by the guest in the working directory: %q, %v", b, err)
	}
	if log.Len() != 0 {
		t.Errorf("runner diagnostics on a clean run: %s", log.String())
	}
	if l := leftovers(t); len(l) > 0 {
		t.Errorf("left behind: %v", l)
	}
}

func TestRunnerTimeoutKillsVM(t *testing.T) {
	cfg := requireVMHost(t)
	var stdout, stderr bytes.Buffer
	cfg.Stdout, cfg.Stderr, cfg.Log = &stdout, &stderr, &stderr
	cfg.Timeout = 3 * time.Second
	start := time.Now()
	_, err := Run(context.Background(), cfg, []string{os.Args[0]}, append(os.Environ(), helperEnv+"=sleep"), "")
	if !errors.Is(err, ErrTimeout) {
		t.Fatalf("Run returned %v, want ErrTimeout", err)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("took %v to give up after a 3s timeout", d)
	}
	if !strings.Contains(err.Error(), "guest console") && !strings.Contains(err.Error(), "qemu") {
		t.Logf("no console in the error (the guest printed nothing in 3s): %v", err)
	}
	if l := leftovers(t); len(l) > 0 {
		t.Errorf("left behind: %v", l)
	}
}

func TestRunnerCancel(t *testing.T) {
	cfg := requireVMHost(t)
	var buf bytes.Buffer
	cfg.Stdout, cfg.Stderr, cfg.Log = &buf, &buf, &buf
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, err := Run(ctx, cfg, []string{os.Args[0]}, append(os.Environ(), helperEnv+"=sleep"), "")
	if err == nil || !strings.Contains(err.Error(), "interrupted") {
		t.Fatalf("Run returned %v, want interrupted", err)
	}
	if l := leftovers(t); len(l) > 0 {
		t.Errorf("left behind: %v", l)
	}
}

func TestRunnerMissingCache(t *testing.T) {
	cfg, err := ConfigFromEnv()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Cache = t.TempDir()
	var buf bytes.Buffer
	cfg.Stdout, cfg.Stderr = &buf, &buf
	_, err = Run(context.Background(), cfg, []string{os.Args[0]}, os.Environ(), "")
	if err == nil || !strings.Contains(err.Error(), FetchScript) {
		t.Fatalf("Run with an empty cache: %v; want an error naming %s", err, FetchScript)
	}
}

// TestRunnerBootFailureShowsDiagnostics boots a kernel file that is not a
// kernel: the error must say so and carry QEMU's own message.
func TestRunnerBootFailureShowsDiagnostics(t *testing.T) {
	cfg := requireVMHost(t)
	k, _ := FindKernel(cfg.Cache)
	cache := t.TempDir()
	pkgDir := filepath.Join(cache, k.Package)
	os.MkdirAll(filepath.Join(pkgDir, "modules"), 0o755)
	if err := os.Symlink(k.ModulesDir, filepath.Join(pkgDir, "modules", k.Release)); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(pkgDir, "vmlinuz"), bytes.Repeat([]byte("not a kernel "), 1000), 0o644)
	os.WriteFile(filepath.Join(pkgDir, "release"), []byte(k.Release+"\n"), 0o644)
	os.WriteFile(filepath.Join(pkgDir, ".complete"), nil, 0o644)
	os.WriteFile(filepath.Join(cache, "current"), []byte(k.Package+"\n"), 0o644)
	cfg.Cache = cache
	var buf bytes.Buffer
	cfg.Stdout, cfg.Stderr, cfg.Log = &buf, &buf, &buf
	_, err := Run(context.Background(), cfg, []string{os.Args[0]}, os.Environ(), "")
	if err == nil {
		t.Fatal("booting garbage succeeded")
	}
	if !strings.Contains(err.Error(), "--- qemu") {
		t.Fatalf("error lacks QEMU's output: %v", err)
	}
	t.Logf("error as reported: %v", err)
	if l := leftovers(t); len(l) > 0 {
		t.Errorf("left behind: %v", l)
	}
}

// TestRunnerKernelCrash crashes the guest kernel from the program: the
// runner must report that no exit status came, with the console's oops.
func TestRunnerKernelCrash(t *testing.T) {
	cfg := requireVMHost(t)
	var buf bytes.Buffer
	cfg.Stdout, cfg.Stderr, cfg.Log = &buf, &buf, &buf
	cfg.Timeout = 5 * time.Minute
	_, err := Run(context.Background(), cfg, []string{os.Args[0]}, append(os.Environ(), helperEnv+"=crash"), "")
	if err == nil {
		t.Fatal("a crashed guest reported success")
	}
	if errors.Is(err, ErrTimeout) {
		t.Fatalf("the crash was only noticed at the timeout: %v", err)
	}
	if !strings.Contains(err.Error(), "did not report an exit status") || !strings.Contains(err.Error(), "sysrq") {
		t.Fatalf("error lacks the reason or the console: %v", err)
	}
	t.Logf("reported: %v", err)
	if l := leftovers(t); len(l) > 0 {
		t.Errorf("left behind: %v", l)
	}
}
