package ctl

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/ovsdp/ovsdp/internal/runsock"
	"github.com/ovsdp/ovsdp/odp"
)

// errInvalid marks requests the server cannot decode.
var errInvalid = syscall.EINVAL

// time0 clears a connection deadline.
var time0 time.Time

// Client is an odp.Datapath that forwards every call to a userspace
// datapath's control socket. Calls are serialised on one connection.
type Client struct {
	name string
	mu   sync.Mutex
	conn net.Conn
	r    *bufio.Reader
}

var _ odp.Datapath = (*Client)(nil)

// Dial connects to the control socket of the userspace datapath name. A
// datapath that does not exist gives an error matching os.ErrNotExist.
// One the caller may not use gives an error matching os.ErrPermission
// that says who may ("permission denied: netdev@NAME is owned by root;
// run as root or join group G").
func Dial(name string) (*Client, error) {
	c, err := dial(name)
	if err != nil {
		return nil, err
	}
	return &Client{name: name, conn: c, r: bufio.NewReaderSize(c, 64*1024)}, nil
}

// dial connects to the control socket of netdev@name.
func dial(name string) (net.Conn, error) {
	path := SocketPath(name)
	c, err := net.Dial("unix", path)
	if err != nil {
		if errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED) {
			return nil, fmt.Errorf("userspace datapath netdev@%s does not exist (no server on %s): %w", name, path, os.ErrNotExist)
		}
		if runsock.IsDenied(err) {
			return nil, runsock.Denied("netdev@"+name, path)
		}
		return nil, fmt.Errorf("connecting to netdev@%s on %s: %w", name, path, err)
	}
	return c, nil
}

// redial replaces the connection (the server closed it for idleness);
// the caller holds c.mu.
func (c *Client) redial() error {
	conn, err := dial(c.name)
	if err != nil {
		return err
	}
	c.conn.Close()
	c.conn, c.r = conn, bufio.NewReaderSize(conn, 64*1024)
	return nil
}

// Name implements odp.Datapath.
func (c *Client) Name() string { return c.name }

// Type implements odp.Datapath: "netdev".
func (c *Client) Type() string { return "netdev" }

// Close closes the connection; the datapath stays.
func (c *Client) Close() error { return c.conn.Close() }

// send writes one request; the caller holds c.mu.
func (c *Client) send(ctx context.Context, req *request) error {
	if dl, ok := ctx.Deadline(); ok {
		_ = c.conn.SetDeadline(dl)
	} else {
		_ = c.conn.SetDeadline(time0)
	}
	b, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("ctl: encoding %s request: %w", req.Op, err)
	}
	b = append(b, '\n')
	if _, err := c.conn.Write(b); err != nil {
		// A server that refused the connection (its peer check, its
		// connection limit) or closed it (idle) said why first.
		if r := c.pending(); r != nil {
			return &sendError{r: r}
		}
		return fmt.Errorf("ctl: netdev@%s: %s: %w", c.name, req.Op, err)
	}
	return nil
}

// sendError is a send that failed because the server had answered and
// closed the connection; r is its answer.
type sendError struct{ r *response }

func (e *sendError) Error() string { return e.r.Err }

// pending returns the answer the server left before closing, if any.
func (c *Client) pending() *response {
	_ = c.conn.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	line, err := c.r.ReadBytes('\n')
	if err != nil {
		return nil
	}
	var r response
	if json.Unmarshal(line, &r) != nil || r.Err == "" {
		return nil
	}
	return &r
}

// exchange sends req and reads the first response, redialling and
// sending again once when the server had closed the connection for
// idleness (it then never read req); the caller holds c.mu.
func (c *Client) exchange(ctx context.Context, req *request) (*response, error) {
	for try := 0; ; try++ {
		var (
			r   *response
			err error
		)
		if err = c.send(ctx, req); err == nil {
			r, err = c.recv(req.Op)
		} else if se, ok := err.(*sendError); ok {
			r, err = se.r, toError(se.r)
		}
		if try > 0 || r == nil || !r.Closed {
			return r, err
		}
		if err := c.redial(); err != nil {
			return nil, err
		}
	}
}

// recv reads one response; the caller holds c.mu.
func (c *Client) recv(op string) (*response, error) {
	line, err := c.r.ReadBytes('\n')
	if err != nil {
		return nil, fmt.Errorf("ctl: netdev@%s: %s: reading reply: %w", c.name, op, err)
	}
	var r response
	if err := json.Unmarshal(line, &r); err != nil {
		return nil, fmt.Errorf("ctl: netdev@%s: %s: bad reply: %w", c.name, op, err)
	}
	return &r, toError(&r)
}

// call sends req and reads its single response.
func (c *Client) call(ctx context.Context, req *request) (*response, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.exchange(ctx, req)
}

// Info implements odp.Datapath.
func (c *Client) Info(ctx context.Context) (odp.DatapathInfo, error) {
	return callFor(ctx, c, &request{Op: "info"}, "info", func(r *response) *odp.DatapathInfo { return r.Info })
}

// callFor sends req and returns the part of its answer that get picks,
// or an error naming what when the answer lacks it.
func callFor[T any](ctx context.Context, c *Client, req *request, what string, get func(*response) *T) (T, error) {
	var zero T
	r, err := c.call(ctx, req)
	if err != nil {
		return zero, err
	}
	v := get(r)
	if v == nil {
		return zero, fmt.Errorf("ctl: netdev@%s: %s reply without %s", c.name, req.Op, what)
	}
	return *v, nil
}

// Ports implements odp.Datapath.
func (c *Client) Ports(ctx context.Context) ([]odp.Port, error) {
	r, err := c.call(ctx, &request{Op: "ports"})
	if err != nil {
		return nil, err
	}
	return r.Ports, nil
}

// AddPort implements odp.Datapath.
func (c *Client) AddPort(ctx context.Context, spec odp.PortSpec) (odp.Port, error) {
	return callFor(ctx, c, &request{Op: "add_port", Spec: &spec}, "a port", func(r *response) *odp.Port { return r.Port })
}

// SetPort implements odp.Datapath.
func (c *Client) SetPort(ctx context.Context, spec odp.PortSpec) error {
	_, err := c.call(ctx, &request{Op: "set_port", Spec: &spec})
	return err
}

// DelPort implements odp.Datapath.
func (c *Client) DelPort(ctx context.Context, number uint32) error {
	_, err := c.call(ctx, &request{Op: "del_port", Number: number})
	return err
}

// PutFlow implements odp.Datapath.
func (c *Client) PutFlow(ctx context.Context, f *odp.Flow, flags odp.PutFlags) (odp.FlowStats, error) {
	wf, err := toWireFlow(f)
	if err != nil {
		return odp.FlowStats{}, err
	}
	r, err := c.call(ctx, &request{Op: "put_flow", Flow: wf, Flags: flags})
	if err != nil || r.Stats == nil {
		return odp.FlowStats{}, err
	}
	return *r.Stats, nil
}

func toWireID(id odp.FlowID) (*wireFlowID, error) {
	w := &wireFlowID{UFID: id.UFID}
	if id.Key != nil {
		b, err := odp.MarshalKey(id.Key)
		if err != nil {
			return nil, err
		}
		w.Key = b
	}
	return w, nil
}

// GetFlow implements odp.Datapath.
func (c *Client) GetFlow(ctx context.Context, id odp.FlowID) (*odp.Flow, error) {
	wid, err := toWireID(id)
	if err != nil {
		return nil, err
	}
	r, err := c.call(ctx, &request{Op: "get_flow", ID: wid})
	if err != nil {
		return nil, err
	}
	if r.Flow == nil {
		return nil, fmt.Errorf("ctl: netdev@%s: get_flow reply without a flow", c.name)
	}
	return fromWireFlow(r.Flow)
}

// DelFlow implements odp.Datapath.
func (c *Client) DelFlow(ctx context.Context, id odp.FlowID) (odp.FlowStats, error) {
	wid, err := toWireID(id)
	if err != nil {
		return odp.FlowStats{}, err
	}
	r, err := c.call(ctx, &request{Op: "del_flow", ID: wid})
	if err != nil || r.Stats == nil {
		return odp.FlowStats{}, err
	}
	return *r.Stats, nil
}

// Delete asks the process hosting the datapath to delete it and exit.
func (c *Client) Delete(ctx context.Context) error {
	_, err := c.call(ctx, &request{Op: "delete"})
	return err
}

// FlushFlows implements odp.Datapath.
func (c *Client) FlushFlows(ctx context.Context) error {
	_, err := c.call(ctx, &request{Op: "flush"})
	return err
}

// DumpFlows implements odp.Datapath. Flows stream from the server one at
// a time; if fn fails, the rest of the dump is read and discarded so the
// connection stays usable.
func (c *Client) DumpFlows(ctx context.Context, opts odp.DumpOptions, fn func(*odp.Flow) error) error {
	return c.stream(ctx, &request{Op: "dump", Dump: &opts}, func(r *response) error {
		if r.Flow == nil {
			return nil
		}
		f, err := fromWireFlow(r.Flow)
		if err != nil {
			return err
		}
		return fn(f)
	})
}

// stream sends req and calls fn with each answer of a streamed reply
// (More set) until its last one. Once fn fails, the rest is read and
// discarded, so that the connection stays usable, and fn's error is
// returned.
func (c *Client) stream(ctx context.Context, req *request, fn func(*response) error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, err := c.exchange(ctx, req)
	var fnErr error
	for ; ; r, err = c.recv(req.Op) {
		if err != nil {
			return err
		}
		if !r.More {
			return fnErr
		}
		if fnErr == nil {
			fnErr = fn(r)
		}
	}
}

// Execute implements odp.Datapath.
func (c *Client) Execute(ctx context.Context, p *odp.Packet) error {
	wp := &wirePacket{Data: p.Data, MRU: p.MRU, Hash: p.Hash, Probe: p.Probe}
	var err error
	if wp.Key, err = odp.MarshalKey(p.Key); err != nil {
		return err
	}
	if wp.Actions, err = odp.MarshalActions(p.Actions); err != nil {
		return err
	}
	_, err = c.call(ctx, &request{Op: "execute", Packet: wp})
	return err
}

// Upcalls implements odp.Datapath. Upcalls are handled inside the process
// that hosts the userspace datapath, not over the control socket.
func (c *Client) Upcalls(context.Context, int) ([]odp.UpcallReceiver, error) {
	return nil, fmt.Errorf("ctl: netdev@%s: upcalls are handled by the process hosting the datapath: %w", c.name, odp.ErrUnsupported)
}
