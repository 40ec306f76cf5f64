package userdp

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ovsdp/ovsdp/flowkeys"
	"github.com/ovsdp/ovsdp/internal/monoclock"
	"github.com/ovsdp/ovsdp/odp"
)

// Datapath is the userspace datapath: ports, the megaflow table, the
// action executor and upcalls, behind the odp.Datapath interface. Each
// port has a goroutine that reads batches of frames, extracts their keys,
// looks them up (exact-match cache, then the megaflow table) and
// executes the flows' actions, transmitting in batches; misses go to the
// upcall handlers (Upcalls). Flow operations never stop forwarding: see
// the comment on concurrency in table.go.
//
// The datapath lives in the process that created it (New): Close stops
// it, closes its ports and deletes its tap devices.
type Datapath struct {
	name string
	opts options

	table    *table
	meters   meterTable
	counters tableCounters
	drops    dropCounters
	upcalls  upcallRouter

	mu      sync.Mutex // ports and lifecycle
	ports   atomic.Pointer[portTable]
	closed  bool
	wg      sync.WaitGroup
	stop    chan struct{}
	memPeer map[string]*MemPort

	execMu sync.Mutex
	execW  *worker

	seq       atomic.Uint64
	monoBase  uint64 // CLOCK_MONOTONIC ms at start
	startTime time.Time

	ct ctState // the connection tracker (exec_ct.go)

	tunnels atomic.Int32 // the number of tunnel ports (exec_tnl.go)
	psample psampleHub   // PsampleEvents' subscribers (psample.go)
}

var _ odp.Datapath = (*Datapath)(nil)

// dropCounters count packets dropped other than for lost upcalls.
type dropCounters struct {
	actionErrors, explicitDrops, recircDrops, extractErrors, txNoPort, noEthernet atomic.Uint64
}

// dpPort is a port of the datapath.
type dpPort struct {
	number uint32
	name   string
	typ    odp.PortType
	opts   map[string]string
	port   Port
	done   chan struct{} // closed when the receive loop has ended
}

// portTable is the immutable set of ports, indexed by number.
type portTable struct {
	byNumber []*dpPort
}

// maxPortNumber is the largest port number (the kernel's DP_MAX_PORTS is
// 65535, an in_port of 0xffff meaning "none").
const maxPortNumber = 65534

// PortMemory is the type of an in-memory port (AddPort with this type
// creates a NewMemPipe; MemoryPeer returns the other end). It needs no
// privileges; tests and benchmarks use it.
const PortMemory odp.PortType = "memory"

// options are New's settings.
type options struct {
	localPort    bool
	cacheEntries int
	queueLen     int
	batch        int
	rebalance    time.Duration
	memMTU       int
	memDepth     int
	flowLimit    int
	ctMax        uint32
}

// Option configures New.
type Option func(*options)

// WithoutLocalPort skips creating the local port 0 (a tap device named
// like the datapath, which needs CAP_NET_ADMIN): for unprivileged tests.
func WithoutLocalPort() Option { return func(o *options) { o.localPort = false } }

// WithCacheEntries sets the size of each forwarding goroutine's
// exact-match cache (default DefaultCacheEntries); 0 disables the cache.
func WithCacheEntries(n int) Option {
	return func(o *options) { o.cacheEntries = max(n, 0) }
}

// WithUpcallQueueLen sets the length of each handler's upcall queue
// (default DefaultUpcallQueueLen).
func WithUpcallQueueLen(n int) Option {
	return func(o *options) { o.queueLen = max(n, 1) }
}

// WithBatchSize sets how many frames a port's goroutine reads at once
// (default 32).
func WithBatchSize(n int) Option {
	return func(o *options) { o.batch = min(max(n, 1), 1024) }
}

// WithRebalanceInterval sets how often the subtables are re-ranked by
// use (default one second; 0 disables it).
func WithRebalanceInterval(d time.Duration) Option {
	return func(o *options) { o.rebalance = d }
}

// WithFlowLimit caps the number of flows (default 0: no cap, as the
// kernel's datapath): PutFlow refuses to create a flow past it with an
// error matching syscall.EFBIG. upcalld sets it (--flow-limit), so that
// the flows put through a control socket cannot grow without bound.
func WithFlowLimit(n int) Option {
	return func(o *options) { o.flowLimit = max(n, 0) }
}

// WithConntrackMax sets the connection tracker's global maximum of
// connections (default conntrack.DefaultMaxConns), which also sizes its
// hash table (ct-bkts shows it); ct-set-maxconns changes the maximum
// later, not the table.
func WithConntrackMax(n uint32) Option {
	return func(o *options) { o.ctMax = n }
}

// New creates a userspace datapath called name. Unless WithoutLocalPort
// is given, it creates the local port 0, a tap device called name.
func New(name string, opts ...Option) (*Datapath, error) {
	if name == "" || len(name) > 15 {
		return nil, fmt.Errorf("userdp: new datapath %q: name must be 1 to 15 characters: %w", name, syscall.EINVAL)
	}
	o := options{localPort: true, cacheEntries: DefaultCacheEntries, queueLen: DefaultUpcallQueueLen,
		batch: 32, rebalance: time.Second, memMTU: 1500, memDepth: 1024}
	for _, f := range opts {
		f(&o)
	}
	dp := &Datapath{
		name: name, opts: o, table: newTable(), stop: make(chan struct{}),
		memPeer: map[string]*MemPort{}, startTime: time.Now(), monoBase: monoclock.Millis(),
	}
	dp.table.limit = int64(o.flowLimit)
	dp.upcalls.hasher = flowkeys.NewKeyedHasher()
	dp.ports.Store(&portTable{})
	dp.execW = newWorker(dp, 0)
	if o.localPort {
		if _, err := dp.AddPort(context.Background(), odp.PortSpec{Name: name, Type: odp.PortInternal}); err != nil {
			return nil, fmt.Errorf("userdp: new datapath %s: local port: %w", name, err)
		}
	}
	if o.rebalance > 0 {
		dp.wg.Add(1)
		go dp.rebalanceLoop(o.rebalance)
	}
	return dp, nil
}

// rebalanceLoop re-ranks the subtables periodically.
func (dp *Datapath) rebalanceLoop(d time.Duration) {
	defer dp.wg.Done()
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-dp.stop:
			return
		case <-t.C:
			dp.table.rebalance()
		}
	}
}

// nowMs returns CLOCK_MONOTONIC in milliseconds.
func (dp *Datapath) nowMs() uint64 {
	return dp.monoBase + uint64(time.Since(dp.startTime)/time.Millisecond)
}

// Name returns the datapath's name.
func (dp *Datapath) Name() string { return dp.name }

// Type returns "netdev".
func (dp *Datapath) Type() string { return "netdev" }

// Info returns the datapath's statistics: hit, missed and lost as the
// kernel counts them, the number of flows and masks, mask hits (the
// subtables looked at by all lookups) and cache hits (lookups answered by
// the exact-match cache).
func (dp *Datapath) Info(ctx context.Context) (odp.DatapathInfo, error) {
	return odp.DatapathInfo{
		Name: dp.name,
		Stats: odp.DatapathStats{
			Hit:       dp.counters.hit.Load(),
			Missed:    dp.counters.missed.Load(),
			Lost:      dp.counters.lost.Load(),
			Flows:     uint64(dp.table.nflows.Load()),
			MaskHits:  dp.counters.maskHits.Load(),
			Masks:     uint32(dp.table.masks()),
			CacheHits: dp.counters.cacheHits.Load(),
		},
		UpcallMode:     "per-vport",
		MasksCacheSize: uint32(dp.opts.cacheEntries),
		FlowLimit:      uint64(dp.opts.flowLimit),
	}, nil
}

// DropStats are the packets a userspace datapath dropped for reasons
// other than a lost upcall, by reason.
type DropStats struct {
	// ActionErrors: an action failed on the packet (too short for the
	// header it sets, no headroom for a push, nesting too deep).
	ActionErrors uint64
	// ExplicitDrops: a drop action.
	ExplicitDrops uint64
	// RecircLimit: recirculated too many times.
	RecircLimit uint64
	// ExtractErrors: no flow key could be extracted (the kernel drops
	// such packets too).
	ExtractErrors uint64
	// NoPort: output to a port that does not exist.
	NoPort uint64
	// NoEthernet: output of a packet without an Ethernet header (after
	// pop_eth or add_mpls) to a port, all of which are Ethernet ports;
	// the kernel drops these too (ovs_vport_send), counting them nowhere.
	NoEthernet uint64
}

// Drops returns the datapath's drop counters.
func (dp *Datapath) Drops() DropStats {
	return DropStats{
		ActionErrors:  dp.drops.actionErrors.Load(),
		ExplicitDrops: dp.drops.explicitDrops.Load(),
		RecircLimit:   dp.drops.recircDrops.Load(),
		ExtractErrors: dp.drops.extractErrors.Load(),
		NoPort:        dp.drops.txNoPort.Load(),
		NoEthernet:    dp.drops.noEthernet.Load(),
	}
}

// publish adds a worker's counters.
func (dp *Datapath) publish(c *workerCounters) {
	add := func(a *atomic.Uint64, v uint64) {
		if v != 0 {
			a.Add(v)
		}
	}
	add(&dp.counters.lost, c.lost)
	add(&dp.drops.actionErrors, c.actionErrors)
	add(&dp.drops.explicitDrops, c.explicitDrops)
	add(&dp.drops.recircDrops, c.recircDrops)
	add(&dp.drops.extractErrors, c.extractErrors)
	add(&dp.drops.txNoPort, c.txNoPort)
	add(&dp.drops.noEthernet, c.noEthernet)
}

// Close stops forwarding, closes every port (deleting tap devices) and
// every upcall receiver. The datapath cannot be used afterwards.
func (dp *Datapath) Close() error {
	dp.mu.Lock()
	if dp.closed {
		dp.mu.Unlock()
		return nil
	}
	dp.closed = true
	close(dp.stop)
	pt := dp.ports.Load()
	dp.ports.Store(&portTable{})
	var errs []error
	for _, p := range pt.byNumber {
		if p != nil {
			if err := dp.closePort(p); err != nil {
				errs = append(errs, err)
			}
		}
	}
	dp.mu.Unlock()
	if s := dp.upcalls.set.Load(); s != nil {
		for _, q := range s.qs {
			(&UpcallReceiver{q: q}).Close()
		}
	}
	dp.wg.Wait()
	dp.closeConntrack()
	return errors.Join(errs...)
}

// closePort closes a port removed from the table (and its memory peer).
func (dp *Datapath) closePort(p *dpPort) error {
	if _, ok := p.port.(tunnelOut); ok {
		dp.tunnels.Add(-1)
	}
	err := p.port.Close()
	if peer := dp.memPeer[p.name]; peer != nil {
		peer.Close()
		delete(dp.memPeer, p.name)
	}
	if err != nil {
		return fmt.Errorf("userdp: close port %s: %w", p.name, err)
	}
	return nil
}

// portByNumber returns port n, or nil.
func (dp *Datapath) portByNumber(n uint32) *dpPort {
	pt := dp.ports.Load()
	if int(n) < len(pt.byNumber) {
		return pt.byNumber[n]
	}
	return nil
}

// Ports lists the ports, ordered by number, with their statistics.
func (dp *Datapath) Ports(ctx context.Context) ([]odp.Port, error) {
	var out []odp.Port
	for _, p := range dp.ports.Load().byNumber {
		if p != nil {
			out = append(out, p.info())
		}
	}
	return out, nil
}

func (p *dpPort) info() odp.Port {
	var opts map[string]string
	if len(p.opts) > 0 {
		opts = make(map[string]string, len(p.opts))
		for k, v := range p.opts {
			opts[k] = v
		}
	}
	return odp.Port{Number: p.number, Name: p.name, Type: p.typ, Options: opts, Stats: p.port.Stats()}
}

// AddPort adds a port: type "netdev" (or empty) opens the existing Linux
// interface spec.Name with the backend its option "mode" names: "ring"
// (the default: a TPACKET_V2 slot ring and a TPACKET_V3 block ring), "mmsg" (recvmmsg) or "xdp" (AF_XDP;
// where the kernel, the driver or another XDP program prevents it, the
// port falls back to the ring and its option "xdp_fallback" says why);
// the port's options then give the backend in use as "mode". Type
// "internal" creates a tap device; "geneve", "vxlan" and "gre" open a
// tunnel port on the host's stack (options "dst_port" and, for vxlan,
// "exts=gbp"; see tunnel.go);
// PortMemory ("memory") creates an in-memory pipe (options "mtu" and
// "queue" size it; MemoryPeer returns its other end). Other types wrap
// odp.ErrUnsupported. A name in use gives EEXIST, a number in use EBUSY.
func (dp *Datapath) AddPort(ctx context.Context, spec odp.PortSpec) (odp.Port, error) {
	if spec.Name == "" {
		return odp.Port{}, fmt.Errorf("userdp: add port: no name: %w", syscall.EINVAL)
	}
	if err := dp.checkNewPort(spec.Name, spec.Number); err != nil {
		return odp.Port{}, err
	}
	var p Port
	var peer *MemPort
	var err error
	switch spec.Type {
	case odp.PortNetdev, "":
		spec.Type = odp.PortNetdev
		var used, fallback string
		if p, used, fallback, err = openNetdevPort(spec.Name, spec.Options["mode"]); err == nil {
			// The backend in use, as the port's options show it.
			opts := make(map[string]string, len(spec.Options)+2)
			for k, v := range spec.Options {
				opts[k] = v
			}
			opts["mode"] = used
			if fallback != "" {
				opts["xdp_fallback"] = fallback
			}
			spec.Options = opts
		}
	case odp.PortInternal:
		p, err = openInternalPort(spec.Name)
	case odp.PortGeneve, odp.PortVXLAN, odp.PortGRE:
		var cfg tunnelConfig
		if cfg, spec.Options, err = parseTunnelOptions(spec.Name, tunnelKindOf(spec.Type), spec.Options); err != nil {
			return odp.Port{}, err
		}
		p, err = openTunnel(spec.Name, cfg)
	case PortMemory:
		mtu, depth := dp.opts.memMTU, dp.opts.memDepth
		if v, ok := spec.Options["mtu"]; ok {
			if mtu, err = strconv.Atoi(v); err != nil {
				return odp.Port{}, fmt.Errorf("userdp: add port %s: option mtu=%q: %w", spec.Name, v, syscall.EINVAL)
			}
		}
		if v, ok := spec.Options["queue"]; ok {
			if depth, err = strconv.Atoi(v); err != nil {
				return odp.Port{}, fmt.Errorf("userdp: add port %s: option queue=%q: %w", spec.Name, v, syscall.EINVAL)
			}
		}
		var mp *MemPort
		mp, peer, err = NewMemPipe(spec.Name, spec.Name+"-peer", mtu, depth)
		p = mp
	default:
		return odp.Port{}, fmt.Errorf("userdp: add port %s: type %q: %w", spec.Name, spec.Type, odp.ErrUnsupported)
	}
	if err != nil {
		return odp.Port{}, fmt.Errorf("userdp: add port %s: %w", spec.Name, err)
	}
	info, err := dp.attach(p, spec.Type, spec.Number, spec.Options, peer)
	if err != nil {
		p.Close()
		if peer != nil {
			peer.Close()
		}
	}
	return info, err
}

// AttachPort adds an already open Port (of any implementation) as port
// number (0: the lowest free number) and starts forwarding its frames.
// The datapath closes it when the port is deleted or the datapath
// closed.
func (dp *Datapath) AttachPort(p Port, number uint32) (odp.Port, error) {
	if err := dp.checkNewPort(p.Name(), number); err != nil {
		return odp.Port{}, err
	}
	return dp.attach(p, p.Type(), number, nil, nil)
}

// MemoryPeer returns the other end of the in-memory port called name (see
// PortMemory), or nil.
func (dp *Datapath) MemoryPeer(name string) *MemPort {
	dp.mu.Lock()
	defer dp.mu.Unlock()
	return dp.memPeer[name]
}

// checkNewPort fails if the name or number is taken.
func (dp *Datapath) checkNewPort(name string, number uint32) error {
	dp.mu.Lock()
	defer dp.mu.Unlock()
	return dp.checkNewPortLocked(name, number)
}

func (dp *Datapath) checkNewPortLocked(name string, number uint32) error {
	if dp.closed {
		return fmt.Errorf("userdp: add port %s: datapath %s is closed: %w", name, dp.name, os.ErrClosed)
	}
	if number > maxPortNumber {
		return fmt.Errorf("userdp: add port %s: number %d exceeds %d: %w", name, number, maxPortNumber, syscall.EFBIG)
	}
	pt := dp.ports.Load()
	for _, p := range pt.byNumber {
		if p != nil && p.name == name {
			return fmt.Errorf("userdp: add port %s: name in use by port %d: %w", name, p.number, os.ErrExist)
		}
	}
	if number != 0 && int(number) < len(pt.byNumber) && pt.byNumber[number] != nil {
		return fmt.Errorf("userdp: add port %s: number %d in use by %s: %w", name, number, pt.byNumber[number].name, syscall.EBUSY)
	}
	return nil
}

// attach numbers p, publishes it and starts its receive loop.
func (dp *Datapath) attach(p Port, typ odp.PortType, number uint32, opts map[string]string, peer *MemPort) (odp.Port, error) {
	dp.mu.Lock()
	defer dp.mu.Unlock()
	if err := dp.checkNewPortLocked(p.Name(), number); err != nil {
		return odp.Port{}, err
	}
	old := dp.ports.Load().byNumber
	if number == 0 && !(p.Name() == dp.name && typ == odp.PortInternal && (len(old) == 0 || old[0] == nil)) {
		// The lowest free number from 1; 0 is the local port's.
		number = 1
		for int(number) < len(old) && old[number] != nil {
			number++
		}
		if number > maxPortNumber {
			return odp.Port{}, fmt.Errorf("userdp: add port %s: no free port number: %w", p.Name(), syscall.EFBIG)
		}
	}
	n := max(len(old), int(number)+1)
	byNumber := make([]*dpPort, n)
	copy(byNumber, old)
	cp := make(map[string]string, len(opts))
	for k, v := range opts {
		cp[k] = v
	}
	dpp := &dpPort{number: number, name: p.Name(), typ: typ, opts: cp, port: p, done: make(chan struct{})}
	if _, ok := p.(tunnelOut); ok {
		dp.tunnels.Add(1)
	}
	byNumber[number] = dpp
	dp.ports.Store(&portTable{byNumber: byNumber})
	if peer != nil {
		dp.memPeer[p.Name()] = peer
	}
	dp.wg.Add(1)
	go dp.rxLoop(dpp)
	return dpp.info(), nil
}

// SetPort changes a port's options. The userspace datapath's ports have
// none that can change: it checks that the port exists (ENODEV) and that
// the type, if given, is the port's (EINVAL), and stores the options.
func (dp *Datapath) SetPort(ctx context.Context, spec odp.PortSpec) error {
	dp.mu.Lock()
	defer dp.mu.Unlock()
	var p *dpPort
	for _, q := range dp.ports.Load().byNumber {
		if q != nil && ((spec.Number != 0 && q.number == spec.Number) || (spec.Number == 0 && q.name == spec.Name)) {
			p = q
		}
	}
	if p == nil {
		return fmt.Errorf("userdp: set port %q (%d): %w", spec.Name, spec.Number, errNoPort)
	}
	if spec.Type != "" && spec.Type != p.typ {
		return fmt.Errorf("userdp: set port %s: type %s cannot change to %s: %w", p.name, p.typ, spec.Type, syscall.EINVAL)
	}
	if _, ok := p.port.(tunnelOut); ok && len(spec.Options) > 0 {
		// As the kernel's tunnel vports, which have no set_options.
		return fmt.Errorf("userdp: set port %s: the options of a %s port cannot change: %w", p.name, p.typ, syscall.EOPNOTSUPP)
	}
	// A netdev port's backend (AddPort's mode= and xdp_fallback) stays:
	// it cannot change while the port is open.
	if m, ok := spec.Options["mode"]; ok && p.typ == odp.PortNetdev && m != p.opts["mode"] {
		return fmt.Errorf("userdp: set port %s: mode=%s: the backend (%s) cannot change on an open port; delete and add it again: %w", p.name, m, p.opts["mode"], syscall.EINVAL)
	}
	// Publish a new dpPort value rather than write the shared one.
	np := *p
	np.opts = make(map[string]string, len(spec.Options)+2)
	for k, v := range spec.Options {
		np.opts[k] = v
	}
	for _, k := range []string{"mode", "xdp_fallback"} {
		if v, ok := p.opts[k]; ok && p.typ == odp.PortNetdev {
			np.opts[k] = v
		}
	}
	old := dp.ports.Load().byNumber
	byNumber := slices.Clone(old)
	byNumber[p.number] = &np
	dp.ports.Store(&portTable{byNumber: byNumber})
	return nil
}

// errNoPort is the error for a port that does not exist (the kernel's
// ENODEV; it also matches os.ErrNotExist).
var errNoPort = fmt.Errorf("no such port: %w (%w)", syscall.ENODEV, os.ErrNotExist)

// DelPort removes a port, stopping its receive loop and closing it.
// Removing the local port 0 is EINVAL, as in the kernel.
func (dp *Datapath) DelPort(ctx context.Context, number uint32) error {
	dp.mu.Lock()
	old := dp.ports.Load().byNumber
	if int(number) >= len(old) || old[number] == nil {
		dp.mu.Unlock()
		return fmt.Errorf("userdp: delete port %d: %w", number, errNoPort)
	}
	p := old[number]
	if number == 0 && p.typ == odp.PortInternal && p.name == dp.name {
		dp.mu.Unlock()
		return fmt.Errorf("userdp: delete port 0: the local port cannot be deleted: %w", syscall.EINVAL)
	}
	byNumber := slices.Clone(old)
	byNumber[number] = nil
	dp.ports.Store(&portTable{byNumber: byNumber})
	err := dp.closePort(p)
	dp.mu.Unlock()
	<-p.done
	return err
}

// rxLoop is a port's forwarding goroutine.
func (dp *Datapath) rxLoop(p *dpPort) {
	defer dp.wg.Done()
	defer close(p.done)
	w := newWorker(dp, dp.opts.cacheEntries)
	if t, ok := p.port.(tunnelOut); ok {
		dp.tunnelRxLoop(w, p, t)
		return
	}
	dp.readLoop(p, p.port, w, func(bufs [][]byte, sizes []int, n int) {
		w.processBatch(bufs, sizes, n, p.number)
	})
}

// readLoop reads batches of frames from r (port p's device, or one of
// its sockets) into buffers it owns, hands each batch to run and ends
// it (w.flush), until the port is closed or removed.
func (dp *Datapath) readLoop(p *dpPort, r Port, w *worker, run func(bufs [][]byte, sizes []int, n int)) {
	batch := dp.opts.batch
	size := BufferSize(r.MTU())
	backing := make([]byte, batch*size)
	bufs := make([][]byte, batch)
	for i := range bufs {
		bufs[i] = backing[i*size : (i+1)*size : (i+1)*size]
	}
	sizes := make([]int, batch)
	for {
		n, err := r.ReadBatch(bufs, sizes, DefaultHeadroom)
		if err != nil {
			if errors.Is(err, ErrPortClosed) || dp.portByNumber(p.number) != p {
				return
			}
			// A transient error (the port counts it): pause briefly
			// so that a persistent one does not spin.
			select {
			case <-dp.stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
			continue
		}
		w.now = dp.nowMs()
		run(bufs, sizes, n)
		w.flush()
	}
}

// Upcalls opens n upcall receivers and directs the datapath's upcalls to
// them, replacing any opened before (those receive nothing new). A miss
// goes to the receiver chosen by the hash of the packet's key; a
// userspace action to the receiver whose PID it names, else by hash.
func (dp *Datapath) Upcalls(ctx context.Context, n int) ([]odp.UpcallReceiver, error) {
	if n <= 0 {
		return nil, fmt.Errorf("userdp: upcalls: %d receivers: %w", n, syscall.EINVAL)
	}
	dp.mu.Lock()
	closed := dp.closed
	dp.mu.Unlock()
	if closed {
		return nil, fmt.Errorf("userdp: upcalls: datapath %s is closed: %w", dp.name, os.ErrClosed)
	}
	qs := dp.upcalls.open(dp, n, dp.opts.queueLen)
	out := make([]odp.UpcallReceiver, n)
	for i, q := range qs {
		out[i] = &UpcallReceiver{q: q}
	}
	return out, nil
}
