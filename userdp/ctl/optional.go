package ctl

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/ovsdp/ovsdp/odp"
)

// The optional interfaces of a datapath that the control socket carries:
// odp.Meters, odp.Conntracker and odp.CTLimiter. A served datapath
// without one answers EOPNOTSUPP (odp.ErrUnsupported).

var (
	_ odp.Meters      = (*Client)(nil)
	_ odp.Conntracker = (*Client)(nil)
	_ odp.CTLimiter   = (*Client)(nil)
)

// handleMeter answers meter_features, set_meter, get_meter and del_meter.
func (s *Server) handleMeter(ctx context.Context, req *request, enc *json.Encoder) error {
	m, ok := s.dp.(odp.Meters)
	if !ok {
		return fmt.Errorf("ctl: %s: this datapath has no meters: %w", req.Op, odp.ErrUnsupported)
	}
	switch req.Op {
	case "meter_features":
		f, err := m.MeterFeatures(ctx)
		if err != nil {
			return err
		}
		return enc.Encode(&response{MeterFeatures: &f})
	case "set_meter":
		if req.Meter == nil {
			return fmt.Errorf("ctl: set_meter without a meter: %w", errInvalid)
		}
		if err := m.SetMeter(ctx, *req.Meter, req.Clear); err != nil {
			return err
		}
		return enc.Encode(&response{})
	}
	get := m.GetMeter
	if req.Op == "del_meter" {
		get = m.DelMeter
	}
	mi, err := get(ctx, req.Number)
	if err != nil {
		return err
	}
	return enc.Encode(&response{Meter: mi})
}

// MeterFeatures implements odp.Meters.
func (c *Client) MeterFeatures(ctx context.Context) (odp.MeterFeatures, error) {
	return callFor(ctx, c, &request{Op: "meter_features"}, "features", func(r *response) *odp.MeterFeatures { return r.MeterFeatures })
}

// SetMeter implements odp.Meters.
func (c *Client) SetMeter(ctx context.Context, m odp.MeterInfo, clearStats bool) error {
	_, err := c.call(ctx, &request{Op: "set_meter", Meter: &m, Clear: clearStats})
	return err
}

// GetMeter implements odp.Meters.
func (c *Client) GetMeter(ctx context.Context, id uint32) (*odp.MeterInfo, error) {
	return c.meter(ctx, "get_meter", id)
}

// DelMeter implements odp.Meters.
func (c *Client) DelMeter(ctx context.Context, id uint32) (*odp.MeterInfo, error) {
	return c.meter(ctx, "del_meter", id)
}

func (c *Client) meter(ctx context.Context, op string, id uint32) (*odp.MeterInfo, error) {
	m, err := callFor(ctx, c, &request{Op: op, Number: id}, "a meter", func(r *response) *odp.MeterInfo { return r.Meter })
	if err != nil {
		return nil, err
	}
	return &m, nil
}

// handleConntrack answers ct_dump, ct_flush, ct_stats, ct_count,
// ct_get_max and ct_set_max.
func (s *Server) handleConntrack(ctx context.Context, req *request, enc *json.Encoder) error {
	ct, ok := s.dp.(odp.Conntracker)
	if !ok {
		return fmt.Errorf("ctl: %s: this datapath has no connection tracker: %w", req.Op, odp.ErrUnsupported)
	}
	var f odp.CTFilter
	if req.CTFilter != nil {
		f = *req.CTFilter
	}
	var n uint32
	var err error
	switch req.Op {
	case "ct_dump":
		err = ct.DumpConntrack(ctx, f, func(e *odp.CTEntry) error {
			return enc.Encode(&response{CTEntry: e, More: true})
		})
		if err == nil {
			err = enc.Encode(&response{})
		}
		return err
	case "ct_flush":
		err = ct.FlushConntrack(ctx, f)
	case "ct_set_max":
		err = ct.SetMaxConns(ctx, req.Number)
	case "ct_stats":
		st, err := ct.ConntrackStats(ctx)
		if err != nil {
			return err
		}
		return enc.Encode(&response{CTStats: &st})
	case "ct_count":
		n, err = ct.ConntrackCount(ctx)
		if err == nil {
			return enc.Encode(&response{Count: &n})
		}
	case "ct_get_max":
		n, err = ct.MaxConns(ctx)
		if err == nil {
			return enc.Encode(&response{Count: &n})
		}
	}
	if err != nil {
		return err
	}
	return enc.Encode(&response{})
}

// DumpConntrack implements odp.Conntracker. Entries stream from the
// server; if fn fails, the rest is read and discarded.
func (c *Client) DumpConntrack(ctx context.Context, f odp.CTFilter, fn func(*odp.CTEntry) error) error {
	return c.stream(ctx, &request{Op: "ct_dump", CTFilter: &f}, func(r *response) error {
		if r.CTEntry == nil {
			return nil
		}
		return fn(r.CTEntry)
	})
}

// FlushConntrack implements odp.Conntracker.
func (c *Client) FlushConntrack(ctx context.Context, f odp.CTFilter) error {
	_, err := c.call(ctx, &request{Op: "ct_flush", CTFilter: &f})
	return err
}

// ConntrackStats implements odp.Conntracker.
func (c *Client) ConntrackStats(ctx context.Context) (odp.CTStats, error) {
	return callFor(ctx, c, &request{Op: "ct_stats"}, "statistics", func(r *response) *odp.CTStats { return r.CTStats })
}

// ConntrackCount implements odp.Conntracker.
func (c *Client) ConntrackCount(ctx context.Context) (uint32, error) {
	return c.ctNumber(ctx, "ct_count")
}

// MaxConns implements odp.Conntracker.
func (c *Client) MaxConns(ctx context.Context) (uint32, error) {
	return c.ctNumber(ctx, "ct_get_max")
}

// SetMaxConns implements odp.Conntracker.
func (c *Client) SetMaxConns(ctx context.Context, n uint32) error {
	_, err := c.call(ctx, &request{Op: "ct_set_max", Number: n})
	return err
}

func (c *Client) ctNumber(ctx context.Context, op string) (uint32, error) {
	return callFor(ctx, c, &request{Op: op}, "a number", func(r *response) *uint32 { return r.Count })
}

// handleLimits answers ct_set_limits, ct_get_limits and ct_del_limits.
func (s *Server) handleLimits(ctx context.Context, req *request, enc *json.Encoder) error {
	l, ok := s.dp.(odp.CTLimiter)
	if !ok {
		return fmt.Errorf("ctl: %s: this datapath has no conntrack zone limits: %w", req.Op, odp.ErrUnsupported)
	}
	var err error
	switch req.Op {
	case "ct_set_limits":
		err = l.SetZoneLimits(ctx, req.ZoneLimits)
	case "ct_del_limits":
		err = l.DelZoneLimits(ctx, req.Zones...)
	default:
		ls, err := l.ZoneLimits(ctx, req.Zones...)
		if err != nil {
			return err
		}
		if ls == nil {
			ls = []odp.CTZoneLimit{}
		}
		return enc.Encode(&response{ZoneLimits: &ls})
	}
	if err != nil {
		return err
	}
	return enc.Encode(&response{})
}

// SetZoneLimits implements odp.CTLimiter.
func (c *Client) SetZoneLimits(ctx context.Context, limits []odp.CTZoneLimit) error {
	_, err := c.call(ctx, &request{Op: "ct_set_limits", ZoneLimits: limits})
	return err
}

// ZoneLimits implements odp.CTLimiter.
func (c *Client) ZoneLimits(ctx context.Context, zones ...int32) ([]odp.CTZoneLimit, error) {
	return callFor(ctx, c, &request{Op: "ct_get_limits", Zones: zones}, "zone limits", func(r *response) *[]odp.CTZoneLimit { return r.ZoneLimits })
}

// DelZoneLimits implements odp.CTLimiter.
func (c *Client) DelZoneLimits(ctx context.Context, zones ...int32) error {
	_, err := c.call(ctx, &request{Op: "ct_del_limits", Zones: zones})
	return err
}
