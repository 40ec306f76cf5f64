package userdp

import (
	"context"
	"errors"
	"strings"
	"syscall"
	"testing"

	"github.com/ovsdp/ovsdp/odp"
	"github.com/ovsdp/ovsdp/testenv"
)

// TestAddPortMode checks the netdev port option mode= (dpctl add-if
// IFACE,mode=..., upcalld --port IFACE,mode=...): each backend is opened
// and named in the port's options; an unknown mode is EINVAL; where
// AF_XDP cannot be had (here: another AF_XDP socket holds the queue) the
// port falls back to the ring and says why. Needs root.
func TestAddPortMode(t *testing.T) {
	testenv.RequireRoot(t)
	ctx := context.Background()
	dp, err := New(testenv.NewName(), WithoutLocalPort())
	if err != nil {
		t.Fatal(err)
	}
	defer dp.Close()
	for _, mode := range []string{"", "ring", "mmsg", "xdp"} {
		v := testenv.NewVeth(t, nil, nil)
		spec := odp.PortSpec{Name: v.Name, Type: odp.PortNetdev}
		if mode != "" {
			spec.Options = map[string]string{"mode": mode}
		}
		p, err := dp.AddPort(ctx, spec)
		if err != nil {
			t.Fatalf("mode=%q: %v", mode, err)
		}
		want := mode
		if want == "" {
			want = DefaultNetdevMode.String()
		}
		if p.Options["mode"] != want || p.Options["xdp_fallback"] != "" {
			t.Errorf("mode=%q: port options %v, want mode=%s", mode, p.Options, want)
		}
		ports, _ := dp.Ports(ctx)
		for _, q := range ports {
			if q.Number == p.Number && q.Options["mode"] != want {
				t.Errorf("mode=%q: Ports says %v", mode, q.Options)
			}
		}
	}
	// set-if keeps the backend, and refuses to change it.
	ports, _ := dp.Ports(ctx)
	last := ports[len(ports)-1]
	if err := dp.SetPort(ctx, odp.PortSpec{Name: last.Name, Options: map[string]string{"x": "1"}}); err != nil {
		t.Fatal(err)
	}
	ports, _ = dp.Ports(ctx)
	if o := ports[len(ports)-1].Options; o["mode"] != "xdp" || o["x"] != "1" {
		t.Errorf("options after set-if x=1: %v, want mode=xdp kept", o)
	}
	if err := dp.SetPort(ctx, odp.PortSpec{Name: last.Name, Options: map[string]string{"mode": "ring"}}); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("set-if mode=ring on an xdp port: %v, want EINVAL", err)
	}
	v := testenv.NewVeth(t, nil, nil)
	if _, err := dp.AddPort(ctx, odp.PortSpec{Name: v.Name, Options: map[string]string{"mode": "dpdk"}}); !errors.Is(err, syscall.EINVAL) || !strings.Contains(err.Error(), "want ring, mmsg or xdp") {
		t.Errorf("mode=dpdk: %v, want EINVAL naming the modes", err)
	}
	// Another AF_XDP socket holds the interface: fall back, saying why.
	x, err := OpenNetdev(v.Name, NetdevOptions{Mode: NetdevXDP})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	p, err := dp.AddPort(ctx, odp.PortSpec{Name: v.Name, Options: map[string]string{"mode": "xdp"}})
	if err != nil {
		t.Fatalf("mode=xdp on an interface with an XDP program: %v, want a fallback", err)
	}
	if p.Options["mode"] != "ring" || !strings.Contains(p.Options["xdp_fallback"], "AF_XDP unavailable") || !strings.Contains(p.Options["xdp_fallback"], "busy") {
		t.Errorf("fallback port options %v, want mode=ring and why", p.Options)
	}
}
