package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/gopacket/pcapgo"

	"github.com/ovsdp/ovsdp/cmd/upcalld/statusaddr"
	"github.com/ovsdp/ovsdp/odp"
	"github.com/ovsdp/ovsdp/userdp/ctl"
)

// buildUpcalld builds upcalld into a temporary directory on PATH, so
// that dpctl add-dp netdev@NAME starts it as in real use.
func buildUpcalld(t *testing.T) {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command("go", "build", "-o", filepath.Join(dir, "upcalld"), "github.com/ovsdp/ovsdp/cmd/upcalld")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building upcalld: %v\n%s", err, out)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
}

// TestMonitorNetdev runs dpctl monitor on a netdev@ datapath hosted by
// upcalld (started by dpctl add-dp): packets executed with an action
// that misses (a recirculation no flow matches) come through upcalld's
// subscription as MISS lines, and --pcap writes them as pcapng that
// gopacket's reader reads back, one interface per port, the key as the
// packet's comment.
func TestMonitorNetdev(t *testing.T) {
	_, c := upcalldDatapath(t, "mon")
	frame := []byte("\x00\x00\x00\x00\x00\x02\x00\x00\x00\x00\x00\x01\x08\x00" +
		"\x45\x00\x00\x1c\x00\x00\x00\x00\x40\x11\x66\xcf\x0a\x00\x00\x01\x0a\x00\x00\x02\x03\xe8\x00\x35\x00\x08\x00\x00")
	pcap := filepath.Join(t.TempDir(), "up.pcapng")
	ctx := context.Background()
	pkt := &odp.Packet{Data: frame, Key: odp.FlowKey{odp.InPort(2)}, Actions: odp.Actions{odp.Recirc{ID: 9}}}
	outs, errs := monitorWhileExecuting(t, ctx, c, pkt, "--count", "4", "--pcap", pcap, "netdev@mon")
	// The datapath's local port (a tap device when run as root) may
	// add misses of its own (IPv6 neighbour discovery): only those on
	// p2 are the test's.
	var lines []string
	all := strings.Split(strings.TrimSuffix(outs, "\n"), "\n")
	for _, l := range all {
		if strings.Contains(l, " port p2(2): ") {
			lines = append(lines, l)
		}
	}
	if len(all) != 4 || len(lines) < 2 {
		t.Fatalf("monitor printed %d lines (%d on p2), want 4 with at least 2 on p2:\n%s", len(all), len(lines), outs)
	}
	for _, l := range lines {
		for _, want := range []string{"MISS upcall[", "/yes]: ", "recirc_id(0x9)", "in_port(2)", "udp(src=1000,dst=53)", " port p2(2): UDP 10.0.0.1:1000 > 10.0.0.2:53, 42 bytes"} {
			if !strings.Contains(l, want) {
				t.Errorf("line %q lacks %q", l, want)
			}
		}
	}
	if !strings.Contains(errs, "upcalls from upcalld on ") {
		t.Errorf("stderr %q does not say the upcalls come from upcalld", errs)
	}

	f, err := os.Open(pcap)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	raw, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	r, err := pcapgo.NewNgReader(bytes.NewReader(raw), pcapgo.DefaultNgReaderOptions)
	if err != nil {
		t.Fatal(err)
	}
	n, onP2 := 0, 0
	for {
		data, ci, err := r.ReadPacketData()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("reading packet %d: %v", n, err)
		}
		n++
		intf, err := r.Interface(ci.InterfaceIndex)
		if err != nil {
			t.Fatalf("packet %d: interface %d: %v", n, ci.InterfaceIndex, err)
		}
		if intf.Name != "p2" {
			continue
		}
		onP2++
		if !bytes.Equal(data, frame) {
			t.Errorf("packet %d: %x, want %x", n, data, frame)
		}
	}
	if n != 4 || onP2 != len(lines) {
		t.Errorf("%d packets in the pcapng, %d on p2; want 4, %d on p2", n, onP2, len(lines))
	}
	// The key of each packet is its comment.
	key := lines[0][strings.Index(lines[0], "]: ")+3 : strings.Index(lines[0], " port p2")]
	if bytes.Count(raw, []byte(key)) != len(lines) {
		t.Errorf("the key %q is not the comment of the packets on p2", key)
	}
}

// upcalldDatapath makes netdev@name, hosted by upcalld (dpctl add-dp
// starts it), with the memory ports p1 and p2, deleted when the test
// ends, and returns the harness and a control connection to it.
func upcalldDatapath(t *testing.T, name string) (*harness, *ctl.Client) {
	t.Helper()
	h := newHarness(t)
	buildUpcalld(t)
	h.mustRun("", "add-dp", "netdev@"+name)
	t.Cleanup(func() { h.run("", "del-dp", "netdev@"+name) })
	h.addMemPorts(name, "p1", "p2")
	c, err := ctl.Dial(name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return h, c
}

// monitorWhileExecuting runs dpctl monitor with args, executing pkt on
// c every 100 ms until monitor ends (it must within 20 s), and returns
// what it printed on standard output and error.
func monitorWhileExecuting(t *testing.T, ctx context.Context, c *ctl.Client, pkt *odp.Packet, args ...string) (stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	done := make(chan error, 1)
	go func() {
		app := newApp(strings.NewReader(""), &out, &errb)
		done <- app.Run(permuteFlags(append([]string{"dpctl", "monitor"}, args...)))
	}()
	var runErr error
wait:
	for deadline := time.Now().Add(20 * time.Second); ; {
		if err := c.Execute(ctx, pkt); err != nil {
			t.Fatal(err)
		}
		select {
		case runErr = <-done:
			break wait
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("monitor %v did not end within 20 s; stderr: %s", args, errb.String())
		}
	}
	resetGlobals()
	if runErr != nil {
		t.Fatalf("monitor: %v; stderr %s", runErr, errb.String())
	}
	return out.String(), errb.String()
}

// TestMonitorPacketIns runs dpctl monitor --packet-ins on a netdev@
// datapath hosted by upcalld: packets executed with a userspace action
// come as PACKET_IN lines with their key, port, packet and userdata
// (misses, which the plain monitor shows, do not).
func TestMonitorPacketIns(t *testing.T) {
	_, c := upcalldDatapath(t, "pin")
	frame := []byte("\x00\x00\x00\x00\x00\x02\x00\x00\x00\x00\x00\x01\x08\x00" +
		"\x45\x00\x00\x1c\x00\x00\x00\x00\x40\x11\x66\xcf\x0a\x00\x00\x01\x0a\x00\x00\x02\x03\xe8\x00\x35\x00\x08\x00\x00")
	pkt := &odp.Packet{Data: frame, Key: odp.FlowKey{odp.InPort(2)},
		Actions: odp.Actions{odp.Userspace{PID: 1, Userdata: []byte{0xbe, 0xef}}, odp.Recirc{ID: 9}}}
	outs, errs := monitorWhileExecuting(t, context.Background(), c, pkt, "--count", "2", "--packet-ins", "netdev@pin")
	lines := strings.Split(strings.TrimSuffix(outs, "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("monitor --packet-ins printed %d lines, want 2:\n%s", len(lines), outs)
	}
	for i, l := range lines {
		for _, want := range []string{fmt.Sprintf("PACKET_IN[%d/yes]: ", i+1), "in_port(2)", "udp(src=1000,dst=53)",
			" port p2(2): UDP 10.0.0.1:1000 > 10.0.0.2:53, 42 bytes", " userdata(beef)"} {
			if !strings.Contains(l, want) {
				t.Errorf("line %q lacks %q", l, want)
			}
		}
	}
	if !strings.Contains(errs, "packet-ins from upcalld on ") {
		t.Errorf("stderr %q does not say the packet-ins come from upcalld", errs)
	}
}

// TestPcapWriter checks monitor's pcapng: gopacket's reader reads the
// packets and their ports' interfaces back, every enhanced packet block
// carries the key as its opt_comment (read here, as pcapgo does not
// expose packet comments), and tcpdump, where installed, reads the file.
func TestPcapWriter(t *testing.T) {
	var b bytes.Buffer
	w := &pcapWriter{w: &b, ifaces: map[uint32]int{}}
	pkts := []monitored{
		{seq: 1, kind: odp.UpcallMiss, port: 3, packet: bytes.Repeat([]byte{0xaa}, 61), time: time.Unix(1, 5)},
		{seq: 2, kind: odp.UpcallMiss, port: 1, packet: bytes.Repeat([]byte{0xbb}, 64), time: time.Unix(2, 0)},
		{seq: 3, kind: odp.UpcallAction, port: 3, packet: bytes.Repeat([]byte{0xcc}, 14), time: time.Unix(3, 0)},
	}
	names := map[uint32]string{1: "p1", 3: "p3"}
	comments := []string{"in_port(3),eth()", "in_port(1),eth(),eth_type(0x0800)", "k"}
	for i, m := range pkts {
		if err := w.write(m, names[m.port], comments[i]); err != nil {
			t.Fatal(err)
		}
	}
	w.flush()
	raw := b.Bytes()
	r, err := pcapgo.NewNgReader(bytes.NewReader(raw), pcapgo.DefaultNgReaderOptions)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		data, ci, err := r.ReadPacketData()
		if err == io.EOF {
			if i != len(pkts) {
				t.Errorf("read %d packets, want %d", i, len(pkts))
			}
			break
		}
		if err != nil {
			t.Fatalf("packet %d: %v", i, err)
		}
		intf, _ := r.Interface(ci.InterfaceIndex)
		if !bytes.Equal(data, pkts[i].packet) || intf.Name != names[pkts[i].port] || !ci.Timestamp.Equal(pkts[i].time) {
			t.Errorf("packet %d: %x on %q at %v", i, data, intf.Name, ci.Timestamp)
		}
	}
	// Walk the blocks: each enhanced packet block's first option is the
	// comment.
	var got []string
	le := binary.LittleEndian
	for off := 0; off+12 <= len(raw); {
		typ, n := le.Uint32(raw[off:]), int(le.Uint32(raw[off+4:]))
		if n < 12 || off+n > len(raw) || le.Uint32(raw[off+n-4:]) != uint32(n) {
			t.Fatalf("bad block at %d: type %d length %d", off, typ, n)
		}
		if typ == 6 {
			capLen := int(le.Uint32(raw[off+20:]))
			o := off + 28 + capLen + (4-capLen&3)&3
			if code := le.Uint16(raw[o:]); code != 1 {
				t.Fatalf("block at %d: first option %d, want opt_comment", off, code)
			}
			l := int(le.Uint16(raw[o+2:]))
			got = append(got, string(raw[o+4:o+4+l]))
		}
		off += n
	}
	if strings.Join(got, "|") != strings.Join(comments, "|") {
		t.Errorf("comments %q, want %q", got, comments)
	}
	if tcpdump, err := exec.LookPath("tcpdump"); err == nil {
		path := filepath.Join(t.TempDir(), "m.pcapng")
		if err := os.WriteFile(path, raw, 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(tcpdump, "-n", "-r", path).CombinedOutput()
		t.Logf("tcpdump:\n%s", out)
		if err != nil || strings.Count(string(out), "\n") < len(pkts) {
			t.Errorf("tcpdump -r: %v\n%s", err, out)
		}
	}
}

// TestSubscribeRefused checks that monitor reports upcalld's refusal
// (the status socket's access check answers {"error": ...}) instead of
// waiting for upcalls.
func TestSubscribeRefused(t *testing.T) {
	client, server := net.Pipe()
	defer client.Close()
	go func() {
		defer server.Close()
		line := make([]byte, 64)
		server.Read(line)
		server.Write([]byte(`{"error":"permission denied: netdev@x is driven by root"}` + "\n"))
	}()
	if _, err := subscribe(client, statusaddr.SubscribeUpcalls); err == nil || !strings.Contains(err.Error(), "upcalld: permission denied: netdev@x is driven by root") {
		t.Errorf("subscribe: %v", err)
	}
}

// TestMonitorLineEgressTunKey: an action upcall with an egress tunnel key
// (userspace(tunnel_out_port)) prints it after the userdata; one without
// prints none.
func TestMonitorLineEgressTunKey(t *testing.T) {
	tun := odp.Tunnel{Present: odp.TunnelHasIPv4Dst | odp.TunnelHasTTL | odp.TunnelHasTPDst, IPv4Dst: [4]byte{192, 0, 2, 2}, TTL: 64, TPDst: 6081}
	m := monitored{seq: 1, kind: odp.UpcallAction, port: 1, userdata: []byte{0xbe, 0xef}, egress: &tun}
	got := monitorLine(m, "in_port(1)", "")
	if want := " userdata(beef) egress_tun_key(tunnel(dst=192.0.2.2,ttl=64,tp_dst=6081,flags(0)))"; !strings.HasSuffix(got, want) {
		t.Errorf("monitorLine = %q, want it to end with %q", got, want)
	}
	m.egress = nil
	if got := monitorLine(m, "in_port(1)", ""); strings.Contains(got, "egress_tun_key") {
		t.Errorf("monitorLine without a key = %q", got)
	}
}

// TestEgressTunKeyDecode: the egress tunnel key of upcalld's stream is
// none when absent, the tunnel of a one-attribute key, and otherwise an
// error saying what was wrong.
func TestEgressTunKeyDecode(t *testing.T) {
	if got, err := egressTunKey(nil); got != nil || err != nil {
		t.Errorf("no key: %v, %v", got, err)
	}
	tun := odp.Tunnel{Present: odp.TunnelHasIPv4Dst | odp.TunnelHasTTL, IPv4Dst: [4]byte{192, 0, 2, 2}, TTL: 64}
	enc := func(k odp.FlowKey) []byte {
		b, err := odp.MarshalKey(k)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	got, err := egressTunKey(enc(odp.FlowKey{tun}))
	if err != nil || got == nil || odp.FormatKey(odp.FlowKey{*got}, nil, false) != odp.FormatKey(odp.FlowKey{tun}, nil, false) {
		t.Errorf("tunnel key: %+v, %v", got, err)
	}
	for _, tc := range []struct {
		name string
		b    []byte
		want string
	}{
		{"not a tunnel", enc(odp.FlowKey{odp.InPort(1)}), "in_port(1) is not a tunnel attribute"},
		{"two attributes", enc(odp.FlowKey{tun, odp.InPort(1)}), "2 attributes"},
		{"truncated", enc(odp.FlowKey{tun})[:5], "key"},
	} {
		if got, err := egressTunKey(tc.b); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %+v, %v; want an error with %q", tc.name, got, err, tc.want)
		}
	}
}
