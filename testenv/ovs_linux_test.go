package testenv

import (
	"os"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestStartOVS starts a private Open vSwitch in a namespace, makes a
// netdev bridge with a flow through it, and checks that both daemons
// are gone, and their directory too, once the test that started them
// has ended. Needs root and Open vSwitch.
func TestStartOVS(t *testing.T) {
	RequireRoot(t)
	ns := NewNetns(t)
	var o *OVS
	t.Run("run", func(t *testing.T) {
		o = StartOVS(t, ns)
		if _, err := o.Vsctl("add-br", "br0", "--", "set", "bridge", "br0", "datapath_type=netdev"); err != nil {
			t.Fatal(err)
		}
		if _, err := o.Ofctl("add-flow", "br0", "in_port=1,actions=output:2"); err != nil {
			t.Fatal(err)
		}
		out, err := o.Ofctl("dump-flows", "br0")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out, "in_port=1 actions=output:2") {
			t.Errorf("dump-flows: %s: want the flow added", out)
		}
		// The bridge's internal port is in the namespace, not here.
		if _, err := ns.Handle().LinkByName("br0"); err != nil {
			t.Errorf("no br0 in namespace %s: %v", ns, err)
		}
		out, err = o.Appctl("dpif/show")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out, "netdev@ovs-netdev") {
			t.Errorf("dpif/show: %s: want the netdev datapath", out)
		}
	})
	if o == nil {
		t.Fatal("StartOVS returned nothing")
	}
	for _, pid := range []int{o.VswitchdPID, o.DBPID} {
		if pid == 0 || syscall.Kill(pid, 0) != syscall.ESRCH {
			t.Errorf("daemon pid %d: still running (or never known) after its test ended", pid)
		}
	}
	if _, err := os.Stat(o.Dir); !os.IsNotExist(err) {
		t.Errorf("%s still exists after the test (%v)", o.Dir, err)
	}
}

// TestReadProcCPU: the process's CPU, read both ways, grows with the
// work a thread does, by about the same amount both ways; the count of
// times its threads were put on a CPU grows with each wake-up.
func TestReadProcCPU(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	c0, err := ReadProcCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	// Spin until this thread's own clock says 200 ms of CPU were used.
	var ts0, ts unix.Timespec
	clockThread(t, &ts0)
	for {
		clockThread(t, &ts)
		if time.Duration(ts.Nano()-ts0.Nano()) >= 200*time.Millisecond {
			break
		}
	}
	c1, err := ReadProcCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	d := c1.Sub(c0)
	if d.Threads == 0 || d.Sched < 200*time.Millisecond {
		t.Errorf("schedstat: %v over %d threads, want at least the 200ms spun", d.Sched, d.Threads)
	}
	// stat counts in ticks of 10 ms, sampled: allow a few ticks.
	if st := d.User + d.System; st < 150*time.Millisecond {
		t.Errorf("stat: user %v + system %v, want about the 200ms spun", d.User, d.System)
	}
	// Each sleep of this (locked) thread ends with it put on a CPU again.
	for range 5 {
		time.Sleep(time.Millisecond)
	}
	c2, err := ReadProcCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if s := c2.Sub(c1).Slices; s < 5 {
		t.Errorf("schedstat: the threads were put on a CPU %d times over 5 sleeps of one of them, want at least 5", s)
	}
	if _, err := ReadProcCPU(1 << 30); err == nil || !strings.Contains(err.Error(), "process 1073741824") {
		t.Errorf("a process that does not exist: %v, want an error naming it", err)
	}
}

// clockThread reads the calling thread's CPU clock.
func clockThread(t *testing.T, ts *unix.Timespec) {
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, ts); err != nil {
		t.Fatalf("clock_gettime(CLOCK_THREAD_CPUTIME_ID): %v", err)
	}
}

// TestParseStatTimes: utime and stime are found after the last ')' of
// the command name, which may hold spaces and parentheses; malformed
// lines are errors that say what is wrong.
func TestParseStatTimes(t *testing.T) {
	u, s, err := parseStatTimes("42 (a) b (c) S 1 42 42 0 -1 4194560 100 0 0 0 250 31 0 0 20 0 1 0 5 0 0\n")
	if err != nil || u != 2500*time.Millisecond || s != 310*time.Millisecond {
		t.Errorf("got %v %v %v, want 2.5s 310ms", u, s, err)
	}
	for _, bad := range []struct{ line, want string }{
		{"42 no parenthesis S 1", "no ')'"},
		{"42 (x) S 1 2 3", "4 fields"},
		{"42 (x) S 1 42 42 0 -1 4194560 100 0 0 0 x 31 0", "field 14"},
	} {
		if _, _, err := parseStatTimes(bad.line); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%q: %v, want an error with %q", bad.line, err, bad.want)
		}
	}
}
