package ctl

import (
	"encoding/json"
	"fmt"
	"net"
	"syscall"
	"time"

	"github.com/ovsdp/ovsdp/internal/runsock"
)

// maxLine bounds one request line (a packet to execute or a large flow).
const maxLine = 4 << 20

// Defaults of the server's limits.
const (
	// DefaultMaxConns is how many connections a server serves at once.
	DefaultMaxConns = 64
	// DefaultIdleTimeout is how long a connection may wait between
	// requests (and a reply may wait for its reader) before the server
	// closes it.
	DefaultIdleTimeout = 2 * time.Minute
)

// errTooLong is the answer to a request line longer than maxLine.
var errTooLong = &limitError{
	msg:   fmt.Sprintf("ctl: request longer than %d bytes (4 MiB) refused", maxLine),
	errno: syscall.EMSGSIZE,
}

// limitError is a refusal by one of the server's limits; it matches its
// errno and says what the limit is without the errno's text.
type limitError struct {
	msg   string
	errno syscall.Errno
}

func (e *limitError) Error() string { return e.msg }

// Is matches the errno.
func (e *limitError) Is(target error) bool { return target == e.errno }

// Option configures a Server (Listen).
type Option func(*limits)

// WithGroup lets the members of group gid (named name in messages) use
// the control socket besides root and the server's own user: the socket
// becomes 0660 and group gid, its directory 0750.
func WithGroup(gid int, name string) Option {
	return func(l *limits) { l.access = runsock.Access{GID: gid, Group: name} }
}

// WithMaxConns sets how many connections are served at once
// (DefaultMaxConns); past it a new connection gets an error (EAGAIN)
// and is closed.
func WithMaxConns(n int) Option {
	return func(l *limits) { l.maxConns = max(n, 1) }
}

// WithIdleTimeout sets how long a connection may stay idle
// (DefaultIdleTimeout).
func WithIdleTimeout(d time.Duration) Option {
	return func(l *limits) {
		if d > 0 {
			l.idle = d
		}
	}
}

// limits are a server's access rule and bounds.
type limits struct {
	access   runsock.Access
	maxConns int
	idle     time.Duration
}

func (s *Server) setOptions(opts []Option) {
	s.limits = limits{access: runsock.RootOnly, maxConns: DefaultMaxConns, idle: DefaultIdleTimeout}
	for _, o := range opts {
		o(&s.limits)
	}
}

// what names the served datapath in messages.
func (s *Server) what() string { return s.dp.Type() + "@" + s.dp.Name() }

// admit decides whether the accepted connection c is served: its peer
// must pass the access check and a connection slot must be free. A
// refused connection gets one error line and is closed. An admitted one
// is registered (release unregisters it).
func (s *Server) admit(c net.Conn) bool {
	err := s.access.Check(c, s.what())
	if err == nil {
		s.mu.Lock()
		if s.closed {
			// Close ran between Accept and here: it has closed the
			// connections it knew and may be waiting for them.
			s.mu.Unlock()
			c.Close()
			return false
		}
		if len(s.conns) < s.maxConns {
			s.conns[c] = struct{}{}
			s.wg.Add(1) // under mu, so never concurrent with Close's Wait
			s.mu.Unlock()
			return true
		}
		s.mu.Unlock()
		err = &limitError{
			msg:   fmt.Sprintf("ctl: %s serves %d connections already (its limit): try again later", s.what(), s.maxConns),
			errno: syscall.EAGAIN,
		}
	}
	refuse(c, err)
	return false
}

// refuse answers c with err and closes it, without waiting for a slow
// reader.
func refuse(c net.Conn, err error) {
	_ = c.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
	b, _ := json.Marshal(errResponse(err))
	_, _ = c.Write(append(b, '\n'))
	c.Close()
}

// release unregisters a connection that admit admitted.
func (s *Server) release(c net.Conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
}

// idleResponse tells a client that its connection was idle for too long
// and is closed: it did not reach the server, which the client may
// redial and resend.
func idleResponse(d time.Duration) *response {
	return &response{
		Err:    fmt.Sprintf("ctl: connection idle for more than %v: closed by the server", d),
		Errno:  "ETIMEDOUT",
		Closed: true,
	}
}

// deadlineWriter sets a write deadline before each write, so that a
// client that stops reading a long dump frees its connection.
type deadlineWriter struct {
	c net.Conn
	d time.Duration
}

func (w deadlineWriter) Write(b []byte) (int, error) {
	if err := w.c.SetWriteDeadline(time.Now().Add(w.d)); err != nil {
		return 0, err
	}
	return w.c.Write(b)
}
