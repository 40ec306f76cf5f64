//go:build integration

package genl

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/ovsdp/ovsdp/odp"
)

// TestIntegrationEgressTunnelKeyERSPAN: Linux 6.1 keeps ERSPAN metadata
// of set(tunnel) as the tunnel info's options and puts them in the egress
// tunnel key of userspace(tunnel_out_port) to a geneve port (what
// userdp's egress key does, TestUserspaceEgressTunnelKey).
func TestIntegrationEgressTunnelKeyERSPAN(t *testing.T) {
	d, _, _, port := netdevDP(t)
	ctx := context.Background()
	gnv, err := d.AddPort(ctx, odp.PortSpec{Name: "gnv_es", Type: odp.PortGeneve, Options: map[string]string{"dst_port": "6082"}})
	if err != nil {
		t.Fatal(err)
	}
	rs, err := d.Upcalls(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	acts, err := odp.ParseActions("set(tunnel(tun_id=0x2a,dst=127.0.0.2,ttl=64,erspan(ver=1,idx=0x7),flags(key))),userspace(pid=" +
		itoa(uint64(rs[0].(*UpcallSocket).PID())) + ",tunnel_out_port=" + itoa(uint64(gnv.Number)) + ")")
	if err != nil {
		t.Fatal(err)
	}
	key, err := odp.ParseKey("in_port(" + itoa(uint64(port.Number)) + ")")
	if err != nil {
		t.Fatal(err)
	}
	frame := udpFrame(net.HardwareAddr{2, 0, 0, 0, 0, 1}, net.HardwareAddr{2, 0, 0, 0, 0, 2})
	if err := d.Execute(ctx, &odp.Packet{Data: frame, Key: key, Actions: acts, MRU: 1500}); err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	ups := make([]odp.Upcall, 4)
	n, err := rs[0].Recv(rctx, ups)
	if err != nil || n == 0 {
		t.Fatalf("no upcall: %v", err)
	}
	u := ups[0]
	if u.Kind != odp.UpcallAction || u.EgressTunnel == nil {
		t.Fatalf("upcall kind %v, egress key %v: want an action upcall with an egress key", u.Kind, u.EgressTunnel)
	}
	got := odp.FormatKey(odp.FlowKey{*u.EgressTunnel}, nil, false)
	t.Logf("egress key: %s", got)
	if !strings.Contains(got, "erspan(ver=1,idx=0x7)") || !strings.Contains(got, "tp_dst=6082") {
		t.Errorf("egress key %s: want erspan(ver=1,idx=0x7) and tp_dst=6082", got)
	}
}
