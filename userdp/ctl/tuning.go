package ctl

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/ovsdp/ovsdp/odp"
)

// The tracker's optional settings that the control socket carries:
// odp.FragReassembler (ipf_*), odp.CTTuner (ct_*_seq_check,
// ct_*_sweep) and odp.CTBucketCounter (ct_buckets). A served datapath
// without one answers EOPNOTSUPP (odp.ErrUnsupported).

var (
	_ odp.FragReassembler = (*Client)(nil)
	_ odp.CTTuner         = (*Client)(nil)
	_ odp.CTBucketCounter = (*Client)(nil)
)

// handleTuning answers the ipf_* and ct tuning operations.
func (s *Server) handleTuning(ctx context.Context, req *request, enc *json.Encoder) error {
	unsupported := func(what string) error {
		return fmt.Errorf("ctl: %s: this datapath's tracker has no %s: %w", req.Op, what, odp.ErrUnsupported)
	}
	var err error
	switch req.Op {
	case "ipf_enable", "ipf_min_frag", "ipf_max_frags", "ipf_status", "ipf_queues":
		r, ok := s.dp.(odp.FragReassembler)
		if !ok {
			return unsupported("fragment reassembler settings")
		}
		switch req.Op {
		case "ipf_enable":
			err = r.SetIPFEnabled(ctx, req.V6, req.On)
		case "ipf_min_frag":
			err = r.SetIPFMinFrag(ctx, req.V6, req.Number)
		case "ipf_max_frags":
			err = r.SetIPFMaxFrags(ctx, req.Number)
		case "ipf_status":
			st, err := r.IPFStatus(ctx)
			if err != nil {
				return err
			}
			return enc.Encode(&response{IPF: &st})
		case "ipf_queues":
			qs, err := r.IPFQueues(ctx)
			if err != nil {
				return err
			}
			return enc.Encode(&response{IPFQueues: qs})
		}
	case "ct_get_seq_check", "ct_set_seq_check", "ct_get_sweep", "ct_set_sweep":
		t, ok := s.dp.(odp.CTTuner)
		if !ok {
			return unsupported("TCP sequence check or sweep settings")
		}
		switch req.Op {
		case "ct_get_seq_check":
			on, err := t.TCPSeqCheck(ctx)
			if err != nil {
				return err
			}
			return enc.Encode(&response{On: &on})
		case "ct_set_seq_check":
			err = t.SetTCPSeqCheck(ctx, req.On)
		case "ct_get_sweep":
			ms, err := t.SweepInterval(ctx)
			if err != nil {
				return err
			}
			return enc.Encode(&response{Count: &ms})
		case "ct_set_sweep":
			err = t.SetSweepInterval(ctx, req.Number)
		}
	case "ct_buckets":
		b, ok := s.dp.(odp.CTBucketCounter)
		if !ok {
			return unsupported("hash buckets")
		}
		n, err := b.ConntrackBuckets(ctx)
		if err != nil {
			return err
		}
		u := uint32(n)
		return enc.Encode(&response{Count: &u})
	}
	if err != nil {
		return err
	}
	return enc.Encode(&response{})
}

// SetIPFEnabled implements odp.FragReassembler.
func (c *Client) SetIPFEnabled(ctx context.Context, v6, on bool) error {
	_, err := c.call(ctx, &request{Op: "ipf_enable", V6: v6, On: on})
	return err
}

// SetIPFMinFrag implements odp.FragReassembler.
func (c *Client) SetIPFMinFrag(ctx context.Context, v6 bool, size uint32) error {
	_, err := c.call(ctx, &request{Op: "ipf_min_frag", V6: v6, Number: size})
	return err
}

// SetIPFMaxFrags implements odp.FragReassembler.
func (c *Client) SetIPFMaxFrags(ctx context.Context, n uint32) error {
	_, err := c.call(ctx, &request{Op: "ipf_max_frags", Number: n})
	return err
}

// IPFStatus implements odp.FragReassembler.
func (c *Client) IPFStatus(ctx context.Context) (odp.IPFStatusAll, error) {
	return callFor(ctx, c, &request{Op: "ipf_status"}, "the fragment reassembler's status", func(r *response) *odp.IPFStatusAll { return r.IPF })
}

// IPFQueues implements odp.FragReassembler.
func (c *Client) IPFQueues(ctx context.Context) ([]odp.IPFQueue, error) {
	r, err := c.call(ctx, &request{Op: "ipf_queues"})
	if err != nil {
		return nil, err
	}
	return r.IPFQueues, nil
}

// TCPSeqCheck implements odp.CTTuner.
func (c *Client) TCPSeqCheck(ctx context.Context) (bool, error) {
	return callFor(ctx, c, &request{Op: "ct_get_seq_check"}, "the TCP sequence check setting", func(r *response) *bool { return r.On })
}

// SetTCPSeqCheck implements odp.CTTuner.
func (c *Client) SetTCPSeqCheck(ctx context.Context, on bool) error {
	_, err := c.call(ctx, &request{Op: "ct_set_seq_check", On: on})
	return err
}

// SweepInterval implements odp.CTTuner.
func (c *Client) SweepInterval(ctx context.Context) (uint32, error) {
	return c.ctNumber(ctx, "ct_get_sweep")
}

// SetSweepInterval implements odp.CTTuner.
func (c *Client) SetSweepInterval(ctx context.Context, ms uint32) error {
	_, err := c.call(ctx, &request{Op: "ct_set_sweep", Number: ms})
	return err
}

// ConntrackBuckets implements odp.CTBucketCounter.
func (c *Client) ConntrackBuckets(ctx context.Context) (int, error) {
	n, err := c.ctNumber(ctx, "ct_buckets")
	return int(n), err
}
