package daemon

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ovsdp/ovsdp/odp"
	"github.com/ovsdp/ovsdp/policy"
)

// recordingDP wraps a datapath, logs the flow puts and packet executes
// made through it (in order) and fails those its hooks pick.
type recordingDP struct {
	odp.Datapath
	mu    sync.Mutex
	calls []string
	// failPut and failExec return the error a put or an execute fails
	// with (nil: pass it to the datapath).
	failPut  func(*odp.Flow) error
	failExec func(*odp.Packet) error
	// batchErr fails whole batched calls (batchingDP) after their items.
	batchErr error
}

func (r *recordingDP) log(s string) {
	r.mu.Lock()
	r.calls = append(r.calls, s)
	r.mu.Unlock()
}

func (r *recordingDP) put(ctx context.Context, f *odp.Flow, flags odp.PutFlags) error {
	if r.failPut != nil {
		if err := r.failPut(f); err != nil {
			return err
		}
	}
	_, err := r.Datapath.PutFlow(ctx, f, flags)
	return err
}

func (r *recordingDP) exec(ctx context.Context, p *odp.Packet) error {
	if r.failExec != nil {
		if err := r.failExec(p); err != nil {
			return err
		}
	}
	return r.Datapath.Execute(ctx, p)
}

func (r *recordingDP) PutFlow(ctx context.Context, f *odp.Flow, flags odp.PutFlags) (odp.FlowStats, error) {
	r.log("put")
	return odp.FlowStats{}, r.put(ctx, f, flags)
}

func (r *recordingDP) Execute(ctx context.Context, p *odp.Packet) error {
	r.log("execute")
	return r.exec(ctx, p)
}

// batchingDP is a recordingDP with the batched calls.
type batchingDP struct{ *recordingDP }

var _ batcher = batchingDP{}

func (b batchingDP) PutFlows(ctx context.Context, fs []*odp.Flow, flags odp.PutFlags) ([]error, error) {
	b.log(fmt.Sprintf("put %d", len(fs)))
	errs := make([]error, len(fs))
	for i, f := range fs {
		errs[i] = b.put(ctx, f, flags)
	}
	return errs, b.batchErr
}

func (b batchingDP) ExecuteBatch(ctx context.Context, ps []*odp.Packet) ([]error, error) {
	b.log(fmt.Sprintf("execute %d", len(ps)))
	errs := make([]error, len(ps))
	for i, p := range ps {
		errs[i] = b.exec(ctx, p)
	}
	return errs, b.batchErr
}

// appendingDP is a recordingDP with AppendExecute (userdp's batched
// execute) and single puts.
type appendingDP struct{ *recordingDP }

var _ appendExecuter = appendingDP{}

func (a appendingDP) AppendExecute(ctx context.Context, errs []error, ps []*odp.Packet) []error {
	a.log(fmt.Sprintf("append-execute %d", len(ps)))
	for _, p := range ps {
		errs = append(errs, a.exec(ctx, p))
	}
	return errs
}

// flowHasSrc reports whether a flow's key matches Ethernet source src.
func flowHasSrc(f *odp.Flow, src mac) bool {
	return strings.Contains(odp.FormatKey(f.Key, nil, false), "src="+net.HardwareAddr(src[:]).String())
}

// A batch of upcalls is decided upcall by upcall, then its new
// megaflows are put in one batched call and its packets executed in
// another, puts first; a datapath without batched calls gets the same
// puts and executes one at a time, in the same order. Two upcalls of one
// megaflow put it once; a failed put still executes the packet; a put
// that finds the flow (EEXIST) is no failure; a failed execute fails its
// upcall alone; every upcall's latency is recorded once.
func TestBatchPutsThenExecutes(t *testing.T) {
	a, b, c, e, dst := macN(0xa), macN(0xb), macN(0xc), macN(0xe), macN(0x99)
	for _, mode := range []string{"batched", "append", "single"} {
		t.Run(mode, func(t *testing.T) {
			h := newHarness(t, 2, Config{Logger: discardLogger()})
			ctx := context.Background()
			if err := h.d.Setup(ctx); err != nil {
				t.Fatal(err)
			}
			rec := &recordingDP{
				Datapath: h.dp,
				failPut: func(f *odp.Flow) error {
					switch {
					case flowHasSrc(f, b):
						return errors.New("injected put failure")
					case flowHasSrc(f, c):
						return fmt.Errorf("injected: %w", os.ErrExist)
					}
					return nil
				},
				failExec: func(p *odp.Packet) error {
					if mac(p.Data[6:12]) == e {
						return errors.New("injected execute failure")
					}
					return nil
				},
			}
			h.d.dp = rec
			switch mode {
			case "batched":
				h.d.dp = batchingDP{rec}
			case "append":
				h.d.dp = appendingDP{rec}
			}
			ups := []odp.Upcall{
				missFrom(t, a, dst),
				missFrom(t, a, dst), // same megaflow
				missFrom(t, b, dst), // put fails
				missFrom(t, c, dst), // put finds the flow
				missFrom(t, e, dst), // execute fails
				{Kind: odp.UpcallAction, Port: 1, Packet: []byte("controller"), Userdata: []byte{1}},
			}
			// The two of a differ outside the megaflow (learning switch:
			// L2 only) so that both packets reach the wire.
			ups[1].Packet[len(ups[1].Packet)-1] ^= 0xff
			hs := newHandlerState(0, len(ups))
			copy(hs.ups, ups)
			now := time.Now()
			end := h.d.handleBatch(ctx, hs, hs.ups, shedNone, now)
			if end.Before(now) {
				t.Errorf("handleBatch returned %v, before the read at %v", end, now)
			}
			var want []string
			switch mode {
			case "batched":
				want = []string{"put 4", "execute 5"}
			case "append":
				want = []string{"put", "put", "put", "put", "append-execute 5"}
			default:
				want = []string{"put", "put", "put", "put", "execute", "execute", "execute", "execute", "execute"}
			}
			if !slices.Equal(rec.calls, want) {
				t.Errorf("datapath calls %q, want %q", rec.calls, want)
			}
			st := h.d.Status()
			if st.Handled != 4 || st.Failed != 2 || st.Controller != 1 || st.Flows != 3 || st.Installed != 2 {
				t.Errorf("handled %d failed %d controller %d flows %d installed %d; want 4 2 1 3 2",
					st.Handled, st.Failed, st.Controller, st.Flows, st.Installed)
			}
			if got := h.counter("upcalld_upcalls_handled_total", "result=ok"); got != 4 {
				t.Errorf("handled ok metric %v, want 4", got)
			}
			if got := h.counter("upcalld_upcalls_handled_total", "result=error"); got != 2 {
				t.Errorf("handled error metric %v, want 2", got)
			}
			if n := h.d.Latency().Count(); n != 6 {
				t.Errorf("%d latencies recorded, want 6", n)
			}
			if h.d.Latency().Quantile(1) > end.Sub(now)+end.Sub(now)/8 {
				t.Errorf("latency %v exceeds the batch's %v", h.d.Latency().Quantile(1), end.Sub(now))
			}
			// Flooded to port 2: a (twice), b (its put failed) and c,
			// not e (its execute failed).
			for _, u := range ups[:4] {
				h.expect(2, u.Packet)
			}
			h.expectNone(2, 50*time.Millisecond)
			if fs := h.flows(); len(fs) != 2 {
				t.Errorf("datapath flows (a's and e's):\n%s", strings.Join(fs, "\n"))
			}
			for i := range hs.work {
				if hs.work[i].rec != nil || hs.work[i].acts != nil || hs.work[i].err != nil {
					t.Errorf("work %d keeps references after the batch: %+v", i, hs.work[i])
				}
			}
		})
	}
}

// A batched call that fails as a whole (the socket, say) fails every
// upcall of the batch that has no result of its own; the packets are
// still executed after a failed put batch.
func TestBatchCallFailure(t *testing.T) {
	h := newHarness(t, 2, Config{Logger: discardLogger()})
	ctx := context.Background()
	if err := h.d.Setup(ctx); err != nil {
		t.Fatal(err)
	}
	rec := &recordingDP{Datapath: h.dp, batchErr: errors.New("injected socket failure")}
	h.d.dp = batchingDP{rec}
	hs := newHandlerState(0, 3)
	for i := range hs.ups {
		hs.ups[i] = missFrom(t, macN(byte(0x40+i)), macN(0x99))
	}
	h.d.handleBatch(ctx, hs, hs.ups, shedNone, time.Now())
	if want := []string{"put 3", "execute 3"}; !slices.Equal(rec.calls, want) {
		t.Errorf("datapath calls %q, want %q", rec.calls, want)
	}
	if st := h.d.Status(); st.Handled != 0 || st.Failed != 3 || st.Flows != 0 {
		t.Errorf("handled %d failed %d flows %d; want 0 3 0", st.Handled, st.Failed, st.Flows)
	}
	// The flows the datapath did take are adopted by revalidation.
	h.revalidate()
	if st := h.d.Status(); st.Flows != 3 {
		t.Errorf("after revalidation: %d flows, want 3 adopted", st.Flows)
	}
}

// The flow limit counts the flows queued earlier in the batch.
func TestBatchFlowLimit(t *testing.T) {
	h := newHarness(t, 2, Config{Logger: discardLogger(), FlowLimit: 2})
	ctx := context.Background()
	if err := h.d.Setup(ctx); err != nil {
		t.Fatal(err)
	}
	h.d.flowLimit.Store(2)
	hs := newHandlerState(0, 5)
	for i := range hs.ups {
		hs.ups[i] = missFrom(t, macN(byte(0x50+i)), macN(0x99))
	}
	h.d.handleBatch(ctx, hs, hs.ups, shedNone, time.Now())
	if st := h.d.Status(); st.Handled != 5 || st.Flows != 2 {
		t.Errorf("handled %d flows %d; want 5 2", st.Handled, st.Flows)
	}
	if fs := h.flows(); len(fs) != 2 {
		t.Errorf("datapath flows:\n%s", strings.Join(fs, "\n"))
	}
}

// nopBatcher accepts every batched put and execute without doing
// anything or allocating.
type nopBatcher struct {
	odp.Datapath
	errs []error
}

func (n nopBatcher) PutFlows(_ context.Context, fs []*odp.Flow, _ odp.PutFlags) ([]error, error) {
	return n.errs[:len(fs)], nil
}

func (n nopBatcher) ExecuteBatch(_ context.Context, ps []*odp.Packet) ([]error, error) {
	return n.errs[:len(ps)], nil
}

// The batch machinery (queues of puts and executes, metadata, results,
// latency and metrics) allocates nothing of its own: handling a batch of
// misses whose megaflows are installed allocates exactly what deciding
// them does (the policy's actions).
func TestBatchAllocatesNothingBeyondThePolicy(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts under the race detector: its sync.Pool drops items at random (odp's and userdp's scratch)")
	}
	h := newHarness(t, 2, Config{Logger: discardLogger()})
	ctx := context.Background()
	if err := h.d.Setup(ctx); err != nil {
		t.Fatal(err)
	}
	const n = 8
	hs := newHandlerState(0, n)
	ups := make([]odp.Upcall, n)
	for i := range ups {
		ups[i] = missFrom(t, macN(byte(0x60+i)), macN(0x99))
	}
	copy(hs.ups, ups)
	h.d.handleBatch(ctx, hs, hs.ups, shedNone, time.Now()) // installs the megaflows, learns the sources
	if st := h.d.Status(); st.Flows != n || st.Handled != n {
		t.Fatalf("setup: %+v", st)
	}
	h.d.dp = nopBatcher{Datapath: h.dp, errs: make([]error, n)}
	h.d.errLog.do(func() {}) // no log line allocates in this second
	var acts odp.Actions     // as the handler's batch buffer of actions
	policyOnly := testing.AllocsPerRun(100, func() {
		ps := h.d.pol.Load()
		acts = acts[:0]
		for i := range ups {
			k, err := odp.ToFlowKeysExact(ups[i].Key)
			if err != nil {
				t.Fatal(err)
			}
			ps.rules.DecideInto(&k, &hs.dec)
			h.d.sw.Learn(&k)
			acts = policy.AppendTranslate(acts, &hs.dec, &k, ps.env)
		}
	})
	batch := testing.AllocsPerRun(100, func() {
		copy(hs.ups, ups)
		h.d.handleBatch(ctx, hs, hs.ups, shedNone, time.Now())
	})
	t.Logf("a batch of %d: %v allocations; deciding them alone: %v", n, batch, policyOnly)
	if batch != policyOnly {
		t.Errorf("a batch of %d allocates %v times, deciding them %v times", n, batch, policyOnly)
	}
	if st := h.d.Status(); st.Failed != 0 || st.Handled != n*101+n {
		t.Errorf("handled %d failed %d", st.Handled, st.Failed)
	}
}
