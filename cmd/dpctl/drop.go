package main

import (
	"context"
	"crypto/rand"
	"errors"
	"sync"
	"syscall"

	"github.com/ovsdp/ovsdp/odp"
)

// Explicit drop actions (OVS_ACTION_ATTR_DROP) came after Linux 6.1, whose
// kernel rejects them with EINVAL. dpctl probes a kernel datapath once per
// run, and on a kernel without them sends every action list cut at its
// first explicit drop: the drop ends the list, so the packet is dropped
// all the same (the drop reason is lost). Package genl does not do this
// itself (yet): see the README.

// dropProbes caches the probe's answer per kernel datapath.
var dropProbes struct {
	sync.Mutex
	m map[string]bool
}

// probeKey is the probe flow's key: an Ethernet type from the IEEE's
// local experimental range on the local port, which no real traffic uses.
const probeKey = "in_port(0),eth(src=02:00:00:00:00:00,dst=02:00:00:00:00:00),eth_type(0x88b5)"

// kernelHasDrop reports whether the kernel datapath accepts explicit
// drop actions, probing once with a probe flow (put, then deleted).
// Failures other than EINVAL count as support, so that the real request
// reports them.
func kernelHasDrop(dp systemDP) bool {
	dropProbes.Lock()
	defer dropProbes.Unlock()
	if v, ok := dropProbes.m[dp.Name()]; ok {
		return v
	}
	v := probeDrop(dp)
	if dropProbes.m == nil {
		dropProbes.m = map[string]bool{}
	}
	dropProbes.m[dp.Name()] = v
	return v
}

func probeDrop(dp systemDP) bool {
	key, _, err := odp.ParseMaskedKey(probeKey)
	if err != nil {
		return true // a constant; TestProbeKey checks it parses
	}
	var ufid odp.UFID
	if _, err := rand.Read(ufid[:]); err != nil {
		return true
	}
	f := &odp.Flow{UFID: ufid, Key: key, Actions: odp.Actions{odp.Drop{}}}
	err = dp.ProbeFlow(context.Background(), f)
	return err == nil || !errors.Is(err, syscall.EINVAL)
}

// supportsDrop reports whether dp accepts explicit drop actions. The
// userspace datapath does.
func supportsDrop(dp odp.Datapath) bool {
	if sd, ok := dp.(systemDP); ok {
		return kernelHasDrop(sd)
	}
	return true
}

// hasExplicitDrop reports whether as holds a Drop action, nested lists
// included.
func hasExplicitDrop(as odp.Actions) bool {
	return !odp.WalkActions(as, func(a odp.Action, _ int) bool {
		_, drop := a.(odp.Drop)
		return !drop
	})
}

// truncateAtDrop returns as cut before its first Drop action, and the
// same for every nested list: what a datapath without explicit drop does
// with the packet is then what one with it would do.
func truncateAtDrop(as odp.Actions) odp.Actions {
	out := make(odp.Actions, 0, len(as))
	for _, a := range as {
		if _, ok := a.(odp.Drop); ok {
			return out
		}
		out = append(out, odp.MapNested(a, truncateAtDrop))
	}
	return out
}
