package ctl

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/ovsdp/ovsdp/odp"
)

// The meter operations carry odp.Meters across the socket: a served
// datapath without meters answers EOPNOTSUPP (odp.ErrUnsupported).

var _ odp.Meters = (*Client)(nil)

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
	r, err := c.call(ctx, &request{Op: "meter_features"})
	if err != nil {
		return odp.MeterFeatures{}, err
	}
	if r.MeterFeatures == nil {
		return odp.MeterFeatures{}, fmt.Errorf("ctl: netdev@%s: meter_features reply without features", c.name)
	}
	return *r.MeterFeatures, nil
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
	r, err := c.call(ctx, &request{Op: op, Number: id})
	if err != nil {
		return nil, err
	}
	if r.Meter == nil {
		return nil, fmt.Errorf("ctl: netdev@%s: %s reply without a meter", c.name, op)
	}
	return r.Meter, nil
}
