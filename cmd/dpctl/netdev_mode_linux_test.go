package main

import (
	"strings"
	"testing"

	"github.com/ovsdp/ovsdp/testenv"
	"github.com/ovsdp/ovsdp/userdp"
)

// TestAddIfMode: dpctl add-if netdev@X IFACE,mode=xdp|ring|mmsg opens that
// backend, show says which, and where AF_XDP cannot be had (another
// AF_XDP socket holds the interface) add-if falls back to the ring and
// says why on standard error. Needs root (veth pairs, AF_XDP).
func TestAddIfMode(t *testing.T) {
	testenv.RequireRoot(t)
	h := newHarness(t)
	h.hostDP("br0")
	var names []string
	for _, mode := range []string{"xdp", "ring", "mmsg"} {
		v := testenv.NewVeth(t, nil, nil)
		names = append(names, v.Name)
		h.mustRun("", "add-if", "netdev@br0", v.Name+",mode="+mode)
	}
	r := h.run("", "show", "netdev@br0")
	for i, mode := range []string{"xdp", "ring", "mmsg"} {
		if want := names[i] + " (netdev: mode=" + mode + ")"; !strings.Contains(r.stdout, want) {
			t.Errorf("show does not say %q:\n%s", want, r.stdout)
		}
	}
	if r = h.run("", "add-if", "netdev@br0", names[0]+"x,mode=turbo"); r.code == 0 || !strings.Contains(r.stderr, "want ring, mmsg or xdp") {
		t.Errorf("add-if mode=turbo: exit %d, stderr %q", r.code, r.stderr)
	}
	v := testenv.NewVeth(t, nil, nil)
	x, err := userdp.OpenNetdev(v.Name, userdp.NetdevOptions{Mode: userdp.NetdevXDP})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	r = h.run("", "add-if", "netdev@br0", v.Name+",mode=xdp")
	if r.code != 0 || !strings.Contains(r.stderr, v.Name+": AF_XDP unavailable") || !strings.Contains(r.stderr, "using the TPACKET ring") {
		t.Errorf("add-if mode=xdp on a held interface: exit %d, stderr %q, want a fallback message", r.code, r.stderr)
	}
	if r = h.run("", "show", "netdev@br0"); !strings.Contains(r.stdout, v.Name+" (netdev: mode=ring, xdp_fallback=AF_XDP unavailable") {
		t.Errorf("show after the fallback:\n%s", r.stdout)
	}
}
