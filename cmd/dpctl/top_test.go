package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
)

func TestTopAggregate(t *testing.T) {
	prev := map[string]topSample{
		"a":    {agg: "in_port=1", packets: 10, bytes: 1000},
		"b":    {agg: "in_port=1", packets: 5, bytes: 500},
		"c":    {agg: "in_port=2", packets: 100, bytes: 100},
		"gone": {agg: "in_port=3", packets: 1, bytes: 1},
	}
	cur := map[string]topSample{
		"a":   {agg: "in_port=1", packets: 30, bytes: 3000}, // +20 packets
		"b":   {agg: "in_port=1", packets: 5, bytes: 500},   // idle
		"c":   {agg: "in_port=2", packets: 4, bytes: 4000},  // replaced: counts from zero
		"new": {agg: "in_port=4", packets: 2, bytes: 20},    // new: counts from zero
	}
	rows := topAggregate(prev, cur, 2*time.Second, false)
	want := []topRow{
		{Key: "in_port=1", Flows: 2, Packets: 35, Bytes: 3500, PacketsPer: 10, BytesPer: 1000},
		{Key: "in_port=2", Flows: 1, Packets: 4, Bytes: 4000, PacketsPer: 2, BytesPer: 2000},
		{Key: "in_port=4", Flows: 1, Packets: 2, Bytes: 20, PacketsPer: 1, BytesPer: 10},
	}
	if len(rows) != len(want) {
		t.Fatalf("rows %+v", rows)
	}
	for i := range want {
		if rows[i] != want[i] {
			t.Errorf("row %d: %+v, want %+v", i, rows[i], want[i])
		}
	}
	if byBytes := topAggregate(prev, cur, 2*time.Second, true); byBytes[0].Key != "in_port=2" {
		t.Errorf("sorted by bytes: %+v", byBytes)
	}
	if _, err := parseTopFields("in_port,nope"); err == nil || !strings.Contains(err.Error(), `unknown field "nope"`) {
		t.Errorf("parseTopFields: %v", err)
	}
}

// TestTopNetdev runs top --once on a netdev@ datapath while traffic
// flows through two of its flows, and checks the aggregates and rates.
func TestTopNetdev(t *testing.T) {
	h := newHarness(t)
	dp := h.hostDP("br0")
	h.addMemPorts("br0", "p1", "p2", "p3")
	h.mustRun("", "add-flow", "in_port(1),eth(),eth_type(0x0800),ipv4(proto=17,frag=no),udp(dst=53)", "2")
	h.mustRun("", "add-flow", "in_port(1),eth(),eth_type(0x0800),ipv4(proto=17,frag=no),udp(dst=54)", "2")
	h.mustRun("", "add-flow", "in_port(3),eth(),eth_type(0x0806),arp()", "2")
	frame := func(dport byte) []byte {
		return []byte("\x00\x00\x00\x00\x00\x02\x00\x00\x00\x00\x00\x01\x08\x00" +
			"\x45\x00\x00\x1c\x00\x00\x00\x00\x40\x11\x66\xcf\x0a\x00\x00\x01\x0a\x00\x00\x02\x03\xe8\x00" + string([]byte{dport}) + "\x00\x08\x00\x00")
	}
	stop := make(chan struct{})
	sent := make(chan int)
	go func() {
		n := 0
		for {
			select {
			case <-stop:
				sent <- n
				return
			default:
			}
			dp.MemoryPeer("p1").WriteBatch([][]byte{frame(53), frame(54)})
			n += 2
			time.Sleep(2 * time.Millisecond)
		}
	}()
	r := h.mustRun("", "-f", "json", "top", "--once", "--interval", "300ms", "--by", "in_port,ip_proto")
	r2 := h.mustRun("", "top", "--once", "--interval", "100ms", "--by", "tp_dst")
	close(stop)
	<-sent
	var rows []topRow
	if err := json.Unmarshal([]byte(r.stdout), &rows); err != nil {
		t.Fatalf("%v\n%s", err, r.stdout)
	}
	if len(rows) != 2 || rows[0].Key != "in_port=p1,ip_proto=17" || rows[0].Flows != 2 || rows[0].PacketsPer <= 0 || rows[0].BytesPer < 42*rows[0].PacketsPer-1 {
		t.Errorf("top: %+v", rows)
	}
	if rows[1].Key != "in_port=p3,ip_proto=*" || rows[1].PacketsPer != 0 {
		t.Errorf("idle row: %+v", rows[1])
	}
	for _, want := range []string{"packets/s", "tp_dst=53", "tp_dst=54", "tp_dst=*"} {
		if !strings.Contains(r2.stdout, want) {
			t.Errorf("top text lacks %q:\n%s", want, r2.stdout)
		}
	}
	h.mustFail("not a terminal: use --once", "", "top")
	h.mustFail("unknown field", "", "top", "--once", "--by", "bogus")
	h.mustFail("want packets or bytes", "", "top", "--once", "--sort", "x")
}

// TestTopView drives top's terminal view (the bubbletea program) with
// dumps that grow, and quits with q.
func TestTopView(t *testing.T) {
	var dumps atomic.Uint64
	m := &topModel{interval: 10 * time.Millisecond, limit: 10, title: "netdev@x",
		dump: func() (map[string]topSample, time.Time, error) {
			n := 100 * dumps.Add(1)
			return map[string]topSample{"f": {agg: "in_port=1", packets: n, bytes: 10 * n}}, time.Now(), nil
		}}
	var out bytes.Buffer
	p := tea.NewProgram(m, tea.WithInput(strings.NewReader("")), tea.WithOutput(&out), tea.WithoutSignalHandler())
	done := make(chan error, 1)
	go func() { _, err := p.Run(); done <- err }()
	deadline := time.Now().Add(10 * time.Second)
	for dumps.Load() < 5 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	p.Send(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("s")})
	p.Send(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("q")})
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("q did not end the program")
	}
	if !m.byBytes {
		t.Error("s did not switch the sort to bytes")
	}
	if v := m.View(); !strings.Contains(v, "in_port=1") || !strings.Contains(v, "sorted by bytes/s") {
		t.Errorf("view:\n%s", v)
	}
	if !strings.Contains(out.String(), "in_port=1") {
		t.Errorf("the program drew no table:\n%q", out.String())
	}
}
