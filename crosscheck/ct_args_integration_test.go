//go:build integration

package crosscheck

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/ovsdp/ovsdp/odp"
	"github.com/ovsdp/ovsdp/testenv"
	"github.com/ovsdp/ovsdp/testenv/vm"
)

// ctArgCases are ct actions with a helper or a timeout policy, put on
// TCP and UDP flows (each case's own destination port, so that the flows
// of one datapath differ).
var ctArgCases = []struct{ name, key, acts string }{
	{"ftp-on-tcp", "tcp(dst=21)", "ct(commit,helper=ftp)"},
	{"ftp-without-commit", "tcp(dst=2121)", "ct(helper=ftp)"},
	{"ftp-on-udp", "udp(dst=21)", "ct(commit,helper=ftp)"},
	{"tftp-on-udp", "udp(dst=69)", "ct(commit,helper=tftp)"},
	{"unknown-helper", "tcp(dst=99)", "ct(commit,helper=nosuch)"},
	{"unknown-timeout-policy", "udp(dst=99)", "ct(commit,timeout=nosuch)"},
}

// ctArgKey is the flow key of a case's L4 attribute.
func ctArgKey(l4 string) string {
	proto := 6
	if strings.HasPrefix(l4, "udp") {
		proto = 17
	}
	return fmt.Sprintf("in_port(1),eth(),eth_type(0x0800),ipv4(proto=%d,frag=no),%s", proto, l4)
}

// ctArgResults puts each case's flow on a fresh datapath and returns
// what each put returned: "ok", the errno's name, or the error.
func ctArgResults(t *testing.T, open Opener, name string) map[string]string {
	t.Helper()
	dp, cleanup, err := open(name)
	if err != nil {
		t.Fatalf("open %s: %v", name, err)
	}
	defer cleanup()
	if _, err := dp.AddPort(context.Background(), odp.PortSpec{Name: name + "-p", Type: "internal"}); err != nil && !errors.Is(err, odp.ErrUnsupported) {
		t.Logf("%s: add port: %v (in_port(1) then names no port)", name, err)
	}
	out := map[string]string{}
	for _, c := range ctArgCases {
		key := ctArgKey(c.key)
		err := putFlowText(context.Background(), dp, FlowSpec{key, c.acts}, 0)
		var errno syscall.Errno
		switch {
		case err == nil:
			out[c.name] = "ok"
		case errors.As(err, &errno):
			out[c.name] = unix.ErrnoName(errno)
		default:
			out[c.name] = "error: " + err.Error()
		}
		t.Logf("%s: %s actions:%s: %v", name, key, c.acts, err)
	}
	return out
}

// helperModules are the kernel's FTP and TFTP conntrack helpers and
// their NAT parts, in the order they load.
var helperModules = []string{"nf_conntrack_ftp", "nf_conntrack_tftp", "nf_nat_ftp", "nf_nat_tftp"}

// loadedModules returns which of names /proc/modules lists.
func loadedModules(t *testing.T, names []string) map[string]bool {
	t.Helper()
	b, err := os.ReadFile("/proc/modules")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 0 && slices.Contains(names, f[0]) {
			out[f[0]] = true
		}
	}
	return out
}

// setHelperModules loads (from the VM's module tree) or unloads the
// helper modules.
func setHelperModules(t *testing.T, load bool) {
	t.Helper()
	if !load {
		for i := len(helperModules) - 1; i >= 0; i-- {
			if m := helperModules[i]; loadedModules(t, helperModules)[m] {
				if err := unix.DeleteModule(m, unix.O_NONBLOCK); err != nil {
					t.Fatalf("unloading %s: %v", m, err)
				}
			}
		}
		return
	}
	for _, m := range helperModules {
		if loadedModules(t, helperModules)[m] {
			continue
		}
		paths, _ := filepath.Glob(filepath.Join(vm.DefaultCache, "linux-image-*", "modules", "*", "kernel", "net", "netfilter", m+".ko"))
		if len(paths) == 0 {
			t.Fatalf("no %s.ko under %s: the kernel's helper cannot be loaded to check its answer", m, vm.DefaultCache)
		}
		f, err := os.Open(paths[0])
		if err != nil {
			t.Fatal(err)
		}
		err = unix.FinitModule(int(f.Fd()), "", 0)
		f.Close()
		if err != nil && err != unix.EEXIST {
			t.Fatalf("loading %s: %v", paths[0], err)
		}
	}
}

// TestIntegrationCTHelperTimeout checks what kernel 6.1 answers to ct
// actions with a helper or a timeout policy, with the helper modules
// loaded and without them, and that netdev@, which has no helpers and
// no timeout policies, answers as the kernel does without them.
func TestIntegrationCTHelperTimeout(t *testing.T) {
	testenv.RequireRoot(t)
	testenv.RequireKernelModule(t, "openvswitch")
	before := loadedModules(t, helperModules)
	t.Logf("helper modules loaded at the start: %v", before)
	setHelperModules(t, true)
	sysHelpers := ctArgResults(t, SystemOpener, "ctargs-sys1")
	setHelperModules(t, false)
	defer setHelperModules(t, true)
	sys := ctArgResults(t, SystemOpener, "ctargs-sys2")
	net := ctArgResults(t, NetdevOpener, "ctargs-net")
	var b strings.Builder
	fmt.Fprintf(&b, "%-24s %-10s %-10s %s\n", "case", "system@", "netdev@", "system@ with nf_conntrack_ftp/tftp")
	for _, c := range ctArgCases {
		fmt.Fprintf(&b, "%-24s %-10s %-10s %s\n", c.name, sys[c.name], net[c.name], sysHelpers[c.name])
		if sys[c.name] != net[c.name] {
			t.Errorf("%s: system@ without helpers %s, netdev@ %s", c.name, sys[c.name], net[c.name])
		}
	}
	// The difference that remains: the kernel with its helpers loaded.
	for c, want := range map[string]string{"ftp-on-tcp": "ok", "tftp-on-udp": "ok", "ftp-on-udp": "EINVAL", "unknown-helper": "EINVAL"} {
		if sysHelpers[c] != want {
			t.Errorf("%s with the helper modules: system@ %s, want %s", c, sysHelpers[c], want)
		}
	}
	t.Logf("ct helper and timeout arguments:\n%s", b.String())
}
