package userdp

import "testing"

// baseOf returns the state every netdev backend has.
func baseOf(p NetdevPort) *netdevBase {
	switch q := p.(type) {
	case *RingPort:
		return &q.netdevBase
	case *MmsgPort:
		return &q.netdevBase
	case *XDPPort:
		return &q.netdevBase
	}
	panic("not a netdev backend")
}

// afPacketOf returns the AF_PACKET state of p, which must be a RingPort
// or an MmsgPort.
func afPacketOf(t testing.TB, p NetdevPort) *afPacket {
	t.Helper()
	switch q := p.(type) {
	case *RingPort:
		return &q.afPacket
	case *MmsgPort:
		return &q.afPacket
	}
	t.Fatalf("%s is a %T, not an AF_PACKET port", p.Name(), p)
	return nil
}

// TestOpenNetdevBackends: OpenNetdev gives each mode its own backend
// type, which reports that mode.
func TestOpenNetdevBackends(t *testing.T) {
	for _, c := range []struct {
		mode NetdevMode
		want func(NetdevPort) bool
	}{
		{NetdevRing, func(p NetdevPort) bool { _, ok := p.(*RingPort); return ok }},
		{NetdevMmsg, func(p NetdevPort) bool { _, ok := p.(*MmsgPort); return ok }},
		{NetdevXDP, func(p NetdevPort) bool { _, ok := p.(*XDPPort); return ok }},
	} {
		t.Run(c.mode.String(), func(t *testing.T) {
			rx, _ := netdevPair(t, c.mode)
			if !c.want(rx) || rx.Mode() != c.mode {
				t.Errorf("OpenNetdev(%v) gave a %T of mode %v", c.mode, rx, rx.Mode())
			}
		})
	}
	if _, err := OpenNetdev("lo", NetdevOptions{Mode: 7}); err == nil || err.Error() != "userdp: netdev lo: unknown mode 7" {
		t.Errorf("mode 7: %v, want the unknown mode refused", err)
	}
}
