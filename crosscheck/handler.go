package crosscheck

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/ovsdp/ovsdp/flowkeys"
	"github.com/ovsdp/ovsdp/odp"
	"github.com/ovsdp/ovsdp/policy"
)

// Handler answers miss upcalls with a policy, as the upcall daemon does
// and through odp.Datapath only: it learns the source address, decides,
// installs the megaflow (the decision's mask) and executes the packet.
type Handler struct {
	rules *policy.RuleSet
	sw    *policy.LearningSwitch
	env   policy.Env
}

// NewHandler returns a handler for rules in ovs-ofctl syntax (the subset
// package policy reads); empty rules mean the learning switch alone.
// ports are the datapath ports that flood outputs to; pid receives
// controller upcalls.
func NewHandler(rules string, ports []uint32, pid uint32) (*Handler, error) {
	rs := policy.DefaultRules()
	if strings.TrimSpace(rules) != "" {
		var err error
		rs, err = policy.ParseRules("scenario rules", strings.NewReader(rules))
		if err != nil {
			return nil, fmt.Errorf("crosscheck: %w", err)
		}
	}
	sw := policy.NewLearningSwitch(policy.LearningOptions{})
	return &Handler{rules: rs, sw: sw, env: policy.Env{Ports: ports, Switch: sw, ControllerPID: pid}}, nil
}

// FlowUFID is a deterministic UFID for a flow's key and mask text, so
// that both datapaths get the same identifiers.
func FlowUFID(key, mask odp.FlowKey) odp.UFID {
	sum := sha256.Sum256([]byte(odp.FormatKey(key, mask, false)))
	return odp.UFID(sum[:16])
}

// megaflowUFID is a deterministic UFID for a masked key and its mask.
func megaflowUFID(masked, mask *flowkeys.Key) odp.UFID {
	h := sha256.New()
	h.Write(masked.Bytes()[:])
	h.Write(mask.Bytes()[:])
	return odp.UFID(h.Sum(nil)[:16])
}

// Handle answers one miss upcall on dp. A flow that already exists
// (another miss for the same megaflow raced with the install) is not an
// error.
func (h *Handler) Handle(ctx context.Context, dp odp.Datapath, up *odp.Upcall) error {
	k, err := odp.ToFlowKeysExact(up.Key)
	if err != nil {
		return fmt.Errorf("handler: upcall key %s: %w", odp.FormatKey(up.Key, nil, false), err)
	}
	h.sw.Learn(&k)
	d := h.rules.Decide(&k)
	acts := policy.Translate(&d, &k, &h.env)
	// Like Open vSwitch, put the packet's whole key with the mask; the
	// datapath masks it. The UFID comes from the masked key.
	var masked flowkeys.Key
	flowkeys.ApplyMask(&masked, &k, &d.Mask, flowkeys.FullRange)
	key, mask, err := odp.MegaflowFromFlowKeys(&k, &d.Mask)
	if err != nil {
		return fmt.Errorf("handler: %s: %w", Describe(up.Packet), err)
	}
	f := &odp.Flow{UFID: megaflowUFID(&masked, &d.Mask), Key: key, Mask: mask, Actions: acts}
	if _, err := dp.PutFlow(ctx, f, odp.PutCreate); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("handler: installing %s actions:%s: %w", odp.FormatKey(key, mask, false), odp.FormatActions(acts), err)
	}
	if len(acts) == 0 {
		return nil
	}
	if err := dp.Execute(ctx, &odp.Packet{Data: up.Packet, Key: up.Key, Actions: acts}); err != nil {
		return fmt.Errorf("handler: executing %s on %s: %w", odp.FormatActions(acts), Describe(up.Packet), err)
	}
	return nil
}
