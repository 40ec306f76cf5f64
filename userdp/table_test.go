package userdp

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/ovsdp/ovsdp/flowkeys"
	"github.com/ovsdp/ovsdp/odp"
)

// fieldMasks are the pieces random megaflow masks are made of: realistic
// fields of the packet metadata, Ethernet, IPv4 and L4 words.
var fieldMasks = []func(m *flowkeys.Key){
	func(m *flowkeys.Key) { m.InPort = 0xffffffff },
	func(m *flowkeys.Key) { m.EthSrc = ones6 },
	func(m *flowkeys.Key) { m.EthDst = ones6 },
	func(m *flowkeys.Key) { m.EthType = 0xffff },
	func(m *flowkeys.Key) { m.IPProto = 0xff },
	func(m *flowkeys.Key) { m.IPTOS = 0xfc },
	func(m *flowkeys.Key) { m.IPTTL = 0xff },
	func(m *flowkeys.Key) { m.TpSrc = 0xffff },
	func(m *flowkeys.Key) { m.TpDst = 0xffff },
	func(m *flowkeys.Key) { m.IPv4Src = [4]byte{255, 255, 255, 0} },
	func(m *flowkeys.Key) { m.IPv4Dst = ones4 },
	func(m *flowkeys.Key) { m.IPv4Dst = [4]byte{255, 255, 0, 0} },
	func(m *flowkeys.Key) { m.IPv6Src = ones16 },
	func(m *flowkeys.Key) { m.RecircID = 0xffffffff },
}

// randomMasks returns n distinct masks, each a random combination of
// fieldMasks.
func randomMasks(rng *rand.Rand, n int) []flowkeys.Key { return randomMasksWith(rng, n, nil) }

// randomMasksWith is randomMasks with also, if not nil, add applied to
// each mask.
func randomMasksWith(rng *rand.Rand, n int, add func(*flowkeys.Key)) []flowkeys.Key {
	seen := map[flowkeys.Key]bool{}
	var out []flowkeys.Key
	for len(out) < n {
		var m flowkeys.Key
		for _, f := range fieldMasks {
			if rng.IntN(3) == 0 {
				f(&m)
			}
		}
		if add != nil {
			add(&m)
		}
		if m.IsZero() || seen[m] {
			continue
		}
		seen[m] = true
		out = append(out, m)
	}
	return out
}

// randomKey fills every word of the usual packet range with random bits.
func randomKey(rng *rand.Rand) flowkeys.Key {
	var k flowkeys.Key
	w := k.Words()
	for i := 8; i < 22; i++ {
		w[i] = rng.Uint64()
	}
	return k
}

// tableFixture is a table with nflows random flows over nmasks masks and
// one packet key per flow that matches it.
type tableFixture struct {
	t       *table
	masks   []flowkeys.Key
	flows   []*megaflow
	packets []flowkeys.Key
}

func newTableFixture(rng *rand.Rand, nflows, nmasks int) *tableFixture {
	fx := &tableFixture{t: newTable(), masks: randomMasks(rng, nmasks)}
	acts := &flowActions{}
	for len(fx.flows) < nflows {
		m := &fx.masks[len(fx.flows)%nmasks]
		pk := randomKey(rng)
		var k flowkeys.Key
		flowkeys.ApplyMask(&k, &pk, m, flowkeys.FullRange)
		if f, _ := fx.t.findExact(&k, m); f != nil {
			continue
		}
		f := &megaflow{key: k}
		f.acts.Store(acts)
		fx.t.mu.Lock()
		fx.t.insert(f, m)
		fx.t.mu.Unlock()
		fx.flows = append(fx.flows, f)
		fx.packets = append(fx.packets, pk)
	}
	return fx
}

// bruteMatch reports whether packet k matches flow f.
func bruteMatch(f *megaflow, k *flowkeys.Key) bool {
	kw, fw, mw := k.Words(), f.key.Words(), f.st.mask.Words()
	for i := range kw {
		if kw[i]&mw[i] != fw[i] {
			return false
		}
	}
	return true
}

func TestTableLookupMatchesBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	fx := newTableFixture(rng, 2000, 60)
	if got := fx.t.masks(); got != 60 {
		t.Fatalf("%d subtables, want 60", got)
	}
	c := newFlowCache(fx.t, 256)
	for i := range fx.packets {
		for _, useCache := range []bool{false, true, true} {
			var f *megaflow
			if useCache {
				f = c.lookup(&fx.packets[i])
			} else {
				f, _ = fx.t.lookup(&fx.packets[i])
			}
			if f == nil || !bruteMatch(f, &fx.packets[i]) {
				t.Fatalf("packet %d: lookup gave %v, which does not match", i, f)
			}
		}
	}
	// Random packets: a hit must match, a miss must match no flow.
	for i := 0; i < 2000; i++ {
		pk := randomKey(rng)
		f, _ := fx.t.lookup(&pk)
		if f != nil && !bruteMatch(f, &pk) {
			t.Fatalf("random packet matched a flow it does not match")
		}
		if f == nil {
			for _, g := range fx.flows {
				if bruteMatch(g, &pk) {
					t.Fatalf("random packet missed, but matches a flow")
				}
			}
		}
	}
	// Remove half the flows: they are no longer found, even through the cache.
	fx.t.mu.Lock()
	for i := 0; i < len(fx.flows); i += 2 {
		fx.t.remove(fx.flows[i])
	}
	fx.t.mu.Unlock()
	for i := range fx.packets {
		f := c.lookup(&fx.packets[i])
		if f != nil && (f.dead.Load() || !bruteMatch(f, &fx.packets[i])) {
			t.Fatalf("packet %d found a removed or non-matching flow", i)
		}
		if i%2 == 1 && f == nil {
			t.Fatalf("packet %d lost its flow", i)
		}
	}
	if n := fx.t.nflows.Load(); n != 1000 {
		t.Errorf("%d flows left, want 1000", n)
	}
}

func TestTableRebalanceRanksByHits(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	fx := newTableFixture(rng, 30, 3)
	// Hit only flows of the last mask, through a worker's cache (off:
	// every lookup goes to the subtables), which counts the hits and
	// publishes them at the end of a batch.
	last := fx.flows[2].st
	c := newFlowCache(fx.t, 0)
	for i := 0; i < 100; i++ {
		c.lookup(&fx.packets[2])
	}
	var tc tableCounters
	c.publish(&tc)
	fx.t.rebalance()
	if fx.t.list.Load().st[0] != last {
		t.Errorf("the most used subtable is not first after rebalance")
	}
	if _, probed := fx.t.lookup(&fx.packets[2]); probed != 1 {
		t.Errorf("lookup probed %d subtables, want 1", probed)
	}
}

// TestConcurrentFlowChangesWhileForwarding installs and removes flows
// (and dumps) while packets are forwarded through a flow that stays:
// every packet must arrive, and the race detector must stay quiet.
func TestConcurrentFlowChangesWhileForwarding(t *testing.T) {
	h := newHarness(t, 2, WithRebalanceInterval(1))
	ctx := context.Background()
	h.put("in_port(1),"+anyEth+"eth_type(0x0800),ipv4(dst=10.0.0.2/255.255.255.255)", "2")
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var changes atomic.Int64
	for g := 0; g < 2; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				extra := []string{"", ",tos=0/0xfc", ",ttl=64/0xff"}[i%3] // three masks
				f := parseFlow(t, fmt.Sprintf("in_port(%d),"+anyEth+"eth_type(0x0800),ipv4(src=10.%d.%d.%d/255.255.255.255%s)", 3+g, g, byte(i>>8), byte(i), extra), "1")
				f.UFID = odp.UFID{byte(g + 1), byte(i), byte(i >> 8), byte(i >> 16)}
				if _, err := h.dp.PutFlow(ctx, f, odp.PutCreate); err != nil {
					t.Errorf("put: %v", err)
					return
				}
				if i%2 == 0 {
					if _, err := h.dp.DelFlow(ctx, odp.FlowID{UFID: f.UFID}); err != nil {
						t.Errorf("del: %v", err)
						return
					}
				}
				if i%50 == 0 {
					h.dp.DumpFlows(ctx, odp.DumpOptions{}, func(*odp.Flow) error { return nil })
				}
				changes.Add(1)
			}
		}(g)
	}
	const batch = 16
	rounds := 0
	for r := 0; r < 100 || (changes.Load() < 300 && r < 20000); r++ {
		rounds++
		var fs [][]byte
		for i := 0; i < batch; i++ {
			fs = append(fs, udpFrame(1, 2, uint16(r*batch+i)))
		}
		h.send(1, fs...)
		for i := 0; i < batch; i++ {
			h.expect(2)
		}
	}
	close(stop)
	wg.Wait()
	if changes.Load() == 0 {
		t.Fatal("no flow changes happened during forwarding")
	}
	st := h.waitStats(uint64(rounds * batch))
	if st.Hit != uint64(rounds*batch) || st.Missed != 0 {
		t.Errorf("stats %+v, want %d hits and no miss", st, rounds*batch)
	}
	t.Logf("%d flow changes while forwarding %d packets", changes.Load(), rounds*batch)
}

// sinkPort is an in-memory port that discards what it is sent. Its
// counter has a cache line of its own (one writer: the goroutine that
// forwards to it), so that two sinks written by two goroutines share
// none (BenchmarkForwardCores).
type sinkPort struct {
	name string
	_    [64]byte
	tx   atomic.Uint64
	_    [56]byte
	done chan struct{}
}

func newSinkPort(name string) *sinkPort { return &sinkPort{name: name, done: make(chan struct{})} }

func (p *sinkPort) Name() string         { return p.name }
func (p *sinkPort) Type() odp.PortType   { return PortMemory }
func (p *sinkPort) MTU() int             { return 1500 }
func (p *sinkPort) Stats() odp.PortStats { return odp.PortStats{TxPackets: p.tx.Load()} }
func (p *sinkPort) Close() error         { close(p.done); return nil }
func (p *sinkPort) WriteBatch(pkts [][]byte) (int, error) {
	p.tx.Add(uint64(len(pkts)))
	return len(pkts), nil
}
func (p *sinkPort) ReadBatch(bufs [][]byte, sizes []int, offset int) (int, error) {
	<-p.done
	return 0, ErrPortClosed
}

// pipelineFixture is a datapath with a flow in_port(1),ipv4 → dec_ttl,2
// (port 2 a sink) and a worker to push frames through.
func pipelineFixture(tb testing.TB, cacheEntries int) (*worker, *sinkPort, []byte) {
	dp, err := New("bench", WithoutLocalPort(), WithCacheEntries(cacheEntries))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { dp.Close() })
	if _, err := dp.AttachPort(newSinkPort("in"), 1); err != nil {
		tb.Fatal(err)
	}
	sink := newSinkPort("out")
	if _, err := dp.AttachPort(sink, 2); err != nil {
		tb.Fatal(err)
	}
	f := parseFlow(tb, "in_port(1),"+anyEth+"eth_type(0x0800),ipv4(dst=10.0.0.2/255.255.255.255,ttl=64/0)", "dec_ttl(le_1(drop)),2")
	f.Actions = odp.Actions{odp.DecTTL{}, odp.Output{Port: 2}}
	if _, err := dp.PutFlow(context.Background(), f, odp.PutCreate); err != nil {
		tb.Fatal(err)
	}
	w := newWorker(dp, cacheEntries)
	w.now = dp.nowMs()
	return w, sink, udpFrame(1, 2, 1000)
}

func TestPipelineNoAllocs(t *testing.T) {
	w, sink, frame := pipelineFixture(t, DefaultCacheEntries)
	buf := make([]byte, BufferSize(1500))
	run := func() {
		copy(buf[DefaultHeadroom:], frame)
		w.process(buf, DefaultHeadroom, len(frame), 1)
		w.flush()
	}
	if a := testing.AllocsPerRun(1000, run); a != 0 {
		t.Errorf("extract+lookup+dec_ttl+output allocates %.1f times per packet", a)
	}
	if sink.tx.Load() < 1000 {
		t.Errorf("sink got %d frames", sink.tx.Load())
	}
	// The cache-less lookup does not allocate either.
	w2, _, _ := pipelineFixture(t, 0)
	run2 := func() {
		copy(buf[DefaultHeadroom:], frame)
		w2.process(buf, DefaultHeadroom, len(frame), 1)
		w2.flush()
	}
	if a := testing.AllocsPerRun(1000, run2); a != 0 {
		t.Errorf("without cache: %.1f allocations per packet", a)
	}
}

// TestFlowCacheSets checks what flowCache.set relies on to go without a
// bounds check: for every cache size, the number of sets is a power of
// two and setMask is one less, so every hash picks a set of the array
// (the one h&setMask indexes).
func TestFlowCacheSets(t *testing.T) {
	tb := newTable()
	for _, n := range []int{1, 2, 3, 4, 5, 7, 8, 9, 100, 1000, DefaultCacheEntries - 1, DefaultCacheEntries, DefaultCacheEntries + 1, 1 << 20} {
		c := newFlowCache(tb, n)
		l := len(c.sets)
		if l == 0 || l&(l-1) != 0 || c.setMask != uint32(l-1) || l*cacheWays < n {
			t.Fatalf("%d entries: %d sets, setMask %#x", n, l, c.setMask)
		}
		for _, h := range []uint32{0, 1, 0x55555555, 0xaaaaaaaa, 0x7fffffff, 0x80000000, 0xfffffffe, 0xffffffff, uint32(l), uint32(l - 1)} {
			if got, want := c.set(h), &c.sets[h&uint32(l-1)]; got != want {
				t.Fatalf("%d entries: set(%#x) is %p, want %p (set %d)", n, h, got, want, h&uint32(l-1))
			}
		}
	}
	if c := newFlowCache(tb, 0); c.sets != nil {
		t.Fatalf("a cache of 0 entries has %d sets", len(c.sets))
	}
}
