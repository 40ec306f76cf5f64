// Package daemon is the upcall handler daemon's engine: it receives the
// misses of any odp.Datapath, decides with a policy (package policy),
// installs megaflows, executes the packets, and keeps the flow table
// right over time with a revalidator (idle expiry, a dynamic flow limit,
// re-decision of affected flows on every policy change). It knows the
// datapath only through odp.Datapath.
package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ovsdp/ovsdp/internal/monoclock"
	"github.com/ovsdp/ovsdp/odp"
	"github.com/ovsdp/ovsdp/policy"
)

// Defaults of Config.
const (
	DefaultIdleTimeout        = 10 * time.Second
	DefaultFlowLimit          = 200000
	DefaultRevalidateInterval = 500 * time.Millisecond
	// DefaultBatch is how many upcalls a handler reads at once.
	DefaultBatch = 64
	// initialFlowLimit is where the dynamic flow limit starts (capped by
	// Config.FlowLimit), as in Open vSwitch.
	initialFlowLimit = 10000
	// minFlowLimit is the lowest the dynamic limit goes when dumps are
	// slow (unless Config.FlowLimit is lower).
	minFlowLimit = 1000
	// limitIdle is the idle timeout used while the datapath holds more
	// flows than the limit.
	limitIdle = 100 * time.Millisecond
	// DefaultMaxLag is how long a handler whose receiver reports no
	// queue depth may stay behind before it sheds load (Config.MaxLag).
	DefaultMaxLag = 250 * time.Millisecond
)

// Config configures a Daemon.
type Config struct {
	// Datapath is the datapath to drive (required).
	Datapath odp.Datapath
	// Ports are network devices to add to the datapath as netdev ports
	// when it does not have them yet.
	Ports []string
	// PortVLANs is the VLAN configuration of ports by name (upcalld's
	// --port IFACE,vlan=N...) that the learning switch follows; a port
	// not in it is a trunk of every VLAN. The names are resolved to port
	// numbers whenever the port list changes.
	PortVLANs map[string]policy.PortVLAN
	// Mirrors copy selected traffic to a port (upcalld's --mirror; see
	// policy.Mirror), by port name, resolved whenever the port list
	// changes; at most policy.MaxMirrors.
	Mirrors []policy.MirrorSpec
	// PortModes is the userspace datapath's backend of ports by name
	// (--port IFACE,mode=ring|mmsg|xdp: the port option mode=).
	PortModes map[string]string
	// PortUp reports whether the network device of a port is up, for the
	// liveness of group buckets (watch_port); nil reads its carrier
	// (carrierUp).
	PortUp func(name string) bool
	// Rules is the policy; nil means the L2 learning switch
	// (policy.DefaultRules).
	Rules *policy.RuleSet
	// RulesFile is the file ReloadRulesFile reads (on SIGHUP); empty when
	// the daemon runs the learning switch.
	RulesFile string
	// Handlers is the number of upcall handlers; 0 means one per CPU.
	Handlers int
	// NoHandlers makes Run open no upcall receivers and run no
	// revalidator: the datapath's misses are lost, as for a kernel
	// datapath without a daemon (dpctl's netdev datapaths).
	NoHandlers bool
	// Batch is how many upcalls a handler reads at once (DefaultBatch).
	// A handler decides a batch's upcalls one by one, then puts their
	// megaflows and executes their packets together: in one batched call
	// each when the datapath offers them (the kernel datapath: many
	// netlink requests per system call), else one call per item.
	Batch int
	// IdleTimeout is how long a flow may go unused before the
	// revalidator deletes it (DefaultIdleTimeout).
	IdleTimeout time.Duration
	// FlowLimit is the maximum number of flows (DefaultFlowLimit); the
	// daemon lowers its working limit below it when dumps are slow.
	FlowLimit int
	// RevalidateInterval is the period of revalidation passes
	// (DefaultRevalidateInterval); policy changes start one at once.
	RevalidateInterval time.Duration
	// MaxLag is the fallback overload rule for receivers that report
	// no queue depth (DefaultMaxLag); the kernel's upcall sockets and the
	// userspace datapath's queues do report it, and for them a handler
	// sheds only when its queue is about to overflow: at least 7/8 full
	// (or the socket overran, ENOBUFS), it sheds misses from unknown
	// sources; 15/16 full, every miss; and it goes on until the queue is
	// below three quarters (overload.go). A miss whose Ethernet source the
	// learning switch already knows on its port is still handled in full
	// while the handler sheds unknown sources (known hosts keep working
	// during a flood of new addresses); any other is dropped without
	// being decoded, counted in Status.Shed. How long a batch takes does
	// not count: under an emulated CPU a batch can take far longer than
	// MaxLag while the queue holds a fraction of what it can. For a
	// receiver without a depth, a handler is behind while every read
	// fills a whole batch; behind for longer than MaxLag it sheds
	// unknown sources, for longer than 4*MaxLag every miss. As in Open
	// vSwitch, overload is met by dropping, never by queueing without
	// bound: the daemon recovers as soon as the flood ends.
	MaxLag time.Duration
	// Learning configures the learning switch (its OnEvent is the
	// daemon's own and is ignored here).
	Learning policy.LearningOptions
	// Logger receives structured logs (slog.Default when nil).
	Logger *slog.Logger
	// Registry, when set, gets the daemon's Prometheus metrics.
	Registry prometheus.Registerer
	// PacketInRate is how many packet-ins (the upcalls of controller
	// actions) a second the daemon sends its packet-in subscribers at
	// most (DefaultPacketInRate); PacketInBurst how many it may send at
	// once after a quiet spell (0: max(1, PacketInRate/4)).
	PacketInRate  float64
	PacketInBurst int
	// MonoMillis is the clock of odp.FlowStats.Used: milliseconds of
	// CLOCK_MONOTONIC (the default when nil). Tests inject their own.
	MonoMillis func() uint64
}

// policyState is the policy the handlers use, replaced as a whole on
// every change; gen increases with every replacement.
type policyState struct {
	// rules are src with its port names resolved against ports.
	rules *policy.RuleSet
	src   *policy.RuleSet
	ports map[string]uint32 // port numbers by name
	env   *policy.Env
	gen   uint64
}

// resolve sets ps.rules from ps.src and ps.ports, and logs the port names
// the rules use that are not ports of the datapath.
func (d *Daemon) resolve(ps *policyState) {
	var missing []string
	ps.rules, missing = ps.src.Resolve(ps.ports)
	if len(missing) > 0 {
		d.log.Warn("rules name ports the datapath does not have: in_port= of them matches nothing, output: to them is skipped", "ports", missing)
	}
}

// Daemon is one running upcall handler daemon.
type Daemon struct {
	cfg   Config
	dp    odp.Datapath
	log   *slog.Logger
	mono  func() uint64
	sw    *policy.LearningSwitch
	pol   atomic.Pointer[policyState]
	polMu sync.Mutex // serialises policy replacements
	flows *flowTable
	// recirc is the recirculation IDs of ct(...,table=N), referred to by
	// the flows' actions (counted by flows).
	recirc *policy.RecircTable
	m      *metrics
	lat    Latency
	taps   tapSet    // upcall subscribers (tap.go)
	pins   packetIns // packet-in subscribers and their rate limit (packetin.go)

	flowLimit atomic.Int64
	maxLimit  int64

	// MAC table changes: dirty maps an address to the MAC sequence
	// number of its last change.
	macSeq   atomic.Uint64
	macMu    sync.Mutex
	dirty    map[[6]byte]uint64
	prevSnap uint64

	wake chan struct{}

	// portNames is portNames of the port list refreshPorts last saw
	// (the revalidator's goroutine, and Setup before it starts).
	portNames string
	// down is the canonical text of the ports that are down (liveness),
	// as the policy's Env.PortUp last saw them.
	down string

	recvMu    sync.Mutex
	receivers []odp.UpcallReceiver

	revalMu  sync.Mutex // one pass at a time
	curPass  atomic.Uint64
	dumpBuf  []dumped
	lastDump atomic.Int64 // nanoseconds
	// lastPassEnd is when the last revalidation pass ended (Unix
	// nanoseconds), 0 before the first.
	lastPassEnd atomic.Int64
	passes      atomic.Uint64
	lost        atomic.Uint64
	lostBase    uint64
	lostSet     bool
	dpFlows     atomic.Uint64
	mode        atomic.Value // string
	handled     atomic.Uint64
	shed        atomic.Uint64
	failed      atomic.Uint64
	ctrl        atomic.Uint64
	installed   atomic.Uint64
	started     time.Time

	// clock is the coarse clock of the learning switch: nanoseconds
	// since started, advanced by the handlers (after reading a batch and
	// after handling it) and the revalidator, so that learning reads no
	// clock of its own (reading the clock is costly in a VM).
	clock atomic.Int64

	errLog  rateLimit
	macLog  rateLimit
	shedLog rateLimit

	// panics counts the panics contained (contain.go); panicLog limits
	// their reports.
	panics   atomic.Uint64
	panicLog rateLimit
}

// New checks cfg and returns a daemon ready to Run.
func New(cfg Config) (*Daemon, error) {
	if cfg.Datapath == nil {
		return nil, errors.New("daemon: no datapath")
	}
	if cfg.Handlers < 0 {
		return nil, fmt.Errorf("daemon: %d handlers: want 0 (one per CPU) or more", cfg.Handlers)
	}
	if cfg.Handlers == 0 {
		cfg.Handlers = runtime.NumCPU()
	}
	if cfg.Batch <= 0 {
		cfg.Batch = DefaultBatch
	}
	if cfg.IdleTimeout < 0 || cfg.FlowLimit < 0 || cfg.RevalidateInterval < 0 || cfg.MaxLag < 0 {
		return nil, errors.New("daemon: negative idle timeout, flow limit, revalidation interval or maximum lag")
	}
	if len(cfg.Mirrors) > policy.MaxMirrors {
		return nil, fmt.Errorf("daemon: %d mirrors: at most %d", len(cfg.Mirrors), policy.MaxMirrors)
	}
	if cfg.PacketInRate < 0 || cfg.PacketInBurst < 0 {
		return nil, fmt.Errorf("daemon: packet-in rate %v and burst %d: want positive values (or 0 for the defaults)", cfg.PacketInRate, cfg.PacketInBurst)
	}
	if cfg.PacketInRate == 0 {
		cfg.PacketInRate = DefaultPacketInRate
	}
	if cfg.PacketInBurst == 0 {
		cfg.PacketInBurst = max(1, int(cfg.PacketInRate/defaultBurstDivisor))
	}
	if cfg.MaxLag == 0 {
		cfg.MaxLag = DefaultMaxLag
	}
	if cfg.IdleTimeout == 0 {
		cfg.IdleTimeout = DefaultIdleTimeout
	}
	if cfg.FlowLimit == 0 {
		cfg.FlowLimit = DefaultFlowLimit
	}
	if cfg.RevalidateInterval == 0 {
		cfg.RevalidateInterval = DefaultRevalidateInterval
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	recirc := policy.NewRecircTable()
	d := &Daemon{
		cfg:      cfg,
		recirc:   recirc,
		dp:       cfg.Datapath,
		log:      cfg.Logger.With("datapath", cfg.Datapath.Type()+"@"+cfg.Datapath.Name()),
		mono:     cfg.MonoMillis,
		flows:    newFlowTable(recirc),
		dirty:    make(map[[6]byte]uint64),
		wake:     make(chan struct{}, 1),
		maxLimit: int64(cfg.FlowLimit),
		started:  time.Now(),
		shedLog:  rateLimit{max: 1},
	}
	d.pins.bucket = newTokenBucket(cfg.PacketInRate, cfg.PacketInBurst)
	d.pins.now = func() int64 { return time.Now().UnixNano() }
	if d.mono == nil {
		d.mono = monoclock.Millis
	}
	d.flowLimit.Store(min(d.maxLimit, initialFlowLimit))
	lo := cfg.Learning
	lo.OnEvent = d.onMACEvent
	if lo.Now == nil {
		lo.Now = d.coarseNow
	}
	d.sw = policy.NewLearningSwitch(lo)
	rules := cfg.Rules
	if rules == nil {
		rules = policy.DefaultRules()
	}
	d.pol.Store(&policyState{rules: rules, src: rules, env: &policy.Env{Switch: d.sw, Recirc: recirc}, gen: 1})
	d.mode.Store("")
	d.m = newMetrics(cfg.Registry, d)
	return d, nil
}

// Switch returns the daemon's learning switch.
func (d *Daemon) Switch() *policy.LearningSwitch { return d.sw }

// Rules returns the rule set in use.
func (d *Daemon) Rules() *policy.RuleSet { return d.pol.Load().rules }

// Latency returns the handler latency histogram: for each upcall handled
// (not shed), the time from the read of its batch to the end of the
// batch's work, when its flow is installed and its packet executed.
func (d *Daemon) Latency() *Latency { return &d.lat }

// Setup adds the configured ports the datapath lacks, learns the port
// list, and adopts the flows already in the datapath (they are kept and
// revalidated, not flushed, so that a restart does not black-hole
// traffic). Run calls it; tests may call it alone.
func (d *Daemon) Setup(ctx context.Context) error {
	ports, err := d.dp.Ports(ctx)
	if err != nil {
		return fmt.Errorf("listing ports: %w", err)
	}
	have := make(map[string]bool, len(ports))
	for _, p := range ports {
		have[p.Name] = true
	}
	for _, name := range d.cfg.Ports {
		if have[name] {
			d.log.Info("port already in the datapath", "port", name)
			continue
		}
		spec := odp.PortSpec{Name: name, Type: odp.PortNetdev}
		if m := d.cfg.PortModes[name]; m != "" {
			spec.Options = map[string]string{"mode": m}
		}
		p, err := d.dp.AddPort(ctx, spec)
		if err != nil {
			return fmt.Errorf("adding port %s: %w", name, err)
		}
		have[name] = true
		d.log.Info("port added", "port", name, "number", p.Number, "mode", p.Options["mode"])
		if why := p.Options["xdp_fallback"]; why != "" {
			d.log.Warn("port falls back from AF_XDP", "port", name, "reason", why)
		}
	}
	if _, err := d.refreshPorts(ctx); err != nil {
		return err
	}
	d.refreshLiveness(ctx)
	if d.cfg.NoHandlers {
		return nil
	}
	n, err := d.adopt(ctx)
	if err != nil {
		return fmt.Errorf("adopting existing flows: %w", err)
	}
	if n > 0 {
		d.log.Info("adopted existing flows; revalidating them", "flows", n)
	}
	return nil
}

// Run sets the datapath up (Setup), starts the handlers and the
// revalidator, and returns when ctx is done, after they stopped. The
// datapath and its flows stay.
func (d *Daemon) Run(ctx context.Context) error {
	if err := d.Setup(ctx); err != nil {
		return err
	}
	if d.cfg.NoHandlers {
		d.log.Info("running without handlers: misses are lost")
		<-ctx.Done()
		return nil
	}
	rxs, err := d.dp.Upcalls(ctx, d.cfg.Handlers)
	if err != nil {
		return fmt.Errorf("opening %d upcall handlers: %w", d.cfg.Handlers, err)
	}
	d.recvMu.Lock()
	d.receivers = rxs
	d.recvMu.Unlock()
	if pp, ok := rxs[0].(interface{ PID() uint32 }); ok {
		d.updatePolicy(func(ps *policyState) {
			env := *ps.env
			env.ControllerPID = pp.PID()
			ps.env = &env
		})
	}
	d.pollDatapath(ctx)
	d.log.Info("handling upcalls", "handlers", len(rxs), "upcall_mode", d.mode.Load(),
		"policy", d.policyName(), "flow_limit", d.maxLimit, "idle", d.cfg.IdleTimeout)

	var wg sync.WaitGroup
	for i, rx := range rxs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d.handler(ctx, i, rx)
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		d.revalidator(ctx)
	}()
	<-ctx.Done()
	for _, rx := range rxs {
		rx.Close()
	}
	wg.Wait()
	d.log.Info("stopped", "flows_left", d.flows.len())
	return nil
}

// ReloadRules replaces the rules with those read from r (named name in
// errors). A bad file keeps the current rules and returns the error.
// Every flow is then re-decided by the revalidator.
func (d *Daemon) ReloadRules(name string, r io.Reader) error {
	old := d.pol.Load().src
	rs, err := policy.Reload(old, name, r)
	if err != nil {
		d.log.Error("rules reload failed; keeping the previous rules", "file", name, "err", err)
		return err
	}
	d.updatePolicy(func(ps *policyState) {
		ps.src = rs
		d.resolve(ps)
	})
	d.log.Info("rules reloaded", "file", name, "rules", len(rs.Rules))
	d.kick()
	return nil
}

// ReloadRulesFile reloads Config.RulesFile (see ReloadRules).
func (d *Daemon) ReloadRulesFile() error {
	if d.cfg.RulesFile == "" {
		return errors.New("no rules file to reload (the daemon runs the learning switch)")
	}
	f, err := os.Open(d.cfg.RulesFile)
	if err != nil {
		d.log.Error("rules reload failed; keeping the previous rules", "file", d.cfg.RulesFile, "err", err)
		return fmt.Errorf("reloading rules: %w", err)
	}
	defer f.Close()
	return d.ReloadRules(d.cfg.RulesFile, f)
}

// updatePolicy replaces the policy state with a modified copy of the
// current one and a new generation.
func (d *Daemon) updatePolicy(fn func(*policyState)) {
	d.polMu.Lock()
	defer d.polMu.Unlock()
	ps := *d.pol.Load()
	fn(&ps)
	ps.gen++
	d.pol.Store(&ps)
}

func (d *Daemon) policyName() string {
	if d.cfg.Rules == nil && d.cfg.RulesFile == "" {
		return "learning switch"
	}
	return "rules " + d.pol.Load().rules.Name
}

// refreshPorts updates the port list that flood and normal use, the
// ports' VLAN configuration, and the port numbers of the names the rules
// use; it reports whether the list changed (a new policy generation, so every flow is
// re-decided).
func (d *Daemon) refreshPorts(ctx context.Context) (bool, error) {
	ports, err := d.dp.Ports(ctx)
	if err != nil {
		return false, fmt.Errorf("listing ports: %w", err)
	}
	nums := make([]uint32, 0, len(ports))
	vlans := make(map[uint32]policy.PortVLAN)
	byName := make(map[string]uint32, len(ports))
	for _, p := range ports {
		nums = append(nums, p.Number)
		byName[p.Name] = p.Number
		if c, ok := d.cfg.PortVLANs[p.Name]; ok {
			vlans[p.Number] = c
		}
	}
	byNumber := portNames(ports)
	old := d.pol.Load().env.Ports
	if slices.Equal(old, nums) && byNumber == d.portNames {
		return false, nil
	}
	d.portNames = byNumber
	gone := make(map[uint32]bool, len(old))
	for _, n := range old {
		gone[n] = true
	}
	for _, n := range nums {
		delete(gone, n)
	}
	for n := range gone {
		d.sw.ForgetPort(n)
	}
	mirrors := d.resolveMirrors(byName)
	d.updatePolicy(func(ps *policyState) {
		env := *ps.env
		env.Ports = nums
		if len(d.cfg.PortVLANs) > 0 {
			env.VLANs = policy.NewVLANTable(vlans)
		}
		env.Mirrors = mirrors
		ps.env = &env
		ps.ports = byName
		d.resolve(ps)
	})
	d.log.Info("ports", "numbers", nums)
	return true, nil
}

// resolveMirrors gives the configured mirrors with the port numbers of
// ports (by name), and logs what they name that is not a port: a mirror
// without its output port copies nothing.
func (d *Daemon) resolveMirrors(ports map[string]uint32) []policy.Mirror {
	var ms []policy.Mirror
	for i := range d.cfg.Mirrors {
		m, missing, ok := d.cfg.Mirrors[i].Resolve(ports)
		if len(missing) > 0 {
			d.log.Warn("a mirror names ports the datapath does not have", "mirror", m.Name, "ports", missing, "usable", ok)
		}
		if ok {
			ms = append(ms, m)
		}
	}
	return ms
}

// portNames is a canonical text of the port list's numbers and names:
// a port that comes back under another number changes it.
func portNames(ports []odp.Port) string {
	var b strings.Builder
	for _, p := range ports {
		fmt.Fprintf(&b, "%d=%s\n", p.Number, p.Name)
	}
	return b.String()
}

// onMACEvent is the learning switch's event hook: flows to the address
// must be re-decided. Only a move needs that at once (its flows now send
// to the wrong port); the flows to a newly learned address flood until
// the next periodic pass, which is correct, and so do those to an
// expired or evicted one, which still reach the port the address was
// last seen on. Kicking the revalidator for every new address would make
// a flood of new addresses run passes back to back.
func (d *Daemon) onMACEvent(ev policy.Event) {
	seq := d.macSeq.Add(1)
	d.macMu.Lock()
	d.dirty[ev.MAC] = seq
	d.macMu.Unlock()
	if ev.Kind != policy.Moved {
		if d.log.Enabled(context.Background(), slog.LevelDebug) {
			d.log.Debug("mac table", "event", ev.String())
		}
		return
	}
	d.macLog.do(func() { d.log.Info("mac table", "event", ev.String()) })
	d.kick()
}

// tick advances the coarse clock to t (it never goes back).
func (d *Daemon) tick(t time.Time) {
	ns := int64(t.Sub(d.started))
	for {
		cur := d.clock.Load()
		if ns <= cur || d.clock.CompareAndSwap(cur, ns) {
			return
		}
	}
}

// coarseNow is the coarse clock: the latest time a handler or the
// revalidator read.
func (d *Daemon) coarseNow() time.Time {
	return d.started.Add(time.Duration(d.clock.Load()))
}

// kick asks the revalidator for a pass soon.
func (d *Daemon) kick() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// receiverLost sums the overruns the receivers report.
func (d *Daemon) receiverLost() uint64 {
	d.recvMu.Lock()
	defer d.recvMu.Unlock()
	var n uint64
	for _, rx := range d.receivers {
		if l, ok := rx.(interface{ Lost() uint64 }); ok {
			n += l.Lost()
		}
	}
	return n
}

// pollDatapath reads the datapath's statistics: lost upcalls, flows,
// upcall mode.
func (d *Daemon) pollDatapath(ctx context.Context) {
	info, err := d.dp.Info(ctx)
	if err != nil {
		if ctx.Err() == nil {
			d.errLog.do(func() { d.log.Warn("reading datapath statistics", "err", err) })
		}
		return
	}
	if !d.lostSet {
		d.lostBase, d.lostSet = info.Stats.Lost, true
	}
	if info.Stats.Lost >= d.lostBase {
		prev := d.lost.Load()
		cur := info.Stats.Lost - d.lostBase
		d.lost.Store(cur)
		if cur > prev {
			d.errLog.do(func() {
				d.log.Warn("upcalls lost", "new", cur-prev, "total", cur)
			})
		}
	}
	d.dpFlows.Store(info.Stats.Flows)
	if info.UpcallMode != "" {
		d.mode.Store(info.UpcallMode)
	} else if d.dp.Type() == "netdev" {
		d.mode.Store("per-handler queues")
	}
}

// rateLimit lets through at most max calls a second (10 when max is 0).
type rateLimit struct {
	max int64
	sec atomic.Int64
	n   atomic.Int64
}

func (r *rateLimit) do(fn func()) {
	if r.allow() {
		fn()
	}
}

// allow reports whether one more call may go through this second.
func (r *rateLimit) allow() bool {
	now := time.Now().Unix()
	if r.sec.Load() != now {
		r.sec.Store(now)
		r.n.Store(0)
	}
	limit := r.max
	if limit == 0 {
		limit = 10
	}
	return r.n.Add(1) <= limit
}
