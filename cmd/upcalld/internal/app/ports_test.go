package app

import (
	"io"
	"reflect"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/ovsdp/ovsdp/policy"
)

// TestPortOptions: --port values give the daemon its port names and
// their VLAN configuration (ports without options have none).
func TestPortOptions(t *testing.T) {
	var o *options
	app := New(io.Discard, io.Discard)
	app.Action = func(c *cli.Context) error {
		var err error
		o, err = parseOptions(c, io.Discard)
		return err
	}
	err := app.Run([]string{"upcalld", "--datapath", "netdev@x",
		"--port", "veth0,vlan=10,eth1,trunks=10,20", "--port", "eth2", "--port", "eth3,vlan_mode=native-untagged,tag=5"})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"veth0", "eth1", "eth2", "eth3"}; !reflect.DeepEqual(o.cfg.Ports, want) {
		t.Errorf("ports %v, want %v", o.cfg.Ports, want)
	}
	want := map[string]policy.PortVLAN{
		"veth0": {Mode: policy.VLANAccess, Tag: 10},
		"eth1":  {Mode: policy.VLANTrunk, Trunks: []uint16{10, 20}},
		"eth3":  {Mode: policy.VLANNativeUntagged, Tag: 5},
	}
	if !reflect.DeepEqual(o.cfg.PortVLANs, want) {
		t.Errorf("VLANs %v, want %v", o.cfg.PortVLANs, want)
	}
}
