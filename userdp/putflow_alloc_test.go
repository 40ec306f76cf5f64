package userdp

import (
	"context"
	"testing"

	"github.com/ovsdp/ovsdp/odp"
)

// TestPutFlowAllocs: a put converts the flow into a temporary spec (the
// masked key, its mask, the key as given) that stays on the stack; what
// a modify allocates is the new actions (their copy, the compiled
// program, the flowActions that holds both) and nothing per key.
// putModifyAllocs is what a modify allocates today (measured).
const putModifyAllocs = 3

func TestPutFlowAllocs(t *testing.T) {
	if raceDetector {
		// The test runs without -race in make test's unit tests.
		t.Skip("allocation counts under the race detector: its sync.Pool (the compiler's encoding buffer) drops items at random")
	}
	dp, err := New("allocs")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dp.Close() })
	f := parseFlow(t, "in_port(1),"+anyEth+"eth_type(0x0800),ipv4(dst=10.0.0.2/255.255.255.255)", "2")
	f.UFID = odp.UFID{1}
	ctx := context.Background()
	if _, err := dp.PutFlow(ctx, f, odp.PutCreate); err != nil {
		t.Fatal(err)
	}
	a := testing.AllocsPerRun(200, func() {
		if _, err := dp.PutFlow(ctx, f, odp.PutModify); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("%.1f allocations per modify", a)
	if a > putModifyAllocs {
		t.Errorf("a modify allocates %.1f times, want at most %d", a, putModifyAllocs)
	}
}
