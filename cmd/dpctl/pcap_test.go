package main

import (
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/gopacket/pcapgo"

	"github.com/ovsdp/ovsdp/odp"
)

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
	if _, err := subscribe(client); err == nil || !strings.Contains(err.Error(), "upcalld: permission denied: netdev@x is driven by root") {
		t.Errorf("subscribe: %v", err)
	}
}
