package ctl

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"runtime/debug"
)

// Panics is how many panics in connections the server contained: each
// was logged with its stack and closed its connection only; the server
// and the datapath went on serving.
func (s *Server) Panics() uint64 { return s.panics.Load() }

// serveConnContained is serveConn with a panic contained to the
// connection: it is logged (Server.Logger, else slog.Default()) with the
// panic value and the goroutine's stack, counted (Panics), and the
// connection is closed (serveConn's deferred Close runs while the panic
// unwinds); then OnPanic is called.
func (s *Server) serveConnContained(ctx context.Context, c net.Conn) {
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		s.panics.Add(1)
		log := s.Logger
		if log == nil {
			log = slog.Default()
		}
		log.Error("control connection panicked; closed it, the server goes on",
			"socket", s.Addr(), "panic", fmt.Sprint(r), "panics_contained", s.panics.Load(), "stack", string(debug.Stack()))
		if s.OnPanic != nil {
			s.OnPanic()
		}
	}()
	s.serveConn(ctx, c)
}
