package crosscheck

import (
	"fmt"
	"time"

	"github.com/ovsdp/ovsdp/internal/header"
	"github.com/ovsdp/ovsdp/internal/header/headertest"
)

// Conntrack scenarios (issue 15). The kernel's connection table is one
// per network namespace and outlives each scenario's datapath, so every
// scenario uses tuples of its own (ports, zone) and finds no connection
// another left behind. Explicit flows send the packets
// through ct and recirculate them to a table with no flows, so every
// packet comes back as a miss whose key carries the ct fields the
// datapath set (ct_state, ct_zone, ct_mark, ct_tuple4): the comparison
// of the upcalls compares ct_state per packet.
func ctScenarios(add func(*Scenario)) {
	const udp = "eth(),eth_type(0x0800),ipv4(proto=17,frag=no),udp()"
	const tcp = "eth(),eth_type(0x0800),ipv4(proto=6,frag=no),tcp()"
	// pair is a flow from each host: port 1's through a1, port 2's a2.
	pair := func(match, a1, a2 string) []FlowSpec {
		return []FlowSpec{{"recirc_id(0),in_port(1)," + match, a1}, {"recirc_id(0),in_port(2)," + match, a2}}
	}
	from1 := func(proto uint8, l4 []byte) []byte {
		return headertest.Eth(Nobody, MAC1, header.EtherTypeIPv4, headertest.IPv4(headertest.IPv4Hdr{Src: A1, Dst: A2, Proto: proto, TTL: 64}, l4))
	}
	from2 := func(proto uint8, l4 []byte) []byte {
		return headertest.Eth(Nobody, MAC2, header.EtherTypeIPv4, headertest.IPv4(headertest.IPv4Hdr{Src: A2, Dst: A1, Proto: proto, TTL: 64}, l4))
	}
	// Each step's frames, from h1 then h2, each waited out so that the
	// order is the same on both datapaths.
	steps := func(e *Env, frames ...[2][]byte) error {
		for _, f := range frames {
			host, fr := "h1", f[0]
			if f[0] == nil {
				host, fr = "h2", f[1]
			}
			if err := e.Inject(host, fr); err != nil {
				return err
			}
			if err := e.WaitQuiet(200 * time.Millisecond); err != nil {
				return err
			}
		}
		return nil
	}
	for _, c := range []struct {
		name   string
		flows  []FlowSpec
		frames [][2][]byte
		misses int
	}{{
		name:  "ct-udp-zone-mark",
		flows: pair(udp, "ct(commit,zone=3,mark=0x5/0xff),recirc(0x1)", "ct(zone=3),recirc(0x1)"),
		frames: [][2][]byte{
			{udp4(headertest.IPv4Hdr{}, 4000, 53, "request")},                              // +new+trk, committed
			{udp4(headertest.IPv4Hdr{}, 4000, 53, "again")},                                // +new+trk: no reply yet
			{nil, from2(header.IPProtoUDP, headertest.UDP(53, 4000, []byte("reply")))},     // +est+rpl+trk
			{udp4(headertest.IPv4Hdr{}, 4000, 53, "after reply")},                          // +est+trk
			{nil, from2(header.IPProtoUDP, headertest.UDP(53, 4001, []byte("unrelated")))}, // +new+trk, not committed
		},
		misses: 5,
	}, {
		name:  "ct-tcp-handshake-out-of-window",
		flows: pair(tcp, "ct(commit),recirc(0x2)", "ct,recirc(0x2)"),
		frames: [][2][]byte{
			{from1(header.IPProtoTCP, headertest.TCP(40000, 80, 1000, 0, header.TCPFlagSyn, nil))},
			{nil, from2(header.IPProtoTCP, headertest.TCP(80, 40000, 5000, 1001, header.TCPFlagSyn|header.TCPFlagAck, nil))},
			// Before the handshake completes, far beyond the server's
			// window: invalid.
			{from1(header.IPProtoTCP, headertest.TCP(40000, 80, 1001+1<<24, 5001, header.TCPFlagAck, []byte("out of window")))},
			// The server's too (not a SYN: its window is not re-initialised).
			{nil, from2(header.IPProtoTCP, headertest.TCP(80, 40000, 5001+1<<20, 1001, header.TCPFlagAck, []byte("server out of window")))},
			{from1(header.IPProtoTCP, headertest.TCP(40000, 80, 1001, 5001, header.TCPFlagAck, nil))},
			// Established and assured: openvswitch makes the windows
			// liberal, so far beyond the client's window passes.
			{nil, from2(header.IPProtoTCP, headertest.TCP(80, 40000, 5001+1<<24, 1001, header.TCPFlagAck, []byte("out of window")))},
			// A SYN/ACK starting nothing: invalid.
			{nil, from2(header.IPProtoTCP, headertest.TCP(81, 40000, 7, 9, header.TCPFlagSyn|header.TCPFlagAck, nil))},
		},
		misses: 7,
	}, {
		name:  "ct-snat-port-range",
		flows: pair(udp, "ct(commit,nat(src=10.0.0.100:6000-6000)),recirc(0x3)", "ct(nat),recirc(0x3)"),
		frames: [][2][]byte{
			{udp4(headertest.IPv4Hdr{}, 4000, 53, "snat me")},
			{nil, headertest.Eth(Nobody, MAC2, header.EtherTypeIPv4, headertest.IPv4(headertest.IPv4Hdr{Src: A2, Dst: headertest.IP4("10.0.0.100"), Proto: header.IPProtoUDP, TTL: 64}, headertest.UDP(53, 6000, []byte("un-snat me"))))},
			// The only port is taken: dropped, no miss.
			{udp4(headertest.IPv4Hdr{Src: headertest.IP4("10.0.0.3")}, 4000, 53, "no port left")},
		},
		misses: 2,
	}, {
		// Destination NAT to a virtual IP's server: the kernel marks
		// the original direction +dnat+snat (its second, null source
		// pass) and the reply +snat.
		name:  "ct-dnat-virtual-ip",
		flows: pair(udp, "ct(commit,nat(dst=10.0.0.2)),recirc(0x4)", "ct(nat),recirc(0x4)"),
		frames: [][2][]byte{
			{udp4(headertest.IPv4Hdr{Dst: headertest.IP4("10.0.0.99")}, 4100, 53, "to the vip")},
			{nil, from2(header.IPProtoUDP, headertest.UDP(53, 4100, []byte("from the server")))},
			{udp4(headertest.IPv4Hdr{Dst: headertest.IP4("10.0.0.99")}, 4100, 53, "again")},
		},
		misses: 3,
	}, {
		// ICMP echo as a connection, and an ICMP error about a
		// source-NATed UDP flow: related, its embedded packet
		// NAT-reversed (the upcall's packet bytes are compared).
		name: "ct-icmp-echo-and-related-error",
		flows: append(pair(udp, "ct(commit,nat(src=10.0.0.100)),recirc(0x5)", "ct(nat),recirc(0x5)"),
			pair("eth(),eth_type(0x0800),ipv4(proto=1,frag=no),icmp()", "ct(commit,nat),recirc(0x5)", "ct(nat),recirc(0x5)")...),
		frames: [][2][]byte{
			{from1(header.IPProtoICMP, headertest.ICMP(8, 0, 0x00070001, []byte("echo")))},
			{nil, from2(header.IPProtoICMP, headertest.ICMP(0, 0, 0x00070001, []byte("echo")))},
			{udp4(headertest.IPv4Hdr{}, 4200, 53, "snat me")},
			{nil, headertest.Eth(Nobody, MAC2, header.EtherTypeIPv4, headertest.IPv4(headertest.IPv4Hdr{Src: A2, Dst: headertest.IP4("10.0.0.100"), Proto: header.IPProtoICMP, TTL: 64},
				headertest.ICMP(3, 3, 0, headertest.IPv4(headertest.IPv4Hdr{Src: headertest.IP4("10.0.0.100"), Dst: A2, Proto: header.IPProtoUDP, TTL: 64}, headertest.UDP(4200, 53, []byte("snat me")))[:28])))},
			// An echo reply that answers nothing: invalid.
			{nil, from2(header.IPProtoICMP, headertest.ICMP(0, 0, 0x00090001, []byte("stray")))},
		},
		misses: 5,
	}, {
		// force: a connection seen in the reply direction is deleted
		// and committed anew in this one; ct_clear leaves no ct state.
		name: "ct-force-commit-and-clear",
		flows: []FlowSpec{
			{"recirc_id(0),in_port(1)," + udp, "ct(commit),recirc(0x6)"},
			{"recirc_id(0),in_port(2),eth(),eth_type(0x0800),ipv4(proto=17,frag=no),udp(dst=4300)", "ct,ct(force_commit),recirc(0x6)"},
			{"recirc_id(0),in_port(2),eth(),eth_type(0x0800),ipv4(proto=17,frag=no),udp(dst=4301)", "ct,ct_clear,recirc(0x6)"},
		},
		frames: [][2][]byte{
			{udp4(headertest.IPv4Hdr{}, 4300, 53, "first")},
			{nil, from2(header.IPProtoUDP, headertest.UDP(53, 4300, []byte("force")))},
			{udp4(headertest.IPv4Hdr{}, 4300, 53, "now the reply")},
			{nil, from2(header.IPProtoUDP, headertest.UDP(53, 4301, []byte("clear")))},
		},
		misses: 4,
	}} {
		c := c
		add(&Scenario{
			Name: c.name, Hosts: silentHosts(2), Flows: c.flows, Conntrack: true,
			Traffic: func(e *Env) error { return steps(e, c.frames...) },
			Check: all(checkNoErrors, func(o *Observation) error {
				if got := countUpcalls(o, "miss"); got != c.misses {
					return fmt.Errorf("%d misses, want %d", got, c.misses)
				}
				return nil
			}),
		})
	}
}
