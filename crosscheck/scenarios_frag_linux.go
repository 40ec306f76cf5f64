package crosscheck

import (
	"fmt"
	"time"

	"github.com/ovsdp/ovsdp/internal/header"
	"github.com/ovsdp/ovsdp/internal/header/headertest"
)

// Fragments through ct (issue 15), IPv4 and IPv6: h1's fragmented UDP
// datagrams go through ct(commit) before any L4 match, are reassembled
// and recirculated as whole datagrams to a flow that outputs them to
// h2, which receives them fragmented again; h2's unfragmented reply is
// then +est+rpl (a miss shows it). The datagrams: one whose fragments
// come out of order (the last first), one of irregular sizes with a
// duplicated fragment, the same through two outputs ("2,2": the kernel
// fragments the first, a clone, in pieces of the MRU, and the last as
// the original fragments), and one with an overlapping fragment, which
// drops it. IPv6 refragments carry a new identification from the kernel
// (ipv6_select_ident) and the original one from userdp: the comparison
// leaves it out (CompareOptions.IgnoreIPv6FragmentIDs).
func fragScenarios(add func(*Scenario)) {
	for _, v6 := range []bool{false, true} {
		v6 := v6
		name, et, ip, zone := "ct-fragments-v4", "0x0800", "ipv4", 11
		mtuData := 1480 // the data of a 1500-byte fragment
		if v6 {
			name, et, ip, zone = "ct-fragments-v6", "0x86dd", "ipv6", 12
			mtuData = 1448
		}
		any := fmt.Sprintf("eth(),eth_type(%s),%s()", et, ip)
		udp := func(dport int) string {
			return fmt.Sprintf("eth(),eth_type(%s),%s(proto=17,frag=no),udp(dst=%d)", et, ip, dport)
		}
		flows := []FlowSpec{
			{"recirc_id(0),in_port(1)," + any, fmt.Sprintf("ct(commit,zone=%d),recirc(0x11)", zone)},
			{"recirc_id(0x11),in_port(1)," + udp(53), "2"},
			{"recirc_id(0x11),in_port(1)," + udp(54), "2,2"},
			{"recirc_id(0),in_port(2)," + any, fmt.Sprintf("ct(zone=%d),recirc(0x12)", zone)},
		}
		// datagram cuts a UDP datagram from h1 (source port 4400) into
		// fragments of the given data sizes.
		datagram := func(dport uint16, id uint32, sizes ...int) [][]byte {
			total := 0
			var ps []headertest.Piece
			for _, n := range sizes {
				ps = append(ps, headertest.Piece{Off: total, Len: n})
				total += n
			}
			pl := make([]byte, total-8)
			for i := range pl {
				pl[i] = byte(i + int(id))
			}
			var ips [][]byte
			eth := uint16(header.EtherTypeIPv4)
			if v6 {
				eth = header.EtherTypeIPv6
				ips = headertest.Fragment6(headertest.IPv6(B1, B2, header.IPProtoUDP, 64, 0, 0, headertest.UDP(4400, dport, pl)), id, ps...)
			} else {
				ips = headertest.Fragment4(headertest.IPv4(headertest.IPv4Hdr{Src: A1, Dst: A2, Proto: header.IPProtoUDP, TTL: 64, ID: uint16(id)},
					headertest.UDP(4400, dport, pl)), ps...)
			}
			out := make([][]byte, len(ips))
			for i, b := range ips {
				out[i] = headertest.Eth(Nobody, MAC1, eth, b)
			}
			return out
		}
		reply := func() []byte {
			if v6 {
				return headertest.Eth(Nobody, MAC2, header.EtherTypeIPv6, headertest.IPv6(B2, B1, header.IPProtoUDP, 64, 0, 0, headertest.UDP(53, 4400, []byte("reply"))))
			}
			return headertest.Eth(Nobody, MAC2, header.EtherTypeIPv4, headertest.IPv4(headertest.IPv4Hdr{Src: A2, Dst: A1, Proto: header.IPProtoUDP, TTL: 64},
				headertest.UDP(53, 4400, []byte("reply"))))
		}
		rest := 3008 - 2*mtuData
		outOfOrder := datagram(53, 0x51, mtuData, mtuData, rest)
		irregular := datagram(53, 0x52, 800, mtuData, 2208-mtuData)
		twice := datagram(54, 0x53, 800, mtuData, 2208-mtuData)
		good := datagram(53, 0x54, mtuData, mtuData, rest)
		bad := datagram(53, 0x54, 1000, 1400)
		traffic := [][][]byte{
			{outOfOrder[2], outOfOrder[0], outOfOrder[1]},
			{irregular[0], irregular[1], irregular[0], irregular[2]},
			twice,
			{good[0], bad[1], good[1], good[2]},
		}
		add(&Scenario{
			Name: name, Hosts: silentHosts(2), Flows: flows,
			Compare: CompareOptions{IgnoreIPv6FragmentIDs: true},
			Traffic: func(e *Env) error {
				for _, frames := range traffic {
					if err := e.Inject("h1", frames...); err != nil {
						return err
					}
					if err := e.WaitQuiet(200 * time.Millisecond); err != nil {
						return err
					}
				}
				return e.Inject("h2", reply())
			},
			// h2: 3 + 3 + (3 + 3) fragments; the reply's miss is
			// +est+rpl.
			Check: all(checkNoErrors, func(o *Observation) error {
				if got := countUpcalls(o, "miss"); got != 1 {
					return fmt.Errorf("%d misses, want 1 (the reply)", got)
				}
				return checkFrames(o, "h2", 12, false)
			}),
		})
	}
}
