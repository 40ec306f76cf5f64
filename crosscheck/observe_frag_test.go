package crosscheck

import (
	"bytes"
	"strings"
	"testing"

	"github.com/ovsdp/ovsdp/internal/header"
	"github.com/ovsdp/ovsdp/internal/header/headertest"
)

// TestIgnoreIPv6FragmentIDs: with the option, two IPv6 fragments that
// differ only in their identification render the same (and the frame
// itself is not changed); without it, or for IPv4, they differ.
func TestIgnoreIPv6FragmentIDs(t *testing.T) {
	whole := headertest.IPv6(headertest.IP6("fd00::1"), headertest.IP6("fd00::2"), header.IPProtoUDP, 64, 0, 0, headertest.UDP(1, 2, make([]byte, 100)))
	frame := func(id uint32) []byte {
		return headertest.Eth(headertest.MAC("02:00:00:00:00:02"), headertest.MAC("02:00:00:00:00:01"), header.EtherTypeIPv6, headertest.Fragment6(whole, id, headertest.Piece{Off: 0, Len: 64})[0])
	}
	a, b := frame(1), frame(2)
	keep := append([]byte(nil), a...)
	obs := func(f []byte) *Observation {
		return &Observation{Received: []Received{{Host: "h2", Frames: []ObservedFrame{{Summary: "s", Data: f}}}}}
	}
	if d := Compare(obs(a), obs(b), CompareOptions{IgnoreIPv6FragmentIDs: true}); d != "" {
		t.Errorf("fragments differing only in their ID differ:\n%s", d)
	}
	if !bytes.Equal(a, keep) {
		t.Error("the observed frame was changed")
	}
	if d := Compare(obs(a), obs(b), CompareOptions{}); !strings.Contains(d, "h2") {
		t.Errorf("without the option the IDs are compared; diff %q", d)
	}
	v4 := func(id uint16) []byte {
		return headertest.Eth(headertest.MAC("02:00:00:00:00:02"), headertest.MAC("02:00:00:00:00:01"), header.EtherTypeIPv4, headertest.IPv4(headertest.IPv4Hdr{Src: headertest.IP4("10.0.0.1"), Dst: headertest.IP4("10.0.0.2"), Proto: header.IPProtoUDP, TTL: 64, ID: id}, headertest.UDP(1, 2, nil)))
	}
	if d := Compare(obs(v4(1)), obs(v4(2)), CompareOptions{IgnoreIPv6FragmentIDs: true}); d == "" {
		t.Error("IPv4 identifications are left out too")
	}
}
