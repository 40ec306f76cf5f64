package crosscheck

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/ovsdp/ovsdp/internal/header"
	"github.com/ovsdp/ovsdp/internal/header/headertest"
)

// nshFrame is an Ethernet frame from h1 carrying an MD type 1 NSH header
// (TTL 63, SPI 0x20, SI 9, context 1 to 4) with next protocol np and
// then inner.
func nshFrame(np byte, inner []byte) []byte {
	h := []byte{0x0f, 0xc6, 1, np, 0, 0, 0x20, 9}
	for i := uint32(1); i <= 4; i++ {
		h = binary.BigEndian.AppendUint32(h, i)
	}
	return headertest.Eth(Nobody, MAC1, header.EtherTypeNSH, append(h, inner...))
}

// L2 scenarios (issue 16): push_eth, pop_eth and add_mpls, and packets
// without an Ethernet header (L3 packets) in between. Each UDP
// destination port selects one flow; the frames are injected one at a
// time so that the misses come in the same order on both datapaths. The
// misses of recirculated L3 packets compare the kernel's key for an L3
// packet (eth_type, no eth) with userdp's and with flowkeys.Extract's.
func l2Scenarios(add func(*Scenario)) {
	const udp = "recirc_id(0),in_port(1),eth(),eth_type(0x0800),ipv4(proto=17,frag=no),udp(dst=%d)"
	const l3udp = "recirc_id(%#x),in_port(1),eth_type(0x0800),ipv4(proto=17,frag=no),udp()"
	const pushEth2 = "push_eth(src=02:00:00:00:00:aa,dst=02:00:00:00:00:02)"
	const pushEth3 = "push_eth(src=02:00:00:00:00:aa,dst=02:00:00:00:00:03)"
	const mpls = "label=100,tc=3,ttl=64,bos=1,eth_type=0x8847"
	flows := []FlowSpec{
		// Through an L3 packet and back, rewritten while L3.
		{fmt.Sprintf(udp, 7001), "pop_eth,set(ipv4(ttl=9)),dec_ttl(le_1(drop))," + pushEth2 + ",2"},
		// Recirculated without an Ethernet header: an L3 flow matches.
		{fmt.Sprintf(udp, 7002), "pop_eth,recirc(0x1)"},
		{fmt.Sprintf(l3udp, 1), pushEth3 + ",3"},
		// No flow for it: an L3 miss.
		{fmt.Sprintf(udp, 7003), "pop_eth,recirc(0x2)"},
		// An L3 packet out of an Ethernet port: dropped, then the
		// rest of the list.
		{fmt.Sprintf(udp, 7004), "pop_eth,2," + pushEth3 + ",3"},
		// add_mpls in front of the Ethernet header (Ethernet over
		// MPLS), then an Ethernet header.
		{fmt.Sprintf(udp, 7005), "add_mpls(" + mpls + ")," + pushEth2 + ",2"},
		// add_mpls then recirc: an L3 MPLS miss.
		{fmt.Sprintf(udp, 7006), "add_mpls(" + mpls + "),recirc(0x3)"},
		// add_mpls with the L3 tunnel flag: after the MAC header, as
		// push_mpls.
		{fmt.Sprintf(udp, 7007), "add_mpls(" + mpls + ",tun_flags=0x1),3"},
		// push_mpls on an L3 packet, then an Ethernet header.
		{fmt.Sprintf(udp, 7008), "pop_eth,push_mpls(" + mpls + ")," + pushEth3 + ",3"},
		// add_mpls and pop_mpls(0x6558): the frame again.
		{fmt.Sprintf(udp, 7009), "add_mpls(" + mpls + "),pop_mpls(eth_type=0x6558),2"},
	}
	add(&Scenario{
		Name: "push-pop-eth-add-mpls", Hosts: silentHosts(3), Flows: flows,
		Traffic: func(e *Env) error {
			var frames [][]byte
			for port := uint16(7001); port <= 7009; port++ {
				frames = append(frames, udp4(headertest.IPv4Hdr{}, 5000, port, "l2 actions"))
			}
			return e.InjectPaced("h1", 200*time.Millisecond, frames...)
		},
		Check: all(checkNoErrors, func(o *Observation) error {
			if n := countUpcalls(o, "miss"); n != 2 {
				return fmt.Errorf("%d misses, want 2 (an L3 IPv4 and an L3 MPLS packet)", n)
			}
			for _, u := range o.Upcalls {
				if u.Kind == "miss" && (u.Packet[0] == 0x02 || u.Key == "") {
					return fmt.Errorf("miss of a frame % x: want L3 packets only", u.Packet[:14])
				}
			}
			if err := checkFrames(o, "h2", 3, false); err != nil {
				return err
			}
			return checkFrames(o, "h3", 4, false)
		}),
	})

	// NSH: push_nsh on a frame (next protocol Ethernet) and on an L3
	// packet (IPv4; the action's np=7 is overwritten by both), pop_nsh
	// of injected NSH frames over IPv4 and over Ethernet, and the key of
	// an L3 NSH packet in a miss.
	const nsh = "push_nsh(flags=0,ttl=63,mdtype=1,np=7,spi=0x10,si=255,c1=0x1,c2=0x2,c3=0x3,c4=0x4)"
	const nshKey = "recirc_id(0),in_port(1),eth(),eth_type(0x894f),nsh(np=%d)"
	add(&Scenario{
		Name: "push-pop-nsh", Hosts: silentHosts(3),
		Flows: []FlowSpec{
			{fmt.Sprintf(udp, 7101), nsh + "," + pushEth2 + ",2"},
			{fmt.Sprintf(udp, 7102), "pop_eth," + nsh + "," + pushEth3 + ",3"},
			{fmt.Sprintf(udp, 7103), "pop_eth," + nsh + ",recirc(0x5)"},
			{fmt.Sprintf(nshKey, 1), "pop_eth,pop_nsh," + pushEth3 + ",3"},
			{fmt.Sprintf(nshKey, 3), "pop_eth,pop_nsh,2"},
			// NSH over NSH: pop_nsh leaves an L3 NSH packet.
			{fmt.Sprintf(nshKey, 4), "pop_eth,pop_nsh,recirc(0x6)"},
		},
		Traffic: func(e *Env) error {
			frames := [][]byte{
				udp4(headertest.IPv4Hdr{}, 5000, 7101, "nsh"),
				udp4(headertest.IPv4Hdr{}, 5000, 7102, "nsh"),
				udp4(headertest.IPv4Hdr{}, 5000, 7103, "nsh"),
				nshFrame(1, udp4(headertest.IPv4Hdr{}, 5000, 9, "inner ipv4")[14:]),
				nshFrame(3, udp4(headertest.IPv4Hdr{}, 5000, 9, "inner ethernet")),
				nshFrame(4, nshFrame(1, udp4(headertest.IPv4Hdr{}, 5000, 9, "inner nsh")[14:])[14:]),
			}
			return e.InjectPaced("h1", 200*time.Millisecond, frames...)
		},
		Check: all(checkNoErrors, func(o *Observation) error {
			if n := countUpcalls(o, "miss"); n != 2 {
				return fmt.Errorf("%d misses, want 2 (L3 NSH packets)", n)
			}
			if err := checkFrames(o, "h2", 2, false); err != nil {
				return err
			}
			return checkFrames(o, "h3", 2, false)
		}),
	})
	// Userspace actions after the L2 actions: the upcall's packet and key.
	const up = "userspace(pid=$PID,userdata(%02x))"
	add(&Scenario{
		Name: "userspace-after-l2-actions", Hosts: silentHosts(2),
		Flows: []FlowSpec{
			{fmt.Sprintf(udp, 7201), "pop_eth," + fmt.Sprintf(up, 1)},
			{fmt.Sprintf(udp, 7202), "pop_eth," + pushEth2 + "," + fmt.Sprintf(up, 2)},
			{fmt.Sprintf(udp, 7203), "add_mpls(" + mpls + ")," + fmt.Sprintf(up, 3)},
			{fmt.Sprintf(udp, 7204), "pop_eth," + nsh + "," + fmt.Sprintf(up, 4)},
		},
		Traffic: func(e *Env) error {
			var frames [][]byte
			for port := uint16(7201); port <= 7204; port++ {
				frames = append(frames, udp4(headertest.IPv4Hdr{}, 5000, port, "to userspace"))
			}
			return e.InjectPaced("h1", 200*time.Millisecond, frames...)
		},
		Check: all(checkNoErrors, func(o *Observation) error {
			if n := countUpcalls(o, "action"); n != 4 {
				return fmt.Errorf("%d action upcalls, want 4", n)
			}
			return nil
		}),
	})
}
