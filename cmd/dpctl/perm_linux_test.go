package main

import (
	"bytes"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ovsdp/ovsdp/internal/runsock"
	"github.com/ovsdp/ovsdp/testenv"
	"github.com/ovsdp/ovsdp/userdp/ctl"
)

// Who runs a command in the permission tests: setpriv arguments (none:
// root).
var (
	asRoot      []string
	asNobody    = []string{"--reuid=nobody", "--regid=nogroup", "--clear-groups"}
	asMember    = []string{"--reuid=nobody", "--regid=nogroup", "--groups=" + permGroup}
	asPrimaryGr = []string{"--reuid=nobody", "--regid=" + permGroup, "--clear-groups"}
)

// permGroup is the group the tests share a datapath with; Debian's
// base-passwd always has it, and nobody is not a member.
const permGroup = "users"

// permEnv is a run directory and the dpctl and upcalld binaries, all
// reachable by user nobody up to the run directory itself.
type permEnv struct {
	t      *testing.T
	bin    string
	rundir string
	ns     *testenv.Netns
}

func newPermEnv(t *testing.T) *permEnv {
	t.Helper()
	testenv.RequireRoot(t)
	if _, err := exec.LookPath("setpriv"); err != nil {
		t.Fatalf("these tests run commands as user nobody with setpriv (util-linux): %v", err)
	}
	for _, n := range []string{"nobody"} {
		if _, err := user.Lookup(n); err != nil {
			t.Fatalf("user %s: %v", n, err)
		}
	}
	for _, g := range []string{"nogroup", permGroup} {
		if _, err := user.LookupGroup(g); err != nil {
			t.Fatalf("group %s: %v", g, err)
		}
	}
	top, err := os.MkdirTemp("", "dpperm") // short: socket paths are limited to 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(top) })
	// Every directory down to the run directory is open to all: only
	// the run directory and the sockets may keep nobody out.
	if err := os.Chmod(top, 0o755); err != nil {
		t.Fatal(err)
	}
	e := &permEnv{t: t, bin: filepath.Join(top, "bin"), rundir: filepath.Join(top, "run"), ns: testenv.NewNetns(t)}
	if err := os.Mkdir(e.bin, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"cmd/dpctl", "cmd/upcalld"} {
		out, err := exec.Command("go", "build", "-o", e.bin+"/", "github.com/ovsdp/ovsdp/"+p).CombinedOutput()
		if err != nil {
			t.Fatalf("building %s: %v\n%s", p, err, out)
		}
	}
	t.Setenv("OVSDP_RUNDIR", e.rundir)
	return e
}

// run runs a command of the bin directory (dpctl or upcalld) as who,
// with the umask 000 when umask0 is set, and returns its output.
func (e *permEnv) run(who []string, umask0 bool, prog string, args ...string) (string, error) {
	e.t.Helper()
	argv := append([]string{filepath.Join(e.bin, prog)}, args...)
	if umask0 {
		argv = append([]string{"/bin/sh", "-c", `umask 000; exec "$@"`, "sh"}, argv...)
	}
	if who != nil {
		argv = append(append([]string{"setpriv"}, who...), argv...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "OVSDP_RUNDIR=" + e.rundir}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		e.t.Fatalf("%v: %v", argv, err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return out.String(), err
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		e.t.Fatalf("%v: still running after 30s:\n%s", argv, out.String())
		return "", nil
	}
}

// mustRun runs a command that must succeed and returns its output.
func (e *permEnv) mustRun(who []string, prog string, args ...string) string {
	e.t.Helper()
	out, err := e.run(who, false, prog, args...)
	if err != nil {
		e.t.Errorf("%s %v as %v: %v\n%s", prog, args, who, err, out)
	}
	return out
}

// mustDeny runs a command that must fail with a permission error whose
// text contains want, never "does not exist".
func (e *permEnv) mustDeny(who []string, want, prog string, args ...string) {
	e.t.Helper()
	out, err := e.run(who, false, prog, args...)
	switch {
	case err == nil:
		e.t.Errorf("%s %v as %v succeeded, want a refusal:\n%s", prog, args, who, out)
	case !strings.Contains(out, want):
		e.t.Errorf("%s %v as %v: output %q does not contain %q", prog, args, who, out, want)
	case strings.Contains(out, "does not exist") || strings.Contains(out, "no upcalld answers"):
		e.t.Errorf("%s %v as %v: %q says the datapath is missing; want permission denied", prog, args, who, out)
	}
}

// addDP starts netdev@name with dpctl add-dp under umask 000, in the
// test's network namespace (its local port is a tap device), and stops
// it when the test ends. It returns upcalld's PID.
func (e *permEnv) addDP(name string, extra ...string) int {
	e.t.Helper()
	args := append([]string{"--netns", e.ns.Name, "add-dp", "netdev@" + name}, extra...)
	if out, err := e.run(asRoot, true, "dpctl", args...); err != nil {
		e.t.Fatalf("dpctl %v: %v\n%s", args, err, out)
	}
	c, err := net.Dial("unix", ctl.SocketPath(name))
	if err != nil {
		e.t.Fatal(err)
	}
	cred, err := runsock.PeerCred(c)
	c.Close()
	if err != nil {
		e.t.Fatal(err)
	}
	pid := int(cred.Pid)
	e.t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	return pid
}

// checkMode checks the permission bits and the group of path.
func (e *permEnv) checkMode(path string, mode os.FileMode, group string) {
	e.t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		e.t.Error(err)
		return
	}
	if got := os.FileMode(st.Mode & 0o777); got != mode {
		e.t.Errorf("%s: mode %v, want %v", path, got, mode)
	}
	g, _ := user.LookupGroup(group)
	if g != nil && strconv.Itoa(int(st.Gid)) != g.Gid {
		e.t.Errorf("%s: group %d, want %s (%s)", path, st.Gid, group, g.Gid)
	}
}

// umaskOf reads a process's umask.
func umaskOf(t *testing.T, pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "Umask:"); ok {
			return strings.TrimSpace(v)
		}
	}
	t.Fatalf("no Umask in /proc/%d/status", pid)
	return ""
}

// chmodAll opens the run directory and its sockets to everyone, as a
// mistaken administrator might: the peer check must still refuse.
func (e *permEnv) chmodAll(paths ...string) {
	e.t.Helper()
	for _, p := range append([]string{e.rundir}, paths...) {
		if err := os.Chmod(p, 0o777); err != nil {
			e.t.Fatal(err)
		}
	}
}

// A datapath started under umask 000 without a group: user nobody can
// neither read nor change anything through either socket, and is told
// why; the peer check refuses it even when the files are opened to all.
// dump-dps and show list the datapath, not its status socket, and del-dp
// removes the log.
func TestSocketPermissionsRootOnly(t *testing.T) {
	e := newPermEnv(t)
	const name = "permdp"
	pid := e.addDP(name)
	sock, status, logf := ctl.SocketPath(name), ctl.StatusSocket("netdev", name), filepath.Join(e.rundir, name+".log")
	e.checkMode(e.rundir, 0o700, "root")
	e.checkMode(sock, 0o600, "root")
	e.checkMode(status, 0o600, "root")
	e.checkMode(logf, 0o600, "root")
	if u := umaskOf(t, pid); u != "0077" {
		t.Errorf("upcalld started by add-dp under umask 000 runs with umask %s, want 0077", u)
	}
	if out := e.mustRun(asRoot, "dpctl", "dump-dps"); out != "netdev@"+name+"\n" {
		t.Errorf("dump-dps with a daemon running: %q, want only netdev@%s", out, name)
	}
	if out := e.mustRun(asRoot, "dpctl", "show"); !strings.HasPrefix(out, "netdev@"+name+":\n") || !strings.Contains(out, "flows: 0 (limit 200000)") {
		t.Errorf("show with a daemon running:\n%s", out)
	}

	denied := "permission denied: netdev@" + name + " is owned by root; run as root"
	try := func(layer string) {
		t.Run(layer, func(t *testing.T) {
			e.t = t
			e.mustDeny(asNobody, denied, "dpctl", "show", "netdev@"+name)
			e.mustDeny(asNobody, "permission denied", "dpctl", "show")
			e.mustDeny(asNobody, denied, "dpctl", "dump-flows", "netdev@"+name)
			e.mustDeny(asNobody, denied, "dpctl", "add-if", "netdev@"+name, "intruder,type=memory")
			e.mustDeny(asNobody, denied, "dpctl", "add-flow", "netdev@"+name, "in_port(1),eth(),eth_type(0x0800),ipv4(frag=no)", "drop")
			e.mustDeny(asNobody, denied, "dpctl", "del-flows", "netdev@"+name)
			e.mustDeny(asNobody, denied, "dpctl", "del-dp", "netdev@"+name)
			e.mustDeny(asNobody, denied, "upcalld", "status", "--datapath", "netdev@"+name)
			out := e.mustRun(asRoot, "dpctl", "show", "netdev@"+name)
			if strings.Contains(out, "intruder") || !strings.Contains(out, "flows: 0") {
				t.Errorf("the datapath changed:\n%s", out)
			}
			if !strings.Contains(e.mustRun(asRoot, "upcalld", "status", "--datapath", "netdev@"+name), "netdev@"+name) {
				t.Errorf("root's upcalld status fails")
			}
		})
	}
	try("permissions")
	e.t = t
	if !t.Failed() {
		out, _ := e.run(asNobody, false, "dpctl", "dump-dps")
		if !strings.Contains(out, "permission denied") {
			t.Errorf("nobody's dump-dps: %q; want permission denied", out)
		}
	}
	e.chmodAll(sock, status)
	try("peer check")
	e.t = t
	out, _ := e.run(asNobody, false, "dpctl", "show", "netdev@"+name)
	if !strings.Contains(out, "uid 65534 refused") {
		t.Errorf("with the files open to all, nobody's show: %q; want the peer check's refusal", out)
	}

	e.mustRun(asRoot, "dpctl", "del-dp", "netdev@"+name)
	for _, p := range []string{sock, status, logf} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s left behind after del-dp", p)
		}
	}
}

// A datapath shared with a group (add-dp --group): its members may use
// both sockets (by a supplementary group or the primary one), anyone else
// is refused, by the permissions and, with the files opened to all, by
// the peer check.
func TestSocketPermissionsGroup(t *testing.T) {
	e := newPermEnv(t)
	const name = "permgr"
	e.addDP(name, "--group", permGroup)
	sock, status := ctl.SocketPath(name), ctl.StatusSocket("netdev", name)
	e.checkMode(e.rundir, 0o750, permGroup)
	e.checkMode(sock, 0o660, permGroup)
	e.checkMode(status, 0o660, permGroup)
	e.checkMode(filepath.Join(e.rundir, name+".log"), 0o640, permGroup)

	denied := "permission denied: netdev@" + name + " is owned by root; run as root or join group " + permGroup
	flow := "in_port(1),eth(),eth_type(0x0800),ipv4(dst=10.9.0.%d,frag=no)"
	try := func(layer string, n int) {
		t.Run(layer, func(t *testing.T) {
			e.t = t
			for i, who := range [][]string{asMember, asPrimaryGr} {
				e.mustRun(who, "dpctl", "add-flow", "netdev@"+name, strings.Replace(flow, "%d", strconv.Itoa(2*n+i), 1), "drop")
				if out := e.mustRun(who, "dpctl", "show", "netdev@"+name); !strings.Contains(out, "netdev@"+name) {
					t.Errorf("a member's show: %q", out)
				}
				e.mustRun(who, "upcalld", "status", "--datapath", "netdev@"+name)
			}
			e.mustDeny(asNobody, denied, "dpctl", "show", "netdev@"+name)
			e.mustDeny(asNobody, denied, "dpctl", "add-flow", "netdev@"+name, "in_port(1),eth(),eth_type(0x0800),ipv4(frag=no)", "drop")
			e.mustDeny(asNobody, denied, "dpctl", "del-dp", "netdev@"+name)
			e.mustDeny(asNobody, denied, "upcalld", "status", "--datapath", "netdev@"+name)
		})
	}
	try("permissions", 0)
	e.chmodAll(sock, status)
	try("peer check", 1)
	e.t = t
	if out := e.mustRun(asRoot, "dpctl", "show", "netdev@"+name); !strings.Contains(out, "flows: 4 (limit") {
		t.Errorf("want the members' 4 flows:\n%s", out)
	}
	e.mustRun(asRoot, "dpctl", "del-dp", "netdev@"+name)
}
