package crosscheck

import (
	"encoding/binary"
	"fmt"
	"strings"
	"time"

	"github.com/ovsdp/ovsdp/internal/header"
	"github.com/ovsdp/ovsdp/internal/header/headertest"
	"github.com/ovsdp/ovsdp/odp"
)

// Addresses of the scenarios' hosts.
var (
	MAC1, MAC2, MAC3 = headertest.MAC("02:00:00:00:00:01"), headertest.MAC("02:00:00:00:00:02"), headertest.MAC("02:00:00:00:00:03")
	// Nobody is a destination MAC no host has: hosts receiving frames
	// for it drop them, so injected traffic gets no answer.
	Nobody = headertest.MAC("02:00:00:00:00:fe")
	Bcast  = headertest.MAC("ff:ff:ff:ff:ff:ff")
	A1, A2 = headertest.IP4("10.0.0.1"), headertest.IP4("10.0.0.2")
	B1, B2 = headertest.IP6("fd00::1"), headertest.IP6("fd00::2")
)

// stackTCPCompare compares a TCP exchange between the hosts' own stacks.
// A delayed ACK (sent from a timer, on whichever CPU) and the FIN (sent by
// the process) may leave in either order, so the frames are compared, not
// their order. The stacks may also send a duplicate ACK from a timer on a
// slow run (seen under TCG); which datapath carried it does not matter,
// so distinct frames are compared, and the per-flow and datapath packet
// counts that include it are left out.
var stackTCPCompare = CompareOptions{UnorderedFrames: true, DedupFrames: true, IgnoreFlowStats: true, IgnoreCounters: true}

func hostsV4(n int) []Host {
	hs := make([]Host, n)
	for i := range hs {
		hs[i] = Host{Name: fmt.Sprintf("h%d", i+1), MAC: fmt.Sprintf("02:00:00:00:00:%02x", i+1),
			Port: uint32(i + 1), Addrs: []string{fmt.Sprintf("10.0.0.%d/24", i+1)}}
	}
	return hs
}

func hostsV6(n int) []Host {
	hs := make([]Host, n)
	for i := range hs {
		hs[i] = Host{Name: fmt.Sprintf("h%d", i+1), MAC: fmt.Sprintf("02:00:00:00:00:%02x", i+1),
			Port: uint32(i + 1), Addrs: []string{fmt.Sprintf("fd00::%d/64", i+1)}, IPv6: true}
	}
	return hs
}

// silentHosts are hosts without addresses: their stacks answer nothing.
func silentHosts(n int) []Host {
	hs := make([]Host, n)
	for i := range hs {
		hs[i] = Host{Name: fmt.Sprintf("h%d", i+1), MAC: fmt.Sprintf("02:00:00:00:00:%02x", i+1), Port: uint32(i + 1)}
	}
	return hs
}

// udp4 is an injected UDP/IPv4 frame from h1 to nobody; a zero TTL or
// address in h means 64 or A1/A2.
func udp4(h headertest.IPv4Hdr, sport, dport uint16, payload string) []byte {
	h.Proto = header.IPProtoUDP
	if h.TTL == 0 {
		h.TTL = 64
	}
	if h.Src == ([4]byte{}) {
		h.Src = A1
	}
	if h.Dst == ([4]byte{}) {
		h.Dst = A2
	}
	return headertest.Eth(Nobody, MAC1, header.EtherTypeIPv4, headertest.IPv4(h, headertest.UDP(sport, dport, []byte(payload))))
}

func tcp4(h headertest.IPv4Hdr, sport, dport uint16, flags uint8, payload string) []byte {
	h.Proto = header.IPProtoTCP
	if h.TTL == 0 {
		h.TTL = 64
	}
	if h.Src == ([4]byte{}) {
		h.Src = A1
	}
	if h.Dst == ([4]byte{}) {
		h.Dst = A2
	}
	return headertest.Eth(Nobody, MAC1, header.EtherTypeIPv4, headertest.IPv4(h, headertest.TCP(sport, dport, 1000, 0, flags, []byte(payload))))
}

// zeroUDPChecksum clears the UDP checksum of an IPv4 frame built by udp4
// (no checksum, allowed over IPv4).
func zeroUDPChecksum(f []byte) []byte {
	p := Parse(f)
	binary.BigEndian.PutUint16(f[p.L4+6:], 0)
	return f
}

// checkFrames verifies that host got want frames (or at least want
// when atLeast), all with correct checksums.
func checkFrames(o *Observation, host string, want int, atLeast bool) error {
	for _, r := range o.Received {
		if r.Host != host {
			continue
		}
		if len(r.Frames) != want && !(atLeast && len(r.Frames) > want) {
			return fmt.Errorf("%s received %d frames, want %d", host, len(r.Frames), want)
		}
		for _, f := range r.Frames {
			if strings.Contains(f.Summary, "CHECKSUM") {
				return fmt.Errorf("%s received a frame with a bad checksum: %s", host, f.Summary)
			}
		}
		return nil
	}
	return fmt.Errorf("no host %s", host)
}

func checkNoErrors(o *Observation) error {
	if len(o.Errors) > 0 {
		return fmt.Errorf("errors: %s", strings.Join(o.Errors, "; "))
	}
	return nil
}

func countUpcalls(o *Observation, kind string) int {
	n := 0
	for _, u := range o.Upcalls {
		if u.Kind == kind {
			n++
		}
	}
	return n
}

func all(checks ...func(*Observation) error) func(*Observation) error {
	return func(o *Observation) error {
		for _, c := range checks {
			if err := c(o); err != nil {
				return err
			}
		}
		return nil
	}
}

const trafficTimeout = 5 * time.Second

// Scenarios returns the cross-check scenarios.
func Scenarios() []*Scenario {
	var ss []*Scenario
	add := func(s *Scenario) { ss = append(ss, s) }

	// Stack traffic through the policy handler (learning switch):
	// neighbour discovery goes through the datapath.
	add(&Scenario{
		Name: "arp-and-ping-ipv4", Hosts: hostsV4(2), Handler: true, Stack: true,
		Traffic: func(e *Env) error { return e.Ping("h1", "10.0.0.2", trafficTimeout) },
		Check: all(checkNoErrors, func(o *Observation) error {
			if err := checkFrames(o, "h2", 2, true); err != nil {
				return err
			}
			return checkFrames(o, "h1", 2, true)
		}),
	})
	add(&Scenario{
		Name: "tcp-ipv4", Hosts: hostsV4(2), Handler: true, Stack: true,
		Compare: stackTCPCompare,
		Traffic: func(e *Env) error { return e.TCPExchange("h1", "h2", "10.0.0.2", 40001, 8080, trafficTimeout) },
		Check:   all(checkNoErrors, func(o *Observation) error { return checkFrames(o, "h2", 4, true) }),
	})
	add(&Scenario{
		Name: "udp-ipv4-static-neighbours", Hosts: func() []Host {
			hs := hostsV4(2)
			hs[0].Neigh = [][2]string{{"10.0.0.2", "02:00:00:00:00:02"}}
			hs[1].Neigh = [][2]string{{"10.0.0.1", "02:00:00:00:00:01"}}
			return hs
		}(), Handler: true, Stack: true,
		Traffic: func(e *Env) error { return e.UDPExchange("h1", "h2", "10.0.0.2", 40002, 7777, trafficTimeout) },
		Check:   all(checkNoErrors, func(o *Observation) error { return checkFrames(o, "h2", 1, false) }),
	})
	add(&Scenario{
		Name: "ping-ipv6", Hosts: hostsV6(2), Handler: true, Stack: true,
		Traffic: func(e *Env) error { return e.Ping("h1", "fd00::2", trafficTimeout) },
		Check:   all(checkNoErrors, func(o *Observation) error { return checkFrames(o, "h2", 2, true) }),
	})
	add(&Scenario{
		Name: "tcp-ipv6", Hosts: hostsV6(2), Handler: true, Stack: true,
		Compare: stackTCPCompare,
		Traffic: func(e *Env) error { return e.TCPExchange("h1", "h2", "fd00::2", 40003, 8080, trafficTimeout) },
		Check:   all(checkNoErrors, func(o *Observation) error { return checkFrames(o, "h2", 4, true) }),
	})
	add(&Scenario{
		Name: "udp-ipv6", Hosts: hostsV6(3), Handler: true, Stack: true,
		Traffic: func(e *Env) error { return e.UDPExchange("h1", "h3", "fd00::3", 40004, 7777, trafficTimeout) },
		Check:   all(checkNoErrors, func(o *Observation) error { return checkFrames(o, "h3", 2, true) }),
	})

	// Explicit flows, raw frames with fixed contents.
	add(&Scenario{
		Name: "explicit-drop-and-miss", Hosts: silentHosts(2),
		Flows: []FlowSpec{
			{"in_port(1),eth(),eth_type(0x0800),ipv4(proto=17,frag=no),udp(dst=9)", "drop"},
			{"in_port(1),eth(),eth_type(0x0800),ipv4(proto=17,frag=no),udp(dst=7)", "2"},
		},
		Traffic: func(e *Env) error {
			return e.Inject("h1", udp4(headertest.IPv4Hdr{}, 100, 9, "discard me"), udp4(headertest.IPv4Hdr{}, 100, 7, "echo"),
				udp4(headertest.IPv4Hdr{}, 100, 8, "no flow"), udp4(headertest.IPv4Hdr{}, 101, 9, "discard me too"))
		},
		Check: all(checkNoErrors, func(o *Observation) error {
			if n := countUpcalls(o, "miss"); n != 1 {
				return fmt.Errorf("%d misses, want 1", n)
			}
			return checkFrames(o, "h2", 1, false)
		}),
	})
	add(&Scenario{
		Name: "dec-ttl-and-masked-ipv4-sets", Hosts: silentHosts(2),
		Flows: []FlowSpec{
			{"in_port(1),eth(),eth_type(0x0800),ipv4(proto=17,frag=no),udp(dst=1001)", "dec_ttl(le_1(drop)),2"},
			{"in_port(1),eth(),eth_type(0x0800),ipv4(proto=17,frag=no),udp(dst=1002)", "set(ipv4(ttl=7)),2"},
			{"in_port(1),eth(),eth_type(0x0800),ipv4(proto=17,frag=no),udp(dst=1003)", "set(ipv4(tos=0x20/0xfc)),2"},
			{"in_port(1),eth(),eth_type(0x0800),ipv4(proto=17,frag=no),udp(dst=1004)", "set(ipv4(src=10.9.9.9)),2"},
			{"in_port(1),eth(),eth_type(0x0800),ipv4(proto=17,frag=no),udp(dst=1005)", "set(ipv4(dst=10.8.8.8)),2"},
			{"in_port(1),eth(),eth_type(0x0800),ipv4(proto=17,frag=no),udp(dst=1006)", "set(ipv4(src=10.1.2.3/255.255.0.0,dst=10.7.0.0/255.255.0.0,tos=0x04/0x0c,ttl=33)),2"},
			{"in_port(1),eth(),eth_type(0x0800),ipv4(proto=6,frag=no),tcp(dst=1004)", "set(ipv4(src=10.9.9.9,dst=10.8.8.8,ttl=5)),2"},
			{"in_port(1),eth(),eth_type(0x0800),ipv4(proto=1,frag=no),icmp()", "dec_ttl(le_1(drop)),set(ipv4(tos=0xb8/0xfc)),2"},
		},
		Traffic: func(e *Env) error {
			return e.Inject("h1",
				udp4(headertest.IPv4Hdr{TTL: 64}, 1, 1001, "ttl 64"), udp4(headertest.IPv4Hdr{TTL: 2}, 1, 1001, "ttl 2"),
				udp4(headertest.IPv4Hdr{TTL: 1}, 1, 1001, "ttl 1: dropped"),
				headertest.Eth(Nobody, MAC1, header.EtherTypeIPv4, headertest.IPv4(headertest.IPv4Hdr{Src: A1, Dst: A2, Proto: header.IPProtoUDP}, headertest.UDP(1, 1001, []byte("ttl 0: dropped")))),
				udp4(headertest.IPv4Hdr{TTL: 200, TOS: 0x03}, 2, 1002, "set ttl"),
				udp4(headertest.IPv4Hdr{TOS: 0x03}, 3, 1003, "dscp, ecn kept"), udp4(headertest.IPv4Hdr{TOS: 0xfe}, 3, 1003, "dscp"),
				udp4(headertest.IPv4Hdr{}, 4, 1004, "new source"), zeroUDPChecksum(udp4(headertest.IPv4Hdr{}, 4, 1004, "no udp csum")),
				udp4(headertest.IPv4Hdr{}, 5, 1005, "new destination"),
				udp4(headertest.IPv4Hdr{Src: headertest.IP4("192.168.77.88"), Dst: headertest.IP4("172.16.1.2"), TOS: 0xff}, 6, 1006, "masked all"),
				tcp4(headertest.IPv4Hdr{}, 7, 1004, header.TCPFlagSyn, ""), tcp4(headertest.IPv4Hdr{ID: 77, DF: true}, 7, 1004, header.TCPFlagAck|header.TCPFlagPsh, "tcp data"),
				headertest.Eth(Nobody, MAC1, header.EtherTypeIPv4, headertest.IPv4(headertest.IPv4Hdr{Src: A1, Dst: A2, Proto: header.IPProtoICMP, TTL: 9}, headertest.ICMP(8, 0, 0x01020304, []byte("icmp")))),
				headertest.Eth(Nobody, MAC1, header.EtherTypeIPv4, headertest.IPv4(headertest.IPv4Hdr{Src: A1, Dst: A2, Proto: header.IPProtoICMP, TTL: 1}, headertest.ICMP(8, 0, 0x01020304, []byte("icmp ttl 1")))),
			)
		},
		Check: all(checkNoErrors, func(o *Observation) error { return checkFrames(o, "h2", 12, false) }),
	})
	add(&Scenario{
		Name: "vlan-push-pop", Hosts: silentHosts(2),
		Flows: []FlowSpec{
			{"in_port(1),eth(),eth_type(0x0800),ipv4(proto=17,frag=no),udp(dst=2001)", "push_vlan(vid=10,pcp=3),2"},
			{"in_port(1),eth(),eth_type(0x8100),vlan(vid=20),encap(eth_type(0x0800),ipv4(frag=no))", "pop_vlan,2"},
			{"in_port(1),eth(),eth_type(0x8100),vlan(vid=30),encap(eth_type(0x0800),ipv4(frag=no))", "push_vlan(tpid=0x88a8,vid=300,pcp=5),2"},
			{"in_port(1),eth(),eth_type(0x88a8),vlan(vid=40),encap(eth_type(0x8100),vlan(vid=41),encap(eth_type(0x0800),ipv4(frag=no)))", "pop_vlan,pop_vlan,2"},
		},
		Traffic: func(e *Env) error {
			inner := headertest.IPv4(headertest.IPv4Hdr{Src: A1, Dst: A2, Proto: header.IPProtoUDP, TTL: 64}, headertest.UDP(1, 2002, []byte("tagged")))
			return e.Inject("h1",
				udp4(headertest.IPv4Hdr{}, 1, 2001, "push me"),
				headertest.Eth(Nobody, MAC1, header.EtherTypeIPv4, inner, [2]uint16{header.EtherTypeVLAN, 20}),
				headertest.Eth(Nobody, MAC1, header.EtherTypeIPv4, inner, [2]uint16{header.EtherTypeVLAN, 0x6000 | 20}),
				headertest.Eth(Nobody, MAC1, header.EtherTypeIPv4, inner, [2]uint16{header.EtherTypeVLAN, 30}),
				headertest.Eth(Nobody, MAC1, header.EtherTypeIPv4, inner, [2]uint16{header.EtherTypeQinQ, 40}, [2]uint16{header.EtherTypeVLAN, 41}),
				headertest.Eth(Nobody, MAC1, header.EtherTypeIPv4, inner, [2]uint16{header.EtherTypeVLAN, 99}),
			)
		},
		Check: all(checkNoErrors, func(o *Observation) error {
			if n := countUpcalls(o, "miss"); n != 1 {
				return fmt.Errorf("%d misses, want 1 (vid 99)", n)
			}
			return checkFrames(o, "h2", 5, false)
		}),
	})
	add(&Scenario{
		Name: "userspace-action-with-userdata", Hosts: silentHosts(2),
		Flows: []FlowSpec{
			{"in_port(1),eth(),eth_type(0x0800),ipv4(proto=17,frag=no),udp(dst=3001)", "userspace(pid=$PID,userdata(0102030405060708)),2"},
			{"in_port(1),eth(),eth_type(0x0800),ipv4(proto=17,frag=no),udp(dst=3002)", "set(ipv4(ttl=3)),userspace(pid=$PID,userdata(a1a2a3a4a5a6a7a8a9aa))"},
		},
		Traffic: func(e *Env) error {
			return e.Inject("h1", udp4(headertest.IPv4Hdr{}, 1, 3001, "to userspace and h2"), udp4(headertest.IPv4Hdr{}, 1, 3002, "to userspace after a set"))
		},
		Check: all(checkNoErrors, func(o *Observation) error {
			if n := countUpcalls(o, "action"); n != 2 {
				return fmt.Errorf("%d action upcalls, want 2", n)
			}
			return checkFrames(o, "h2", 1, false)
		}),
	})
	add(&Scenario{
		Name: "several-masks", Hosts: silentHosts(3),
		Flows: []FlowSpec{
			{"in_port(1),eth(),eth_type(0x0800),ipv4(src=10.1.0.0/255.255.0.0,proto=17,frag=no),udp(dst=4001)", "2"},
			{"in_port(1),eth(),eth_type(0x0800),ipv4(dst=10.2.0.0/255.255.0.0,proto=17,frag=no),udp(dst=4002)", "3"},
			{"in_port(1),eth(),eth_type(0x0800),ipv4(proto=17,frag=no),udp(dst=4100/0xff00)", "2,3"},
			{"in_port(1),eth(src=02:00:00:00:00:01/ff:ff:ff:00:00:00),eth_type(0x0800),ipv4(proto=17,tos=0x10/0xfc,frag=no),udp(dst=4003)", "3"},
			{"in_port(1),eth(dst=ff:ff:ff:ff:ff:ff),eth_type(0x0806),arp(op=1)", "2,3"},
		},
		Traffic: func(e *Env) error {
			return e.Inject("h1",
				udp4(headertest.IPv4Hdr{Src: headertest.IP4("10.1.2.3")}, 1, 4001, "mask 1"), udp4(headertest.IPv4Hdr{Src: headertest.IP4("10.3.2.3")}, 1, 4001, "mask 1 miss"),
				udp4(headertest.IPv4Hdr{Dst: headertest.IP4("10.2.9.9")}, 1, 4002, "mask 2"), udp4(headertest.IPv4Hdr{}, 1, 4150, "mask 3"),
				udp4(headertest.IPv4Hdr{}, 1, 4255, "mask 3 again"), udp4(headertest.IPv4Hdr{}, 1, 4400, "mask 3 miss"),
				udp4(headertest.IPv4Hdr{TOS: 0x13}, 1, 4003, "mask 4"), udp4(headertest.IPv4Hdr{TOS: 0x23}, 1, 4003, "mask 4 miss"),
				headertest.Eth(Bcast, MAC1, header.EtherTypeARP, headertest.ARP(1, MAC1, A1, [6]byte{}, A2)),
				headertest.Eth(Bcast, MAC1, header.EtherTypeARP, headertest.ARP(2, MAC1, A1, [6]byte{}, A2)),
			)
		},
		Check: all(checkNoErrors, func(o *Observation) error {
			if n := countUpcalls(o, "miss"); n != 4 {
				return fmt.Errorf("%d misses, want 4", n)
			}
			if err := checkFrames(o, "h2", 4, false); err != nil {
				return err
			}
			return checkFrames(o, "h3", 5, false)
		}),
	})
	add(&Scenario{
		Name: "overlapping-megaflows", Hosts: silentHosts(2),
		Flows: []FlowSpec{
			{"in_port(1),eth(),eth_type(0x0800),ipv4(src=10.1.0.0/255.255.0.0,frag=no)", "2"},
			{"in_port(1),eth(),eth_type(0x0800),ipv4(dst=10.2.0.0/255.255.0.0,frag=no)", "2"},
			{"in_port(1),eth(),eth_type(0x0800),ipv4(proto=17,frag=no),udp(dst=5000)", "2"},
		},
		// Which of the overlapping flows a packet hits is the installer's
		// business (the kernel tries masks in insertion order, userdp by
		// rank): the outputs must agree, the per-flow counts may not.
		Compare: CompareOptions{IgnoreFlowStats: true},
		Traffic: func(e *Env) error {
			return e.Inject("h1",
				udp4(headertest.IPv4Hdr{Src: headertest.IP4("10.1.0.1"), Dst: headertest.IP4("10.2.0.1")}, 1, 5000, "all three"),
				udp4(headertest.IPv4Hdr{Src: headertest.IP4("10.1.0.1"), Dst: headertest.IP4("10.3.0.1")}, 1, 5000, "two"),
				udp4(headertest.IPv4Hdr{Src: headertest.IP4("10.5.0.1"), Dst: headertest.IP4("10.2.0.1")}, 1, 5001, "one"),
				udp4(headertest.IPv4Hdr{Src: headertest.IP4("10.5.0.1"), Dst: headertest.IP4("10.3.0.1")}, 1, 5001, "none"),
			)
		},
		Check: all(checkNoErrors, func(o *Observation) error {
			var sum uint64
			for _, f := range o.Flows {
				sum += f.Packets
			}
			if sum != 3 {
				return fmt.Errorf("flows counted %d packets, want 3", sum)
			}
			return checkFrames(o, "h2", 3, false)
		}),
	})
	add(&Scenario{
		Name: "trunc", Hosts: silentHosts(3),
		Flows: []FlowSpec{
			{"in_port(1),eth(),eth_type(0x0800),ipv4(proto=17,frag=no),udp(dst=6001)", "trunc(60),2,3"},
			{"in_port(1),eth(),eth_type(0x0800),ipv4(proto=17,frag=no),udp(dst=6002)", "trunc(2000),2,trunc(14),3"},
		},
		Traffic: func(e *Env) error {
			return e.Inject("h1", udp4(headertest.IPv4Hdr{}, 1, 6001, strings.Repeat("x", 200)), udp4(headertest.IPv4Hdr{}, 1, 6002, strings.Repeat("y", 100)))
		},
		Check: all(checkNoErrors, func(o *Observation) error {
			for _, r := range o.Received {
				if r.Host == "h2" && (len(r.Frames) != 2 || len(r.Frames[0].Data) != 60) {
					return fmt.Errorf("h2: want a 60-byte frame then a whole one, got %d frames", len(r.Frames))
				}
			}
			return checkFrames(o, "h3", 2, false)
		}),
	})
	add(&Scenario{
		// A burst at once: each meter passes its bucket's worth (5
		// packets; 8 frames of 1,000 bits in 8 kbit) and drops the
		// rest. The rates (1 packet/s, 1 kbit/s) refill one more
		// frame's worth only after a second.
		Name: "meters-drop-band", Hosts: silentHosts(2),
		Meters: []odp.MeterInfo{
			{ID: 1, Bands: []odp.MeterBand{{Type: odp.MeterBandDrop, Rate: 1, Burst: 5}}},
			{ID: 2, KBPS: true, Bands: []odp.MeterBand{{Type: odp.MeterBandDrop, Rate: 1, Burst: 8}}},
		},
		Flows: []FlowSpec{
			{"in_port(1),eth(),eth_type(0x0800),ipv4(proto=17,frag=no),udp(dst=7001)", "meter(1),2"},
			{"in_port(1),eth(),eth_type(0x0800),ipv4(proto=17,frag=no),udp(dst=7002)", "meter(2),2"},
			{"in_port(1),eth(),eth_type(0x0800),ipv4(proto=17,frag=no),udp(dst=7003)", "meter(3),2"},
		},
		Traffic: func(e *Env) error {
			var frames [][]byte
			for i := 0; i < 20; i++ {
				p := fmt.Sprintf("%03d%s", i, strings.Repeat("m", 80)) // 125-byte frames
				frames = append(frames, udp4(headertest.IPv4Hdr{}, 1, 7001, p), udp4(headertest.IPv4Hdr{}, 1, 7002, p))
			}
			frames = append(frames, udp4(headertest.IPv4Hdr{}, 1, 7003, "no such meter"))
			return e.Inject("h1", frames...)
		},
		Check: all(checkNoErrors, func(o *Observation) error {
			if len(o.Meters) != 2 || o.Meters[0].Packets != 20 || o.Meters[1].Packets != 20 {
				return fmt.Errorf("meters saw %+v, want 20 packets each", o.Meters)
			}
			if p := o.Meters[0].Bands[0][0]; p != 15 {
				return fmt.Errorf("meter 1 dropped %d packets, want 15", p)
			}
			if p := o.Meters[1].Bands[0][0]; p != 12 {
				return fmt.Errorf("meter 2 dropped %d packets, want 12", p)
			}
			return checkFrames(o, "h2", 5+8+1, false)
		}),
	})
	add(&Scenario{
		// hash(l4) then recirc splits 64 flows between h2 and h3 on
		// dp_hash's low bit. The values differ between the datapaths
		// (the kernel's skb hash has a per-boot seed; userdp's its own
		// hash), so the comparison takes h2 and h3 together and the
		// check that each datapath splits: each host gets some.
		Name: "hash-recirc-split", Hosts: silentHosts(3),
		Flows: []FlowSpec{
			{"recirc_id(0),in_port(1),eth(),eth_type(0x0800),ipv4(proto=17,frag=no),udp()", "hash(l4(0)),recirc(0x1)"},
			{"recirc_id(0x1),dp_hash(0/0x1),in_port(1),eth(),eth_type(0x0800),ipv4(proto=17,frag=no),udp()", "2"},
			{"recirc_id(0x1),dp_hash(0x1/0x1),in_port(1),eth(),eth_type(0x0800),ipv4(proto=17,frag=no),udp()", "3"},
		},
		Traffic: func(e *Env) error {
			var frames [][]byte
			for i := 0; i < 64; i++ {
				frames = append(frames, udp4(headertest.IPv4Hdr{}, uint16(10000+i), 9, "split"))
			}
			return e.Inject("h1", frames...)
		},
		Compare: CompareOptions{MergeHosts: []string{"h2", "h3"}, IgnoreFlowStats: true},
		Check: all(checkNoErrors, func(o *Observation) error {
			n := map[string]int{}
			for _, r := range o.Received {
				n[r.Host] = len(r.Frames)
			}
			// A fair split of 64 is outside [8, 56] with a probability
			// of about 1e-11.
			if n["h2"]+n["h3"] != 64 || n["h2"] < 8 || n["h3"] < 8 {
				return fmt.Errorf("h2 got %d and h3 %d of 64 frames, want all, split between both", n["h2"], n["h3"])
			}
			return nil
		}),
	})
	add(&Scenario{
		Name: "ipv4-options-fragments-malformed", Hosts: silentHosts(3),
		Flows: []FlowSpec{
			{"in_port(1),eth(),eth_type(0x0800),ipv4(frag=no)", "2"},
			{"in_port(1),eth(),eth_type(0x0800),ipv4(frag=first)", "3"},
			{"in_port(1),eth(),eth_type(0x0800),ipv4(frag=later)", "2,3"},
		},
		Traffic: func(e *Env) error { return e.Inject("h1", MalformedFrames()...) },
		Check: all(checkNoErrors, func(o *Observation) error {
			if n := countUpcalls(o, "miss"); n < 5 {
				return fmt.Errorf("%d misses, want at least 5", n)
			}
			return checkFrames(o, "h3", 2, true)
		}),
	})

	add(&Scenario{
		Name: "llc-snap-and-runt-frames", Hosts: silentHosts(3),
		Flows: []FlowSpec{
			{"in_port(1),eth(),eth_type(0x0800),ipv4(proto=17,frag=no),udp(dst=8001)", "dec_ttl(le_1(drop)),set(ipv4(tos=0x48/0xfc)),2"},
			{"in_port(1),eth(),eth_type(0x0806),arp()", "push_vlan(vid=7,pcp=1),3"},
		},
		Traffic: func(e *Env) error {
			ip := headertest.IPv4(headertest.IPv4Hdr{Src: A1, Dst: A2, Proto: header.IPProtoUDP, TTL: 64}, headertest.UDP(1, 8001, []byte("snap")))
			snap := append([]byte{0xaa, 0xaa, 0x03, 0, 0, 0, 0x08, 0x00}, ip...)
			return e.Inject("h1",
				// IPv4 in 802.2 LLC/SNAP: the kernel sees eth_type 0x0800.
				headertest.Eth(Nobody, MAC1, uint16(len(snap)), snap),
				// The same in Ethernet II, for reference.
				headertest.Eth(Nobody, MAC1, header.EtherTypeIPv4, ip),
				// ARP ethertype with no ARP header, and a cut one.
				headertest.Eth(Bcast, MAC1, header.EtherTypeARP, nil),
				headertest.Eth(Bcast, MAC1, header.EtherTypeARP, []byte{0, 1, 8, 0, 6}),
			)
		},
		Check: all(checkNoErrors, func(o *Observation) error {
			if err := checkFrames(o, "h2", 2, false); err != nil {
				return err
			}
			return checkFrames(o, "h3", 2, false)
		}),
	})

	// Policy rules through the handler, raw frames.
	add(&Scenario{
		Name: "policy-rules-masked-sets", Hosts: silentHosts(3), Handler: true,
		Rules: strings.Join([]string{
			"priority=300,udp,tp_dst=7000,actions=mod_nw_tos:32,dec_ttl,output:2",
			"priority=200,udp,nw_src=10.0.0.0/8,tp_dst=7001,actions=mod_nw_src:10.66.0.1,mod_nw_dst:10.77.0.1,mod_tp_dst:9999,output:3",
			"priority=150,udp,tp_dst=7002,actions=controller(userdata=0a0b0c0d0e0f1011),output:2",
			"priority=100,ip,nw_ttl=1,actions=drop",
			"priority=0,actions=normal",
		}, "\n"),
		Traffic: func(e *Env) error {
			return e.InjectPaced("h1", 200*time.Millisecond,
				udp4(headertest.IPv4Hdr{TOS: 0x01}, 1, 7000, "tos and ttl"), udp4(headertest.IPv4Hdr{TOS: 0x01}, 2, 7000, "same megaflow"),
				udp4(headertest.IPv4Hdr{}, 1, 7001, "nat-ish"), udp4(headertest.IPv4Hdr{Src: headertest.IP4("11.0.0.1")}, 1, 7001, "not 10/8: normal"),
				udp4(headertest.IPv4Hdr{}, 1, 7002, "controller"), udp4(headertest.IPv4Hdr{TTL: 1}, 1, 7003, "ttl 1: drop"),
				headertest.Eth(Bcast, MAC1, header.EtherTypeARP, headertest.ARP(1, MAC1, A1, [6]byte{}, A2)),
			)
		},
		Check: all(checkNoErrors, func(o *Observation) error {
			if n := countUpcalls(o, "action"); n != 1 {
				return fmt.Errorf("%d action upcalls, want 1", n)
			}
			return checkFrames(o, "h2", 4, true)
		}),
	})
	ctScenarios(add)
	ct2Scenarios(add)
	l2Scenarios(add)
	fragScenarios(add)
	return ss
}

// MalformedFrames are frames with IPv4 options, fragments and malformed
// headers, injected raw.
func MalformedFrames() [][]byte {
	udp := headertest.UDP(1, 2, []byte("payload!"))
	ipWith := func(h headertest.IPv4Hdr, p []byte) []byte {
		return headertest.Eth(Nobody, MAC1, header.EtherTypeIPv4, headertest.IPv4(h, p))
	}
	base := headertest.IPv4Hdr{Src: A1, Dst: A2, Proto: header.IPProtoUDP, TTL: 64}
	withOpts := base
	withOpts.Options = []byte{7, 7, 4, 0, 0, 0, 0, 1} // record route, then NOP/EOL padding
	first := base
	first.MF = true
	later := base
	later.FragOff = 3
	lastLater := base
	lastLater.FragOff = 1
	lastLater.MF = false
	var out [][]byte
	out = append(out, ipWith(withOpts, udp), ipWith(first, udp), ipWith(later, udp), ipWith(lastLater, udp))
	// IHL below 5.
	f := ipWith(base, udp)
	f[14] = 0x44
	out = append(out, f)
	// Total length beyond the frame.
	f = ipWith(base, udp)
	binary.BigEndian.PutUint16(f[16:], 1000)
	out = append(out, f)
	// Total length shorter than the header.
	f = ipWith(base, udp)
	binary.BigEndian.PutUint16(f[16:], 10)
	out = append(out, f)
	// Truncated UDP header.
	out = append(out, ipWith(base, []byte{0, 1, 0}))
	// Truncated TCP header.
	tb := base
	tb.Proto = header.IPProtoTCP
	out = append(out, ipWith(tb, []byte{0, 1, 0, 2, 0, 0, 0, 0, 0, 0}))
	// IPv4 header cut short.
	out = append(out, ipWith(base, udp)[:14+12])
	// Version 6 in an IPv4 ethertype.
	f = ipWith(base, udp)
	f[14] = 0x65
	out = append(out, f)
	// IPv6: fragment, hop-by-hop + destination options, truncated.
	fragHdr := []byte{header.IPProtoUDP, 0, 0, 1, 0, 0, 0, 42}
	out = append(out, headertest.Eth(Nobody, MAC1, header.EtherTypeIPv6, headertest.IPv6(B1, B2, 44, 64, 0, 0x12345, append(fragHdr, udp...))))
	hbh := []byte{60, 0, 1, 4, 0, 0, 0, 0}
	dst := []byte{header.IPProtoUDP, 0, 1, 4, 0, 0, 0, 0}
	out = append(out, headertest.Eth(Nobody, MAC1, header.EtherTypeIPv6, headertest.IPv6(B1, B2, 0, 64, 0xb8, 0, append(append(hbh, dst...), udp...))))
	out = append(out, headertest.Eth(Nobody, MAC1, header.EtherTypeIPv6, headertest.IPv6(B1, B2, header.IPProtoUDP, 64, 0, 0, udp))[:14+30])
	// ARP cut short, 802.3 with LLC, a VLAN tag cut short.
	out = append(out, headertest.Eth(Bcast, MAC1, header.EtherTypeARP, headertest.ARP(1, MAC1, A1, [6]byte{}, A2))[:14+20])
	out = append(out, headertest.Eth(Nobody, MAC1, 40, []byte{0x42, 0x42, 0x03, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38}))
	out = append(out, append(append([]byte{}, Nobody[:]...), append(MAC1[:], 0x81, 0x00, 0x00)...))
	// ICMP error quoting a packet, and an ICMP too short for its header.
	out = append(out, ipWith(headertest.IPv4Hdr{Src: A1, Dst: A2, Proto: header.IPProtoICMP, TTL: 64}, headertest.ICMP(3, 3, 0, headertest.IPv4(base, udp)[:28])))
	out = append(out, ipWith(headertest.IPv4Hdr{Src: A1, Dst: A2, Proto: header.IPProtoICMP, TTL: 64}, []byte{8}))
	return out
}

// FuzzScenario is the differential fuzz: n packets from a Generator
// seeded with seed, injected from h1 in batches (waiting for quiet
// between batches, so no upcall queue overflows) through FuzzFlows.
func FuzzScenario(seed uint64, n, batch int) *Scenario {
	pkts := NewGenerator(seed).Packets(n)
	return &Scenario{
		Name: fmt.Sprintf("differential-fuzz-seed-%d", seed), Hosts: silentHosts(3), Flows: FuzzFlows,
		// Packets that miss go through the handler and Execute, and reach
		// their host later than packets of the same batch that hit a
		// flow, by an amount that depends on timing on either datapath:
		// compare what each host received, not the order.
		Compare: CompareOptions{UnorderedFrames: true},
		Traffic: func(e *Env) error {
			for i := 0; i < len(pkts); i += batch {
				if err := e.Inject("h1", pkts[i:min(i+batch, len(pkts))]...); err != nil {
					return err
				}
				if err := e.WaitQuiet(300 * time.Millisecond); err != nil {
					return err
				}
			}
			return nil
		},
		Check: all(checkNoErrors, func(o *Observation) error {
			if o.Hit == 0 || o.Missed == 0 || countUpcalls(o, "action") == 0 {
				return fmt.Errorf("the fuzz did not exercise hits, misses and userspace actions (hit %d, missed %d, %d action upcalls)",
					o.Hit, o.Missed, countUpcalls(o, "action"))
			}
			return nil
		}),
	}
}
