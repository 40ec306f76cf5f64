package app

import (
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/ovsdp/ovsdp/policy"
)

// TestPortOptions: --port values give the daemon its port names and
// their VLAN configuration (ports without options have none).
func TestPortOptions(t *testing.T) {
	o, err := parseArgs("--datapath", "netdev@x",
		"--port", "veth0,vlan=10,eth1,trunks=10,20", "--port", "eth2", "--port", "eth3,vlan_mode=native-untagged,tag=5")
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

// TestPortModes: --port IFACE,mode=ring|mmsg|xdp gives the daemon the
// userspace datapath's backend of each port; on system@ it is an error
// that says why, and an unknown mode names the ones there are.
func TestPortModes(t *testing.T) {
	parse := parseArgs
	o, err := parse("--datapath", "netdev@x", "--port", "veth0,mode=xdp,eth1,vlan=3,mode=mmsg", "--port", "eth2")
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"veth0": "xdp", "eth1": "mmsg"}; !reflect.DeepEqual(o.cfg.PortModes, want) {
		t.Errorf("modes %v, want %v", o.cfg.PortModes, want)
	}
	if _, err := parse("--datapath", "system@x", "--port", "veth0,mode=xdp"); err == nil || !strings.Contains(err.Error(), "netdev@") {
		t.Errorf("mode= on system@: %v, want an error naming netdev@", err)
	}
	if _, err := parse("--datapath", "netdev@x", "--port", "veth0,mode=dpdk"); err == nil || !strings.Contains(err.Error(), "want ring, mmsg or xdp") {
		t.Errorf("mode=dpdk: %v", err)
	}
}

// parseArgs runs upcalld's option parsing on args.
func parseArgs(args ...string) (*options, error) {
	var o *options
	app := New(io.Discard, io.Discard)
	app.Action = func(c *cli.Context) error {
		var err error
		o, err = parseOptions(c, io.Discard)
		return err
	}
	err := app.Run(append([]string{"upcalld"}, args...))
	return o, err
}
