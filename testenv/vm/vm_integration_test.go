//go:build integration

package vm_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/mdlayher/genetlink"

	"github.com/ovsdp/ovsdp/testenv"
)

// TestIntegrationOpenvswitchFamilies resolves the six generic netlink
// families of the openvswitch module. It fails (never skips) when one is
// missing: run it with -exec bin/vmrun where the host has no module.
func TestIntegrationOpenvswitchFamilies(t *testing.T) {
	testenv.RequireRoot(t)
	c, err := genetlink.Dial(nil)
	if err != nil {
		t.Fatalf("dialing generic netlink: %v", err)
	}
	defer c.Close()
	for _, name := range []string{"ovs_datapath", "ovs_vport", "ovs_flow", "ovs_packet", "ovs_meter", "ovs_ct_limit"} {
		f, err := c.GetFamily(name)
		if err != nil {
			t.Errorf("family %s: %v (is the openvswitch module loaded? run under -exec bin/vmrun)", name, err)
			continue
		}
		if f.ID == 0 || f.Name != name {
			t.Errorf("family %s resolved to %+v", name, f)
		}
		t.Logf("family %s: id %d version %d groups %v", f.Name, f.ID, f.Version, f.Groups)
	}
	if os.Getenv("OVSDP_VM_GUEST") == "1" {
		b, err := os.ReadFile("/proc/sys/kernel/osrelease")
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("running in the VM, kernel %s", strings.TrimSpace(string(b)))
	}
}

// TestIntegrationNetnsVethInKernel uses testenv inside the kernel under
// test: a namespace, a veth pair and a ping across it.
func TestIntegrationNetnsVethInKernel(t *testing.T) {
	testenv.RequireRoot(t)
	testenv.RequireKernelModule(t, "openvswitch")
	a, b := testenv.NewNetns(t), testenv.NewNetns(t)
	v := testenv.NewVeth(t, a, b)
	a.AddAddr(t, v.Name, "10.77.0.1/24")
	b.AddAddr(t, v.PeerName, "10.77.0.2/24")
	if err := a.Ping("10.77.0.2", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	// ip netns sees our namespaces (needs /var/run/netns in the guest).
	out, err := exec.Command("ip", "netns", "list").CombinedOutput()
	if err != nil {
		t.Fatalf("ip netns list: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), a.Name) || !strings.Contains(string(out), b.Name) {
		t.Fatalf("ip netns list does not show %s and %s:\n%s", a.Name, b.Name, out)
	}
	// And the ping binary from the host root works in a namespace.
	if out, err := b.Run("ping", "-c", "1", "-W", "5", "10.77.0.1"); err != nil {
		t.Fatalf("ping binary: %v\n%s", err, out)
	}
}

// TestIntegrationOvsDpctlReference checks that Debian's ovs-dpctl, the
// reference the other packages compare with, works against the module.
func TestIntegrationOvsDpctlReference(t *testing.T) {
	testenv.RequireRoot(t)
	testenv.RequireKernelModule(t, "openvswitch")
	dpctl, err := exec.LookPath("ovs-dpctl")
	if err != nil {
		t.Fatalf("ovs-dpctl not found (%v): install openvswitch-switch (scripts/vm/fetch-kernel.sh does)", err)
	}
	name := testenv.NewName()
	run := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(dpctl, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("ovs-dpctl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	run("add-dp", name)
	t.Cleanup(func() { exec.Command(dpctl, "del-dp", name).Run() })
	show := run("show", name)
	if !strings.Contains(show, "system@"+name+":") || !strings.Contains(show, "port 0: "+name+" (internal)") {
		t.Fatalf("ovs-dpctl show:\n%s", show)
	}
	run("add-flow", name, "in_port(1),eth(),eth_type(0x0800),ipv4(src=10.0.0.1,dst=10.0.0.2,proto=17,tos=0,ttl=64,frag=no),udp(src=1,dst=2)", "0")
	flows := run("dump-flows", name)
	if !strings.Contains(flows, "ipv4(src=10.0.0.1,dst=10.0.0.2,proto=17") {
		t.Fatalf("dump-flows does not show the flow:\n%s", flows)
	}
	t.Logf("ovs-dpctl show:\n%sdump-flows:\n%s", show, flows)
	run("del-dp", name)
	if out, err := exec.Command(dpctl, "show", name).CombinedOutput(); err == nil {
		t.Fatalf("datapath %s still there after del-dp:\n%s", name, out)
	}
}
