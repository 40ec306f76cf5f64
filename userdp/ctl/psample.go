package ctl

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"

	"github.com/ovsdp/ovsdp/odp"
)

// psample_events: the connection becomes a stream of the datapath's
// psample events, one response each (More set), written as they come,
// until the client closes the connection or the datapath closes (a last
// response without More). The idle timeout does not apply to it.

// streamPsample serves a psample_events request on c.
func (s *Server) streamPsample(ctx context.Context, c net.Conn, enc *json.Encoder, w *bufio.Writer) {
	p, ok := s.dp.(odp.Psampler)
	if !ok {
		_ = enc.Encode(errResponse(fmt.Errorf("ctl: psample events: %w", odp.ErrUnsupported)))
		_ = w.Flush()
		return
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	evs, err := p.PsampleEvents(ctx)
	if err != nil {
		_ = enc.Encode(errResponse(err))
		_ = w.Flush()
		return
	}
	// The client sends nothing more: a read returns when it closes.
	go func() {
		_ = c.SetReadDeadline(time0)
		_, _ = io.Copy(io.Discard, c)
		cancel()
	}()
	if enc.Encode(&response{More: true}) != nil || w.Flush() != nil { // subscribed
		return
	}
	for ev := range evs {
		if enc.Encode(&response{Psample: &ev, More: true}) != nil || w.Flush() != nil {
			return
		}
	}
	_ = enc.Encode(&response{})
	_ = w.Flush()
}

// PsampleEvents implements odp.Psampler: the connection turns into a
// stream of the datapath's psample events, so the Client can be used for
// nothing else afterwards; the channel is closed when ctx is done (the
// connection is then closed too) or the datapath or its process goes.
func (c *Client) PsampleEvents(ctx context.Context) (<-chan odp.PsampleEvent, error) {
	c.mu.Lock()
	r, err := c.exchange(ctx, &request{Op: "psample_events"})
	if err != nil {
		c.mu.Unlock()
		return nil, fmt.Errorf("ctl: netdev@%s: psample events: %w", c.name, err)
	}
	if !r.More {
		c.mu.Unlock()
		return nil, fmt.Errorf("ctl: netdev@%s: psample events: the stream ended at once", c.name)
	}
	_ = c.conn.SetDeadline(time0)
	out := make(chan odp.PsampleEvent)
	stop := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			c.conn.Close()
		case <-stop:
		}
	}()
	go func() {
		defer c.mu.Unlock()
		defer close(out)
		defer close(stop)
		for {
			r, err := c.recv("psample_events")
			if err != nil || !r.More {
				return
			}
			if r.Psample == nil {
				continue
			}
			select {
			case out <- *r.Psample:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, nil
}
