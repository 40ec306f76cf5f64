//go:build integration

package genl

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/ovsdp/ovsdp/odp"
	"github.com/ovsdp/ovsdp/testenv"
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

// TestIntegrationGeneveOutputERSPAN: what Linux 6.1's geneve vport sends
// for set(tunnel) with ERSPAN metadata: the Geneve header's option length
// is the tunnel info's options_len (12 bytes: 3 words) though the
// options are not copied (no TUNNEL_GENEVE_OPT). userdp's geneve ports
// send the same header with those bytes zero (TestTunnelEncapERSPAN).
func TestIntegrationGeneveOutputERSPAN(t *testing.T) {
	d := newKernelDP(t)
	ctx := context.Background()
	ns := testenv.NewNetns(t)
	veth := testenv.NewVeth(t, nil, ns)
	testenv.Current(t).AddAddr(t, veth.Name, "10.88.0.1/24")
	ns.AddAddr(t, veth.PeerName, "10.88.0.2/24")
	gnv, err := d.AddPort(ctx, odp.PortSpec{Name: "gnv_eo", Type: odp.PortGeneve, Options: map[string]string{"dst_port": "6083"}})
	if err != nil {
		t.Fatal(err)
	}
	acts, err := odp.ParseActions("set(tunnel(tun_id=0x2a,dst=10.88.0.2,ttl=64,erspan(ver=1,idx=0x7),flags(key)))," + itoa(uint64(gnv.Number)))
	if err != nil {
		t.Fatal(err)
	}
	key, err := odp.ParseKey("in_port(0)")
	if err != nil {
		t.Fatal(err)
	}
	capt := ns.Capture(t, veth.PeerName)
	frame := udpFrame(net.HardwareAddr{2, 0, 0, 0, 0, 1}, net.HardwareAddr{2, 0, 0, 0, 0, 2})
	for range 5 {
		if err := d.Execute(ctx, &odp.Packet{Data: frame, Key: key, Actions: acts, MRU: 1500}); err != nil {
			t.Fatal(err)
		}
		fr, err := capt.WaitFor(time.Second, func(fr testenv.Frame) bool {
			b := fr.Data
			return len(b) > 14+20+8+8 && b[12] == 8 && b[13] == 0 && b[14+9] == 17 &&
				int(b[14+20+2])<<8|int(b[14+20+3]) == 6083
		})
		if err != nil {
			continue
		}
		g := fr.Data[14+20+8:]
		t.Logf("outer frame: % x", fr.Data)
		if optLen := int(g[0] & 0x3f); optLen != 3 {
			t.Errorf("Geneve option length %d words, want 3 (options_len 12): header % x", optLen, g[:8])
		}
		if inner := g[8+12:]; len(inner) < len(frame) || string(inner[:len(frame)]) != string(frame) {
			t.Errorf("the inner frame does not follow 12 option bytes: % x", g)
		}
		return
	}
	t.Fatal("no geneve packet in the namespace")
}
