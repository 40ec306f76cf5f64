package testenv

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ovsdp/ovsdp/internal/header"
)

// SendFrame sends one raw Ethernet frame (destination MAC first, no FCS)
// out of interface ifname in the namespace, through an AF_PACKET socket.
func (n *Netns) SendFrame(t testing.TB, ifname string, frame []byte) {
	t.Helper()
	if err := n.SendFrames(ifname, frame); err != nil {
		t.Fatalf("testenv: %v", err)
	}
}

// SendFrames sends raw Ethernet frames out of ifname in the namespace.
func (n *Netns) SendFrames(ifname string, frames ...[]byte) error {
	var fd int
	err := n.Do(func() error {
		var err error
		fd, err = unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
		return err
	})
	if err != nil {
		return fmt.Errorf("AF_PACKET socket in namespace %s: %w", n, err)
	}
	defer unix.Close(fd)
	ifi, err := n.nl.LinkByName(ifname)
	if err != nil {
		return fmt.Errorf("send on %s in namespace %s: %w", ifname, n, err)
	}
	sa := &unix.SockaddrLinklayer{Ifindex: ifi.Attrs().Index, Halen: 6}
	for i, f := range frames {
		if len(f) < 14 {
			return fmt.Errorf("frame %d is %d bytes, shorter than an Ethernet header", i, len(f))
		}
		sa.Protocol = header.Htons(header.Ethernet(f).Type())
		dst := header.Ethernet(f).DestinationAddress()
		copy(sa.Addr[:], dst[:])
		if err := unix.Sendto(fd, f, 0, sa); err != nil {
			return fmt.Errorf("sending frame %d (%d bytes) on %s in namespace %s: %w", i, len(f), ifname, n, err)
		}
	}
	return nil
}

// Frame is one captured frame.
type Frame struct {
	Data []byte
	// Outgoing is true for frames sent by this host on the interface.
	Outgoing bool
	// PacketType is the AF_PACKET packet type (unix.PACKET_HOST, ...).
	PacketType uint8
}

// ErrNoFrame is returned by Capture.Next when no frame came in time.
var ErrNoFrame = errors.New("no frame before the timeout")

// Capture receives every frame (both directions) on one interface.
type Capture struct {
	fd     int
	ifname string
	ns     *Netns
	mu     sync.Mutex
	closed bool
}

// Capture starts capturing on ifname in the namespace. It stops when the
// test ends (or on Close).
func (n *Netns) Capture(t testing.TB, ifname string) *Capture {
	t.Helper()
	c, err := n.OpenCapture(ifname)
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// OpenCapture is Capture without the test: the caller must Close it.
func (n *Netns) OpenCapture(ifname string) (*Capture, error) {
	ifi, err := n.nl.LinkByName(ifname)
	if err != nil {
		return nil, fmt.Errorf("capture on %s in namespace %s: %w", ifname, n, err)
	}
	var fd int
	err = n.Do(func() error {
		var err error
		// Protocol 0 receives nothing until bind, so no frame from another
		// interface slips in before the socket is bound.
		fd, err = unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("AF_PACKET socket in namespace %s: %w", n, err)
	}
	sa := &unix.SockaddrLinklayer{Protocol: header.Htons(unix.ETH_P_ALL), Ifindex: ifi.Attrs().Index}
	if err := unix.Bind(fd, sa); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("binding capture to %s in namespace %s: %w", ifname, n, err)
	}
	unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, 4<<20)
	return &Capture{fd: fd, ifname: ifname, ns: n}, nil
}

// Next returns the next frame, or ErrNoFrame after timeout.
func (c *Capture) Next(timeout time.Duration) (Frame, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return Frame{}, fmt.Errorf("capture on %s: closed", c.ifname)
	}
	deadline := time.Now().Add(timeout)
	buf := make([]byte, 65536)
	for {
		left := time.Until(deadline)
		if left < 0 {
			left = 0
		}
		ms := int((left + time.Millisecond - 1) / time.Millisecond)
		pfd := []unix.PollFd{{Fd: int32(c.fd), Events: unix.POLLIN}}
		nready, err := unix.Poll(pfd, ms)
		if err != nil {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			return Frame{}, fmt.Errorf("capture on %s: poll: %w", c.ifname, err)
		}
		if nready == 0 {
			return Frame{}, fmt.Errorf("capture on %s in namespace %s: %w (%v)", c.ifname, c.ns, ErrNoFrame, timeout)
		}
		nr, from, err := unix.Recvfrom(c.fd, buf, unix.MSG_DONTWAIT)
		if err != nil {
			if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR) {
				continue
			}
			return Frame{}, fmt.Errorf("capture on %s: recv: %w", c.ifname, err)
		}
		f := Frame{Data: append([]byte(nil), buf[:nr]...)}
		if ll, ok := from.(*unix.SockaddrLinklayer); ok {
			f.PacketType = ll.Pkttype
			f.Outgoing = ll.Pkttype == unix.PACKET_OUTGOING
		}
		return f, nil
	}
}

// WaitFor returns the first frame for which match is true, skipping others,
// or an error wrapping ErrNoFrame when none came before timeout.
func (c *Capture) WaitFor(timeout time.Duration, match func(Frame) bool) (Frame, error) {
	deadline := time.Now().Add(timeout)
	for {
		f, err := c.Next(time.Until(deadline))
		if err != nil {
			return Frame{}, err
		}
		if match(f) {
			return f, nil
		}
	}
}

// Close stops the capture.
func (c *Capture) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	return unix.Close(c.fd)
}

// Ping sends ICMP (or ICMPv6) echo requests to dst from inside the
// namespace, one per 200ms, until a matching reply arrives (nil) or
// timeout passes (an error). It needs no ping binary.
func (n *Netns) Ping(dst string, timeout time.Duration) error {
	ip := net.ParseIP(dst)
	if ip == nil {
		return fmt.Errorf("ping: %q is not an IP address", dst)
	}
	v4 := ip.To4() != nil
	var fd int
	err := n.Do(func() error {
		var err error
		if v4 {
			fd, err = unix.Socket(unix.AF_INET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.IPPROTO_ICMP)
		} else {
			fd, err = unix.Socket(unix.AF_INET6, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.IPPROTO_ICMPV6)
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("ping %s: raw socket in namespace %s: %w", dst, n, err)
	}
	defer unix.Close(fd)
	var sa unix.Sockaddr
	if v4 {
		s := &unix.SockaddrInet4{}
		copy(s.Addr[:], ip.To4())
		sa = s
	} else {
		s := &unix.SockaddrInet6{}
		copy(s.Addr[:], ip.To16())
		sa = s
	}
	var tok [8]byte
	rand.Read(tok[:])
	id := binary.BigEndian.Uint16(tok[:2])
	deadline := time.Now().Add(timeout)
	buf := make([]byte, 2048)
	var lastErr error
	for seq := uint16(1); time.Now().Before(deadline); seq++ {
		msg := echoRequest(v4, id, seq, tok[:])
		if err := unix.Sendto(fd, msg, 0, sa); err != nil {
			lastErr = err // e.g. ENETUNREACH: keep trying until the deadline
		}
		next := time.Now().Add(200 * time.Millisecond)
		if next.After(deadline) {
			next = deadline
		}
		for {
			left := time.Until(next)
			if left <= 0 {
				break
			}
			pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
			nready, err := unix.Poll(pfd, int(left/time.Millisecond)+1)
			if err != nil && !errors.Is(err, unix.EINTR) {
				return fmt.Errorf("ping %s: poll: %w", dst, err)
			}
			if nready <= 0 {
				continue
			}
			nr, _, err := unix.Recvfrom(fd, buf, unix.MSG_DONTWAIT)
			if err != nil {
				continue
			}
			if isEchoReply(v4, buf[:nr], id, tok[:]) {
				return nil
			}
		}
	}
	if lastErr != nil {
		return fmt.Errorf("ping %s from namespace %s: no reply within %v (last send error: %v)", dst, n, timeout, lastErr)
	}
	return fmt.Errorf("ping %s from namespace %s: no reply within %v", dst, n, timeout)
}

func echoRequest(v4 bool, id, seq uint16, payload []byte) []byte {
	m := header.ICMP(make([]byte, header.ICMPMinimumSize+len(payload)))
	copy(m[header.ICMPMinimumSize:], payload)
	m.SetIdent(id)
	m.SetSequence(seq)
	if !v4 {
		m.SetType(header.ICMPv6EchoRequest)
		return m // the kernel fills in the ICMPv6 checksum
	}
	m.SetType(header.ICMPv4EchoRequest)
	m.SetChecksum(m.CalculateChecksum(0))
	return m
}

func isEchoReply(v4 bool, b []byte, id uint16, payload []byte) bool {
	reply := uint8(header.ICMPv6EchoReply)
	if v4 {
		if len(b) < header.IPv4MinimumSize {
			return false
		}
		ihl := header.IPv4(b).HeaderLength()
		if ihl < header.IPv4MinimumSize || len(b) < ihl {
			return false
		}
		b = b[ihl:]
		reply = header.ICMPv4EchoReply
	}
	if len(b) < header.ICMPMinimumSize || header.ICMP(b).Type() != reply {
		return false
	}
	return header.ICMP(b).Ident() == id && bytes.Equal(b[header.ICMPMinimumSize:], payload)
}
