package userdp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/ovsdp/ovsdp/internal/header"
	"github.com/ovsdp/ovsdp/odp"
)

// tunnelPort is a tunnel vport (geneve, vxlan, gre) on the host's
// stack, in the network namespace it was opened in:
//
//   - receive: a raw IPv4 socket of the tunnel's protocol (UDP or GRE)
//     gets every such packet delivered to the host with its outer
//     header, and for UDP a socket filter keeps those for the port's
//     destination port; for UDP, a UDP socket bound to that port with a
//     filter that drops everything keeps the host from answering "port
//     unreachable" (and says, as the kernel's own tunnel socket would,
//     when another tunnel holds the port). ReadBatch returns whole outer
//     IPv4 packets; the datapath's tunnel receive loop decapsulates them.
//   - transmit: WriteBatch sends whole outer IPv4 packets (built by the
//     executor's encapsulation) through a raw IPPROTO_RAW socket
//     (IP_HDRINCL): the host routes them and resolves the neighbour.
//     route returns the route's source address for the outer header,
//     looked up through rtnetlink (vishvananda/netlink) with the
//     packet's skb mark and cached by destination and mark; the send
//     socket carries the packet's mark (SO_MARK) so that the host
//     routes the outer packet as that lookup did, and the mark stays on
//     it, as on the kernel's tunnel skb.
type tunnelPort struct {
	fdPort
	cfg tunnelConfig

	udp int // the placeholder UDP socket, or -1
	tx  int // the raw send socket

	// IPv6 (geneve and vxlan): the receive socket, whose reads become
	// whole outer IPv6 packets (rx6), the placeholder and the send
	// socket; nil and -1 when the host has no IPv6.
	rx6       *tunnelRx6
	udp6, tx6 int
	sa6       unix.RawSockaddrInet6 // WriteBatch's destination (wrMu)

	// Route cache: (destination, skb mark) -> source address and MTU.
	nl       *netlink.Handle
	routeMu  sync.RWMutex
	routes   map[routeKey]tunnelRoute
	hopLimit uint8
	portMin  uint16
	portMax  uint32

	sa      unix.RawSockaddrInet4 // WriteBatch's destination (wrMu)
	mark    [2]uint32             // the SO_MARK of tx and tx6 (wrMu)
	fragBuf []byte                // sendFragments' fragment (wrMu)
	fragID  uint16                // the IPv4 ID of the next fragmented packet (wrMu)
}

// routeKey is what a route lookup depends on: the destination (an IPv6
// or IPv4-mapped address) and the packet's skb mark (ip rule fwmark).
type routeKey struct {
	dst  [16]byte
	mark uint32
}

// tunnelRoute is a cached route lookup.
type tunnelRoute struct {
	src     [16]byte // IPv4-mapped for IPv4
	mtu     int      // the route's MTU (its own, else its device's), 0 if unknown
	err     error
	expires time.Time
}

// tunnelRouteTTL is how long a route lookup is reused.
const tunnelRouteTTL = time.Second

// openTunnelPort opens a tunnel port called name of configuration c in
// the calling thread's network namespace.
func openTunnelPort(name string, c tunnelConfig) (*tunnelPort, error) {
	p := &tunnelPort{fdPort: fdPort{name: name, minRoom: ipv4HeaderLen}, cfg: c, udp: -1, tx: -1, udp6: -1, tx6: -1,
		routes: map[routeKey]tunnelRoute{}, hopLimit: 64, portMin: 32768, portMax: 61000}
	ok := false
	defer func() {
		if !ok {
			p.closeSockets()
		}
	}()
	proto := unix.IPPROTO_UDP
	if c.kind == tunnelGRE {
		proto = unix.IPPROTO_GRE
	}
	if c.kind != tunnelGRE {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, 0)
		if err != nil {
			return nil, fmt.Errorf("userdp: tunnel %s: UDP socket: %w", name, err)
		}
		p.udp = fd
		if err := attachFilter(fd, []unix.SockFilter{{Code: unix.BPF_RET | unix.BPF_K, K: 0}}); err != nil {
			return nil, fmt.Errorf("userdp: tunnel %s: UDP socket filter: %w", name, err)
		}
		if err := unix.Bind(fd, &unix.SockaddrInet4{Port: int(c.dstPort)}); err != nil {
			return nil, fmt.Errorf("userdp: tunnel %s: binding UDP port %d (another tunnel or program has it?): %w", name, c.dstPort, err)
		}
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_RAW|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, proto)
	if err != nil {
		return nil, fmt.Errorf("userdp: tunnel %s: raw socket for IP protocol %d (needs CAP_NET_RAW): %w", name, proto, err)
	}
	if c.kind != tunnelGRE {
		if err := attachPortFilter(fd, true, c.dstPort); err != nil {
			unix.Close(fd)
			return nil, fmt.Errorf("userdp: tunnel %s: raw socket filter: %w", name, err)
		}
	}
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, 4<<20)
	if err := p.adopt(fd, "tunnel"); err != nil {
		return nil, fmt.Errorf("userdp: tunnel %s: %w", name, err)
	}
	p.readFn = p.doRead
	tx, err := unix.Socket(unix.AF_INET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.IPPROTO_RAW)
	if err != nil {
		return nil, fmt.Errorf("userdp: tunnel %s: raw send socket: %w", name, err)
	}
	p.tx = tx
	if p.nl, err = netlink.NewHandle(unix.NETLINK_ROUTE); err != nil {
		return nil, fmt.Errorf("userdp: tunnel %s: rtnetlink: %w", name, err)
	}
	if c.kind != tunnelGRE {
		if err := p.openIPv6(); err != nil {
			return nil, err
		}
	}
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_default_ttl"); err == nil {
		if v, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && v > 0 && v < 256 {
			p.hopLimit = uint8(v)
		}
	}
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			lo, e1 := strconv.Atoi(f[0])
			hi, e2 := strconv.Atoi(f[1])
			if e1 == nil && e2 == nil && 0 < lo && lo < hi && hi < 65536 {
				// inet_get_local_port_range, then max++.
				p.portMin, p.portMax = uint16(lo), uint32(hi)+1
			}
		}
	}
	ok = true
	return p, nil
}

// attachPortFilter attaches a socket filter that keeps the UDP packets
// to port: after an IPv4 header (ipv4: X = its length) or, for a raw
// IPv6 socket whose filter sees the UDP header first, at the start.
func attachPortFilter(fd int, ipv4 bool, port uint16) error {
	ld := unix.SockFilter{Code: unix.BPF_LD | unix.BPF_H | unix.BPF_ABS, K: 2}
	x := unix.SockFilter{Code: unix.BPF_LDX | unix.BPF_W | unix.BPF_IMM, K: 0}
	if ipv4 {
		ld.Code = unix.BPF_LD | unix.BPF_H | unix.BPF_IND
		x = unix.SockFilter{Code: unix.BPF_LDX | unix.BPF_B | unix.BPF_MSH, K: 0}
	}
	return attachFilter(fd, []unix.SockFilter{x, ld,
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, Jt: 0, Jf: 1, K: uint32(port)},
		{Code: unix.BPF_RET | unix.BPF_K, K: 0xffffffff},
		{Code: unix.BPF_RET | unix.BPF_K, K: 0},
	})
}

// attachFilter attaches a classic BPF program to a socket.
func attachFilter(fd int, f []unix.SockFilter) error {
	prog := unix.SockFprog{Len: uint16(len(f)), Filter: &f[0]}
	return unix.SetsockoptSockFprog(fd, unix.SOL_SOCKET, unix.SO_ATTACH_FILTER, &prog)
}

func (p *tunnelPort) closeSockets() {
	for _, fd := range []*int{&p.udp6, &p.tx6} {
		if *fd >= 0 {
			unix.Close(*fd)
			*fd = -1
		}
	}
	if p.rx6 != nil {
		p.rx6.Close()
	}
	if p.udp >= 0 {
		unix.Close(p.udp)
		p.udp = -1
	}
	if p.tx >= 0 {
		unix.Close(p.tx)
		p.tx = -1
	}
	p.routeMu.Lock()
	if p.nl != nil {
		p.nl.Close()
		p.nl = nil
	}
	p.routeMu.Unlock()
	if p.file != nil {
		p.file.Close()
	}
}

// Type returns the tunnel's port type.
func (p *tunnelPort) Type() odp.PortType { return odp.PortType(p.cfg.kind.String()) }

// MTU returns the largest IPv4 packet: the port receives whole outer
// packets, reassembled by the host.
func (p *tunnelPort) MTU() int { return 65535 }

// Stats returns the port's counters: decapsulated frames received and
// frames sent, with the length of the inner frame from its network
// header on, as the kernel's tunnel devices count them (after
// eth_type_trans on receive; iptunnel_xmit_stats on transmit).
func (p *tunnelPort) Stats() odp.PortStats { return p.stats.Snapshot() }

// doRead reads outer packets until none is left. The receive loop
// counts what it decapsulates.
func (p *tunnelPort) doRead(fd uintptr) bool {
	for p.rdN < len(p.rdBufs) {
		b := p.rdBufs[p.rdN][p.rdOff:]
		r, _, e := unix.Syscall6(unix.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(len(b)), unix.MSG_TRUNC, 0, 0)
		if e == unix.EAGAIN {
			break
		}
		if e == unix.EINTR {
			continue
		}
		if e != 0 {
			p.rdErr = fmt.Errorf("recvfrom: %w", e)
			break
		}
		if int(r) > len(b) {
			p.stats.RxErrors.Add(1) // longer than the buffer
			continue
		}
		p.rdSizes[p.rdN] = int(r)
		p.rdN++
	}
	return p.rdN > 0 || p.rdErr != nil
}

// WriteBatch sends outer IPv4 and IPv6 packets through the host's
// stack, with skb mark 0. A packet the host refuses (no route, too long
// for the route's MTU) is counted as a tx error and skipped.
func (p *tunnelPort) WriteBatch(pkts [][]byte) (int, error) { return p.writeMarked(pkts, nil) }

// writeMarked implements tunnelOut: WriteBatch with packet i sent with
// skb mark marks[i] (0 for all when marks is nil). The send socket's
// SO_MARK changes only when the mark does.
func (p *tunnelPort) writeMarked(pkts [][]byte, marks []uint32) (int, error) {
	p.wrMu.Lock()
	defer p.wrMu.Unlock()
	if p.isClosed() {
		return 0, p.writeErr(errors.New("closed"))
	}
	var first error
	n := 0
	p.sa.Family = unix.AF_INET
	p.sa6.Family = unix.AF_INET6
	for i, b := range pkts {
		fd, sa, salen := p.tx, unsafe.Pointer(&p.sa), unsafe.Sizeof(p.sa)
		fam := 0
		switch {
		case len(b) >= ipv4HeaderLen && b[0]>>4 == 4:
			copy(p.sa.Addr[:], b[16:20])
		case len(b) >= ipv6HeaderLen && b[0]>>4 == 6 && p.tx6 >= 0:
			copy(p.sa6.Addr[:], b[24:40])
			fd, sa, salen, fam = p.tx6, unsafe.Pointer(&p.sa6), unsafe.Sizeof(p.sa6), 1
		default:
			p.stats.TxErrors.Add(1)
			continue
		}
		var mark uint32
		if marks != nil {
			mark = marks[i]
		}
		if mark != p.mark[fam] {
			if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_MARK, int(mark)); err != nil {
				p.stats.TxErrors.Add(1)
				if first == nil {
					first = fmt.Errorf("userdp: %s: setting the send socket's mark to %#x (SO_MARK needs CAP_NET_ADMIN or CAP_NET_RAW): %w", p.name, mark, err)
				}
				continue
			}
			p.mark[fam] = mark
		}
		for {
			_, _, e := unix.Syscall6(unix.SYS_SENDTO, uintptr(fd), uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(len(b)),
				unix.MSG_DONTWAIT, uintptr(sa), salen)
			if e == unix.EINTR {
				continue
			}
			if e == unix.EMSGSIZE && p.sendFragments(b, mark) {
				e = 0
			}
			if e == 0 {
				n++
				p.stats.tx(1, uint64(innerL3Len(b, &p.cfg)))
			} else {
				// As iptunnel_xmit_stats after ip_local_out: an IPv4
				// packet that cannot go (EMSGSIZE: DF, too long for
				// the route) is a tx drop; an IPv6 one a tx error
				// (ip6tunnel_xmit counts any failure so).
				if e == unix.EAGAIN || e == unix.ENOBUFS || e == unix.EMSGSIZE && fam == 0 {
					p.stats.TxDropped.Add(1)
				} else {
					p.stats.TxErrors.Add(1)
				}
				if first == nil {
					first = fmt.Errorf("userdp: %s: sending a %d-byte tunnel packet: %w", p.name, len(b), e)
				}
			}
			break
		}
	}
	return n, first
}

// route implements tunnelOut: the MTU of the route to the metadata's
// destination for skb mark mark, and its source address when the
// metadata has none, from the cache or rtnetlink. With a source in the
// metadata a failed lookup is no error (the host routes the packet when
// it is sent) and leaves the MTU unknown.
func (p *tunnelPort) route(ti *tunnelInfo, mark uint32, now time.Time, ep *encapParams) error {
	var d [16]byte
	given := ti.src != ([4]byte{})
	if ti.v6 {
		d, given = ti.dst6, ti.src6 != ([16]byte{})
	} else {
		copy(d[12:], ti.dst[:])
		d[10], d[11] = 0xff, 0xff // IPv4-mapped
	}
	r := p.lookup(d, mark, now)
	if given {
		if r.err == nil {
			ep.mtu = r.mtu
		}
		return nil
	}
	ep.mtu = r.mtu
	if ti.v6 {
		ep.src6 = r.src
	} else {
		ep.src = [4]byte(r.src[12:])
	}
	return r.err
}

// lookup returns the cached route to dst (an IPv6 or IPv4-mapped
// address) for packets of skb mark mark, looking it up when missing or
// stale.
func (p *tunnelPort) lookup(dst [16]byte, mark uint32, now time.Time) tunnelRoute {
	k := routeKey{dst: dst, mark: mark}
	p.routeMu.RLock()
	r, ok := p.routes[k]
	p.routeMu.RUnlock()
	if ok && now.Before(r.expires) {
		return r
	}
	r = tunnelRoute{expires: now.Add(tunnelRouteTTL)}
	ip := net.IP(dst[:])
	// Under the write lock: Close may take the handle away meanwhile.
	p.routeMu.Lock()
	defer p.routeMu.Unlock()
	if p.nl == nil {
		r.err = fmt.Errorf("userdp: %s: port closed", p.name)
		return r
	}
	rs, err := p.nl.RouteGetWithOptions(ip, &netlink.RouteGetOptions{Mark: mark})
	switch {
	case err != nil:
		r.err = fmt.Errorf("userdp: %s: no route to %v (mark %#x): %w", p.name, ip, mark, err)
	case len(rs) == 0 || rs[0].Src == nil:
		r.err = fmt.Errorf("userdp: %s: the route to %v (mark %#x) has no source address", p.name, ip, mark)
	default:
		copy(r.src[:], rs[0].Src.To16())
		r.mtu = rs[0].MTU
		if l, err := p.nl.LinkByIndex(rs[0].LinkIndex); r.mtu == 0 && err == nil {
			r.mtu = l.Attrs().MTU
		}
	}
	if len(p.routes) > 4096 {
		clear(p.routes)
	}
	p.routes[k] = r
	return r
}

// Close closes the sockets and unblocks a pending ReadBatch.
func (p *tunnelPort) Close() error {
	if !p.markClosed() {
		return nil
	}
	p.wrMu.Lock()
	defer p.wrMu.Unlock()
	p.closeSockets()
	return nil
}

var (
	_ Port      = (*tunnelPort)(nil)
	_ tunnelOut = (*tunnelPort)(nil)
)

// openTunnel opens a tunnel port for AddPort.
func openTunnel(name string, c tunnelConfig) (Port, error) {
	p, err := openTunnelPort(name, c)
	if err != nil {
		return nil, err
	}
	return p, nil
}

func (p *tunnelPort) tunnelConfig() *tunnelConfig            { return &p.cfg }
func (p *tunnelPort) counters() *Counters                    { return &p.stats }
func (p *tunnelPort) defaultHopLimit() uint8                 { return p.hopLimit }
func (p *tunnelPort) localPortRange() (lo uint16, hi uint32) { return p.portMin, p.portMax }

// openIPv6 opens the IPv6 sockets of a UDP tunnel. A host without IPv6
// (EAFNOSUPPORT) gets an IPv4-only port, as the kernel's tunnels.
func (p *tunnelPort) openIPv6() error {
	fd, err := unix.Socket(unix.AF_INET6, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, 0)
	if err == unix.EAFNOSUPPORT {
		return nil
	}
	if err != nil {
		return fmt.Errorf("userdp: tunnel %s: UDP IPv6 socket: %w", p.name, err)
	}
	p.udp6 = fd
	if err := unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_V6ONLY, 1); err != nil {
		return fmt.Errorf("userdp: tunnel %s: IPV6_V6ONLY: %w", p.name, err)
	}
	if err := attachFilter(fd, []unix.SockFilter{{Code: unix.BPF_RET | unix.BPF_K, K: 0}}); err != nil {
		return fmt.Errorf("userdp: tunnel %s: UDP IPv6 socket filter: %w", p.name, err)
	}
	if err := unix.Bind(fd, &unix.SockaddrInet6{Port: int(p.cfg.dstPort)}); err != nil {
		return fmt.Errorf("userdp: tunnel %s: binding UDP port %d over IPv6 (another tunnel or program has it?): %w", p.name, p.cfg.dstPort, err)
	}
	rx, err := openTunnelRx6(p.name, p.cfg.dstPort)
	if err != nil {
		return err
	}
	p.rx6 = rx
	if p.tx6, err = unix.Socket(unix.AF_INET6, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.IPPROTO_RAW); err != nil {
		return fmt.Errorf("userdp: tunnel %s: raw IPv6 send socket: %w", p.name, err)
	}
	if err := unix.SetsockoptInt(p.tx6, unix.IPPROTO_IPV6, unix.IPV6_HDRINCL, 1); err != nil {
		return fmt.Errorf("userdp: tunnel %s: IPV6_HDRINCL: %w", p.name, err)
	}
	return nil
}

// ipv6Reader implements tunnelOut.
func (p *tunnelPort) ipv6Reader() Port {
	if p.rx6 == nil {
		return nil
	}
	return p.rx6
}

// tunnelRx6 is a tunnel port's IPv6 receive socket: a raw IPv6 UDP
// socket, which gives the UDP header onward, with the outer header's
// addresses, traffic class and hop limit as control messages; ReadBatch
// rebuilds the 40-byte outer header in front of what it read, so that
// the receive loop sees whole outer packets (with the payload length
// and next header as delivered; extension headers are gone).
type tunnelRx6 struct {
	fdPort
	oob  [128]byte
	name unix.RawSockaddrInet6
	iov  unix.Iovec
	msg  unix.Msghdr
}

func openTunnelRx6(name string, port uint16) (*tunnelRx6, error) {
	fd, err := unix.Socket(unix.AF_INET6, unix.SOCK_RAW|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, unix.IPPROTO_UDP)
	if err != nil {
		return nil, fmt.Errorf("userdp: tunnel %s: raw IPv6 socket: %w", name, err)
	}
	for _, o := range []int{unix.IPV6_RECVPKTINFO, unix.IPV6_RECVHOPLIMIT, unix.IPV6_RECVTCLASS} {
		if err := unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, o, 1); err != nil {
			unix.Close(fd)
			return nil, fmt.Errorf("userdp: tunnel %s: raw IPv6 socket option %d: %w", name, o, err)
		}
	}
	if err := attachPortFilter(fd, false, port); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("userdp: tunnel %s: raw IPv6 socket filter: %w", name, err)
	}
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, 4<<20)
	r := &tunnelRx6{fdPort: fdPort{name: name, minRoom: ipv6HeaderLen + udpHeaderLen}}
	if err := r.adopt(fd, "tunnel6"); err != nil {
		return nil, fmt.Errorf("userdp: tunnel %s: %w", name, err)
	}
	r.readFn = r.doRead
	return r, nil
}

// doRead reads datagrams, each after room for the outer header that it
// then writes.
func (r *tunnelRx6) doRead(fd uintptr) bool {
	for r.rdN < len(r.rdBufs) {
		b := r.rdBufs[r.rdN][r.rdOff:]
		pl := b[ipv6HeaderLen:]
		r.iov.Base = unsafe.SliceData(pl)
		r.iov.SetLen(len(pl))
		r.msg = unix.Msghdr{Name: (*byte)(unsafe.Pointer(&r.name)), Namelen: uint32(unsafe.Sizeof(r.name)), Iov: &r.iov, Iovlen: 1,
			Control: &r.oob[0]}
		r.msg.SetControllen(len(r.oob))
		n, _, e := unix.Syscall(unix.SYS_RECVMSG, fd, uintptr(unsafe.Pointer(&r.msg)), unix.MSG_TRUNC)
		if e == unix.EAGAIN {
			break
		}
		if e == unix.EINTR {
			continue
		}
		if e != 0 {
			r.rdErr = fmt.Errorf("recvmsg: %w", e)
			break
		}
		if int(n) > len(pl) || r.msg.Flags&unix.MSG_CTRUNC != 0 {
			r.stats.RxErrors.Add(1)
			continue
		}
		h := b[:ipv6HeaderLen]
		clear(h)
		var tclass, hlim uint32
		oob := r.oob[:r.msg.Controllen]
		for len(oob) >= unix.SizeofCmsghdr {
			cm := (*unix.Cmsghdr)(unsafe.Pointer(&oob[0]))
			l := int(cm.Len)
			if l < unix.SizeofCmsghdr || l > len(oob) {
				break
			}
			d := oob[unix.SizeofCmsghdr:l]
			if cm.Level == unix.IPPROTO_IPV6 {
				switch cm.Type {
				case unix.IPV6_PKTINFO:
					if len(d) >= 16 {
						copy(h[24:40], d[:16])
					}
				case unix.IPV6_TCLASS:
					if len(d) >= 4 {
						tclass = *(*uint32)(unsafe.Pointer(&d[0]))
					}
				case unix.IPV6_HOPLIMIT:
					if len(d) >= 4 {
						hlim = *(*uint32)(unsafe.Pointer(&d[0]))
					}
				}
			}
			al := (l + unix.SizeofPtr - 1) &^ (unix.SizeofPtr - 1)
			if al >= len(oob) {
				break
			}
			oob = oob[al:]
		}
		h[0] = 6<<4 | uint8(tclass>>4)&0xf
		h[1] = uint8(tclass << 4)
		h[4], h[5] = uint8(n>>8), uint8(n)
		h[6] = unix.IPPROTO_UDP
		h[7] = uint8(hlim)
		copy(h[8:24], r.name.Addr[:])
		r.rdSizes[r.rdN] = ipv6HeaderLen + int(n)
		r.rdN++
	}
	return r.rdN > 0 || r.rdErr != nil
}

func (r *tunnelRx6) Type() odp.PortType   { return "tunnel-ipv6" }
func (r *tunnelRx6) MTU() int             { return 65535 }
func (r *tunnelRx6) Stats() odp.PortStats { return r.stats.Snapshot() }
func (r *tunnelRx6) WriteBatch(pkts [][]byte) (int, error) {
	return 0, r.writeErr(errors.ErrUnsupported)
}

// Close closes the socket.
func (r *tunnelRx6) Close() error {
	if !r.markClosed() {
		return nil
	}
	return r.file.Close()
}

// sendFragments sends an IPv4 packet that is longer than its route's
// MTU, without DF, as fragments (the kernel's tunnels fragment it in
// ip_fragment; a raw socket refuses it with EMSGSIZE). It reports
// whether every fragment was sent. A packet with DF is not sent, as
// ip_fragment does not (its ICMP goes to the outer source, this host;
// the answer to the inner sender is skb_tunnel_check_pmtu's, made
// before encapsulation: tunnel_pmtu.go). Nor is an IPv6 one: the
// kernel's tunnel skb is not ignore_df, so ip6_fragment refuses it too.
func (p *tunnelPort) sendFragments(b []byte, mark uint32) bool {
	if b[0]>>4 != 4 || binary.BigEndian.Uint16(b[6:])&0x4000 != 0 {
		return false
	}
	hl := int(b[0]&0xf) * 4
	var d [16]byte
	copy(d[12:], b[16:20])
	d[10], d[11] = 0xff, 0xff
	r := p.lookup(d, mark, time.Now())
	chunk := (r.mtu - hl) &^ 7
	if r.err != nil || chunk < 8 || hl > len(b) {
		return false
	}
	if p.fragBuf == nil {
		p.fragBuf = make([]byte, 65535)
	}
	p.fragID++
	if p.fragID == 0 {
		p.fragID = 1
	}
	payload := b[hl:]
	for off := 0; off < len(payload); off += chunk {
		end := min(off+chunk, len(payload))
		f := p.fragBuf[:hl+end-off]
		copy(f, b[:hl])
		copy(f[hl:], payload[off:end])
		ip := header.IPv4(f[:hl])
		ip.SetTotalLength(uint16(len(f)))
		ip.SetID(p.fragID)
		fo := uint16(off / 8)
		if end < len(payload) {
			fo |= 0x2000 // more fragments
		}
		ip.SetFlagsFragmentOffset(fo)
		ip.SetChecksum(0)
		ip.SetChecksum(ip.CalculateChecksum())
		if _, _, e := unix.Syscall6(unix.SYS_SENDTO, uintptr(p.tx), uintptr(unsafe.Pointer(unsafe.SliceData(f))), uintptr(len(f)),
			unix.MSG_DONTWAIT, uintptr(unsafe.Pointer(&p.sa)), unsafe.Sizeof(p.sa)); e != 0 {
			return false
		}
	}
	return true
}
