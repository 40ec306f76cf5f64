package daemon

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net"
	"testing"
	"time"

	"github.com/ovsdp/ovsdp/cmd/upcalld/statusaddr"
	"github.com/ovsdp/ovsdp/internal/runsock"
	"github.com/ovsdp/ovsdp/odp"
)

// TestUpcallSubscription checks the status socket's upcall stream: a
// client that subscribes gets the status, then every miss the handlers
// read, with its key and packet; a plain status client still gets its
// status and is closed.
func TestUpcallSubscription(t *testing.T) {
	t.Run("handlers", func(t *testing.T) { testUpcallSubscription(t, Config{}, 2) })
	// A daemon that only hosts the datapath (dpctl add-dp) opens a
	// receiver for its subscribers.
	t.Run("no-handlers", func(t *testing.T) { testUpcallSubscription(t, Config{NoHandlers: true}, 0) })
}

func testUpcallSubscription(t *testing.T, cfg Config, handlers int) {
	h := newHarness(t, 2, cfg)
	if cfg.NoHandlers {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- h.d.Run(ctx) }()
		t.Cleanup(func() { cancel(); <-done })
	} else {
		h.start()
	}
	ctx, path := serveStatus(t, h.d)
	c, dec, st := subscribeStatus(t, path, statusaddr.SubscribeUpcalls, &h.d.taps)
	if st.Handlers != handlers {
		t.Fatalf("status: %+v", st)
	}
	frame := udpFrame(macN(1), macN(2), ip4(10, 0, 0, 1), ip4(10, 0, 0, 2), 1, 2, 0)
	h.send(1, frame)
	var ev statusaddr.Upcall
	if err := dec.Decode(&ev); err != nil {
		t.Fatal(err)
	}
	if ev.Kind != uint8(odp.UpcallMiss) || ev.Port != 1 || !bytes.Equal(ev.Packet, frame) || ev.Seq != 1 {
		t.Errorf("upcall: %+v", ev)
	}
	key, err := odp.UnmarshalKey(ev.Key)
	if err != nil || key.Find(odp.KeyInPort) != odp.InPort(1) {
		t.Errorf("upcall key %v: %v", key, err)
	}
	// A plain status query is unaffected.
	if _, err := QueryStatus(ctx, "netdev@"+h.dp.Name(), path); err != nil {
		t.Fatal(err)
	}
	// Closing the subscriber removes it.
	c.Close()
	for deadline := time.Now().Add(5 * time.Second); h.d.taps.n.Load() != 0; {
		if time.Now().After(deadline) {
			t.Fatal("the closed subscription stays registered")
		}
		time.Sleep(time.Millisecond)
	}
}

// subscribeStatus connects to the status socket at path, writes the
// subscription line, reads the status and waits until set has the
// subscriber; the connection closes when the test ends.
func subscribeStatus(t *testing.T, path, line string, set *tapSet) (net.Conn, *json.Decoder, Status) {
	t.Helper()
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := c.Write([]byte(line + "\n")); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	dec := json.NewDecoder(bufio.NewReader(c))
	var st Status
	if err := dec.Decode(&st); err != nil {
		t.Fatalf("status: %v", err)
	}
	for deadline := time.Now().Add(5 * time.Second); set.n.Load() == 0; {
		if time.Now().After(deadline) {
			t.Fatal("the subscription was not registered")
		}
		time.Sleep(time.Millisecond)
	}
	return c, dec, st
}

// serveStatus serves d's status on a socket in a temporary directory
// until the test ends, and returns the context it runs in and its path.
func serveStatus(t *testing.T, d *Daemon) (context.Context, string) {
	t.Helper()
	path := t.TempDir() + "/status.sock"
	s, err := d.ListenStatus(path, runsock.RootOnly)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go s.Serve(ctx)
	t.Cleanup(func() { cancel(); s.Close() })
	return ctx, path
}

// TestUpcallSubscriptionEgressTunKey: an action upcall of
// userspace(tunnel_out_port) reaches the upcall and packet-in streams
// with its egress tunnel key (as a one-attribute flow key), and one
// without a key carries none.
func TestUpcallSubscriptionEgressTunKey(t *testing.T) {
	h := newHarness(t, 2, Config{})
	h.start()
	_, path := serveStatus(t, h.d)
	_, upDec, _ := subscribeStatus(t, path, statusaddr.SubscribeUpcalls, &h.d.taps)
	_, pinDec, _ := subscribeStatus(t, path, statusaddr.SubscribePacketIns, &h.d.pins.subs)
	tun := odp.Tunnel{Present: odp.TunnelHasID | odp.TunnelHasIPv4Src | odp.TunnelHasIPv4Dst | odp.TunnelHasTTL | odp.TunnelHasTPSrc | odp.TunnelHasTPDst,
		ID: 0x2a, IPv4Src: [4]byte{10, 1, 1, 1}, IPv4Dst: [4]byte{192, 0, 2, 2}, TTL: 64, TPSrc: 40000, TPDst: 6081}
	key := odp.FlowKey{odp.InPort(1)}
	ups := []odp.Upcall{
		{Kind: odp.UpcallAction, Port: 1, Key: key, Packet: []byte{1, 2, 3}, Userdata: []byte{0xbe, 0xef}, EgressTunnel: &tun},
		{Kind: odp.UpcallAction, Port: 1, Key: key, Packet: []byte{1, 2, 3}, Userdata: []byte{0xbe, 0xef}},
	}
	h.d.taps.publish(ups)
	for i := range ups {
		h.d.packetIn(&ups[i])
	}
	want := odp.FormatKey(odp.FlowKey{tun}, nil, false)
	for _, s := range []struct {
		name string
		dec  *json.Decoder
	}{{"upcalls", upDec}, {"packet-ins", pinDec}} {
		for i, wantKey := range []bool{true, false} {
			var ev statusaddr.Upcall
			if err := s.dec.Decode(&ev); err != nil {
				t.Fatalf("%s: event %d: %v", s.name, i, err)
			}
			if !wantKey {
				if ev.EgressTunKey != nil {
					t.Errorf("%s: event %d: egress_tun_key %x, want none", s.name, i, ev.EgressTunKey)
				}
				continue
			}
			k, err := odp.UnmarshalKey(ev.EgressTunKey)
			if err != nil {
				t.Fatalf("%s: event %d: egress_tun_key %x: %v", s.name, i, ev.EgressTunKey, err)
			}
			if got := odp.FormatKey(k, nil, false); got != want {
				t.Errorf("%s: event %d: egress_tun_key %s, want %s", s.name, i, got, want)
			}
		}
	}
}
