package ctl

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ovsdp/ovsdp/internal/linereader"
	"github.com/ovsdp/ovsdp/internal/runsock"
	"github.com/ovsdp/ovsdp/odp"
)

// Server serves one datapath on a Unix socket.
type Server struct {
	dp odp.Datapath
	l  net.Listener

	// OnDelete, when set, is called (once per request) when a client asks
	// to delete the datapath (dpctl del-dp); the hosting process then
	// removes the datapath and exits. Without it, delete is refused.
	OnDelete func()
	// Logger receives the report of a panic contained to a connection
	// (see Panics); nil means slog.Default(). OnPanic, when set, is
	// called after each such report (for a metric).
	Logger  *slog.Logger
	OnPanic func()

	panics atomic.Uint64

	limits

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool           // set by Close: admit takes no more connections
	wg     sync.WaitGroup // the connections' goroutines; Add under mu

}

// Listen creates the control socket at path (removing a stale one whose
// server is gone) and returns a server for dp. Call Serve to answer
// requests and Close to stop. The socket is mode 0600 in a 0700
// directory (0660 and 0750 with WithGroup), set explicitly whatever the
// umask, and every connection's peer is checked (see package runsock).
func Listen(path string, dp odp.Datapath, opts ...Option) (*Server, error) {
	s := &Server{dp: dp, conns: map[net.Conn]struct{}{}}
	s.setOptions(opts)
	l, err := runsock.Listen(path, s.access)
	if err != nil {
		return nil, fmt.Errorf("ctl: %w", err)
	}
	s.l = l
	return s, nil
}

// Addr is the socket path.
func (s *Server) Addr() string { return s.l.Addr().String() }

// Serve accepts connections until Close. It returns nil after Close.
func (s *Server) Serve(ctx context.Context) error {
	for {
		c, err := s.l.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			return fmt.Errorf("ctl: accept: %w", err)
		}
		if !s.admit(c) {
			continue
		}
		go func() {
			defer s.wg.Done()
			s.serveConnContained(ctx, c)
			s.release(c)
		}()
	}
}

// Close stops the server, closes every connection, and removes the
// socket file.
func (s *Server) Close() error {
	err := s.l.Close()
	s.mu.Lock()
	s.closed = true
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	return err
}

// serveConn answers the requests of one client, in order, until it
// closes, stays idle for longer than the idle timeout (it is told so),
// or a write fails. A request longer than maxLine gets an error answer
// and the connection goes on with the next line.
func (s *Server) serveConn(ctx context.Context, c net.Conn) {
	defer c.Close()
	r := linereader.New(c, maxLine)
	r.BeforeRead = func() error { return c.SetReadDeadline(time.Now().Add(s.idle)) }
	w := bufio.NewWriter(deadlineWriter{c, s.idle})
	enc := json.NewEncoder(w)
	deleted := false // a delete was answered: call OnDelete after the flush
	for {
		line, _, long, err := r.Next()
		switch {
		case long:
			_ = enc.Encode(errResponse(errTooLong))
		case errors.Is(err, os.ErrDeadlineExceeded):
			_ = enc.Encode(idleResponse(s.idle))
			_ = w.Flush()
			return
		case err != nil:
			return
		default:
			var req request
			if err := json.Unmarshal(line, &req); err != nil {
				_ = enc.Encode(errResponse(fmt.Errorf("ctl: bad request: %w", err)))
			} else if req.Op == "psample_events" {
				// The connection carries the stream until either end
				// goes (psample.go).
				s.streamPsample(ctx, c, enc, w)
				return
			} else if err := s.handle(ctx, &req, enc); err != nil {
				_ = enc.Encode(errResponse(err))
			} else if req.Op == "delete" {
				deleted = true
			}
		}
		if w.Flush() != nil {
			return
		}
		if deleted {
			go s.OnDelete()
			deleted = false
		}
	}
}

func errResponse(err error) *response {
	return &response{Err: err.Error(), Errno: errnoName(err)}
}

// handle answers one request. It writes the response(s) itself on
// success and returns an error otherwise.
func (s *Server) handle(ctx context.Context, req *request, enc *json.Encoder) error {
	dp := s.dp
	switch req.Op {
	case "info":
		info, err := dp.Info(ctx)
		if err != nil {
			return err
		}
		return enc.Encode(&response{Info: &info})
	case "ports":
		ports, err := dp.Ports(ctx)
		if err != nil {
			return err
		}
		if ports == nil {
			ports = []odp.Port{}
		}
		return enc.Encode(&response{Ports: ports})
	case "add_port", "set_port":
		if req.Spec == nil {
			return fmt.Errorf("ctl: %s without a port: %w", req.Op, errInvalid)
		}
		if req.Op == "set_port" {
			if err := dp.SetPort(ctx, *req.Spec); err != nil {
				return err
			}
			return enc.Encode(&response{})
		}
		p, err := dp.AddPort(ctx, *req.Spec)
		if err != nil {
			return err
		}
		return enc.Encode(&response{Port: &p})
	case "del_port":
		if err := dp.DelPort(ctx, req.Number); err != nil {
			return err
		}
		return enc.Encode(&response{})
	case "put_flow":
		if req.Flow == nil {
			return fmt.Errorf("ctl: put_flow without a flow: %w", errInvalid)
		}
		f, err := fromWireFlow(req.Flow)
		if err != nil {
			return fmt.Errorf("%w: %w", err, errInvalid)
		}
		st, err := dp.PutFlow(ctx, f, req.Flags)
		if err != nil {
			return err
		}
		return enc.Encode(&response{Stats: &st})
	case "get_flow", "del_flow":
		id, err := fromWireID(req.ID)
		if err != nil {
			return err
		}
		if req.Op == "del_flow" {
			st, err := dp.DelFlow(ctx, id)
			if err != nil {
				return err
			}
			return enc.Encode(&response{Stats: &st})
		}
		f, err := dp.GetFlow(ctx, id)
		if err != nil {
			return err
		}
		wf, err := toWireFlow(f)
		if err != nil {
			return err
		}
		return enc.Encode(&response{Flow: wf})
	case "delete":
		if s.OnDelete == nil {
			return fmt.Errorf("ctl: this process does not allow deleting its datapath: %w", odp.ErrUnsupported)
		}
		// serveConn calls OnDelete once this answer is flushed: called
		// here, it could close the connection before the client reads it.
		return enc.Encode(&response{})
	case "flush":
		if err := dp.FlushFlows(ctx); err != nil {
			return err
		}
		return enc.Encode(&response{})
	case "dump":
		var opts odp.DumpOptions
		if req.Dump != nil {
			opts = *req.Dump
		}
		err := dp.DumpFlows(ctx, opts, func(f *odp.Flow) error {
			wf, err := toWireFlow(f)
			if err != nil {
				return err
			}
			return enc.Encode(&response{Flow: wf, More: true})
		})
		if err != nil {
			return err
		}
		return enc.Encode(&response{})
	case "meter_features", "set_meter", "get_meter", "del_meter":
		return s.handleMeter(ctx, req, enc)
	case "ct_dump", "ct_flush", "ct_stats", "ct_count", "ct_get_max", "ct_set_max":
		return s.handleConntrack(ctx, req, enc)
	case "ct_set_limits", "ct_get_limits", "ct_del_limits":
		return s.handleLimits(ctx, req, enc)
	case "ipf_enable", "ipf_min_frag", "ipf_max_frags", "ipf_status", "ipf_queues",
		"ct_get_seq_check", "ct_set_seq_check", "ct_get_sweep", "ct_set_sweep", "ct_buckets":
		return s.handleTuning(ctx, req, enc)
	case "execute":
		if req.Packet == nil {
			return fmt.Errorf("ctl: execute without a packet: %w", errInvalid)
		}
		p := &odp.Packet{Data: req.Packet.Data, MRU: req.Packet.MRU, Hash: req.Packet.Hash, Probe: req.Packet.Probe}
		var err error
		if p.Key, err = odp.UnmarshalKey(req.Packet.Key); err != nil {
			return fmt.Errorf("%w: %w", err, errInvalid)
		}
		if p.Actions, err = odp.UnmarshalActions(req.Packet.Actions); err != nil {
			return fmt.Errorf("%w: %w", err, errInvalid)
		}
		if err := dp.Execute(ctx, p); err != nil {
			return err
		}
		return enc.Encode(&response{})
	}
	return fmt.Errorf("ctl: unknown operation %q: %w", req.Op, errInvalid)
}

func fromWireID(w *wireFlowID) (odp.FlowID, error) {
	if w == nil {
		return odp.FlowID{}, fmt.Errorf("ctl: request without a flow identifier: %w", errInvalid)
	}
	id := odp.FlowID{UFID: w.UFID}
	if w.Key != nil {
		k, err := odp.UnmarshalKey(w.Key)
		if err != nil {
			return id, fmt.Errorf("%w: %w", err, errInvalid)
		}
		id.Key = k
	}
	return id, nil
}
