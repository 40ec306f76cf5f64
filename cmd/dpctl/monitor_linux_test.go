package main

import (
	"context"
	"fmt"
	"net"
	"regexp"
	"strings"
	"testing"

	"github.com/ovsdp/ovsdp/odp"
	"github.com/ovsdp/ovsdp/testenv"
)

// TestMonitorEgressTunKey runs dpctl monitor and monitor --packet-ins on
// a netdev@ datapath hosted by upcalld with a real geneve port: packets
// executed with set(tunnel(...)) and userspace(tunnel_out_port) on that
// port come through upcalld's status socket as ACTION upcall and
// PACKET_IN lines that end with the egress tunnel key, filled as the
// kernel's dev_fill_metadata_dst does (the route's source address, the
// port's destination UDP port, a hashed source port). The tunnel leads
// to 127.0.0.2, so the route lookup stays on loopback. Needs root (the
// tunnel port's raw sockets).
func TestMonitorEgressTunKey(t *testing.T) {
	testenv.RequireRoot(t)
	h, c := upcalldDatapath(t, "egr")
	dstPort := freeUDPPort(t)
	h.mustRun("", "add-if", "netdev@egr", fmt.Sprintf("gnv0,type=geneve,port_no=3,dst_port=%d", dstPort))
	frame := []byte("\x00\x00\x00\x00\x00\x02\x00\x00\x00\x00\x00\x01\x08\x00" +
		"\x45\x00\x00\x1c\x00\x00\x00\x00\x40\x11\x66\xcf\x0a\x00\x00\x01\x0a\x00\x00\x02\x03\xe8\x00\x35\x00\x08\x00\x00")
	acts, err := odp.ParseActions("set(tunnel(tun_id=0x2a,dst=127.0.0.2,ttl=64,flags(key))),userspace(pid=1,userdata(beef),tunnel_out_port=3)")
	if err != nil {
		t.Fatal(err)
	}
	pkt := &odp.Packet{Data: frame, Key: odp.FlowKey{odp.InPort(2)}, Actions: acts}
	want := regexp.MustCompile(` userdata\(beef(00)*\) egress_tun_key\(tunnel\(tun_id=0x2a,src=127\.0\.0\.1,dst=127\.0\.0\.2,ttl=64,tp_src=(\d+),tp_dst=` + fmt.Sprint(dstPort) + `,flags\(key\)\)\)$`)
	for _, tc := range []struct{ name, kind, flag string }{
		{"upcalls", "ACTION upcall[", ""},
		{"packet-ins", "PACKET_IN[", "--packet-ins"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"--count", "2", "netdev@egr"}
			if tc.flag != "" {
				args = append([]string{tc.flag}, args...)
			}
			outs, _ := monitorWhileExecuting(t, context.Background(), c, pkt, args...)
			var lines []string
			for _, l := range strings.Split(strings.TrimSuffix(outs, "\n"), "\n") {
				if strings.Contains(l, " port p2(2): ") {
					lines = append(lines, l)
				}
			}
			if len(lines) == 0 {
				t.Fatalf("monitor printed no upcall on p2:\n%s", outs)
			}
			for _, l := range lines {
				if !strings.HasPrefix(l, tc.kind) {
					t.Errorf("line %q is not an %s line", l, tc.kind)
				}
				if !want.MatchString(l) {
					t.Errorf("line %q does not end with the egress tunnel key %s", l, want)
				}
			}
		})
	}
}

// freeUDPPort returns a UDP port that nothing on the host is bound to
// now, so that the tunnel port's socket does not clash with another
// test's.
func freeUDPPort(t *testing.T) int {
	t.Helper()
	c, err := net.ListenUDP("udp", &net.UDPAddr{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).Port
}
