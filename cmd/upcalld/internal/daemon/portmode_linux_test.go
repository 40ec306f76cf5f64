package daemon

import (
	"context"
	"testing"

	"github.com/ovsdp/ovsdp/testenv"
	"github.com/ovsdp/ovsdp/userdp"
)

// TestSetupPortModes: Setup adds each --port with the backend its mode=
// names (Config.PortModes), the default where none. Needs root.
func TestSetupPortModes(t *testing.T) {
	testenv.RequireRoot(t)
	dp, err := userdp.New(testenv.NewName(), userdp.WithoutLocalPort())
	if err != nil {
		t.Fatal(err)
	}
	defer dp.Close()
	a, b := testenv.NewVeth(t, nil, nil), testenv.NewVeth(t, nil, nil)
	d, err := New(Config{Datapath: dp, Ports: []string{a.Name, b.Name}, PortModes: map[string]string{a.Name: "xdp"}, NoHandlers: true, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Setup(context.Background()); err != nil {
		t.Fatal(err)
	}
	ports, err := dp.Ports(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{a.Name: "xdp", b.Name: userdp.DefaultNetdevMode.String()}
	for _, p := range ports {
		if p.Options["mode"] != want[p.Name] {
			t.Errorf("port %s: options %v, want mode=%s", p.Name, p.Options, want[p.Name])
		}
	}
	if len(ports) != 2 {
		t.Errorf("%d ports, want 2", len(ports))
	}
}
