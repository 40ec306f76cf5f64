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

// Datapath is one kernel datapath, used through odp.Datapath.
type Datapath struct {
	c       *Client
	ownsC   bool
	name    string
	index   int32
	mu      sync.Mutex
	pids    []uint32 // upcall PIDs for new ports in per-vport mode
	sockets []*UpcallSocket
}

var _ odp.Datapath = (*Datapath)(nil)

// Open opens the existing kernel datapath called name, on a Client of its
// own that Close closes. It does not change the datapath's features.
func Open(name string) (*Datapath, error) {
	c, err := Dial()
	if err != nil {
		return nil, err
	}
	d, err := c.OpenDatapath(name)
	if err != nil {
		c.Close()
		return nil, err
	}
	d.ownsC = true
	return d, nil
}

// Create creates the kernel datapath called name, negotiating its
// features (see Client.CreateDatapath), on a Client of its own that Close
// closes. It fails with an error matching os.ErrExist if it exists.
func Create(name string) (*Datapath, error) {
	c, err := Dial()
	if err != nil {
		return nil, err
	}
	d, err := c.CreateDatapathHandle(name)
	if err != nil {
		c.Close()
		return nil, err
	}
	d.ownsC = true
	return d, nil
}

// OpenDatapath returns a handle on an existing datapath that uses c; its
// Close leaves c open.
func (c *Client) OpenDatapath(name string) (*Datapath, error) {
	info, err := c.GetDatapath(name)
	if err != nil {
		return nil, err
	}
	return &Datapath{c: c, name: info.Name, index: info.Index}, nil
}

// CreateDatapathHandle creates a datapath with negotiated features and
// returns a handle on it that uses c.
func (c *Client) CreateDatapathHandle(name string) (*Datapath, error) {
	info, err := c.CreateDatapath(name)
	if err != nil {
		return nil, err
	}
	return &Datapath{c: c, name: info.Name, index: info.Index}, nil
}

// Name implements odp.Datapath.
func (d *Datapath) Name() string { return d.name }

// Type implements odp.Datapath: "system".
func (d *Datapath) Type() string { return "system" }

// Index is the ifindex of the datapath's local port (dp_ifindex).
func (d *Datapath) Index() int32 { return d.index }

// Client returns the Client the handle uses, for commands beyond
// odp.Datapath (meters, conntrack limits, vport details, ...).
func (d *Datapath) Client() *Client { return d.c }

// Close closes the upcall sockets the handle opened and, for Open and
// Create, its Client. The kernel datapath stays.
func (d *Datapath) Close() error {
	d.mu.Lock()
	socks := d.sockets
	d.sockets = nil
	d.mu.Unlock()
	for _, s := range socks {
		s.Close()
	}
	if d.ownsC {
		return d.c.Close()
	}
	return nil
}

// Delete deletes the kernel datapath (the handle stays to be closed).
func (d *Datapath) Delete() error { return d.c.DelDatapath(d.index) }

// Info implements odp.Datapath.
func (d *Datapath) Info(ctx context.Context) (odp.DatapathInfo, error) {
	if err := ctx.Err(); err != nil {
		return odp.DatapathInfo{}, err
	}
	info, err := d.c.GetDatapathByIndex(d.index)
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

// SetMasksCacheSize sets the datapath's mask cache size.
func (d *Datapath) SetMasksCacheSize(size uint32) error { return d.c.SetMasksCacheSize(d.index, size) }

// Ports implements odp.Datapath.
func (d *Datapath) Ports(ctx context.Context) ([]odp.Port, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	vs, err := d.c.Vports(d.index)
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
	v, err := d.c.NewVport(d.index, VportSpec{Name: spec.Name, Type: t, PortNo: spec.Number, Options: opts, UpcallPIDs: pids})
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
		cur, err = d.c.GetVport(d.index, spec.Number)
	} else {
		cur, err = d.c.GetVportByName(spec.Name)
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
	_, err = d.c.SetVport(d.index, VportSpec{PortNo: cur.PortNo, Options: opts})
	return err
}

// DelPort implements odp.Datapath.
func (d *Datapath) DelPort(ctx context.Context, number uint32) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	_, err := d.c.DelVport(d.index, number)
	return err
}

// PutFlow implements odp.Datapath.
func (d *Datapath) PutFlow(ctx context.Context, f *odp.Flow, flags odp.PutFlags) (odp.FlowStats, error) {
	if err := ctx.Err(); err != nil {
		return odp.FlowStats{}, err
	}
	return d.c.PutFlow(d.index, f, flags, FlowOptions{UFIDFlags: Terse})
}

// GetFlow implements odp.Datapath.
func (d *Datapath) GetFlow(ctx context.Context, id odp.FlowID) (*odp.Flow, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return d.c.GetFlow(d.index, id, FlowOptions{})
}

// DelFlow implements odp.Datapath.
func (d *Datapath) DelFlow(ctx context.Context, id odp.FlowID) (odp.FlowStats, error) {
	if err := ctx.Err(); err != nil {
		return odp.FlowStats{}, err
	}
	return d.c.DelFlow(d.index, id, FlowOptions{UFIDFlags: Terse})
}

// FlushFlows implements odp.Datapath.
func (d *Datapath) FlushFlows(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return d.c.FlushFlows(d.index)
}

// DumpFlows implements odp.Datapath. It streams (see Client.DumpFlows)
// and stops with ctx's error when ctx is done.
func (d *Datapath) DumpFlows(ctx context.Context, opts odp.DumpOptions, fn func(*odp.Flow) error) error {
	o := FlowOptions{}
	if opts.Terse {
		o.UFIDFlags = Terse
	}
	return d.c.DumpFlows(d.index, o, func(f *odp.Flow) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		return fn(f)
	})
}

// DumpFlowsRaw is DumpFlows without the decoding (Client.DumpFlowsRaw):
// fn gets each flow message, to decode with DecodeFlow, valid only until
// fn returns.
func (d *Datapath) DumpFlowsRaw(ctx context.Context, opts odp.DumpOptions, fn func([]byte) error) error {
	o := FlowOptions{}
	if opts.Terse {
		o.UFIDFlags = Terse
	}
	return d.c.DumpFlowsRaw(d.index, o, func(b []byte) error {
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
	return d.c.Execute(d.index, p)
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
	info, err := d.c.GetDatapathByIndex(d.index)
	if err != nil {
		return nil, err
	}
	if info.UserFeatures&(FeatureDispatchUpcallPerCPU|FeatureVportPIDs) == 0 {
		if info, err = d.c.NegotiateFeatures(d.index); err != nil {
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
		s, err := d.c.NewUpcallSocket()
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
		if _, err := d.c.SetDatapath(d.index, DatapathSettings{Features: info.UserFeatures, PerCPUPIDs: cpuPIDs}); err != nil {
			return fail(err)
		}
	} else {
		vs, err := d.c.Vports(d.index)
		if err != nil {
			return fail(err)
		}
		for _, v := range vs {
			if _, err := d.c.SetVport(d.index, VportSpec{PortNo: v.PortNo, UpcallPIDs: pids}); err != nil && !errors.Is(err, os.ErrNotExist) {
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
// statistics, batching the requests (see Client.PutFlows). errs[i] is
// flows[i]'s error, nil when it succeeded; err reports a failure of the
// socket (or ctx done before it started), after which errs is incomplete.
func (d *Datapath) PutFlows(ctx context.Context, flows []*odp.Flow, flags odp.PutFlags) (errs []error, err error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return d.c.PutFlows(d.index, flows, flags, FlowOptions{UFIDFlags: Terse})
}

// ExecuteBatch executes many packets as Execute does, batching the
// requests (see Client.ExecuteBatch). errs[i] is pkts[i]'s error, nil
// when it was executed; err reports a failure of the socket (or ctx done
// before it started), after which errs is incomplete.
func (d *Datapath) ExecuteBatch(ctx context.Context, pkts []*odp.Packet) (errs []error, err error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return d.c.ExecuteBatch(d.index, pkts)
}
