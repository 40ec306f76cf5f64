//go:build integration

package crosscheck

import (
	"testing"

	"github.com/ovsdp/ovsdp/testenv"
)

// TestIntegrationTunnelInterop: a kernel datapath (system@) and a
// userspace one (netdev@), in two namespaces joined by a veth underlay,
// each with a tunnel port and a netdev port to a host of its own, talk
// over geneve (with an option), vxlan (with and without the gbp
// extension) and gre (with a key): the first packets of each side miss
// on the other side, and the tunnel attributes of the two decapsulated
// keys must agree (each with the other's addresses; the UDP source port,
// a hash, only in range); then ping and TCP pass in both directions.
func TestIntegrationTunnelInterop(t *testing.T) {
	testenv.RequireRoot(t)
	testenv.RequireKernelModule(t, "openvswitch")
	for _, c := range tunnelCases {
		t.Run(c.name, func(t *testing.T) { tunnelInterop(t, SystemOpener, c) })
	}
}
