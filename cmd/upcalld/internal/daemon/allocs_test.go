package daemon

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ovsdp/ovsdp/odp"
	"github.com/ovsdp/ovsdp/userdp"
)

// missAllocsMax is the most allocations that handling one miss of a new
// megaflow on the userspace datapath may make in the steady state (a
// handler's reused state, the learning switch warm). What remains is
// what outlives the upcall, plus the datapath's own per-flow state:
//   - the daemon's record of the megaflow, its key and mask attributes
//     (the slices and the attribute values boxed into odp.KeyAttr:
//     Ethernet, IPv4, UDP, the tunnel mask), its actions (one exact-size
//     copy of the handler's batch buffer) and their encoding;
//   - userdp's flow: its spec, its compiled program, its copy of the
//     actions, the flow entry, and the amortized growth of its
//     subtable's arrays and hash chains;
//   - the execute's compiled program (userdp compiles an execute's
//     actions each time).
//
// Before the handler reused its translation buffer and odp's and
// userdp's conversions stopped allocating for their scratch and error
// names, a miss took 53 (this test at the commit before).
const missAllocsMax = 26

// TestHandleMissAllocs counts the allocations of handling misses of new
// megaflows (decide, learn, translate, install, execute) once the
// handler is warm.
func TestHandleMissAllocs(t *testing.T) {
	if testing.Short() {
		t.Skip("allocation counts: not in -short")
	}
	if raceEnabled {
		t.Skip("allocation counts under the race detector: its sync.Pool drops items at random (odp's and userdp's scratch)")
	}
	dp, err := userdp.New("upallocs", userdp.WithoutLocalPort())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dp.Close() })
	ctx := context.Background()
	for _, name := range []string{"a1", "a2"} {
		// Nobody reads the peers: frames beyond the queue are dropped
		// by the port, and no test goroutine allocates while counting.
		if _, err := dp.AddPort(ctx, odp.PortSpec{Name: name, Type: userdp.PortMemory, Options: map[string]string{"queue": "8192"}}); err != nil {
			t.Fatal(err)
		}
	}
	d, err := New(Config{Datapath: dp, Registry: prometheus.NewRegistry(), Logger: discardLogger(), Handlers: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Setup(ctx); err != nil {
		t.Fatal(err)
	}
	d.flowLimit.Store(1 << 40)
	const warm, runs = 200, 500
	ups := newFlowUpcalls(t, warm+runs+1)
	hs := newHandlerState(0, 1)
	for i := range ups[:warm] {
		if err := d.handleUpcall(ctx, hs, &ups[i]); err != nil {
			t.Fatal(err)
		}
	}
	next := warm
	var failed error
	allocs := testing.AllocsPerRun(runs, func() {
		if err := d.handleUpcall(ctx, hs, &ups[next]); err != nil && failed == nil {
			failed = err
		}
		next++
	})
	if failed != nil {
		t.Fatal(failed)
	}
	if got, want := d.flows.len(), warm+runs+1; got != want {
		t.Fatalf("%d megaflows recorded after %d misses of distinct megaflows", got, want)
	}
	t.Logf("%.1f allocations per miss", allocs)
	if allocs > missAllocsMax {
		t.Errorf("handling a miss allocates %.1f times, want at most %d", allocs, missAllocsMax)
	}
}
