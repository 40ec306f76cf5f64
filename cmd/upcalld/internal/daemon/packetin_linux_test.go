package daemon

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ovsdp/ovsdp/cmd/upcalld/statusaddr"
	"github.com/ovsdp/ovsdp/odp"
)

// scenarioPacketIns: a rule sends UDP to port 7777 to the controller
// and on (normal). Host 0 sends a burst of such datagrams to host 1:
// every one arrives, and the packet-in subscriber on the status socket
// gets the first few (the burst of the rate limit) and then about the
// rate, each with its packet, port, key and userdata, while the daemon
// counts the rest as dropped by the rate limit; the packet-ins tell the
// subscriber how many it missed, and that adds up to the metric.
func scenarioPacketIns(t *testing.T, open func(t testing.TB) odp.Datapath) {
	const rate, burst, sent = 4, 3, 12
	tp := newTopo(t, 2, open, Config{Rules: mustRules(t, "priority=0,actions=normal\n"), PacketInRate: rate, PacketInBurst: burst})
	rules := "priority=100,udp,tp_dst=7777,actions=controller(userdata=c0.ff.ee),normal\npriority=0,actions=normal\n"
	if err := tp.d.ReloadRules("packetin.rules", strings.NewReader(rules)); err != nil {
		t.Fatal(err)
	}
	tp.hosts[0].AddNeigh(t, tp.veths[0].Name, hostIP(1), tp.hosts[1].MAC(t, tp.veths[1].Name).String())
	tp.hosts[1].AddNeigh(t, tp.veths[1].Name, hostIP(0), tp.hosts[0].MAC(t, tp.veths[0].Name).String())
	_, path := serveStatus(t, tp.d)
	c, dec, _ := subscribeStatus(t, path, statusaddr.SubscribePacketIns, &tp.d.pins.subs)
	var recv net.PacketConn
	var snd net.Conn
	if err := tp.hosts[1].Do(func() (err error) {
		recv, err = net.ListenPacket("udp4", hostIP(1)+":7777")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer recv.Close()
	if err := tp.hosts[0].Do(func() (err error) {
		snd, err = net.Dial("udp4", hostIP(1)+":7777")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer snd.Close()
	payload := func(i int) []byte { return []byte(fmt.Sprintf("packet-in %02d", i)) }
	start := time.Now()
	for i := range sent {
		if _, err := snd.Write(payload(i)); err != nil {
			t.Fatal(err)
		}
	}
	// Every datagram arrives: the controller action does not hold the
	// packet up.
	buf := make([]byte, 2048)
	recv.SetReadDeadline(time.Now().Add(10 * time.Second))
	for i := range sent {
		n, _, err := recv.ReadFrom(buf)
		if err != nil {
			t.Fatalf("host 1 received %d datagrams of %d: %v", i, sent, err)
		}
		if !bytes.Equal(buf[:n], payload(i)) {
			t.Errorf("datagram %d: %q", i, buf[:n])
		}
	}
	for deadline := time.Now().Add(10 * time.Second); tp.d.Status().Controller < sent; {
		if time.Now().After(deadline) {
			t.Fatalf("controller upcalls: %d, want %d", tp.d.Status().Controller, sent)
		}
		time.Sleep(5 * time.Millisecond)
	}
	elapsed := time.Since(start)
	// After a pause, one more: it gets a token and tells of every drop.
	time.Sleep(time.Second / rate * 2)
	if _, err := snd.Write(payload(sent)); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); tp.d.Status().Controller < sent+1; {
		if time.Now().After(deadline) {
			t.Fatalf("controller upcalls: %d, want %d", tp.d.Status().Controller, sent+1)
		}
		time.Sleep(5 * time.Millisecond)
	}
	var evs []statusaddr.Upcall
	c.SetReadDeadline(time.Now().Add(2 * time.Second))
	for {
		var ev statusaddr.Upcall
		if err := dec.Decode(&ev); err != nil {
			var ne net.Error
			if !errors.As(err, &ne) || !ne.Timeout() && !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatalf("reading packet-ins: %v", err)
			}
			break
		}
		evs = append(evs, ev)
		if bytes.Contains(ev.Packet, payload(sent)) {
			break
		}
	}
	// The burst, then at most the rate over the time the burst took.
	most := burst + int(elapsed.Seconds()*rate) + 1
	if len(evs) < burst+1 || len(evs) > most+1 {
		t.Fatalf("%d packet-ins for %d controller upcalls in %v, want %d to %d", len(evs), sent+1, elapsed, burst+1, most+1)
	}
	var limited uint64
	sentPayloads := make([][]byte, sent+1)
	for i := range sentPayloads {
		sentPayloads[i] = payload(i)
	}
	seen := make([]bool, sent+1)
	for i, ev := range evs {
		limited += ev.RateLimited
		if ev.Seq != uint64(i+1) || ev.Kind != uint8(odp.UpcallAction) || ev.Port != tp.ports[0] || !bytes.Equal(ev.Userdata, []byte{0xc0, 0xff, 0xee}) {
			t.Errorf("packet-in %d: seq %d kind %d port %d userdata %x; want %d, %d, %d, c0ffee", i, ev.Seq, ev.Kind, ev.Port, ev.Userdata, i+1, odp.UpcallAction, tp.ports[0])
		}
		// Each carries one of the datagrams, none twice. Not
		// necessarily the first ones in order: the datagrams that miss
		// before the megaflow is in wait in the handler's queue, while
		// later ones hit the new flow and their upcalls may be read
		// first (as with ovs-vswitchd).
		j := slices.IndexFunc(sentPayloads, func(p []byte) bool { return bytes.Contains(ev.Packet, p) })
		if j < 0 || seen[j] {
			t.Errorf("packet-in %d: packet % x is not one of the datagrams sent, or carries one seen before", i, ev.Packet)
		} else {
			seen[j] = true
		}
		key, err := odp.UnmarshalKey(ev.Key)
		if err != nil {
			t.Errorf("packet-in %d: key: %v", i, err)
			continue
		}
		if !strings.Contains(odp.FormatKey(key, nil, false), "dst=7777") {
			t.Errorf("packet-in %d: key %s", i, odp.FormatKey(key, nil, false))
		}
	}
	last := evs[len(evs)-1]
	if !bytes.Contains(last.Packet, payload(sent)) {
		t.Fatalf("the last packet-in is not the datagram sent after the pause: % x", last.Packet)
	}
	raw, _ := json.Marshal(last)
	t.Logf("%d packet-ins of %d in %v; the last: %s", len(evs), sent+1, elapsed, raw)
	if want := uint64(sent + 1 - len(evs)); limited != want || tp.d.Status().PacketInDrops != want {
		t.Errorf("rate limited: %d told to the subscriber, %d counted; want %d", limited, tp.d.Status().PacketInDrops, want)
	}
}
