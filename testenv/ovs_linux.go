package testenv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// OVSTools are the Open vSwitch programs StartOVS runs (Debian's
// openvswitch-switch and openvswitch-common).
var OVSTools = []string{"ovsdb-tool", "ovsdb-server", "ovs-vswitchd", "ovs-vsctl", "ovs-ofctl", "ovs-appctl"}

// ovsSchema is where Debian installs the Open_vSwitch database schema.
const ovsSchema = "/usr/share/openvswitch/vswitch.ovsschema"

// RequireOVS fails the test (it does not skip it) unless every program
// of OVSTools is on PATH and the database schema is installed.
func RequireOVS(t testing.TB) {
	t.Helper()
	if msg := ovsProblem(); msg != "" {
		t.Fatalf("this test needs Open vSwitch: %s; install it with apt-get install openvswitch-switch", msg)
	}
}

func ovsProblem() string {
	var missing []string
	for _, p := range OVSTools {
		if _, err := exec.LookPath(p); err != nil {
			missing = append(missing, p)
		}
	}
	if len(missing) > 0 {
		return "not on PATH: " + strings.Join(missing, ", ")
	}
	if _, err := os.Stat(ovsSchema); err != nil {
		return "no database schema: " + err.Error()
	}
	return ""
}

// OVS is a private Open vSwitch instance: an ovsdb-server and an
// ovs-vswitchd started with --detach in one network namespace, with
// their database, sockets, pid files and logs in a temporary directory
// of their own, so that they share nothing with a system instance or
// with other tests. StartOVS starts it; it stops when the test ends.
type OVS struct {
	// Dir holds conf.db, db.sock, the daemons' control sockets
	// (*.ctl), pid files (*.pid) and logs (*.log), and the bridges'
	// OpenFlow management sockets (BRIDGE.mgmt).
	Dir string
	ns  *Netns
	// VswitchdPID and DBPID are the daemons' process IDs (from their
	// pid files).
	VswitchdPID, DBPID int
}

// StartOVS starts a private ovsdb-server and ovs-vswitchd in namespace
// ns (nil: the test's own). It fails the test, with the reason and the end of the daemon's
// log, if a program is missing or a daemon does not start. When the
// test ends (also when it fails) both daemons are asked to exit, then
// killed if they have not within 5 s, and the directory removed.
func StartOVS(t testing.TB, ns *Netns) *OVS {
	t.Helper()
	RequireOVS(t)
	// A short path: sockets' paths are limited to 107 bytes.
	dir, err := os.MkdirTemp("", "ovsdp-ovs.")
	if err != nil {
		t.Fatalf("testenv: ovs: %v", err)
	}
	o := &OVS{Dir: dir, ns: ns}
	t.Cleanup(func() {
		if err := o.stop(); err != nil {
			t.Errorf("testenv: stopping Open vSwitch: %v", err)
		}
		os.RemoveAll(dir)
	})
	db := filepath.Join(dir, "conf.db")
	if _, err := o.run("ovsdb-tool", "create", db, ovsSchema); err != nil {
		t.Fatalf("testenv: %v", err)
	}
	if _, err := o.run("ovsdb-server", db, "--remote=punix:"+o.DBSocket(), "--pidfile="+o.path("ovsdb-server.pid"),
		"--unixctl="+o.path("ovsdb-server.ctl"), "--log-file="+o.path("ovsdb-server.log"), "-vconsole:off",
		"--no-chdir", "--detach"); err != nil {
		t.Fatalf("testenv: %v%s", err, o.logTail("ovsdb-server.log"))
	}
	if o.DBPID, err = readPIDFile(o.path("ovsdb-server.pid")); err != nil {
		t.Fatalf("testenv: ovsdb-server: %v", err)
	}
	if _, err := o.Vsctl("--no-wait", "init"); err != nil {
		t.Fatalf("testenv: %v", err)
	}
	if _, err := o.run("ovs-vswitchd", "unix:"+o.DBSocket(), "--pidfile="+o.path("ovs-vswitchd.pid"),
		"--unixctl="+o.VswitchdCtl(), "--log-file="+o.path("ovs-vswitchd.log"), "-vconsole:off",
		"--no-chdir", "--detach"); err != nil {
		t.Fatalf("testenv: %v%s", err, o.logTail("ovs-vswitchd.log"))
	}
	if o.VswitchdPID, err = readPIDFile(o.path("ovs-vswitchd.pid")); err != nil {
		t.Fatalf("testenv: ovs-vswitchd: %v", err)
	}
	return o
}

func (o *OVS) path(name string) string { return filepath.Join(o.Dir, name) }

// DBSocket is the database's Unix socket.
func (o *OVS) DBSocket() string { return o.path("db.sock") }

// VswitchdCtl is ovs-vswitchd's control socket (ovs-appctl -t).
func (o *OVS) VswitchdCtl() string { return o.path("ovs-vswitchd.ctl") }

// Mgmt is the OpenFlow management socket of bridge br, as ovs-ofctl's
// target ("unix:PATH").
func (o *OVS) Mgmt(br string) string { return "unix:" + o.path(br+".mgmt") }

// Vsctl runs ovs-vsctl against the instance's database.
func (o *OVS) Vsctl(args ...string) (string, error) {
	return o.run("ovs-vsctl", append([]string{"--db=unix:" + o.DBSocket(), "--timeout=30"}, args...)...)
}

// Ofctl runs ovs-ofctl COMMAND on bridge br's management socket with
// the remaining arguments (for example Ofctl("add-flow", "br0",
// "in_port=1,actions=output:2")).
func (o *OVS) Ofctl(command, br string, args ...string) (string, error) {
	return o.run("ovs-ofctl", append([]string{command, o.Mgmt(br)}, args...)...)
}

// Appctl runs ovs-appctl against ovs-vswitchd.
func (o *OVS) Appctl(args ...string) (string, error) {
	return o.run("ovs-appctl", append([]string{"-t", o.VswitchdCtl()}, args...)...)
}

// LogTail returns the last lines of ovs-vswitchd's log (for failure
// messages).
func (o *OVS) LogTail() string { return o.logTail("ovs-vswitchd.log") }

// run runs an Open vSwitch program in the instance's namespace with its
// directories pointed at Dir, and returns its combined output. It gives
// up after a minute.
func (o *OVS) run(name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), "OVS_RUNDIR="+o.Dir, "OVS_DBDIR="+o.Dir, "OVS_LOGDIR="+o.Dir, "OVS_SYSCONFDIR="+o.Dir)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	var err error
	if o.ns == nil {
		err = cmd.Run()
	} else {
		err = o.ns.Do(cmd.Run)
	}
	if err != nil {
		return out.String(), fmt.Errorf("ovs: %s %s in namespace %s: %w: %s", name, strings.Join(args, " "), o.ns, err, strings.TrimSpace(out.String()))
	}
	return out.String(), nil
}

// logTail formats the last 10 lines of the log file name for an error
// message ("" when there is none).
func (o *OVS) logTail(name string) string {
	b, err := os.ReadFile(o.path(name))
	if err != nil || len(b) == 0 {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return "\n" + name + " ends with:\n" + strings.Join(lines[max(0, len(lines)-10):], "\n")
}

// stop asks both daemons to exit, kills those still running after 5 s,
// and waits for them.
func (o *OVS) stop() error {
	var errs []error
	for _, d := range []struct {
		pid  int
		ctl  string
		name string
	}{{o.VswitchdPID, o.VswitchdCtl(), "ovs-vswitchd"}, {o.DBPID, o.path("ovsdb-server.ctl"), "ovsdb-server"}} {
		if d.pid == 0 {
			continue
		}
		args := []string{"-t", d.ctl, "exit"}
		if d.name == "ovs-vswitchd" {
			args = append(args, "--cleanup") // its datapaths go with it
		}
		o.run("ovs-appctl", args...) // an error here is handled by the kill below
		if !waitGone(d.pid, 5*time.Second) {
			syscall.Kill(d.pid, syscall.SIGKILL)
			if !waitGone(d.pid, 5*time.Second) {
				errs = append(errs, fmt.Errorf("%s (pid %d) still runs after SIGKILL", d.name, d.pid))
				continue
			}
			errs = append(errs, fmt.Errorf("%s (pid %d) did not exit when asked and was killed%s", d.name, d.pid, o.logTail(d.name+".log")))
		}
	}
	return errors.Join(errs...)
}

// waitGone waits up to d for process pid to end (the daemons are not
// our children, so they cannot be waited for).
func waitGone(pid int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// readPIDFile reads a daemon's pid file.
func readPIDFile(path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("pid file: %w", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return 0, fmt.Errorf("pid file %s holds %q, not a process ID", path, b)
	}
	return pid, nil
}
