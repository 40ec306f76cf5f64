package crosscheck

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ovsdp/ovsdp/flowkeys"
	"github.com/ovsdp/ovsdp/internal/kernelct"
	"github.com/ovsdp/ovsdp/odp"
)

// FlowSpec is an explicit flow in ovs-dpctl syntax, as for
// "dpctl add-flow DP KEY ACTIONS". "$PID" in Actions stands for the
// upcall receiver's PID.
type FlowSpec struct {
	Key, Actions string
}

// Scenario is one cross-check scenario.
type Scenario struct {
	Name  string
	Hosts []Host
	// Meters are set before the flows are installed; their statistics
	// are observed after the traffic.
	Meters []odp.MeterInfo
	// Flows are installed before the traffic starts, in order.
	Flows []FlowSpec
	// Handler answers misses with the policy Rules (ovs-ofctl subset;
	// empty: the learning switch). Without it misses are only recorded.
	Handler bool
	Rules   string
	// Traffic runs once the datapath is ready. An error is recorded in
	// the observation (and so compared), not fatal.
	Traffic func(e *Env) error
	// Stack says the frames come from the hosts' network stacks: they
	// are normalized with a StackNormalizer per host.
	Stack bool
	// Compare relaxes the comparison (see CompareOptions).
	Compare CompareOptions
	// Check verifies what must hold on each datapath alone (so that two
	// datapaths that both do nothing do not pass); nil means none.
	Check func(o *Observation) error
	// Conntrack flushes the datapath's connection tracker before the
	// flows are installed (on system@ the kernel's table of the test's
	// namespace, which outlives each datapath) and observes its entries
	// after the traffic.
	Conntrack bool
	// ZoneLimits are set on the datapath's tracker (odp.CTLimiter)
	// before the flows are installed; after the traffic every limit is
	// observed with its count, then deleted (the kernel keeps them per
	// namespace, not per datapath).
	ZoneLimits []odp.CTZoneLimit
	// Normalize rewrites, after the run and before Check and Compare,
	// what legitimately differs between the datapaths (a NAT port the
	// kernel picks at random), having checked that it is valid; an
	// error is recorded in the observation.
	Normalize func(o *Observation) error
}

// Opener creates a datapath called name (deleted by the returned
// cleanup).
type Opener func(name string) (odp.Datapath, func(), error)

// Timing of Play.
const (
	settle     = 200 * time.Millisecond // after the links come up
	quietTime  = 500 * time.Millisecond // no new frame or upcall for this long ends a run
	maxRunTime = 20 * time.Second
)

// maxRecvErrors is how many upcall receive errors an observation lists.
const maxRecvErrors = 20

// pider is a receiver that has a PID (genl's sockets, userdp's queues).
type pider interface{ PID() uint32 }

// Play runs s on a datapath created by open and returns what happened.
// It returns an error only when the scenario could not be played at all
// (topology, datapath or upcall set-up failed).
func Play(t testing.TB, s *Scenario, dpName string, open Opener) (*Observation, error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	hosts := map[string]*liveHost{}
	var order []*liveHost
	// Only hosts with IPv6 send background traffic of their own.
	noisy := false
	for _, h := range s.Hosts {
		noisy = noisy || h.IPv6
	}
	isNoise := func(b []byte) bool { return noisy && IsNoise(b) }
	for _, h := range s.Hosts {
		lh, err := setupHost(t, h)
		if err != nil {
			return nil, err
		}
		hosts[h.Name] = lh
		order = append(order, lh)
	}
	time.Sleep(settle)
	dp, cleanup, err := open(dpName)
	if err != nil {
		return nil, fmt.Errorf("creating datapath %s: %w", dpName, err)
	}
	t.Cleanup(cleanup)
	ob := &Observation{Datapath: dp.Type()}
	var ports []uint32
	for _, lh := range order {
		p, err := dp.AddPort(ctx, odp.PortSpec{Name: lh.dpEnd, Type: odp.PortNetdev, Number: lh.Port})
		if err != nil {
			return nil, fmt.Errorf("%s: adding port %d (%s, host %s): %w", dp.Type(), lh.Port, lh.dpEnd, lh.Name, err)
		}
		if p.Number != lh.Port {
			return nil, fmt.Errorf("%s: port %s got number %d, want %d", dp.Type(), lh.dpEnd, p.Number, lh.Port)
		}
		ports = append(ports, p.Number)
	}
	rs, err := dp.Upcalls(ctx, 1)
	if err != nil {
		return nil, fmt.Errorf("%s: opening upcall receiver: %w", dp.Type(), err)
	}
	pr, ok := rs[0].(pider)
	if !ok {
		return nil, fmt.Errorf("%s: upcall receiver %T has no PID", dp.Type(), rs[0])
	}
	pid := pr.PID()
	// The counters from here on: an IPv6 host's own early packets (DAD,
	// router solicitations) may reach a port before the receiver above
	// existed and count as lost upcalls, on either datapath, depending
	// only on timing. The scenario's traffic has not started yet.
	base, err := dp.Info(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s: datapath info: %w", dp.Type(), err)
	}
	var handler *Handler
	if s.Handler {
		if handler, err = NewHandler(s.Rules, ports, pid); err != nil {
			return nil, err
		}
	}
	meters, _ := dp.(odp.Meters)
	for _, m := range s.Meters {
		if meters == nil {
			return nil, fmt.Errorf("%s: scenario %s needs meters, which %T lacks", dp.Type(), s.Name, dp)
		}
		if err := meters.SetMeter(ctx, m, true); err != nil {
			ob.Errors = append(ob.Errors, fmt.Sprintf("meter %d refused", m.ID))
			t.Logf("%s: meter %d: %v", dp.Type(), m.ID, err)
		}
	}
	var ct odp.Conntracker
	if s.Conntrack {
		if ct, err = conntrackOf(t, dp); err != nil {
			return nil, err
		}
		if err := ct.FlushConntrack(ctx, odp.CTFilter{}); err != nil {
			return nil, fmt.Errorf("%s: flushing the connection tracker: %w", dp.Type(), err)
		}
	}
	limiter, _ := dp.(odp.CTLimiter)
	if len(s.ZoneLimits) > 0 {
		if limiter == nil {
			return nil, fmt.Errorf("%s: scenario %s needs conntrack zone limits, which %T lacks", dp.Type(), s.Name, dp)
		}
		if err := limiter.SetZoneLimits(ctx, s.ZoneLimits); err != nil {
			return nil, fmt.Errorf("%s: setting conntrack zone limits: %w", dp.Type(), err)
		}
		t.Cleanup(func() { limiter.DelZoneLimits(context.Background(), limitZones(s.ZoneLimits)...) })
	}
	for i, fs := range s.Flows {
		if err := putFlowText(ctx, dp, fs, pid); err != nil {
			ob.Errors = append(ob.Errors, fmt.Sprintf("flow %d (%s %s) refused", i, fs.Key, fs.Actions))
			t.Logf("%s: flow %d: %v", dp.Type(), i, err)
		}
	}
	caps := make([]*capture, len(order))
	for i, lh := range order {
		c, err := openCapture(lh.ns, lh.ifname, lh.ifindex)
		if err != nil {
			return nil, err
		}
		defer c.close()
		caps[i] = c
	}

	// The collector records every upcall and lets the handler answer
	// misses, one at a time, in arrival order.
	var mu sync.Mutex
	lastActivity := time.Now()
	recvErrs := 0
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		ups := make([]odp.Upcall, 64)
		for {
			n, err := rs[0].Recv(ctx, ups)
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				// A datagram the receiver could not decode is an error
				// to report, but the upcalls after it still count.
				mu.Lock()
				recvErrs++
				if recvErrs <= maxRecvErrors {
					ob.Errors = append(ob.Errors, fmt.Sprintf("upcall receive: %v", err))
				}
				mu.Unlock()
				if recvErrs > 10000 {
					return
				}
				continue
			}
			for i := range ups[:n] {
				u := &ups[i]
				mu.Lock()
				lastActivity = time.Now()
				if isNoise(u.Packet) {
					ob.Noise++
					mu.Unlock()
					continue
				}
				ob.Upcalls = append(ob.Upcalls, observeUpcall(u))
				mu.Unlock()
				if handler != nil && u.Kind == odp.UpcallMiss {
					if err := handler.Handle(ctx, dp, u); err != nil {
						mu.Lock()
						ob.Errors = append(ob.Errors, err.Error())
						mu.Unlock()
					}
				}
			}
		}
	}()

	env := &Env{hosts: hosts, PID: pid, Datapath: dp.Type()}
	env.sent = func() {
		mu.Lock()
		lastActivity = time.Now()
		mu.Unlock()
	}
	env.quiet = func(d time.Duration) error {
		start := time.Now()
		for {
			time.Sleep(20 * time.Millisecond)
			mu.Lock()
			idle := time.Since(lastActivity)
			mu.Unlock()
			if idle >= d {
				return nil
			}
			if time.Since(start) > maxRunTime {
				return fmt.Errorf("traffic did not settle within %v", maxRunTime)
			}
		}
	}
	frames := make([][][]byte, len(order))
	// framesMu guards frames, which the traffic reads (Env.Received)
	// while Play drains into it.
	var framesMu sync.Mutex
	drain := func() {
		framesMu.Lock()
		defer framesMu.Unlock()
		for i, c := range caps {
			fs, err := c.drain()
			if err != nil {
				mu.Lock()
				ob.Errors = append(ob.Errors, err.Error())
				mu.Unlock()
			}
			if len(fs) > 0 {
				mu.Lock()
				lastActivity = time.Now()
				mu.Unlock()
				frames[i] = append(frames[i], fs...)
			}
		}
	}
	env.received = func(host string) ([][]byte, error) {
		drain()
		framesMu.Lock()
		defer framesMu.Unlock()
		for i, lh := range order {
			if lh.Name == host {
				out := make([][]byte, len(frames[i]))
				for j, f := range frames[i] {
					out[j] = append([]byte(nil), f...)
				}
				return out, nil
			}
		}
		return nil, fmt.Errorf("no host %q in the scenario", host)
	}
	if s.Traffic != nil {
		// Drain while the traffic runs, so no socket buffer overflows.
		done := make(chan error, 1)
		go func() { done <- s.Traffic(env) }()
	wait:
		for {
			select {
			case err := <-done:
				if err != nil {
					mu.Lock()
					ob.Errors = append(ob.Errors, "traffic: "+err.Error())
					mu.Unlock()
				}
				break wait
			case <-time.After(50 * time.Millisecond):
				drain()
			}
		}
	}
	start := time.Now()
	for {
		time.Sleep(50 * time.Millisecond)
		drain()
		mu.Lock()
		idle := time.Since(lastActivity)
		mu.Unlock()
		if idle >= quietTime {
			break
		}
		if time.Since(start) > maxRunTime {
			ob.Errors = append(ob.Errors, fmt.Sprintf("traffic did not settle within %v", maxRunTime))
			break
		}
	}
	cancel()
	rs[0].Close()
	wg.Wait()
	if recvErrs > maxRecvErrors {
		ob.Errors = append(ob.Errors, fmt.Sprintf("upcall receive: %d more errors", recvErrs-maxRecvErrors))
	}

	if s.Stack {
		norm := NewStackNormalizer()
		for i := range ob.Upcalls {
			norm.Normalize(ob.Upcalls[i].Packet)
		}
	}
	for i, lh := range order {
		r := Received{Host: lh.Name}
		var norm Normalizer
		if s.Stack {
			norm = NewStackNormalizer()
		}
		for _, f := range frames[i] {
			if isNoise(f) {
				ob.Noise++
				continue
			}
			of := ObservedFrame{Summary: Describe(f), Data: f}
			if norm != nil {
				norm.Normalize(of.Data)
			}
			r.Frames = append(r.Frames, of)
		}
		ob.Received = append(ob.Received, r)
	}
	dctx := context.Background()
	pidText := fmt.Sprintf("pid=%d", pid)
	err = dp.DumpFlows(dctx, odp.DumpOptions{}, func(f *odp.Flow) error {
		text := odp.FormatKey(f.Key, f.Mask, false) + " actions:" + odp.FormatActions(f.Actions)
		ob.Flows = append(ob.Flows, ObservedFlow{
			Text:    strings.ReplaceAll(text, pidText, "pid=$PID"),
			Packets: f.Stats.Packets, Bytes: f.Stats.Bytes, TCPFlags: f.Stats.TCPFlags,
		})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%s: dumping flows: %w", dp.Type(), err)
	}
	for _, m := range s.Meters {
		mi, err := meters.GetMeter(dctx, m.ID)
		if err != nil {
			ob.Errors = append(ob.Errors, fmt.Sprintf("meter %d: no statistics", m.ID))
			continue
		}
		om := ObservedMeter{ID: mi.ID, Packets: mi.Packets, Bytes: mi.Bytes}
		for _, b := range mi.Bands {
			om.Bands = append(om.Bands, [2]uint64{b.Packets, b.Bytes})
		}
		ob.Meters = append(ob.Meters, om)
	}
	if ct != nil {
		ob.Conntrack = []odp.CTEntry{}
		err := ct.DumpConntrack(dctx, odp.CTFilter{}, func(e *odp.CTEntry) error {
			ob.Conntrack = append(ob.Conntrack, *e)
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("%s: dumping the connection tracker: %w", dp.Type(), err)
		}
	}
	if len(s.ZoneLimits) > 0 {
		ls, err := limiter.ZoneLimits(dctx, limitZones(s.ZoneLimits)...)
		if err != nil {
			return nil, fmt.Errorf("%s: reading conntrack zone limits: %w", dp.Type(), err)
		}
		ob.ZoneLimits = ls
		if err := limiter.DelZoneLimits(dctx, limitZones(s.ZoneLimits)...); err != nil {
			return nil, fmt.Errorf("%s: deleting conntrack zone limits: %w", dp.Type(), err)
		}
	}
	info, err := dp.Info(dctx)
	if err != nil {
		return nil, fmt.Errorf("%s: datapath info: %w", dp.Type(), err)
	}
	ob.Hit, ob.Missed, ob.Lost = since(info.Stats.Hit, base.Stats.Hit), since(info.Stats.Missed, base.Stats.Missed), since(info.Stats.Lost, base.Stats.Lost)
	if s.Normalize != nil {
		if err := s.Normalize(ob); err != nil {
			ob.Errors = append(ob.Errors, "normalize: "+err.Error())
		}
	}
	return ob, nil
}

// limitZones are the zones of ls.
func limitZones(ls []odp.CTZoneLimit) []int32 {
	zs := make([]int32, len(ls))
	for i, l := range ls {
		zs[i] = l.Zone
	}
	return zs
}

// conntrackOf returns dp's connection tracker: its own (netdev@), or
// for the kernel datapath the kernel's table of the current namespace
// over ctnetlink, closed when the test ends.
func conntrackOf(t testing.TB, dp odp.Datapath) (odp.Conntracker, error) {
	if c, ok := dp.(odp.Conntracker); ok {
		return c, nil
	}
	if dp.Type() != "system" {
		return nil, fmt.Errorf("%s: %T has no connection tracker to observe", dp.Type(), dp)
	}
	kt, err := kernelct.Open()
	if err != nil {
		return nil, fmt.Errorf("system: opening the kernel's conntrack table: %w", err)
	}
	t.Cleanup(func() { kt.Close() })
	return kt, nil
}

// putFlowText installs fs the way dpctl add-flow does.
func putFlowText(ctx context.Context, dp odp.Datapath, fs FlowSpec, pid uint32) error {
	key, mask, err := odp.ParseMaskedKey(fs.Key)
	if err != nil {
		return fmt.Errorf("parsing flow key %q: %w", fs.Key, err)
	}
	acts, err := odp.ParseActions(strings.ReplaceAll(fs.Actions, "$PID", fmt.Sprint(pid)))
	if err != nil {
		return fmt.Errorf("parsing actions %q: %w", fs.Actions, err)
	}
	key, mask = odp.AddTCPFlags(key, mask)
	f := &odp.Flow{UFID: FlowUFID(key, mask), Key: key, Mask: mask, Actions: odp.NormalizeActions(acts)}
	if _, err := dp.PutFlow(ctx, f, odp.PutCreate); err != nil {
		return fmt.Errorf("putting %s actions:%s: %w", fs.Key, fs.Actions, err)
	}
	return nil
}

// observeUpcall records u, with flowkeys.Extract's key for misses.
func observeUpcall(u *odp.Upcall) ObservedUpcall {
	o := ObservedUpcall{Kind: u.Kind.String(), Port: u.Port, Key: odp.FormatKey(u.Key, nil, false),
		CT: ctMetadata(u.Key), Packet: append([]byte(nil), u.Packet...)}
	if u.Userdata != nil {
		o.Userdata = append([]byte{}, u.Userdata...)
	}
	if u.Kind == odp.UpcallMiss {
		md := flowkeys.Metadata{InPort: u.Port}
		if k, err := odp.ToFlowKeysExact(u.Key); err == nil {
			// A recirculated miss: the metadata (recirc_id, dp_hash,
			// the ct fields) comes from the datapath, not the packet.
			md = flowkeys.MetadataOf(&k)
			md.InPort = u.Port
			// An L3 packet's (no eth in the key): its EtherType is
			// metadata too, the kernel's skb->protocol.
			md.L3, md.EthType = k.MacProto == flowkeys.MacProtoNone, k.EthType
		}
		o.Extracted = ExtractedKeyMeta(u.Packet, &md)
	}
	return o
}

// ctMetadata is the conntrack zone, mark and labels of a key, which
// FormatKey leaves out without a mask, or "" when all three are 0.
func ctMetadata(k odp.FlowKey) string {
	z, _ := k.Find(odp.KeyCTZone).(odp.CTZone)
	m, _ := k.Find(odp.KeyCTMark).(odp.CTMark)
	l, _ := k.Find(odp.KeyCTLabels).(odp.CTLabels)
	if z == 0 && m == 0 && l == (odp.CTLabels{}) {
		return ""
	}
	return fmt.Sprintf("ct_zone=%d,ct_mark=%#x,ct_label=%x", z, m, l[:])
}

// ExtractedKey is flowkeys.Extract's key for packet received on port,
// converted to attributes as the kernel writes them and formatted, or
// the error Extract returned.
func ExtractedKey(packet []byte, port uint32) string {
	return ExtractedKeyMeta(packet, &flowkeys.Metadata{InPort: port})
}

// ExtractedKeyMeta is ExtractedKey with the metadata md.
func ExtractedKeyMeta(packet []byte, md *flowkeys.Metadata) string {
	var k flowkeys.Key
	if err := flowkeys.Extract(packet, md, &k); err != nil {
		return "extract error: " + err.Error()
	}
	return odp.FormatKey(odp.KeyFromFlowKeys(&k), nil, false)
}

// since is counter now's growth since before (0 if it went back, as a
// counter only does when the datapath was recreated).
func since(now, before uint64) uint64 {
	if now < before {
		return 0
	}
	return now - before
}
