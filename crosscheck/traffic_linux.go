package crosscheck

import (
	"bytes"
	"fmt"
	"net"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ovsdp/ovsdp/internal/header"
	"github.com/ovsdp/ovsdp/internal/header/headertest"
)

// Env is what a scenario's traffic sees of the running topology.
type Env struct {
	hosts map[string]*liveHost
	// PID is the upcall receiver's PID, for userspace actions.
	PID uint32
	// Datapath is "system" or "netdev".
	Datapath string
	quiet    func(time.Duration) error
	received func(host string) ([][]byte, error)
	// sent marks an injection as activity: a quiet period (WaitQuiet,
	// and Play's wait before it reads the datapath) counts from the
	// last frame sent as well as from the last one received, so that a
	// frame the datapath has yet to handle (a slow one, under load) is
	// not taken for one that made nothing happen.
	sent func()
}

// Received returns copies of the frames host has received so far, in
// order (before normalization), for traffic that answers what the
// datapath chose (a reply to a NAT port).
func (e *Env) Received(host string) ([][]byte, error) {
	if e.received == nil {
		return nil, fmt.Errorf("Received outside Play")
	}
	return e.received(host)
}

// WaitQuiet waits until no frame has arrived at any host and no upcall
// has come for d (the captures are drained meanwhile).
func (e *Env) WaitQuiet(d time.Duration) error {
	if e.quiet == nil {
		return fmt.Errorf("WaitQuiet outside Play")
	}
	return e.quiet(d)
}

func (e *Env) host(name string) (*liveHost, error) {
	h, ok := e.hosts[name]
	if !ok {
		return nil, fmt.Errorf("no host %q in the scenario", name)
	}
	return h, nil
}

// Inject sends raw frames out of host's interface, in order, from one
// thread pinned to one CPU (so that the receiving side keeps the order:
// veth queues a frame on the sending CPU's backlog).
func (e *Env) Inject(host string, frames ...[]byte) error {
	h, err := e.host(host)
	if err != nil {
		return err
	}
	if e.sent != nil {
		defer e.sent()
	}
	return h.ns.Do(func() error {
		var old, one unix.CPUSet
		if err := unix.SchedGetaffinity(0, &old); err != nil {
			return fmt.Errorf("inject from %s: sched_getaffinity: %w", host, err)
		}
		for c := 0; c < 1024; c++ {
			if old.IsSet(c) {
				one.Set(c)
				break
			}
		}
		if err := unix.SchedSetaffinity(0, &one); err != nil {
			return fmt.Errorf("inject from %s: sched_setaffinity: %w", host, err)
		}
		defer unix.SchedSetaffinity(0, &old)
		fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("inject from %s: AF_PACKET socket: %w", host, err)
		}
		defer unix.Close(fd)
		unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUFFORCE, 8<<20)
		sa := &unix.SockaddrLinklayer{Ifindex: h.ifindex, Halen: 6}
		for i, f := range frames {
			if len(f) < 14 {
				return fmt.Errorf("inject from %s: frame %d is %d bytes, shorter than an Ethernet header", host, i, len(f))
			}
			sa.Protocol = header.Htons(header.Ethernet(f).Type())
			copy(sa.Addr[:], f[0:6])
			for {
				err := unix.Sendto(fd, f, 0, sa)
				if err == unix.ENOBUFS || err == unix.EAGAIN || err == unix.EINTR {
					time.Sleep(time.Millisecond)
					continue
				}
				if err != nil {
					return fmt.Errorf("inject from %s: frame %d (%d bytes, %s): %w", host, i, len(f), Describe(f), err)
				}
				break
			}
		}
		return nil
	})
}

// InjectPaced injects frames one at a time, waiting after each until
// nothing has happened for quiet: a handler then answers every miss
// before the next frame comes, so whether a frame misses does not
// depend on how fast the datapath and the handler are.
func (e *Env) InjectPaced(host string, quiet time.Duration, frames ...[]byte) error {
	for _, f := range frames {
		if err := e.Inject(host, f); err != nil {
			return err
		}
		if err := e.WaitQuiet(quiet); err != nil {
			return err
		}
	}
	return nil
}

func sockaddr(ip string, port uint16) (unix.Sockaddr, int, error) {
	p := net.ParseIP(ip)
	if p == nil {
		return nil, 0, fmt.Errorf("%q is not an IP address", ip)
	}
	if p4 := p.To4(); p4 != nil {
		return &unix.SockaddrInet4{Port: int(port), Addr: [4]byte(p4)}, unix.AF_INET, nil
	}
	return &unix.SockaddrInet6{Port: int(port), Addr: [16]byte(p.To16())}, unix.AF_INET6, nil
}

// socketIn opens a socket inside host's namespace with receive and send
// timeouts.
func (e *Env) socketIn(host string, family, typ, proto int, timeout time.Duration) (int, error) {
	h, err := e.host(host)
	if err != nil {
		return -1, err
	}
	var fd int
	err = h.ns.Do(func() error {
		var err error
		fd, err = unix.Socket(family, typ|unix.SOCK_CLOEXEC, proto)
		return err
	})
	if err != nil {
		return -1, fmt.Errorf("socket in %s: %w", host, err)
	}
	tv := unix.NsecToTimeval(timeout.Nanoseconds())
	unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
	unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_SNDTIMEO, &tv)
	unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1)
	return fd, nil
}

// exchangeAddrs returns the addresses of an exchange with dst: the
// destination dst:dport, and the wildcard address of its family with
// the server's port dport and with the client's port sport.
func exchangeAddrs(dst string, sport, dport uint16) (dsa, lsa, csa unix.Sockaddr, fam int, err error) {
	dsa, fam, err = sockaddr(dst, dport)
	if err != nil {
		return nil, nil, nil, 0, err
	}
	any := "0.0.0.0"
	if fam == unix.AF_INET6 {
		any = "::"
	}
	lsa, _, _ = sockaddr(any, dport)
	csa, _, _ = sockaddr(any, sport)
	return dsa, lsa, csa, fam, nil
}

// boundSocket is socketIn's socket bound to sa; what names it in errors
// ("udp server").
func (e *Env) boundSocket(host string, fam, typ int, sa unix.Sockaddr, timeout time.Duration, what string) (int, error) {
	fd, err := e.socketIn(host, fam, typ, 0, timeout)
	if err != nil {
		return -1, err
	}
	if err := unix.Bind(fd, sa); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("%s on %s: bind: %w", what, host, err)
	}
	return fd, nil
}

// pingPayload is the payload of Ping's echo request.
var pingPayload = []byte("ovsdp crosscheck ping payload!!!")

// Ping sends one ICMP (or ICMPv6) echo request with fixed identifier,
// sequence number and payload from host to dst and waits up to timeout
// for the reply.
func (e *Env) Ping(host, dst string, timeout time.Duration) error {
	sa, fam, err := sockaddr(dst, 0)
	if err != nil {
		return err
	}
	proto, typ, reply := unix.IPPROTO_ICMP, uint8(8), uint8(0)
	if fam == unix.AF_INET6 {
		proto, typ, reply = unix.IPPROTO_ICMPV6, 128, 129
	}
	fd, err := e.socketIn(host, fam, unix.SOCK_RAW, proto, timeout)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	msg := header.ICMP(headertest.ICMP(typ, 0, 0x4242<<16|1, pingPayload))
	if fam == unix.AF_INET {
		msg.SetChecksum(msg.CalculateChecksum(0))
	}
	deadline := time.Now().Add(timeout)
	if err := sendto(fd, msg, sa, deadline); err != nil {
		return fmt.Errorf("ping %s from %s: %w", dst, host, err)
	}
	buf := make([]byte, 2048)
	for time.Now().Before(deadline) {
		n, _, err := recvfrom(fd, buf, deadline)
		if err != nil {
			return fmt.Errorf("ping %s from %s: no reply: %w", dst, host, err)
		}
		b := buf[:n]
		if fam == unix.AF_INET && n >= header.IPv4MinimumSize {
			b = b[min(header.IPv4(b).HeaderLength(), n):]
		}
		if ic := header.ICMP(b); len(ic) >= header.ICMPMinimumSize && ic.Type() == reply && ic.Ident() == 0x4242 && ic.Sequence() == 1 &&
			bytes.Equal(b[header.ICMPMinimumSize:], pingPayload) {
			return nil
		}
	}
	return fmt.Errorf("ping %s from %s: no reply within %v", dst, host, timeout)
}

// UDPExchange sends one datagram "ping" from client (source port sport)
// to dst:dport, where server answers "pong"; it waits for the answer.
func (e *Env) UDPExchange(client, server, dst string, sport, dport uint16, timeout time.Duration) error {
	cfd, sfd, dsa, deadline, err := e.udpPair(client, server, dst, sport, dport, timeout)
	if err != nil {
		return err
	}
	defer unix.Close(sfd)
	defer unix.Close(cfd)
	var serr error
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		buf := make([]byte, 1500)
		n, from, err := recvfrom(sfd, buf, deadline)
		if err != nil {
			serr = fmt.Errorf("udp server on %s: nothing received: %w", server, err)
			return
		}
		if string(buf[:n]) != "ping" {
			serr = fmt.Errorf("udp server on %s: received %q", server, buf[:n])
			return
		}
		if err := sendto(sfd, []byte("pong"), from, deadline); err != nil {
			serr = fmt.Errorf("udp server on %s: reply: %w", server, err)
		}
	}()
	if err := sendto(cfd, []byte("ping"), dsa, deadline); err != nil {
		wg.Wait()
		return fmt.Errorf("udp client on %s: %w", client, err)
	}
	buf := make([]byte, 1500)
	n, _, rerr := recvfrom(cfd, buf, deadline)
	wg.Wait()
	if serr != nil {
		return serr
	}
	if rerr != nil {
		return fmt.Errorf("udp client on %s: no answer: %w", client, rerr)
	}
	if string(buf[:n]) != "pong" {
		return fmt.Errorf("udp client on %s: answer %q", client, buf[:n])
	}
	return nil
}

// udpPair opens the sockets of a UDP exchange from client (port sport)
// to dst:dport on server: the client's, the server's (both bound, with
// timeout), the destination address and the exchange's deadline.
func (e *Env) udpPair(client, server, dst string, sport, dport uint16, timeout time.Duration) (cfd, sfd int, dsa unix.Sockaddr, deadline time.Time, err error) {
	dsa, lsa, csa, fam, err := exchangeAddrs(dst, sport, dport)
	if err == nil {
		sfd, err = e.boundSocket(server, fam, unix.SOCK_DGRAM, lsa, timeout, "udp server")
	}
	if err == nil {
		if cfd, err = e.boundSocket(client, fam, unix.SOCK_DGRAM, csa, timeout, "udp client"); err != nil {
			unix.Close(sfd)
		}
	}
	return cfd, sfd, dsa, time.Now().Add(timeout), err
}

// TCPExchange connects from client (source port sport) to dst:dport on
// server, sends "hello", reads "world" back, and both sides close.
func (e *Env) TCPExchange(client, server, dst string, sport, dport uint16, timeout time.Duration) error {
	dsa, lsa, csa, fam, err := exchangeAddrs(dst, sport, dport)
	if err != nil {
		return err
	}
	lfd, err := e.boundSocket(server, fam, unix.SOCK_STREAM, lsa, timeout, "tcp server")
	if err != nil {
		return err
	}
	defer unix.Close(lfd)
	if err := unix.Listen(lfd, 1); err != nil {
		return fmt.Errorf("tcp server on %s: listen: %w", server, err)
	}
	deadline := time.Now().Add(timeout)
	var serr error
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		fd, err := accept(lfd, deadline)
		if err != nil {
			serr = fmt.Errorf("tcp server on %s: accept: %w", server, err)
			return
		}
		defer unix.Close(fd)
		tv := unix.NsecToTimeval(timeout.Nanoseconds())
		unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
		got, err := readN(fd, 5)
		if err != nil || string(got) != "hello" {
			serr = fmt.Errorf("tcp server on %s: read %q: %v", server, got, err)
			return
		}
		if err := writeAll(fd, []byte("world"), deadline); err != nil {
			serr = fmt.Errorf("tcp server on %s: write: %w", server, err)
			return
		}
		// Wait for the client's FIN before closing, so the close sequence
		// is always the same.
		readN(fd, 1)
	}()
	cfd, err := e.boundSocket(client, fam, unix.SOCK_STREAM, csa, timeout, "tcp client")
	if err != nil {
		unix.Shutdown(lfd, unix.SHUT_RDWR)
		wg.Wait()
		return err
	}
	defer unix.Close(cfd)
	cerr := func() error {
		if err := connect(cfd, dsa, deadline); err != nil {
			return fmt.Errorf("tcp client on %s: connect to %s: %w", client, dst, err)
		}
		if err := writeAll(cfd, []byte("hello"), deadline); err != nil {
			return fmt.Errorf("tcp client on %s: write: %w", client, err)
		}
		got, err := readN(cfd, 5)
		if err != nil || string(got) != "world" {
			return fmt.Errorf("tcp client on %s: read %q: %v", client, got, err)
		}
		return unix.Shutdown(cfd, unix.SHUT_WR)
	}()
	if cerr != nil {
		unix.Shutdown(lfd, unix.SHUT_RDWR)
	}
	wg.Wait()
	if cerr != nil {
		return cerr
	}
	if serr != nil {
		return serr
	}
	readN(cfd, 1) // the server's FIN
	return nil
}

// readN reads n bytes from a stream socket. Before each read it asks for
// quick acknowledgements (TCP_QUICKACK, which the kernel clears again),
// so that data is acknowledged at once rather than by a delayed-ACK timer
// racing with the application's next segment: the segments a TCP
// exchange makes are then the same on every run.
func readN(fd, n int) ([]byte, error) {
	buf := make([]byte, n)
	got := 0
	for got < n {
		unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_QUICKACK, 1)
		m, err := unix.Read(fd, buf[got:])
		if err != nil {
			if err == unix.EINTR {
				continue
			}
			return buf[:got], err
		}
		if m == 0 {
			return buf[:got], fmt.Errorf("end of stream after %d bytes", got)
		}
		got += m
	}
	return buf, nil
}
