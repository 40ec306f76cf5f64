package userdp

import (
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
//     looked up through rtnetlink (vishvananda/netlink) and cached.
type tunnelPort struct {
	fdPort
	cfg tunnelConfig

	udp int // the placeholder UDP socket, or -1
	tx  int // the raw send socket

	// Route cache: destination -> source address.
	nl       *netlink.Handle
	routeMu  sync.RWMutex
	routes   map[[16]byte]tunnelRoute
	hopLimit uint8
	portMin  uint16
	portMax  uint32

	sa unix.RawSockaddrInet4 // WriteBatch's destination (wrMu)
}

// tunnelRoute is a cached route lookup.
type tunnelRoute struct {
	src     [16]byte // IPv4-mapped for IPv4
	err     error
	expires time.Time
}

// tunnelRouteTTL is how long a route lookup is reused.
const tunnelRouteTTL = time.Second

// openTunnelPort opens a tunnel port called name of configuration c in
// the calling thread's network namespace.
func openTunnelPort(name string, c tunnelConfig) (*tunnelPort, error) {
	p := &tunnelPort{fdPort: fdPort{name: name, minRoom: ipv4HeaderLen}, cfg: c, udp: -1, tx: -1,
		routes: map[[16]byte]tunnelRoute{}, hopLimit: 64, portMin: 32768, portMax: 61000}
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
		// Keep UDP packets to the port: X = IP header length, then
		// the UDP destination port.
		f := []unix.SockFilter{
			{Code: unix.BPF_LDX | unix.BPF_B | unix.BPF_MSH, K: 0},
			{Code: unix.BPF_LD | unix.BPF_H | unix.BPF_IND, K: 2},
			{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, Jt: 0, Jf: 1, K: uint32(c.dstPort)},
			{Code: unix.BPF_RET | unix.BPF_K, K: 0xffffffff},
			{Code: unix.BPF_RET | unix.BPF_K, K: 0},
		}
		if err := attachFilter(fd, f); err != nil {
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

// attachFilter attaches a classic BPF program to a socket.
func attachFilter(fd int, f []unix.SockFilter) error {
	prog := unix.SockFprog{Len: uint16(len(f)), Filter: &f[0]}
	return unix.SetsockoptSockFprog(fd, unix.SOL_SOCKET, unix.SO_ATTACH_FILTER, &prog)
}

func (p *tunnelPort) closeSockets() {
	if p.udp >= 0 {
		unix.Close(p.udp)
		p.udp = -1
	}
	if p.tx >= 0 {
		unix.Close(p.tx)
		p.tx = -1
	}
	if p.nl != nil {
		p.nl.Close()
		p.nl = nil
	}
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
// frames sent, with the inner frame's length, as the kernel's tunnel
// devices count them.
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

// WriteBatch sends outer IPv4 packets through the host's stack. A packet
// the host refuses (no route, too long for the route's MTU) is counted
// as a tx error and skipped.
func (p *tunnelPort) WriteBatch(pkts [][]byte) (int, error) {
	p.wrMu.Lock()
	defer p.wrMu.Unlock()
	if p.isClosed() {
		return 0, p.writeErr(errors.New("closed"))
	}
	var first error
	n := 0
	p.sa.Family = unix.AF_INET
	for _, b := range pkts {
		if len(b) < ipv4HeaderLen {
			p.stats.TxErrors.Add(1)
			continue
		}
		copy(p.sa.Addr[:], b[16:20])
		for {
			_, _, e := unix.Syscall6(unix.SYS_SENDTO, uintptr(p.tx), uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(len(b)),
				unix.MSG_DONTWAIT, uintptr(unsafe.Pointer(&p.sa)), unsafe.Sizeof(p.sa))
			if e == unix.EINTR {
				continue
			}
			if e == 0 {
				n++
				p.stats.tx(1, uint64(len(b)))
			} else {
				if e == unix.EAGAIN || e == unix.ENOBUFS {
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

// route implements tunnelOut: the source address of the route to the
// metadata's destination, from the cache or rtnetlink, when the
// metadata has none.
func (p *tunnelPort) route(ti *tunnelInfo, now time.Time, ep *encapParams) error {
	if ti.v6 {
		if ti.src6 != ([16]byte{}) {
			return nil
		}
		r := p.lookup(ti.dst6, now)
		ep.src6 = r.src
		return r.err
	}
	if ti.src != ([4]byte{}) {
		return nil
	}
	var d [16]byte
	copy(d[12:], ti.dst[:])
	d[10], d[11] = 0xff, 0xff // IPv4-mapped
	r := p.lookup(d, now)
	ep.src = [4]byte(r.src[12:])
	return r.err
}

// lookup returns the cached route to dst (an IPv6 or IPv4-mapped
// address), looking it up when missing or stale.
func (p *tunnelPort) lookup(dst [16]byte, now time.Time) tunnelRoute {
	p.routeMu.RLock()
	r, ok := p.routes[dst]
	p.routeMu.RUnlock()
	if ok && now.Before(r.expires) {
		return r
	}
	r = tunnelRoute{expires: now.Add(tunnelRouteTTL)}
	ip := net.IP(dst[:])
	rs, err := p.nl.RouteGet(ip)
	switch {
	case err != nil:
		r.err = fmt.Errorf("userdp: %s: no route to %v: %w", p.name, ip, err)
	case len(rs) == 0 || rs[0].Src == nil:
		r.err = fmt.Errorf("userdp: %s: the route to %v has no source address", p.name, ip)
	default:
		copy(r.src[:], rs[0].Src.To16())
	}
	p.routeMu.Lock()
	if len(p.routes) > 4096 {
		clear(p.routes)
	}
	p.routes[dst] = r
	p.routeMu.Unlock()
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
