package vm

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// HostHasOpenvswitch reports whether the running kernel has the openvswitch
// module loaded or can load it with modprobe.
func HostHasOpenvswitch() bool {
	if _, err := os.Stat("/sys/module/openvswitch"); err == nil {
		return true
	}
	modprobe, err := exec.LookPath("modprobe")
	if err != nil {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if exec.CommandContext(ctx, modprobe, "-q", "openvswitch").Run() != nil {
		return false
	}
	_, err = os.Stat("/sys/module/openvswitch")
	return err == nil
}

// NeedVM reports whether programs must run in a VM under cfg.Mode.
func NeedVM(cfg Config) bool {
	switch cfg.Mode {
	case "always":
		return true
	case "never":
		return false
	}
	return !HostHasOpenvswitch()
}

// RunDirPrefix starts the name of every per-run temporary directory.
const RunDirPrefix = "ovsdp-vm-"

// SweepStaleRunDirs removes per-run directories in tmp left by runners
// that no longer exist (killed with SIGKILL, say).
func SweepStaleRunDirs(tmp string) {
	ents, err := os.ReadDir(tmp)
	if err != nil {
		return
	}
	for _, e := range ents {
		rest, ok := strings.CutPrefix(e.Name(), RunDirPrefix)
		if !ok || !e.IsDir() {
			continue
		}
		pidStr, _, ok := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidStr)
		if !ok || err != nil || pid <= 0 {
			continue
		}
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); errors.Is(err, os.ErrNotExist) {
			os.RemoveAll(filepath.Join(tmp, e.Name()))
		}
	}
}

// ErrTimeout is returned (wrapped) when the VM ran longer than the timeout.
var ErrTimeout = errors.New("VM timed out")

// Run runs argv (argv[0] the program) with environment env in directory
// dir inside a VM booted from the kernel in cfg.Cache, and returns the
// program's exit status. A non-nil error means the VM could not run the
// program to completion (the status is then meaningless); its text includes
// the end of the guest console.
func Run(ctx context.Context, cfg Config, argv, env []string, dir string) (int, error) {
	if len(argv) == 0 {
		return -1, errors.New("vm: no program to run")
	}
	if cfg.Log == nil {
		cfg.Log = cfg.Stderr
	}
	if cfg.Stdout == nil || cfg.Stderr == nil || cfg.Log == nil {
		return -1, errors.New("vm: Stdout and Stderr must be set")
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	start := time.Now()
	prog, err := filepath.Abs(argv[0])
	if err != nil {
		return -1, fmt.Errorf("vm: program path: %w", err)
	}
	if st, err := os.Stat(prog); err != nil || st.IsDir() {
		return -1, fmt.Errorf("vm: program %s: not a file (%v)", prog, err)
	}
	argv = append([]string{prog}, argv[1:]...)
	if dir == "" {
		if dir, err = os.Getwd(); err != nil {
			return -1, fmt.Errorf("vm: working directory: %w", err)
		}
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return -1, fmt.Errorf("vm: working directory: %w", err)
	}

	kernel, err := FindKernel(cfg.Cache)
	if err != nil {
		return -1, err
	}
	qemu, err := exec.LookPath(cfg.QEMU)
	if err != nil {
		return -1, fmt.Errorf("vm: %s not found (%v); run %s as root to install qemu-system-x86", cfg.QEMU, err, FetchScript)
	}
	tree, err := OpenModuleTree(kernel.ModulesDir)
	if err != nil {
		return -1, fmt.Errorf("vm: %w", err)
	}
	mods, err := tree.LoadOrder(RequiredModules, append(append([]string(nil), OptionalModules...), "virtio_rng"))
	if err != nil {
		return -1, fmt.Errorf("vm: kernel %s: %w", kernel.Release, err)
	}

	SweepStaleRunDirs(os.TempDir())
	runDir, err := os.MkdirTemp("", fmt.Sprintf("%s%d-", RunDirPrefix, os.Getpid()))
	if err != nil {
		return -1, fmt.Errorf("vm: %w", err)
	}
	defer os.RemoveAll(runDir)

	initrd, err := ensureInitramfs(kernel.Dir, runDir, cfg.Busybox, mods)
	if err != nil {
		return -1, fmt.Errorf("vm: %w", err)
	}

	shares, err := planShares(shareCandidates(prog, dir, env, cfg.Shares))
	if err != nil {
		return -1, fmt.Errorf("vm: %w", err)
	}
	var tok [16]byte
	rand.Read(tok[:])
	spec := Spec{
		Argv:   argv,
		Env:    append(append([]string(nil), env...), EnvGuest+"=1"),
		Dir:    dir,
		Shares: shares,
		Marker: "<<OVSDP-VM-EOF-" + hex.EncodeToString(tok[:]) + ">>",
	}
	if err := os.WriteFile(filepath.Join(runDir, "stage2.sh"), []byte(stage2Script(spec)), 0o644); err != nil {
		return -1, fmt.Errorf("vm: %w", err)
	}
	if err := os.WriteFile(filepath.Join(runDir, "inner.sh"), []byte(innerScript(spec)), 0o644); err != nil {
		return -1, fmt.Errorf("vm: %w", err)
	}

	outL, err := net.Listen("unix", filepath.Join(runDir, "out.sock"))
	if err != nil {
		return -1, fmt.Errorf("vm: %w", err)
	}
	defer outL.Close()
	errL, err := net.Listen("unix", filepath.Join(runDir, "err.sock"))
	if err != nil {
		return -1, fmt.Errorf("vm: %w", err)
	}
	defer errL.Close()

	consolePath := filepath.Join(runDir, "console.log")
	qemuLog, err := os.Create(filepath.Join(runDir, "qemu.log"))
	if err != nil {
		return -1, fmt.Errorf("vm: %w", err)
	}
	defer qemuLog.Close()

	args := qemuArgs(cfg, kernel, initrd, runDir, consolePath, shares)
	cmd := exec.Command(qemu, args...)
	cmd.Stdin = nil
	cmd.Stdout = qemuLog
	cmd.Stderr = qemuLog
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if cfg.Debug {
		fmt.Fprintf(cfg.Log, "vmrun: %s %s\n", qemu, strings.Join(args, " "))
	}
	if err := cmd.Start(); err != nil {
		return -1, fmt.Errorf("vm: starting %s: %w", qemu, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	var wg sync.WaitGroup
	outF := newStream(&wg, outL, cfg.Stdout, spec.Marker)
	errF := newStream(&wg, errL, cfg.Stderr, spec.Marker)

	timer := time.NewTimer(cfg.Timeout)
	defer timer.Stop()
	var runErr error
	select {
	case werr := <-exited:
		if werr != nil {
			runErr = fmt.Errorf("qemu exited: %w", werr)
		}
	case <-timer.C:
		killGroup(cmd)
		<-exited
		runErr = fmt.Errorf("%w after %v (set %s or -timeout to change)", ErrTimeout, cfg.Timeout, EnvTimeout)
	case <-ctx.Done():
		killGroup(cmd)
		<-exited
		runErr = fmt.Errorf("vm: interrupted: %w", ctx.Err())
	}
	// Make sure nothing of the process group survives (QEMU helpers).
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	outL.Close()
	errL.Close()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		outF.close()
		errF.close()
		<-done
	}
	outF.flush()
	errF.flush()

	elapsed := time.Since(start)
	statusB, serr := os.ReadFile(filepath.Join(runDir, "status"))
	if runErr == nil && serr != nil {
		runErr = errors.New("the guest did not report an exit status (boot failure or kernel crash)")
	}
	if runErr != nil {
		return -1, fmt.Errorf("vm: %w\n%s", runErr, diagnostics(consolePath, qemuLog.Name(), 40))
	}
	status, err := parseStatus(statusB)
	if err != nil {
		return -1, fmt.Errorf("vm: %w\n%s", err, diagnostics(consolePath, qemuLog.Name(), 40))
	}
	if !outF.seen() || !errF.seen() {
		fmt.Fprintf(cfg.Log, "vmrun: warning: the end-of-output marker did not arrive on stdout=%v stderr=%v; output may be incomplete (a process left running by the program may hold the port)\n", outF.seen(), errF.seen())
	}
	if cfg.Debug {
		fmt.Fprintf(cfg.Log, "vmrun: kernel %s, %d vCPUs, %d MiB: VM run took %v, exit status %d\n%s",
			kernel.Release, cfg.CPUs, cfg.MemoryMiB, elapsed.Round(time.Millisecond), status, diagnostics(consolePath, qemuLog.Name(), 0))
	}
	return status, nil
}

// parseStatus reads the exit status the guest's shell wrote: 0 to 255.
// Anything else is refused rather than handed to os.Exit, which keeps only
// the low 8 bits (256 would exit 0).
func parseStatus(b []byte) (int, error) {
	s := strings.TrimSpace(string(b))
	status, err := strconv.Atoi(s)
	if err != nil || status < 0 || status > 255 || s[0] == '+' {
		return -1, fmt.Errorf("bad exit status %q from the guest: want 0 to 255", b)
	}
	return status, nil
}

func killGroup(cmd *exec.Cmd) {
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	cmd.Process.Kill()
}

// shareCandidates lists the directories that must be writable in the guest
// at their host paths: the program's directory, the working directory, the
// Go build cache and a temporary directory outside /tmp, plus extra.
func shareCandidates(prog, dir string, env []string, extra []string) []string {
	get := func(k string) string {
		for i := len(env) - 1; i >= 0; i-- {
			if v, ok := strings.CutPrefix(env[i], k+"="); ok {
				return v
			}
		}
		return ""
	}
	out := []string{filepath.Dir(prog), dir}
	gocache := get("GOCACHE")
	if gocache == "" {
		if x := get("XDG_CACHE_HOME"); x != "" {
			gocache = filepath.Join(x, "go-build")
		} else if h := get("HOME"); h != "" {
			gocache = filepath.Join(h, ".cache", "go-build")
		}
	}
	cands := []string{gocache, get("TMPDIR"), get("GOTMPDIR")}
	cands = append(cands, extra...)
	for _, c := range cands {
		if c == "" || c == "off" || !filepath.IsAbs(c) {
			continue
		}
		c = filepath.Clean(c)
		if c == "/tmp" || strings.HasPrefix(c, "/tmp/") {
			continue // a tmpfs in the guest already
		}
		if st, err := os.Stat(c); err == nil && st.IsDir() {
			out = append(out, c)
		}
	}
	return out
}

// qemuOpt escapes a value for QEMU's comma-separated option syntax.
func qemuOpt(s string) string { return strings.ReplaceAll(s, ",", ",,") }

func qemuArgs(cfg Config, k *Kernel, initrd, runDir, console string, shares []Share) []string {
	cpus := cfg.CPUs
	if cpus <= 0 {
		cpus = 2
	}
	mem := cfg.MemoryMiB
	if mem <= 0 {
		mem = 2048
	}
	args := []string{
		"-nodefaults", "-no-user-config", "-no-reboot",
		"-accel", "tcg,thread=multi",
		"-machine", "pc",
		"-cpu", "max",
		"-smp", strconv.Itoa(cpus),
		"-m", strconv.Itoa(mem),
		"-display", "none",
		"-monitor", "none",
		"-kernel", k.Vmlinuz,
		"-initrd", initrd,
		"-append", "console=ttyS0 panic=-1 oops=panic loglevel=4 printk.time=1 rdinit=/init mitigations=off random.trust_cpu=on",
		"-chardev", "file,id=con,path=" + qemuOpt(console),
		"-serial", "chardev:con",
		"-device", "virtio-rng-pci",
		"-device", "virtio-serial-pci",
		"-chardev", "socket,id=out,path=" + qemuOpt(filepath.Join(runDir, "out.sock")),
		"-device", "virtserialport,chardev=out,name=" + stdoutPort,
		"-chardev", "socket,id=err,path=" + qemuOpt(filepath.Join(runDir, "err.sock")),
		"-device", "virtserialport,chardev=err,name=" + stderrPort,
		"-virtfs", "local,path=/,mount_tag=" + hostTag + ",security_model=none,readonly=on,multidevs=remap",
		"-virtfs", "local,path=" + qemuOpt(runDir) + ",mount_tag=" + runTag + ",security_model=none,multidevs=remap",
	}
	for _, s := range shares {
		args = append(args, "-virtfs", "local,path="+qemuOpt(s.Path)+",mount_tag="+s.Tag+",security_model=none,multidevs=remap")
	}
	return args
}

// stream accepts QEMU's connection for one virtio port and copies it to w
// through a marker filter; when the marker arrives it acknowledges it so
// that the guest knows all output was delivered.
type stream struct {
	mu   sync.Mutex
	conn net.Conn
	f    *markerFilter
}

func newStream(wg *sync.WaitGroup, l net.Listener, w io.Writer, marker string) *stream {
	s := &stream{}
	s.f = newMarkerFilter(w, marker, func() {
		s.mu.Lock()
		c := s.conn
		s.mu.Unlock()
		if c != nil {
			c.Write([]byte("ok\n"))
		}
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		c, err := l.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		s.conn = c
		s.mu.Unlock()
		defer c.Close()
		io.Copy(s.f, c)
	}()
	return s
}

func (s *stream) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conn != nil {
		s.conn.Close()
	}
}

func (s *stream) flush() { s.f.Flush() }

func (s *stream) seen() bool { return s.f.Seen() }

// diagnostics returns the last n lines of the guest console and the QEMU
// log (all lines when n is 0), for error messages. When the console's
// last n lines start after the first line of a kernel failure report
// (failureMarkers), up to failureLines lines from that one come first:
// the reason must not be lost to a long stack trace.
func diagnostics(console, qemuLog string, n int) string {
	var b strings.Builder
	for _, f := range []struct{ name, path string }{{"guest console", console}, {"qemu", qemuLog}} {
		data, err := os.ReadFile(f.path)
		if err != nil || len(bytes.TrimSpace(data)) == 0 {
			continue
		}
		lines := tailLines(data, n)
		if f.path == console && n > 0 {
			all := tailLines(data, 0)
			if i := firstFailure(all); i >= 0 && i < len(all)-len(lines) {
				fmt.Fprintf(&b, "--- guest console (from line %d, where a kernel failure report begins) ---\n", i+1)
				for _, l := range all[i:min(i+failureLines, len(all)-len(lines))] {
					b.WriteString(l)
					b.WriteByte('\n')
				}
			}
		}
		fmt.Fprintf(&b, "--- %s (last %d lines) ---\n", f.name, len(lines))
		for _, l := range lines {
			b.WriteString(l)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// failureMarkers start the lines of the guest kernel's failure reports:
// a panic, an oops, a BUG, a sysrq-triggered crash, a protection fault.
var failureMarkers = []string{"Kernel panic", "BUG:", "Oops:", "sysrq: ", "general protection fault"}

// failureLines is how many lines from a failure report's first one
// diagnostics keeps when the console's tail does not reach back to it.
const failureLines = 8

// firstFailure is the index of the first of lines that starts a kernel
// failure report, or -1.
func firstFailure(lines []string) int {
	for i, l := range lines {
		for _, m := range failureMarkers {
			if strings.Contains(l, m) {
				return i
			}
		}
	}
	return -1
}

func tailLines(data []byte, n int) []string {
	var lines []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		lines = append(lines, strings.TrimRight(sc.Text(), "\r"))
	}
	if n > 0 && len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return lines
}
