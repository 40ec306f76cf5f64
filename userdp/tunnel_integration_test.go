//go:build integration

package userdp

import (
	"fmt"
	"net"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"

	"github.com/ovsdp/ovsdp/odp"
	"github.com/ovsdp/ovsdp/testenv"
)

// TestIntegrationTunnelLinuxGeneve: ping and TCP pass both ways between
// a host behind the userspace datapath's geneve port and Linux's own
// geneve netdevice (ip link add ... type geneve id N remote ADDR), over
// IPv4 and IPv6 underlays; the upcall of a decapsulated packet carries
// the device's VNI, addresses and destination port, with no options.
// It needs the geneve module, which the host kernel lacks: it runs in
// the VM. Options are not tested: Linux's geneve device sends options
// only from lwtunnel encap metadata (a route with encap ip ... geneve_opts
// on a collect_md device), not from its own configuration.
func TestIntegrationTunnelLinuxGeneve(t *testing.T) {
	testenv.RequireKernelModule(t, "geneve")
	for _, c := range []struct {
		name   string
		remote net.IP
		key    string // what the decapsulated key starts with
		tunnel string // set(tunnel) to Linux's device, %s for the flags
		flags  []string
	}{
		{"ipv4", net.IPv4(10, 78, 0, 1), "tunnel(tun_id=0x2c,src=10.78.0.2,dst=10.78.0.1,",
			"tun_id=0x2c,dst=10.78.0.2,ttl=64,flags(%skey)", []string{"csum|", ""}},
		// Linux's geneve wants UDP checksums over IPv6 (no
		// udp6zerocsumrx): only with csum.
		{"ipv6", net.ParseIP("fd78::1"), "tunnel(tun_id=0x2d,ipv6_src=fd78::2,ipv6_dst=fd78::1,",
			"tun_id=0x2d,ipv6_dst=fd78::2,ttl=64,flags(%skey)", []string{"csum|"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			tt := newTunnelTopo(t, odp.PortGeneve, nil)
			vni := uint32(0x2c)
			if c.remote.To4() == nil {
				vni = 0x2d
			}
			dev := &netlink.Geneve{LinkAttrs: netlink.LinkAttrs{Name: "gnv0", MTU: 1400}, ID: vni, Remote: c.remote, Dport: 6081}
			tun, ups := tt.linuxDeviceMiss(t, dev)
			ups.Close()
			got := odp.FormatKey(odp.FlowKey{tun}, nil, false)
			t.Logf("decapsulated key from Linux's geneve device: %s", got)
			if !strings.HasPrefix(got, c.key) || !strings.Contains(got, fmt.Sprintf("tp_dst=6081")) || strings.Contains(got, "geneve(") {
				t.Errorf("tunnel key %s, want it to start with %s, with tp_dst=6081 and no geneve options", got, c.key)
			}
			if tun.TPSrc == 0 {
				t.Error("UDP source port 0")
			}
			tt.pingAndTCP(t, "geneve", c.tunnel, c.flags)
		})
	}
}
