package genl

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/ovsdp/ovsdp/odp"
)

// Datapath is one kernel datapath, from Open or Create. It implements
// odp.Datapath and has the kernel's other per-datapath commands: batched
// flow puts, deletes and packet executions, raw dumps, meters and
// conntrack limits. It is safe for concurrent use.
type Datapath struct {
	c       *client // its own: Close closes it
	name    string
	index   int32
	mu      sync.Mutex
	pids    []uint32 // upcall PIDs for new ports in per-vport mode
	sockets []*UpcallSocket
}

var _ odp.Datapath = (*Datapath)(nil)

// Name implements odp.Datapath.
func (d *Datapath) Name() string { return d.name }

// Type implements odp.Datapath: "system".
func (d *Datapath) Type() string { return "system" }

// Index is the ifindex of the datapath's local port (dp_ifindex).
func (d *Datapath) Index() int32 { return d.index }

// Close closes the upcall sockets the handle opened and its socket. The
// kernel datapath stays.
func (d *Datapath) Close() error {
	d.mu.Lock()
	socks := d.sockets
	d.sockets = nil
	d.mu.Unlock()
	for _, s := range socks {
		s.Close()
	}
	return d.c.close()
}

// Delete deletes the kernel datapath with its ports and flows (the
// handle stays to be closed).
func (d *Datapath) Delete() error { return d.c.delDatapath(d.index) }

// Info implements odp.Datapath.
func (d *Datapath) Info(ctx context.Context) (odp.DatapathInfo, error) {
	if err := ctx.Err(); err != nil {
		return odp.DatapathInfo{}, err
	}
	info, err := d.c.getDatapathByIndex(d.index)
	if err != nil {
		return odp.DatapathInfo{}, err
	}
	return odp.DatapathInfo{
		Name:           info.Name,
		Index:          int(info.Index),
		Stats:          info.Stats,
		Features:       info.UserFeatures,
		UpcallMode:     info.UpcallMode(),
		MasksCacheSize: info.MasksCacheSize,
	}, nil
}

// SetMasksCacheSize sets the datapath's mask cache size (0 disables the
// cache; the kernel wants a power of two), keeping its features.
func (d *Datapath) SetMasksCacheSize(ctx context.Context, size uint32) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return d.c.setMasksCacheSize(d.index, size)
}

// Ports implements odp.Datapath.
func (d *Datapath) Ports(ctx context.Context) ([]odp.Port, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	vs, err := d.c.vports(d.index)
	if err != nil {
		return nil, err
	}
	ps := make([]odp.Port, len(vs))
	for i, v := range vs {
		ps[i] = v.Port()
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i].Number < ps[j].Number })
	return ps, nil
}

// portOptions converts the "key=value" options of a PortSpec.
func portOptions(t VportType, opts map[string]string) (*VportOptions, error) {
	if len(opts) == 0 {
		return nil, nil
	}
	o := &VportOptions{}
	for k, v := range opts {
		switch k {
		case "dst_port":
			if t != VportVXLAN && t != VportGeneve {
				return nil, fmt.Errorf("genl: option dst_port is for vxlan and geneve ports, not %s", t)
			}
			n, err := strconv.ParseUint(v, 10, 16)
			if err != nil {
				return nil, fmt.Errorf("genl: option dst_port=%q: want a UDP port number", v)
			}
			o.DstPort = uint16(n)
		case "exts":
			for _, e := range strings.Split(v, ",") {
				if e != "gbp" {
					return nil, fmt.Errorf("genl: option exts=%q: the only extension is gbp", v)
				}
				o.GBP = true
			}
		default:
			return nil, fmt.Errorf("genl: unknown %s port option %q", t, k)
		}
	}
	return o, nil
}

// AddPort implements odp.Datapath. Tunnel ports take the option
// "dst_port" (and "exts=gbp" for VXLAN).
func (d *Datapath) AddPort(ctx context.Context, spec odp.PortSpec) (odp.Port, error) {
	if err := ctx.Err(); err != nil {
		return odp.Port{}, err
	}
	t, ok := ParseVportType(string(spec.Type))
	if !ok {
		return odp.Port{}, fmt.Errorf("genl: add port %s: %w: port type %q", spec.Name, odp.ErrUnsupported, spec.Type)
	}
	opts, err := portOptions(t, spec.Options)
	if err != nil {
		return odp.Port{}, err
	}
	if opts == nil && (t == VportVXLAN || t == VportGeneve) {
		// The kernel wants a destination port for UDP tunnels.
		o := VportOptions{DstPort: 4789}
		if t == VportGeneve {
			o.DstPort = 6081
		}
		opts = &o
	}
	d.mu.Lock()
	pids := d.pids
	d.mu.Unlock()
	v, err := d.c.newVport(d.index, vportSpec{Name: spec.Name, Type: t, PortNo: spec.Number, Options: opts, UpcallPIDs: pids})
	if err != nil {
		return odp.Port{}, err
	}
	return v.Port(), nil
}

// SetPort implements odp.Datapath: it changes a port's options.
func (d *Datapath) SetPort(ctx context.Context, spec odp.PortSpec) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	var cur *VportInfo
	var err error
	if spec.Number != 0 || spec.Name == "" {
		cur, err = d.c.getVport(d.index, spec.Number)
	} else {
		cur, err = d.c.getVportByName(spec.Name)
	}
	if err != nil {
		return err
	}
	if spec.Type != "" {
		if t, ok := ParseVportType(string(spec.Type)); !ok || t != cur.Type {
			return fmt.Errorf("genl: set port %s: its type is %s, not %s", cur.Name, cur.Type, spec.Type)
		}
	}
	opts, err := portOptions(cur.Type, spec.Options)
	if err != nil {
		return err
	}
	if opts == nil {
		opts = &VportOptions{}
	}
	_, err = d.c.setVport(d.index, vportSpec{PortNo: cur.PortNo, Options: opts})
	return err
}

// DelPort implements odp.Datapath.
func (d *Datapath) DelPort(ctx context.Context, number uint32) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	_, err := d.c.delVport(d.index, number)
	return err
}

// PutFlow implements odp.Datapath.
func (d *Datapath) PutFlow(ctx context.Context, f *odp.Flow, flags odp.PutFlags) (odp.FlowStats, error) {
	if err := ctx.Err(); err != nil {
		return odp.FlowStats{}, err
	}
	return d.c.putFlow(d.index, f, flags, flowOptions{UFIDFlags: Terse})
}

// GetFlow implements odp.Datapath.
func (d *Datapath) GetFlow(ctx context.Context, id odp.FlowID) (*odp.Flow, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return d.c.getFlow(d.index, id, flowOptions{})
}

// DelFlow implements odp.Datapath.
func (d *Datapath) DelFlow(ctx context.Context, id odp.FlowID) (odp.FlowStats, error) {
	if err := ctx.Err(); err != nil {
		return odp.FlowStats{}, err
	}
	return d.c.delFlow(d.index, id, flowOptions{UFIDFlags: Terse})
}

// FlushFlows implements odp.Datapath.
func (d *Datapath) FlushFlows(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return d.c.flushFlows(d.index)
}

// DumpFlows implements odp.Datapath. It reads the kernel's replies one
// datagram at a time on a socket of its own, so that memory stays bounded
// however large the table and fn may use the Datapath, and stops with
// ctx's error when ctx is done. If the kernel reports NLM_F_DUMP_INTR
// (the table changed during the dump: flows may have been missed or seen
// twice), the dump runs to its end and then returns an error wrapping
// ErrDumpInterrupted. The *odp.Flow passed to fn is fn's to keep.
func (d *Datapath) DumpFlows(ctx context.Context, opts odp.DumpOptions, fn func(*odp.Flow) error) error {
	o := flowOptions{}
	if opts.Terse {
		o.UFIDFlags = Terse
	}
	return d.c.dumpFlows(d.index, o, func(f *odp.Flow) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		return fn(f)
	})
}

// DumpFlowsRaw is DumpFlows without the decoding: fn gets each flow
// message's generic netlink payload (struct ovs_header included, what
// DecodeFlow takes), valid only until fn returns. It lets a caller decode
// on other goroutines (dpctl dump-flows does, on two CPUs).
func (d *Datapath) DumpFlowsRaw(ctx context.Context, opts odp.DumpOptions, fn func([]byte) error) error {
	o := flowOptions{}
	if opts.Terse {
		o.UFIDFlags = Terse
	}
	return d.c.dumpFlowsRaw(d.index, o, func(b []byte) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		return fn(b)
	})
}

// Execute implements odp.Datapath.
func (d *Datapath) Execute(ctx context.Context, p *odp.Packet) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return d.c.execute(d.index, p)
}

// numCPUs is how many CPUs the kernel may dispatch upcalls from: the
// possible CPUs, not just the online ones.
func numCPUs() int {
	n := runtime.NumCPU()
	b, err := os.ReadFile("/sys/devices/system/cpu/possible")
	if err != nil {
		return n
	}
	s := strings.TrimSpace(string(b))
	if i := strings.LastIndexAny(s, "-,"); i >= 0 {
		s = s[i+1:]
	}
	if last, err := strconv.Atoi(s); err == nil && last+1 > n {
		n = last + 1
	}
	return n
}

// Upcalls implements odp.Datapath: it opens n upcall sockets and
// registers them, per CPU when the datapath dispatches upcalls per CPU
// (negotiating features first if the datapath has neither mode), else on
// every port (and on ports added later through this handle). The
// receivers are *UpcallSocket.
func (d *Datapath) Upcalls(ctx context.Context, n int) ([]odp.UpcallReceiver, error) {
	if n <= 0 {
		return nil, fmt.Errorf("genl: upcalls: %d handlers", n)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	info, err := d.c.getDatapathByIndex(d.index)
	if err != nil {
		return nil, err
	}
	if info.UserFeatures&(FeatureDispatchUpcallPerCPU|FeatureVportPIDs) == 0 {
		if info, err = d.c.negotiateFeatures(d.index); err != nil {
			return nil, err
		}
	}
	socks := make([]*UpcallSocket, 0, n)
	fail := func(err error) ([]odp.UpcallReceiver, error) {
		for _, s := range socks {
			s.Close()
		}
		return nil, err
	}
	pids := make([]uint32, 0, n)
	for i := 0; i < n; i++ {
		s, err := d.c.newUpcallSocket()
		if err != nil {
			return fail(err)
		}
		socks = append(socks, s)
		pids = append(pids, s.PID())
	}
	if info.UpcallMode() == UpcallModePerCPU {
		cpuPIDs := make([]uint32, numCPUs())
		for i := range cpuPIDs {
			cpuPIDs[i] = pids[i%n]
		}
		if _, err := d.c.setDatapath(d.index, datapathSettings{Features: info.UserFeatures, PerCPUPIDs: cpuPIDs}); err != nil {
			return fail(err)
		}
	} else {
		vs, err := d.c.vports(d.index)
		if err != nil {
			return fail(err)
		}
		for _, v := range vs {
			if _, err := d.c.setVport(d.index, vportSpec{PortNo: v.PortNo, UpcallPIDs: pids}); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fail(err)
			}
		}
		d.mu.Lock()
		d.pids = pids
		d.mu.Unlock()
	}
	d.mu.Lock()
	d.sockets = append(d.sockets, socks...)
	d.mu.Unlock()
	rs := make([]odp.UpcallReceiver, n)
	for i, s := range socks {
		rs[i] = s
	}
	return rs, nil
}

// PutFlows puts many flows as PutFlow does, without returning their
// statistics, sending many requests per system call and then reading
// their acknowledgements, as ovs-dpctl add-flows does. errs[i] is
// flows[i]'s error, nil when it succeeded; err reports a failure of the
// socket (or ctx done before it started), after which errs is incomplete.
func (d *Datapath) PutFlows(ctx context.Context, flows []*odp.Flow, flags odp.PutFlags) (errs []error, err error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return d.c.putFlows(d.index, flows, flags, flowOptions{UFIDFlags: Terse})
}

// ExecuteBatch executes many packets as Execute does, sending many
// requests per system call and then reading their acknowledgements, as
// Open vSwitch's handlers do with the packets of one batch of upcalls.
// The kernel runs the requests in order, so a packet executed after a
// flow put in an earlier call sees the flow. errs[i] is pkts[i]'s error,
// nil when it was executed; one packet's failure does not stop the
// others. err reports a failure of the socket (or ctx done before it
// started), after which errs is incomplete.
func (d *Datapath) ExecuteBatch(ctx context.Context, pkts []*odp.Packet) (errs []error, err error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return d.c.executeBatch(d.index, pkts)
}

// DelFlows deletes many flows as DelFlow does, without their statistics,
// sending many requests per system call and then reading their
// acknowledgements. errs[i] is ids[i]'s error, nil when it succeeded; err
// reports a failure of the socket (or ctx done before it started), after
// which errs is incomplete.
func (d *Datapath) DelFlows(ctx context.Context, ids []odp.FlowID) (errs []error, err error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return d.c.delFlows(d.index, ids, flowOptions{})
}

// ProbeFlow asks whether the kernel accepts f: it puts f (which must not
// exist) marked as a feature probe, so that the kernel does not log a
// rejection, and deletes it again. It returns the kernel's rejection, or
// nil when the kernel took the flow. f should match no real traffic,
// since it is installed for a moment; with a UFID it is deleted by it.
func (d *Datapath) ProbeFlow(ctx context.Context, f *odp.Flow) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	o := flowOptions{Probe: true}
	if _, err := d.c.putFlow(d.index, f, odp.PutCreate, o); err != nil {
		return err
	}
	id := odp.FlowID{UFID: f.UFID}
	if f.UFID.IsZero() {
		id.Key = f.Key
	}
	_, err := d.c.delFlow(d.index, id, o)
	if err != nil {
		return fmt.Errorf("genl: probe flow: the kernel took it, but deleting it again failed: %w", err)
	}
	return nil
}

// The meter methods implement odp.Meters over the ovs_meter family, with
// odp's types, so that code written for odp.Meters drives the kernel's
// meters and the userspace datapath's alike. Without the ovs_meter family
// (Linux before 4.15) each fails with an error wrapping
// ErrFamilyMissing.
var _ odp.Meters = (*Datapath)(nil)

// MeterFeatures returns what the kernel's meters support.
func (d *Datapath) MeterFeatures(ctx context.Context) (odp.MeterFeatures, error) {
	if err := ctx.Err(); err != nil {
		return odp.MeterFeatures{}, err
	}
	f, err := d.c.meterFeatures(d.index)
	if err != nil {
		return odp.MeterFeatures{}, err
	}
	return *f, nil
}

// SetMeter adds or replaces meter m.ID with m's bands. With clearStats,
// the statistics of a replaced meter restart from zero.
func (d *Datapath) SetMeter(ctx context.Context, m odp.MeterInfo, clearStats bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return d.c.setMeter(d.index, m, clearStats)
}

// GetMeter returns meter id with its statistics (ENOENT if there is
// none).
func (d *Datapath) GetMeter(ctx context.Context, id uint32) (*odp.MeterInfo, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return d.c.getMeter(d.index, id)
}

// DelMeter deletes meter id and returns its last statistics.
func (d *Datapath) DelMeter(ctx context.Context, id uint32) (*odp.MeterInfo, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return d.c.delMeter(d.index, id)
}

// The kernel's conntrack zone limits (the ovs_ct_limit family).
var _ odp.CTLimiter = (*Datapath)(nil)

// SetZoneLimits sets connection limits per conntrack zone (Zone
// DefaultZone sets the default). Without the ovs_ct_limit family (Linux
// before 4.18, or without conntrack) it fails with an error wrapping
// ErrFamilyMissing, as every conntrack-limit command does.
func (d *Datapath) SetZoneLimits(ctx context.Context, limits []ZoneLimit) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return d.c.setZoneLimits(d.index, limits)
}

// ZoneLimits returns the limits and connection counts of the given zones,
// or of the default and every zone with a limit when zones is empty.
func (d *Datapath) ZoneLimits(ctx context.Context, zones ...int32) ([]ZoneLimit, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return d.c.zoneLimits(d.index, zones...)
}

// DelZoneLimits removes the limits of the given zones (DefaultZone resets
// the default to unlimited).
func (d *Datapath) DelZoneLimits(ctx context.Context, zones ...int32) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return d.c.delZoneLimits(d.index, zones...)
}
