package testenv

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
)

// Capability numbers from linux/capability.h.
const (
	capNetAdmin = 12
	capSysAdmin = 21
	capNetRaw   = 13
)

// effectiveCaps returns the effective capability set of this process.
func effectiveCaps() (uint64, error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, fmt.Errorf("reading /proc/self/status: %w", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "CapEff:"); ok {
			n, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			if err != nil {
				return 0, fmt.Errorf("parsing CapEff %q: %w", v, err)
			}
			return n, nil
		}
	}
	return 0, fmt.Errorf("no CapEff line in /proc/self/status")
}

// RequireRoot fails the test (it does not skip it) unless the process runs
// as root with CAP_NET_ADMIN, CAP_NET_RAW and CAP_SYS_ADMIN, which network
// namespaces, links and raw sockets need.
func RequireRoot(t testing.TB) {
	t.Helper()
	if msg := rootProblem(); msg != "" {
		t.Fatalf("this test needs root: %s; run it as root (e.g. sudo go test ...), in CI it runs as root", msg)
	}
}

func rootProblem() string {
	if os.Geteuid() != 0 {
		return fmt.Sprintf("effective uid is %d, not 0", os.Geteuid())
	}
	caps, err := effectiveCaps()
	if err != nil {
		return err.Error()
	}
	var missing []string
	for _, c := range []struct {
		bit  uint
		name string
	}{{capNetAdmin, "CAP_NET_ADMIN"}, {capNetRaw, "CAP_NET_RAW"}, {capSysAdmin, "CAP_SYS_ADMIN"}} {
		if caps&(1<<c.bit) == 0 {
			missing = append(missing, c.name)
		}
	}
	if len(missing) > 0 {
		return "uid 0 but missing " + strings.Join(missing, ", ")
	}
	return ""
}

// RequireKernelModule fails the test unless the running kernel has the
// named module loaded or built in (for example "openvswitch"). On hosts
// without it, run kernel tests under the VM runner:
// go test -tags integration -exec $(pwd)/bin/vmrun ./...
func RequireKernelModule(t testing.TB, name string) {
	t.Helper()
	if _, err := os.Stat("/sys/module/" + name); err != nil {
		t.Fatalf("kernel module %s is not loaded in this kernel (%s): kernel tests must run where it is, e.g. under the VM runner: go test -tags integration -exec $(pwd)/bin/vmrun ./... (see testenv/README.md)", name, err)
	}
}
