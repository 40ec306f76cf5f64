package userdp

import (
	"math/rand/v2"
	"testing"
)

// TestSecondLevelCache: a worker's second-level cache is made only
// after smcAfter lookups needed the subtables (never for traffic that
// fits the exact-match cache); once made, it answers lookups the
// exact-match cache misses, every answer matches the packet (checked
// against every flow by brute force), and a removed flow is never
// answered, while the flows that replace it are; the ends of batches
// clear the entries of removed flows.
func TestSecondLevelCache(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	fx := newTableFixture(rng, 3000, 30)
	// A small exact-match cache: 3000 flows do not fit.
	c := newFlowCache(fx.t, 64)
	for range 3 {
		for i := range 10 {
			if c.lookup(&fx.packets[i]) == nil {
				t.Fatalf("packet %d missed", i)
			}
		}
	}
	if c.smc != nil {
		t.Fatalf("second-level cache made after %d subtable lookups (10 microflows), want none before %d", c.smcMisses, smcAfter)
	}
	c.smcMisses = smcAfter - 1 // as if the traffic had been wide for a while
	check := func(round string) {
		t.Helper()
		for i := range fx.packets {
			f := c.lookup(&fx.packets[i])
			if f == nil || f.dead.Load() || !bruteMatch(f, &fx.packets[i]) {
				t.Fatalf("%s: packet %d: lookup gave %v, which is not an installed flow that matches it", round, i, f)
			}
		}
	}
	check("filling")
	if c.smc == nil {
		t.Fatal("no second-level cache after smcAfter subtable lookups")
	}
	hits := c.smcHits
	check("filled")
	if got := c.smcHits - hits; got < uint64(len(fx.packets))/2 {
		t.Errorf("the second-level cache answered %d of %d lookups the exact-match cache (64 entries) could not", got, len(fx.packets))
	}
	// Remove every other flow and put a new flow, same mask and key, in
	// its place: lookups must find the new one, never the removed one.
	fx.t.mu.Lock()
	for i := 0; i < len(fx.flows); i += 2 {
		old := fx.flows[i]
		fx.t.remove(old)
		nf := &megaflow{key: old.key}
		nf.acts.Store(&flowActions{})
		fx.t.insert(nf, &old.st.mask)
		fx.flows[i] = nf
	}
	fx.t.mu.Unlock()
	check("after replacing half the flows")
	for i := 0; i < len(fx.flows); i += 2 {
		if f := c.lookup(&fx.packets[i]); f != fx.flows[i] {
			t.Fatalf("packet %d: got flow %p, want its replacement %p", i, f, fx.flows[i])
		}
	}
	// The ends of batches clear the entries of removed flows (they
	// would keep the flows' memory): remove the other half, look
	// nothing up, and after smcEntries/smcSweep batch ends none is left.
	fx.t.mu.Lock()
	for i := 1; i < len(fx.flows); i += 2 {
		fx.t.remove(fx.flows[i])
	}
	fx.t.mu.Unlock()
	dead := 0
	for _, e := range c.smc {
		if e.flow != nil && e.flow.dead.Load() {
			dead++
		}
	}
	if dead == 0 {
		t.Fatal("no entry holds a removed flow: the sweep is not tested")
	}
	var tc tableCounters
	for range smcEntries / smcSweep {
		c.publish(&tc)
	}
	for i, e := range c.smc {
		if e.flow != nil && e.flow.dead.Load() {
			t.Fatalf("entry %d still holds a removed flow after a full sweep", i)
		}
	}
	// With the exact-match cache off, there is no second level either.
	off := newFlowCache(fx.t, 0)
	off.smcMisses = smcAfter
	for i := range 100 {
		off.lookup(&fx.packets[i])
	}
	if off.smc != nil {
		t.Error("a cache-less worker made a second-level cache")
	}
}
