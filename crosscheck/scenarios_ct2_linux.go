package crosscheck

import (
	"bytes"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ovsdp/ovsdp/internal/header"
	"github.com/ovsdp/ovsdp/internal/header/headertest"
	"github.com/ovsdp/ovsdp/odp"
)

// More conntrack scenarios (issue 15): a stateful firewall (injected
// and between the hosts' own stacks), source NAT to a port range (the
// kernel's port is random: compared after checking it), destination
// NAT to a port range with a clash and a related ICMP error, zones that
// isolate one 5-tuple, zone limits, and marks and labels. Each uses
// zones and ports of its own (see ctScenarios) and observes the
// tracker's table, so that the tables are compared too.

// ctStep is one injected frame of a conntrack scenario: fixed, or made
// by make from what the hosts received so far (a reply to the port the
// datapath chose).
type ctStep struct {
	host  string
	frame []byte
	make  func(e *Env) ([]byte, error)
}

// playSteps injects each step's frame and waits until nothing happens
// for 200 ms, so that the order is the same on both datapaths.
func playSteps(e *Env, steps []ctStep) error {
	for i, s := range steps {
		f := s.frame
		if s.make != nil {
			var err error
			if f, err = s.make(e); err != nil {
				return fmt.Errorf("step %d: %w", i, err)
			}
		}
		if err := e.Inject(s.host, f); err != nil {
			return err
		}
		if err := e.WaitQuiet(200 * time.Millisecond); err != nil {
			return err
		}
	}
	return nil
}

// ip4 is an injected IPv4 frame from the host with MAC src, to nobody.
func ip4(src [6]byte, h headertest.IPv4Hdr, l4 []byte) []byte {
	if h.TTL == 0 {
		h.TTL = 64
	}
	return headertest.Eth(Nobody, src, header.EtherTypeIPv4, headertest.IPv4(h, l4))
}

// u4 is an injected UDP/IPv4 frame from MAC src.
func u4(src [6]byte, from, to [4]byte, sport, dport uint16, payload string) []byte {
	return ip4(src, headertest.IPv4Hdr{Src: from, Dst: to, Proto: header.IPProtoUDP}, headertest.UDP(sport, dport, []byte(payload)))
}

// t4 is an injected TCP/IPv4 frame from MAC src.
func t4(src [6]byte, from, to [4]byte, sport, dport uint16, seq, ack uint32, flags uint8, payload string) []byte {
	return ip4(src, headertest.IPv4Hdr{Src: from, Dst: to, Proto: header.IPProtoTCP}, headertest.TCP(sport, dport, seq, ack, flags, []byte(payload)))
}

// checkExact verifies that host received exactly want, byte for byte,
// in order.
func checkExact(o *Observation, host string, want ...[]byte) error {
	for _, r := range o.Received {
		if r.Host != host {
			continue
		}
		if len(r.Frames) != len(want) {
			return fmt.Errorf("%s received %d frames, want %d", host, len(r.Frames), len(want))
		}
		for i, f := range r.Frames {
			if !bytes.Equal(f.Data, want[i]) {
				return fmt.Errorf("%s's frame %d is\n  %x (%s), want\n  %x (%s)", host, i, f.Data, f.Summary, want[i], Describe(want[i]))
			}
		}
		return nil
	}
	return fmt.Errorf("no host %s", host)
}

// checkCT verifies the number of tracked connections and that each
// entry has the status bits want (all of them).
func checkCT(n int, want odp.CTStatus) func(*Observation) error {
	return func(o *Observation) error {
		if len(o.Conntrack) != n {
			return fmt.Errorf("%d tracked connections, want %d: %v", len(o.Conntrack), n, ctLines(o))
		}
		for _, e := range o.Conntrack {
			if e.Status&want != want {
				return fmt.Errorf("connection %s lacks status %#x", ctLine(e), want)
			}
		}
		return nil
	}
}

// checkKept verifies that the connection whose own port (source for
// source NAT, dst false; destination for destination NAT) is port, free
// and in the NAT range, kept it.
func checkKept(dst bool, port uint16) func(*Observation) error {
	return func(o *Observation) error {
		for _, e := range o.Conntrack {
			own, nat := e.Orig.SrcPort, e.Reply.DstPort
			if dst {
				own, nat = e.Orig.DstPort, e.Reply.SrcPort
			}
			if own == port && nat != port {
				return fmt.Errorf("the free port %d, in the range, was not kept: %s", port, ctLine(e))
			}
		}
		return nil
	}
}

func ctLines(o *Observation) []string {
	var l []string
	for _, e := range o.Conntrack {
		l = append(l, ctLine(e))
	}
	return l
}

func checkMisses(n int) func(*Observation) error {
	return func(o *Observation) error {
		if got := countUpcalls(o, "miss"); got != n {
			return fmt.Errorf("%d misses, want %d", got, n)
		}
		return nil
	}
}

// flowLines are the flows of text, one "KEY ACTIONS" a line, with $TCP,
// $UDP and $IP standing for the matches of IPv4 TCP, UDP and any IPv4
// that is not a fragment. A line that is not two fields is kept whole
// as the key, which the datapath then refuses (the scenario fails with
// the flow named).
func flowLines(text string) []FlowSpec {
	r := strings.NewReplacer("$TCP", "eth(),eth_type(0x0800),ipv4(proto=6,frag=no),tcp()",
		"$UDP", "eth(),eth_type(0x0800),ipv4(proto=17,frag=no),udp()", "$IP", "eth(),eth_type(0x0800),ipv4(frag=no)")
	var fs []FlowSpec
	for _, l := range strings.Split(strings.TrimSpace(text), "\n") {
		f := strings.Fields(r.Replace(l))
		if len(f) != 2 {
			fs = append(fs, FlowSpec{Key: l})
			continue
		}
		fs = append(fs, FlowSpec{f[0], f[1]})
	}
	return fs
}

func ct2Scenarios(add func(*Scenario)) {
	vip, vip2, natIP := headertest.IP4("10.0.0.99"), headertest.IP4("10.0.0.98"), headertest.IP4("10.0.0.100")
	const syn, ack, psh, fin = header.TCPFlagSyn, header.TCPFlagAck, header.TCPFlagPsh, header.TCPFlagFin

	// A stateful firewall in zone 11: h1 may open TCP to h2 and h2's
	// replies pass; h2 may open nothing. Every packet that passes the
	// firewall goes to userspace too, so its ct_state is compared.
	{
		c, s := func(seq, ackn uint32, fl uint8, p string) []byte {
			return t4(MAC1, A1, A2, 41000, 80, seq, ackn, fl, p)
		},
			func(seq, ackn uint32, fl uint8, p string) []byte {
				return t4(MAC2, A2, A1, 80, 41000, seq, ackn, fl, p)
			}
		allowed := []ctStep{
			{host: "h1", frame: c(100, 0, syn, "")},
			{host: "h2", frame: s(500, 101, syn|ack, "")},
			{host: "h1", frame: c(101, 501, ack, "")},
			{host: "h1", frame: c(101, 501, psh|ack, "GET")},
			{host: "h2", frame: s(501, 104, psh|ack, "OK")},
			{host: "h1", frame: c(104, 503, fin|ack, "")},
			{host: "h2", frame: s(503, 105, fin|ack, "")},
			{host: "h1", frame: c(105, 504, ack, "")},
		}
		refused := []ctStep{
			{host: "h2", frame: t4(MAC2, A2, A1, 42000, 22, 900, 0, syn, "")},
			{host: "h2", frame: t4(MAC2, A2, A1, 42000, 22, 900, 0, syn, "")},
			// Picked up mid-stream (nf_conntrack_tcp_loose): new, refused.
			{host: "h2", frame: t4(MAC2, A2, A1, 42001, 22, 900, 77, ack, "mid-stream")},
		}
		var toH1, toH2 [][]byte
		for _, st := range allowed {
			if st.host == "h1" {
				toH2 = append(toH2, st.frame)
			} else {
				toH1 = append(toH1, st.frame)
			}
		}
		add(&Scenario{
			Name: "ct-firewall-tcp", Hosts: silentHosts(2), Conntrack: true,
			Flows: flowLines(`
				recirc_id(0),in_port(1),$TCP ct(commit,zone=11),recirc(0x11)
				recirc_id(0),in_port(2),$TCP ct(zone=11),recirc(0x11)
				recirc_id(0x11),in_port(1),ct_state(+trk-inv),$TCP userspace(pid=$PID),2
				recirc_id(0x11),in_port(2),ct_state(+est+trk-inv),$TCP userspace(pid=$PID),1
				recirc_id(0x11),in_port(2),ct_state(+new+trk),$TCP userspace(pid=$PID)`),
			Traffic: func(e *Env) error { return playSteps(e, append(allowed, refused...)) },
			Check: all(checkNoErrors, checkMisses(0), func(o *Observation) error {
				if n := countUpcalls(o, "action"); n != len(allowed)+len(refused) {
					return fmt.Errorf("%d action upcalls, want %d", n, len(allowed)+len(refused))
				}
				if err := checkExact(o, "h2", toH2...); err != nil {
					return err
				}
				if err := checkExact(o, "h1", toH1...); err != nil {
					return err
				}
				// The allowed connection only, closed: TIME_WAIT.
				if err := checkCT(1, odp.CTStatusSeenReply|odp.CTStatusAssured)(o); err != nil {
					return err
				}
				if st := o.Conntrack[0].ProtoInfo.StateOrig; st != odp.CTTCPTimeWait {
					return fmt.Errorf("connection in TCP state %d, want TIME_WAIT (%d)", st, odp.CTTCPTimeWait)
				}
				return nil
			}),
		})
	}

	// The same firewall between the hosts' own stacks, for TCP, UDP and
	// ICMP: what h1 opens works, what h2 opens is refused.
	add(&Scenario{
		Name: "ct-firewall-stack", Stack: true, Compare: stackTCPCompare, Conntrack: true,
		Hosts: func() []Host {
			hs := hostsV4(2)
			hs[0].Neigh = [][2]string{{"10.0.0.2", "02:00:00:00:00:02"}}
			hs[1].Neigh = [][2]string{{"10.0.0.1", "02:00:00:00:00:01"}}
			return hs
		}(),
		Flows: flowLines(`
			recirc_id(0),in_port(1),$IP ct(commit,zone=12),recirc(0x12)
			recirc_id(0),in_port(2),$IP ct(zone=12),recirc(0x12)
			recirc_id(0x12),in_port(1),ct_state(+trk-inv),$IP 2
			recirc_id(0x12),in_port(2),ct_state(+est+trk-inv),$IP 1
			recirc_id(0x12),in_port(2),ct_state(+new+trk),$IP drop`),
		Traffic: func(e *Env) error {
			if err := e.TCPExchange("h1", "h2", "10.0.0.2", 41100, 8080, trafficTimeout); err != nil {
				return err
			}
			if err := e.UDPExchange("h1", "h2", "10.0.0.2", 41101, 5353, trafficTimeout); err != nil {
				return err
			}
			if err := e.Ping("h1", "10.0.0.2", trafficTimeout); err != nil {
				return err
			}
			if err := e.tcpRefused("h2", "10.0.0.1", 41102, 22, 400*time.Millisecond); err != nil {
				return err
			}
			return e.udpRefused("h2", "h1", "10.0.0.1", 41103, 5353, 400*time.Millisecond)
		},
		Check: all(checkNoErrors, checkMisses(0), func(o *Observation) error {
			if err := checkFrames(o, "h2", 4, true); err != nil {
				return err
			}
			for _, r := range o.Received {
				for _, f := range r.Frames {
					p := Parse(f.Data)
					if r.Host == "h1" && p.L4 >= 0 && p.Proto != header.IPProtoICMP && header.Ports(f.Data[p.L4:]).Source() >= 41102 {
						return fmt.Errorf("h1 received a refused packet: %s", f.Summary)
					}
				}
			}
			// TCP (closed), UDP and the ping, each seen replied.
			return checkCT(3, odp.CTStatusSeenReply)(o)
		}),
	})

	// Source NAT to a port range: the kernel picks a random port for a
	// source port outside it and keeps one inside it that is free. The
	// replies go to the port chosen (read back from what h2 received).
	{
		const lo, hi = 6000, 6009
		req := func(sport uint16, p string) []byte { return u4(MAC1, A1, A2, sport, 53, p) }
		reply := func(sport uint16, p string) ctStep {
			return ctStep{host: "h2", make: func(e *Env) ([]byte, error) {
				port, err := natPortOf(e, "h2", natIP, false, sport, lo, hi)
				if err != nil {
					return nil, err
				}
				return u4(MAC2, A2, natIP, 53, port, p), nil
			}}
		}
		// The connection from a port in the range comes first, so that no
		// random choice has taken its port.
		steps := []ctStep{
			{host: "h1", frame: req(6005, "in range")}, reply(6005, "in range back"),
			{host: "h1", frame: req(43000, "one")}, reply(43000, "one back"),
			{host: "h1", frame: req(43001, "two")}, reply(43001, "two back"),
			{host: "h1", frame: req(43000, "one again")},
			{host: "h1", frame: req(43001, "two again")},
		}
		add(&Scenario{
			Name: "ct-snat-port-range-random", Hosts: silentHosts(2), Conntrack: true,
			Flows: flowLines(`
				recirc_id(0),in_port(1),$UDP ct(commit,zone=13,nat(src=10.0.0.100:6000-6009)),recirc(0x13)
				recirc_id(0),in_port(2),$UDP ct(zone=13,nat),recirc(0x13)
				recirc_id(0x13),in_port(1),$UDP userspace(pid=$PID),2
				recirc_id(0x13),in_port(2),$UDP userspace(pid=$PID),1`),
			Traffic:   func(e *Env) error { return playSteps(e, steps) },
			Normalize: natPortNormalizer(natIP, false, lo, hi),
			Check: all(checkNoErrors, checkMisses(0), checkCT(3, odp.CTStatusSeenReply|odp.CTStatusSrcNAT|odp.CTStatusSrcNATDone),
				checkKept(false, 6005), func(o *Observation) error {
					// The replies come back to h1's ports, un-NATed.
					return checkExact(o, "h1", u4(MAC2, A2, A1, 53, 6005, "in range back"), u4(MAC2, A2, A1, 53, 43000, "one back"),
						u4(MAC2, A2, A1, 53, 43001, "two back"))
				}),
		})
	}

	// Destination NAT to a port range, which the kernel searches from a
	// random offset (so the ports are checked, then named, as for source
	// NAT): a second connection from the same source port to another
	// virtual IP must get another port than the first, and one whose
	// port is in the range and free keeps it. The server answers from
	// the ports it was given. Then an ICMP error from the server about
	// the first connection is related, and its outer source and embedded
	// destination are NAT-reversed.
	{
		const lo, hi = 8000, 8002
		reversed := headertest.IPv4(headertest.IPv4Hdr{Src: A1, Dst: vip, Proto: header.IPProtoUDP, TTL: 64}, headertest.UDP(4400, 53, []byte("first")))[:28]
		icmpErr := func(from [4]byte, quoted []byte) []byte {
			return ip4(MAC2, headertest.IPv4Hdr{Src: from, Dst: A1, Proto: header.IPProtoICMP}, headertest.ICMP(3, 3, 0, quoted))
		}
		// reply answers the last frame h2 received, from the port the
		// datapath gave it.
		reply := func(dport, own uint16, p string) ctStep {
			return ctStep{host: "h2", make: func(e *Env) ([]byte, error) {
				port, err := natPortOf(e, "h2", A2, true, own, lo, hi)
				return u4(MAC2, A2, A1, port, dport, p), err
			}}
		}
		// The error quotes the first frame h2 received, as a host would.
		errStep := ctStep{host: "h2", make: func(e *Env) ([]byte, error) {
			fs, err := e.Received("h2")
			if err != nil || len(fs) == 0 {
				return nil, fmt.Errorf("nothing received to answer with an error (%v)", err)
			}
			return icmpErr(A2, fs[0][14:14+28]), nil
		}}
		add(&Scenario{
			Name: "ct-dnat-port-range-and-related-error", Hosts: silentHosts(2), Conntrack: true,
			Flows: flowLines(`
				recirc_id(0),in_port(1),$UDP ct(commit,zone=14,nat(dst=10.0.0.2:8000-8002)),recirc(0x14)
				recirc_id(0),in_port(2),$UDP ct(zone=14,nat),recirc(0x14)
				recirc_id(0),in_port(2),eth(),eth_type(0x0800),ipv4(proto=1,frag=no),icmp() ct(zone=14,nat),recirc(0x14)
				recirc_id(0x14),in_port(1),$IP userspace(pid=$PID),2
				recirc_id(0x14),in_port(2),$IP userspace(pid=$PID),1`),
			Traffic: func(e *Env) error {
				return playSteps(e, []ctStep{
					{host: "h1", frame: u4(MAC1, A1, vip, 4400, 53, "first")}, reply(4400, 53, "first back"),
					{host: "h1", frame: u4(MAC1, A1, vip2, 4400, 53, "clash")}, reply(4400, 53, "clash back"),
					{host: "h1", frame: u4(MAC1, A1, vip, 4401, 8002, "in range")}, reply(4401, 8002, "in range back"),
					errStep,
				})
			},
			Normalize: natPortNormalizer(A2, true, lo, hi),
			Check: all(checkNoErrors, checkMisses(0), func(o *Observation) error {
				if err := checkFrames(o, "h2", 3, false); err != nil {
					return err
				}
				// What h1 receives is un-NATed: the same whatever the ports.
				return checkExact(o, "h1", u4(MAC2, vip, A1, 53, 4400, "first back"), u4(MAC2, vip2, A1, 53, 4400, "clash back"),
					u4(MAC2, vip, A1, 8002, 4401, "in range back"), icmpErr(vip, reversed))
			}, checkCT(3, odp.CTStatusSeenReply|odp.CTStatusDstNAT|odp.CTStatusDstNATDone), checkKept(true, 8002)),
		})
	}

	// One 5-tuple from h1 and from h3, committed in zones 21 and 22:
	// each zone has its own connection, and h2's replies (their zone
	// chosen by the TOS) find only their zone's; zone 23 has none.
	{
		fwd := func(mac [6]byte, p string) []byte { return u4(mac, A1, A2, 4500, 53, p) }
		rep := func(tos uint8, p string) []byte {
			return ip4(MAC2, headertest.IPv4Hdr{Src: A2, Dst: A1, Proto: header.IPProtoUDP, TOS: tos}, headertest.UDP(53, 4500, []byte(p)))
		}
		steps := []ctStep{
			{host: "h1", frame: fwd(MAC1, "zone 21")},
			{host: "h3", frame: fwd(MAC3, "zone 22")}, // new: zone 21's connection is not seen
			{host: "h2", frame: rep(0, "reply in 21")},
			{host: "h1", frame: fwd(MAC1, "21 again")},   // established
			{host: "h3", frame: fwd(MAC3, "22 again")},   // still new: no reply in zone 22
			{host: "h2", frame: rep(8, "reply in 23")},   // new in zone 23 (not committed)
			{host: "h2", frame: rep(4, "reply in 22")},   // reply in zone 22
			{host: "h3", frame: fwd(MAC3, "22 at last")}, // established
		}
		add(&Scenario{
			Name: "ct-zones-isolate-one-tuple", Hosts: silentHosts(3), Conntrack: true,
			Flows: flowLines(`
				recirc_id(0),in_port(1),$UDP ct(commit,zone=21),recirc(0x15)
				recirc_id(0),in_port(3),$UDP ct(commit,zone=22),recirc(0x15)
				recirc_id(0),in_port(2),eth(),eth_type(0x0800),ipv4(proto=17,tos=0/0xfc,frag=no),udp() ct(zone=21),recirc(0x15)
				recirc_id(0),in_port(2),eth(),eth_type(0x0800),ipv4(proto=17,tos=0x4/0xfc,frag=no),udp() ct(zone=22),recirc(0x15)
				recirc_id(0),in_port(2),eth(),eth_type(0x0800),ipv4(proto=17,tos=0x8/0xfc,frag=no),udp() ct(zone=23),recirc(0x15)`),
			Traffic: func(e *Env) error { return playSteps(e, steps) },
			Check: all(checkNoErrors, checkMisses(len(steps)), checkCT(2, odp.CTStatusSeenReply), func(o *Observation) error {
				if z := []uint16{o.Conntrack[0].Zone, o.Conntrack[1].Zone}; !slices.Contains(z, 21) || !slices.Contains(z, 22) {
					return fmt.Errorf("connections in zones %v, want 21 and 22", z)
				}
				return nil
			}),
		})
	}

	// Zone limits on both datapaths: zone 31 takes 2 connections, zone 32
	// one, zone 33 has no limit. A commit past the limit drops the
	// packet (no miss); a packet of a connection already committed
	// passes.
	{
		q := func(sport, dport uint16, p string) ctStep {
			return ctStep{host: "h1", frame: u4(MAC1, A1, A2, sport, dport, p)}
		}
		steps := []ctStep{
			q(4600, 53, "31 one"), q(4601, 53, "31 two"), q(4602, 53, "31 three: over"), q(4600, 53, "31 one again"),
			q(4610, 54, "32 one"), q(4611, 54, "32 two: over"),
			q(4620, 55, "33 one"), q(4621, 55, "33 two"), q(4622, 55, "33 three"),
		}
		add(&Scenario{
			Name: "ct-zone-limit", Hosts: silentHosts(2), Conntrack: true,
			ZoneLimits: []odp.CTZoneLimit{{Zone: 31, Limit: 2}, {Zone: 32, Limit: 1}, {Zone: 33}},
			Flows: flowLines(`
				recirc_id(0),in_port(1),eth(),eth_type(0x0800),ipv4(proto=17,frag=no),udp(dst=53) ct(commit,zone=31),recirc(0x16)
				recirc_id(0),in_port(1),eth(),eth_type(0x0800),ipv4(proto=17,frag=no),udp(dst=54) ct(commit,zone=32),recirc(0x16)
				recirc_id(0),in_port(1),eth(),eth_type(0x0800),ipv4(proto=17,frag=no),udp(dst=55) ct(commit,zone=33),recirc(0x16)`),
			Traffic: func(e *Env) error { return playSteps(e, steps) },
			Check: all(checkNoErrors, checkMisses(len(steps)-2), checkCT(6, 0), func(o *Observation) error {
				// Zone 33 is unlimited, so its connections are not counted.
				want := []odp.CTZoneLimit{{Zone: 31, Limit: 2, Count: 2}, {Zone: 32, Limit: 1, Count: 1}, {Zone: 33}}
				if !slices.Equal(o.ZoneLimits, want) {
					return fmt.Errorf("zone limits %+v, want %+v", o.ZoneLimits, want)
				}
				return nil
			}),
		})
	}

	// IPv6: UDP through source NAT to another address (ct_tuple6, the
	// port kept), ICMPv6 echo as a connection, an ICMPv6 error about the
	// NATed UDP flow (related, its embedded packet and outer destination
	// NAT-reversed) and an echo reply that answers nothing (invalid).
	{
		natB := headertest.IP6("fd00::100")
		v6 := func(mac [6]byte, src, dst [16]byte, proto uint8, l4 []byte) []byte {
			return headertest.Eth(Nobody, mac, header.EtherTypeIPv6, headertest.IPv6(src, dst, proto, 64, 0, 0, l4))
		}
		natted := headertest.IPv6(natB, B2, header.IPProtoUDP, 64, 0, 0, headertest.UDP(4800, 53, []byte("v6 snat")))
		add(&Scenario{
			Name: "ct-ipv6-udp-icmpv6-snat", Hosts: silentHosts(2), Conntrack: true,
			Flows: flowLines(`
				recirc_id(0),in_port(1),eth(),eth_type(0x86dd),ipv6(proto=17,frag=no),udp() ct(commit,zone=51,nat(src=fd00::100)),recirc(0x18)
				recirc_id(0),in_port(2),eth(),eth_type(0x86dd),ipv6(proto=17,frag=no),udp() ct(zone=51,nat),recirc(0x18)
				recirc_id(0),in_port(1),eth(),eth_type(0x86dd),ipv6(proto=58,frag=no),icmpv6() ct(commit,zone=51),recirc(0x18)
				recirc_id(0),in_port(2),eth(),eth_type(0x86dd),ipv6(proto=58,frag=no),icmpv6() ct(zone=51,nat),recirc(0x18)`),
			Traffic: func(e *Env) error {
				return playSteps(e, []ctStep{
					{host: "h1", frame: v6(MAC1, B1, B2, header.IPProtoUDP, headertest.UDP(4800, 53, []byte("v6 snat")))},
					{host: "h2", frame: v6(MAC2, B2, natB, header.IPProtoUDP, headertest.UDP(53, 4800, []byte("v6 back")))},
					{host: "h1", frame: v6(MAC1, B1, B2, header.IPProtoICMPv6, headertest.ICMP(128, 0, 0x00770001, []byte("echo6")))},
					{host: "h2", frame: v6(MAC2, B2, B1, header.IPProtoICMPv6, headertest.ICMP(129, 0, 0x00770001, []byte("echo6")))},
					{host: "h2", frame: v6(MAC2, B2, natB, header.IPProtoICMPv6, headertest.ICMP(1, 4, 0, natted))},
					{host: "h2", frame: v6(MAC2, B2, B1, header.IPProtoICMPv6, headertest.ICMP(129, 0, 0x00780001, []byte("stray")))},
				})
			},
			Check: all(checkNoErrors, checkMisses(6), checkCT(2, odp.CTStatusSeenReply), func(o *Observation) error {
				for _, u := range o.Upcalls {
					if strings.Contains(u.Key, "icmpv6(type=1,") && (!strings.Contains(u.Key, "rel") || !strings.Contains(u.Key, "dst=fd00::1,")) {
						return fmt.Errorf("the ICMPv6 error is not related and un-NATed: %s", u.Key)
					}
				}
				return nil
			}),
		})
	}

	// Marks and labels, masked, set at the first commit and changed by
	// later ones in either direction; the keys after recirculation
	// carry them, and so does the table.
	add(&Scenario{
		Name: "ct-mark-and-labels", Hosts: silentHosts(2), Conntrack: true,
		Flows: flowLines(`
			recirc_id(0),in_port(1),eth(),eth_type(0x0800),ipv4(proto=17,frag=no),udp(dst=53) ct(commit,zone=41,mark=0x11/0xff,label=0x1234/0xffff),recirc(0x17)
			recirc_id(0),in_port(2),$UDP ct(commit,zone=41,mark=0x2200/0xff00,label=0x560000/0xff0000),recirc(0x17)
			recirc_id(0),in_port(1),eth(),eth_type(0x0800),ipv4(proto=17,frag=no),udp(dst=54) ct(commit,zone=41,label=0x80000000000000000000000000000001/0xf0000000000000000000000000000001),recirc(0x17)
			recirc_id(0),in_port(1),eth(),eth_type(0x0800),ipv4(proto=17,frag=no),udp(dst=55) ct(zone=41),recirc(0x17)`),
		Traffic: func(e *Env) error {
			// From h1 (to h2 when reply): source port, destination port.
			q := func(reply bool, sport, dport uint16, p string) ctStep {
				if reply {
					return ctStep{host: "h2", frame: u4(MAC2, A2, A1, sport, dport, p)}
				}
				return ctStep{host: "h1", frame: u4(MAC1, A1, A2, sport, dport, p)}
			}
			return playSteps(e, []ctStep{q(false, 4700, 53, "mark and label"), q(true, 53, 4700, "more of both"),
				q(false, 4700, 53, "both seen"), q(false, 4701, 54, "high label bits"), q(false, 4701, 55, "not committed: no mark")})
		},
		Check: all(checkNoErrors, checkMisses(5), checkCT(2, 0), func(o *Observation) error {
			for _, e := range o.Conntrack {
				if e.Orig.SrcPort == 4700 && (e.Mark != 0x2211 || !bytes.Equal(e.Labels[12:], []byte{0, 0x56, 0x12, 0x34})) {
					return fmt.Errorf("connection %s: want mark 0x2211 and labels 0x561234", ctLine(e))
				}
			}
			return nil
		}),
	})
}

// natPortOf returns the port of addr in the last frame host received
// with addr as its source (dst false: source NAT to addr) or destination
// (dst true: destination NAT to addr), after checking that it is within
// lo-hi or is the connection's own port own.
func natPortOf(e *Env, host string, addr [4]byte, dst bool, own, lo, hi uint16) (uint16, error) {
	fs, err := e.Received(host)
	if err != nil {
		return 0, err
	}
	for i := len(fs) - 1; i >= 0; i-- {
		p := Parse(fs[i])
		if p.L4 < 0 || p.IPv6 {
			continue
		}
		h, ports := header.IPv4(fs[i][p.L3:]), header.Ports(fs[i][p.L4:])
		port := ports.Source()
		switch {
		case !dst && h.SourceAddress() == addr:
		case dst && h.DestinationAddress() == addr:
			port = ports.Destination()
		default:
			continue
		}
		if (port < lo || port > hi) && port != own {
			return 0, fmt.Errorf("%s received port %d of %v, outside the NAT range %d-%d (the connection's own port %d)", host, port, addr, lo, hi, own)
		}
		return port, nil
	}
	return 0, fmt.Errorf("%s has received nothing with %v", host, addr)
}

// natPortNormalizer checks the ports a datapath chose for NAT to
// addr:lo-hi (dst false: source NAT, whose connections' reply tuples go
// to addr; dst true: destination NAT, whose reply tuples come from addr)
// and replaces them by names, so that two datapaths that chose validly
// but differently compare equal: every connection NATed to addr has a
// port in the range, no two with the same port at their other end share
// one, and every frame and upcall from or to addr uses its connection's
// port (in both directions). A connection that kept its own
// port (free and in the range, which the kernel keeps) keeps it; the
// others get lo, lo+1... in the order of their original tuples, skipping
// kept ones. Checksums are updated for the rewritten ports.
func natPortNormalizer(addr [4]byte, dst bool, lo, hi uint16) func(*Observation) error {
	return func(o *Observation) error {
		type conn struct {
			orig           string
			own, nat, peer uint16 // the port before NAT, after, and the other end's
		}
		var conns []conn
		kept := map[uint16]bool{}
		for _, e := range o.Conntrack {
			c := conn{fmt.Sprint(e.Orig), e.Orig.SrcPort, e.Reply.DstPort, e.Orig.DstPort}
			if dst {
				c.own, c.nat, c.peer = e.Orig.DstPort, e.Reply.SrcPort, e.Orig.SrcPort
			}
			if !dst && e.Reply.Dst.As4() != addr || dst && e.Reply.Src.As4() != addr {
				continue
			}
			if (c.nat < lo || c.nat > hi) && c.nat != c.own {
				return fmt.Errorf("connection %s: NAT port %d outside %d-%d", ctLine(e), c.nat, lo, hi)
			}
			conns = append(conns, c)
			if c.nat == c.own {
				kept[c.nat] = true
			}
		}
		slices.SortFunc(conns, func(a, b conn) int { return strings.Compare(a.orig, b.orig) })
		// names maps a port of addr and the other end's to the name.
		names := map[[2]uint16]uint16{}
		next := lo
		for _, c := range conns {
			k := [2]uint16{c.nat, c.peer}
			if _, dup := names[k]; dup {
				return fmt.Errorf("NAT port %d given to two connections with port %d at their other end", c.nat, c.peer)
			}
			if c.nat == c.own {
				names[k] = c.nat
				continue
			}
			for kept[next] {
				next++
			}
			names[k] = next
			next++
		}
		var bad error
		rewrite := func(b []byte) bool {
			p := Parse(b)
			if p.L4 < 0 || p.IPv6 || p.Fragment || (p.Proto != header.IPProtoUDP && p.Proto != header.IPProtoTCP) || p.L4+header.UDPMinimumSize > len(b) {
				return false
			}
			h := header.IPv4(b[p.L3:])
			ports := header.Ports(b[p.L4:])
			port, peer, set := ports.Source(), ports.Destination(), ports.SetSource
			switch {
			case h.SourceAddress() == addr:
			case h.DestinationAddress() == addr:
				port, peer, set = ports.Destination(), ports.Source(), ports.SetDestination
			default:
				return false
			}
			name, ok := names[[2]uint16{port, peer}]
			if !ok {
				if bad == nil {
					bad = fmt.Errorf("a packet %s uses port %d of %v, which no connection has", Describe(b), port, addr)
				}
				return false
			}
			set(name)
			off := p.L4 + 6
			if p.Proto == header.IPProtoTCP {
				off = p.L4 + 16
			}
			if off+2 <= len(b) {
				old := uint16(b[off])<<8 | uint16(b[off+1])
				sum := header.ChecksumUpdate2(old, port, name)
				if p.Proto == header.IPProtoUDP {
					sum = header.UDPChecksumUpdate(old, sum)
				}
				b[off], b[off+1] = byte(sum>>8), byte(sum)
			}
			return true
		}
		for _, r := range o.Received {
			for i := range r.Frames {
				// The checksums were updated: the summary is again that
				// of valid bytes.
				if f := &r.Frames[i]; rewrite(f.Data) {
					f.Summary = Describe(f.Data)
				}
			}
		}
		for i := range o.Upcalls {
			rewrite(o.Upcalls[i].Packet)
			o.Upcalls[i].Key = renameKeyPort(o.Upcalls[i].Key, addr, names)
			o.Upcalls[i].Extracted = renameKeyPort(o.Upcalls[i].Extracted, addr, names)
		}
		for i := range o.Conntrack {
			e := &o.Conntrack[i]
			if !dst && e.Reply.Dst.As4() == addr {
				e.Reply.DstPort = names[[2]uint16{e.Reply.DstPort, e.Reply.SrcPort}]
			}
			if dst && e.Reply.Src.As4() == addr {
				e.Reply.SrcPort = names[[2]uint16{e.Reply.SrcPort, e.Reply.DstPort}]
			}
		}
		return bad
	}
}

// l4KeyRE finds a key's transport ports.
var l4KeyRE = regexp.MustCompile(`(udp|tcp)\(src=(\d+),dst=(\d+)\)`)

// renameKeyPort renames, in a formatted key whose IPv4 source or
// destination is addr, the transport port on that side (names: see
// natPortNormalizer).
func renameKeyPort(key string, addr [4]byte, names map[[2]uint16]uint16) string {
	a := fmt.Sprintf("%d.%d.%d.%d", addr[0], addr[1], addr[2], addr[3])
	src, dst := strings.Contains(key, "ipv4(src="+a+","), strings.Contains(key, ",dst="+a+",proto=")
	if !src && !dst {
		return key
	}
	return l4KeyRE.ReplaceAllStringFunc(key, func(m string) string {
		g := l4KeyRE.FindStringSubmatch(m)
		sp, _ := strconv.Atoi(g[2])
		dp, _ := strconv.Atoi(g[3])
		if n, ok := names[[2]uint16{uint16(sp), uint16(dp)}]; ok && src {
			sp = int(n)
		} else if n, ok := names[[2]uint16{uint16(dp), uint16(sp)}]; ok && dst {
			dp = int(n)
		}
		return fmt.Sprintf("%s(src=%d,dst=%d)", g[1], sp, dp)
	})
}

// tcpRefused checks that a TCP connection from client (port sport) to
// dst:dport does not open within timeout.
func (e *Env) tcpRefused(client, dst string, sport, dport uint16, timeout time.Duration) error {
	dsa, _, csa, fam, err := exchangeAddrs(dst, sport, dport)
	if err == nil {
		var fd int
		if fd, err = e.boundSocket(client, fam, unix.SOCK_STREAM, csa, timeout, "tcp client"); err == nil {
			defer unix.Close(fd)
			if connect(fd, dsa, time.Now().Add(timeout)) == nil {
				err = fmt.Errorf("tcp from %s to %s:%d: connected, want refused by the firewall", client, dst, dport)
			}
		}
	}
	return err
}

// udpRefused checks that a datagram from client (port sport) to
// dst:dport, where server listens, does not arrive within timeout.
func (e *Env) udpRefused(client, server, dst string, sport, dport uint16, timeout time.Duration) error {
	cfd, sfd, dsa, deadline, err := e.udpPair(client, server, dst, sport, dport, timeout)
	if err != nil {
		return err
	}
	defer func() { unix.Close(sfd); unix.Close(cfd) }()
	if err := sendto(cfd, []byte("refuse me"), dsa, deadline); err != nil {
		return fmt.Errorf("udp client on %s: %w", client, err)
	}
	if n, _, err := recvfrom(sfd, make([]byte, 64), deadline); err == nil {
		return fmt.Errorf("udp from %s to %s:%d: %d bytes arrived, want refused by the firewall", client, dst, dport, n)
	}
	return nil
}
