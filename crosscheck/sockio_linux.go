package crosscheck

import (
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// The socket calls below block on sockets that carry SO_RCVTIMEO and
// SO_SNDTIMEO (socketIn sets both). On such sockets Linux does not restart
// a call that a signal interrupted, even under SA_RESTART (signal(7)), and
// the Go runtime signals its threads all the time (preemption), so each
// call here retries on EINTR until its deadline instead of failing the
// exchange.

// recvfrom reads one datagram, retrying on EINTR until deadline.
func recvfrom(fd int, buf []byte, deadline time.Time) (int, unix.Sockaddr, error) {
	for {
		n, from, err := unix.Recvfrom(fd, buf, 0)
		if err == unix.EINTR && time.Now().Before(deadline) {
			continue
		}
		return n, from, err
	}
}

// sendto sends one datagram, retrying on EINTR until deadline.
func sendto(fd int, p []byte, to unix.Sockaddr, deadline time.Time) error {
	for {
		err := unix.Sendto(fd, p, 0, to)
		if err == unix.EINTR && time.Now().Before(deadline) {
			continue
		}
		return err
	}
}

// accept accepts one connection, retrying on EINTR until deadline.
func accept(fd int, deadline time.Time) (int, error) {
	for {
		nfd, _, err := unix.Accept4(fd, unix.SOCK_CLOEXEC)
		if err == unix.EINTR && time.Now().Before(deadline) {
			continue
		}
		return nfd, err
	}
}

// writeAll writes all of p to a stream socket, retrying on EINTR until
// deadline.
func writeAll(fd int, p []byte, deadline time.Time) error {
	for len(p) > 0 {
		n, err := unix.Write(fd, p)
		if err == unix.EINTR && time.Now().Before(deadline) {
			continue
		}
		if err != nil {
			return err
		}
		p = p[n:]
	}
	return nil
}

// connect connects a stream socket to sa by deadline. A connect that a
// signal interrupts goes on in the background (connect(2)): calling it
// again would only say EALREADY, so connect then waits for the socket to
// become writable and reads the outcome from SO_ERROR.
func connect(fd int, sa unix.Sockaddr, deadline time.Time) error {
	err := unix.Connect(fd, sa)
	if err != unix.EINTR && err != unix.EINPROGRESS && err != unix.EALREADY {
		return err
	}
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return fmt.Errorf("connection not established in time: %w", unix.ETIMEDOUT)
		}
		pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLOUT}}
		n, err := unix.Poll(pfd, int(left.Milliseconds())+1)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return fmt.Errorf("poll: %w", err)
		}
		if n == 0 {
			continue
		}
		soerr, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ERROR)
		if err != nil {
			return fmt.Errorf("SO_ERROR: %w", err)
		}
		if soerr != 0 {
			return unix.Errno(soerr)
		}
		return nil
	}
}
