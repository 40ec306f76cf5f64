package userdp

import (
	"net"
	"testing"
	"time"

	"github.com/ovsdp/ovsdp/testenv"
)

// TestTapPort: a tap port created in a namespace answers a ping from
// that namespace's stack (frames in both directions), allocates nothing
// per batch, counts from the device's side, and disappears on Close.
func TestTapPort(t *testing.T) {
	testenv.RequireRoot(t)
	ns := testenv.NewNetns(t)
	var p *TapPort
	if err := ns.Do(func() (err error) {
		p, err = OpenTap("dp0")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if p.Type() != "internal" || p.Name() != "dp0" || p.MTU() != 1500 {
		t.Errorf("type %q name %q mtu %d", p.Type(), p.Name(), p.MTU())
	}
	ns.AddAddr(t, "dp0", "10.79.0.2/24")
	r := startResponder(p, [4]byte{10, 79, 0, 1})
	if err := ns.Ping("10.79.0.1", 5*time.Second); err != nil {
		t.Fatalf("ping through the tap port: %v", err)
	}
	// The reply's write is counted just after the host has it: give
	// the responder a moment.
	st := p.Stats()
	for deadline := time.Now().Add(2 * time.Second); st.RxPackets < 2 && time.Now().Before(deadline); st = p.Stats() {
		time.Sleep(10 * time.Millisecond)
	}
	// The host sent ARP + echo request (device tx), we wrote the replies (device rx).
	if st.TxPackets < 2 || st.RxPackets < 2 {
		t.Errorf("stats %+v: want >= 2 tx (host to datapath) and >= 2 rx", st)
	}
	p.Close()
	select {
	case <-r.done:
	case <-time.After(3 * time.Second):
		t.Fatal("ReadBatch still blocked after Close")
	}
	if err := ns.Do(func() error {
		_, err := net.InterfaceByName("dp0")
		if err == nil {
			t.Errorf("dp0 still exists after Close")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

func TestTapBadName(t *testing.T) {
	if _, err := OpenTap("a-name-that-is-far-too-long"); err == nil {
		t.Fatal("OpenTap with a 27-byte name succeeded")
	}
}
