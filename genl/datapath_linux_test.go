//go:build !genl_stub

package genl

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"

	"github.com/ovsdp/ovsdp/odp"
)

// dpFake is a fake kernel with one datapath (ifindex 5, "br0") whose
// features are given, and ports 0 (br0) and 1 (veth0).
func dpFake(t *testing.T, features uint32) (*fakeKernel, *Datapath) {
	k := newFake(t, nil)
	k.handle = func(r fakeReq) ([]fakeMsg, error) {
		switch r.Family {
		case familyDatapath:
			if r.Cmd == dpCmdSet {
				features = r.u32(dpAttrUserFeatures)
			}
			return []fakeMsg{{Cmd: 1, Data: dpReply(t, 5, "br0", features, nil)}}, nil
		case familyVport:
			switch {
			case r.Flags&netlink.Dump == netlink.Dump:
				return []fakeMsg{
					{Cmd: 1, Data: vportReply(t, 5, 1, VportNetdev, "veth0", nil)},
					{Cmd: 1, Data: vportReply(t, 5, 0, VportInternal, "br0", nil)},
				}, nil
			case r.Cmd == vportCmdNew:
				var o VportOptions
				if r.has(vportAttrOptions) {
					if err := decodeVportOptions(r.Attrs[vportAttrOptions], 0, &o); err != nil {
						t.Error(err)
					}
				}
				return []fakeMsg{{Cmd: 1, Data: vportReply(t, 5, 7, VportType(r.u32(vportAttrType)), string(bytes.TrimRight(r.Attrs[vportAttrName], "\x00")), func(ae *netlink.AttributeEncoder) {
					if r.has(vportAttrOptions) {
						ae.Bytes(vportAttrOptions, r.Attrs[vportAttrOptions])
					}
				})}}, nil
			default:
				return []fakeMsg{{Cmd: 1, Data: vportReply(t, 5, 1, VportNetdev, "veth0", nil)}}, nil
			}
		}
		return nil, kerr{errno: unix.EOPNOTSUPP}
	}
	d, err := openOn(k.client(), "br0")
	if err != nil {
		t.Fatal(err)
	}
	return k, d
}

func TestDatapathInterface(t *testing.T) {
	ctx := context.Background()
	k, d := dpFake(t, FeatureUnaligned|FeatureDispatchUpcallPerCPU)
	if d.Name() != "br0" || d.Type() != "system" || d.Index() != 5 {
		t.Errorf("Name %q Type %q Index %d", d.Name(), d.Type(), d.Index())
	}
	info, err := d.Info(ctx)
	if err != nil || info.UpcallMode != UpcallModePerCPU || info.Stats.Flows != 40 || info.MasksCacheSize != 256 || info.Index != 5 {
		t.Errorf("Info = %+v, %v", info, err)
	}
	ps, err := d.Ports(ctx)
	if err != nil || len(ps) != 2 || ps[0].Number != 0 || ps[1].Name != "veth0" || ps[1].Stats.RxPackets != 1 {
		t.Errorf("Ports = %+v, %v", ps, err)
	}
	p, err := d.AddPort(ctx, odp.PortSpec{Name: "gnv", Type: odp.PortGeneve})
	if err != nil || p.Options["dst_port"] != "6081" || p.Type != odp.PortGeneve {
		t.Errorf("AddPort(geneve) = %+v, %v (want the default dst_port 6081)", p, err)
	}
	for _, bad := range []odp.PortSpec{
		{Name: "x", Type: "lisp"},
		{Name: "x", Type: odp.PortGRE, Options: map[string]string{"dst_port": "1"}},
		{Name: "x", Type: odp.PortVXLAN, Options: map[string]string{"dst_port": "99999"}},
		{Name: "x", Type: odp.PortVXLAN, Options: map[string]string{"color": "blue"}},
		{Name: "x", Type: odp.PortVXLAN, Options: map[string]string{"exts": "gpe"}},
	} {
		if _, err := d.AddPort(ctx, bad); err == nil {
			t.Errorf("AddPort(%+v) succeeded", bad)
		}
	}
	if err := d.SetPort(ctx, odp.PortSpec{Number: 1, Type: odp.PortInternal}); err == nil {
		t.Error("SetPort with the wrong type succeeded")
	}
	if err := d.DelPort(ctx, 1); err != nil {
		t.Error(err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	before := len(k.requests())
	if _, err := d.Ports(cancelled); err == nil {
		t.Error("Ports with a cancelled context succeeded")
	}
	if err := d.FlushFlows(cancelled); err == nil {
		t.Error("FlushFlows with a cancelled context succeeded")
	}
	if len(k.requests()) != before {
		t.Error("requests sent with a cancelled context")
	}
}

func TestUpcallsPerCPU(t *testing.T) {
	k, d := dpFake(t, FeatureUnaligned|FeatureDispatchUpcallPerCPU)
	rs, err := d.Upcalls(context.Background(), 3)
	if err != nil || len(rs) != 3 {
		t.Fatalf("Upcalls = %v, %v", rs, err)
	}
	defer d.Close()
	var set *fakeReq
	for _, r := range k.requests() {
		if r.Family == familyDatapath && r.Cmd == dpCmdSet {
			set = &r
		}
	}
	if set == nil {
		t.Fatal("no OVS_DP_CMD_SET with per-CPU PIDs")
	}
	pids, _ := getU32Array("", "", set.Attrs[dpAttrPerCPUPIDs], 0)
	if len(pids) != numCPUs() || set.u32(dpAttrUserFeatures) != FeatureUnaligned|FeatureDispatchUpcallPerCPU {
		t.Errorf("per-CPU PIDs %v (want %d), features %#x", pids, numCPUs(), set.u32(dpAttrUserFeatures))
	}
	for i, p := range pids {
		if want := rs[i%3].(*UpcallSocket).PID(); p != want {
			t.Errorf("CPU %d: PID %d, want %d", i, p, want)
		}
	}
	if _, err := d.Upcalls(context.Background(), 0); err == nil {
		t.Error("Upcalls(0) succeeded")
	}
}

func TestUpcallsPerVportNegotiates(t *testing.T) {
	// A datapath without either mode: Upcalls negotiates, the fake kernel
	// refuses per-CPU dispatch, so PIDs go on every vport.
	k, d := dpFake(t, 0)
	k.mu.Lock()
	inner := k.handle
	k.handle = func(r fakeReq) ([]fakeMsg, error) {
		if r.Family == familyDatapath && r.Cmd == dpCmdSet && r.u32(dpAttrUserFeatures)&(featureProbeUnknown|FeatureDispatchUpcallPerCPU) != 0 {
			return nil, kerr{errno: unix.EOPNOTSUPP}
		}
		return inner(r)
	}
	k.mu.Unlock()
	rs, err := d.Upcalls(context.Background(), 2)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	want := u32Bytes([]uint32{rs[0].(*UpcallSocket).PID(), rs[1].(*UpcallSocket).PID()})
	ports := map[uint32]bool{}
	for _, r := range k.requests() {
		if r.Family == familyVport && r.Cmd == vportCmdSet {
			if !bytes.Equal(r.Attrs[vportAttrUpcallPID], want) {
				t.Errorf("vport set PIDs %v, want %v", r.Attrs[vportAttrUpcallPID], want)
			}
			ports[r.u32(vportAttrPortNo)] = true
		}
	}
	if !ports[0] || !ports[1] {
		t.Errorf("PIDs set on ports %v, want 0 and 1", ports)
	}
	// A port added later gets the PIDs too.
	if _, err := d.AddPort(context.Background(), odp.PortSpec{Name: "p", Type: odp.PortInternal}); err != nil {
		t.Fatal(err)
	}
	last := k.requests()[len(k.requests())-1]
	if last.Cmd != vportCmdNew || !bytes.Equal(last.Attrs[vportAttrUpcallPID], want) {
		t.Errorf("new port got PIDs %v, want %v", last.Attrs[vportAttrUpcallPID], want)
	}
}

// createOn creates a datapath on c as Create does on a client of its
// own: the Datapath closes c.
func createOn(c *client, spec DatapathSpec) (*Datapath, error) {
	return datapathOn(c, func(c *client) (*DPInfo, error) { return c.createDatapath(spec) })
}

func TestCreateFeatures(t *testing.T) {
	// A kernel with per-CPU dispatch that checks feature bits.
	var sent []uint32
	k := newFake(t, func(r fakeReq) ([]fakeMsg, error) {
		if r.Cmd != dpCmdNew {
			t.Fatalf("command %d, want only OVS_DP_CMD_NEW", r.Cmd)
		}
		f := r.u32(dpAttrUserFeatures)
		sent = append(sent, f)
		if f&featureProbeUnknown != 0 {
			return nil, kerr{errno: unix.EOPNOTSUPP}
		}
		if r.u32(dpAttrUpcallPID) != 77 || string(r.Attrs[dpAttrName]) != "dp\x00" {
			t.Errorf("NEW %v: want the spec's name and upcall PID", r.Attrs)
		}
		return []fakeMsg{{Cmd: 1, Data: dpReply(t, 7, "dp", f, nil)}}, nil
	})
	for _, tc := range []struct {
		name string
		spec DatapathSpec
		want []uint32 // the features of each NEW
	}{
		{"negotiated", DatapathSpec{Name: "dp", UpcallPID: 77},
			[]uint32{FeatureUnaligned | FeatureVportPIDs | featureProbeUnknown, FeatureUnaligned | FeatureDispatchUpcallPerCPU}},
		{"negotiated from base features", DatapathSpec{Name: "dp", UpcallPID: 77, Features: FeatureTCRecircSharing | FeatureVportPIDs},
			[]uint32{FeatureTCRecircSharing | FeatureUnaligned | FeatureVportPIDs | featureProbeUnknown, FeatureTCRecircSharing | FeatureUnaligned | FeatureDispatchUpcallPerCPU}},
		{"exact", DatapathSpec{Name: "dp", UpcallPID: 77, Features: FeatureVportPIDs, ExactFeatures: true}, []uint32{FeatureVportPIDs}},
		{"exact zero", DatapathSpec{Name: "dp", UpcallPID: 77, ExactFeatures: true}, []uint32{0}},
	} {
		sent = nil
		d, err := createOn(k.client(), tc.spec)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if !slices.Equal(sent, tc.want) {
			t.Errorf("%s: NEW with features %#x, want %#x", tc.name, sent, tc.want)
		}
		if d.Name() != "dp" || d.Index() != 7 {
			t.Errorf("%s: datapath %s index %d", tc.name, d.Name(), d.Index())
		}
		d.Close()
	}
	// An exact feature the kernel refuses is the kernel's error, with
	// nothing else tried.
	sent = nil
	if _, err := createOn(k.client(), DatapathSpec{Name: "dp", Features: featureProbeUnknown, ExactFeatures: true}); !errors.Is(err, unix.EOPNOTSUPP) || len(sent) != 1 {
		t.Errorf("exact unknown feature: %v after %d requests, want EOPNOTSUPP after 1", err, len(sent))
	}
}

func TestProbeFlow(t *testing.T) {
	ctx := context.Background()
	key, err := odp.UnmarshalKey(rawKey(t, 1))
	if err != nil {
		t.Fatal(err)
	}
	f := &odp.Flow{UFID: odp.UFID{9}, Key: key, Actions: odp.Actions{odp.Drop{}}}
	refuse := false
	k, d := dpFake(t, FeatureUnaligned|FeatureDispatchUpcallPerCPU)
	next := k.handle
	k.handle = func(r fakeReq) ([]fakeMsg, error) {
		if r.Family != familyFlow {
			return next(r)
		}
		if !r.has(flowAttrProbe) || r.DPIndex != 5 {
			t.Errorf("flow request %+v: want a probe on datapath 5", r)
		}
		switch r.Cmd {
		case flowCmdNew:
			if r.Flags&(netlink.Create|netlink.Excl) != netlink.Create|netlink.Excl {
				t.Errorf("probe put flags %v: want create-only", r.Flags)
			}
			if refuse {
				return nil, kerr{errno: unix.EINVAL, msg: "Flow actions may not be safe on all matching packets"}
			}
		case flowCmdDel:
			if !bytes.Equal(r.Attrs[flowAttrUFID], f.UFID[:]) || r.has(flowAttrKey) {
				t.Errorf("probe delete %v: want it by UFID alone", r.Attrs)
			}
		default:
			t.Errorf("flow command %d", r.Cmd)
		}
		return nil, nil
	}
	before := len(k.requests())
	if err := d.ProbeFlow(ctx, f); err != nil {
		t.Fatalf("ProbeFlow on a kernel that takes the flow: %v", err)
	}
	if got := k.requests()[before:]; len(got) != 2 || got[0].Cmd != flowCmdNew || got[1].Cmd != flowCmdDel {
		t.Errorf("requests %+v, want a put and a delete", got)
	}
	refuse = true
	before = len(k.requests())
	if err := d.ProbeFlow(ctx, f); !errors.Is(err, unix.EINVAL) {
		t.Errorf("ProbeFlow on a kernel that refuses the flow: %v, want EINVAL", err)
	}
	if n := len(k.requests()) - before; n != 1 {
		t.Errorf("%d requests for a refused probe, want the put alone", n)
	}
	done, cancel := context.WithCancel(ctx)
	cancel()
	before = len(k.requests())
	if err := d.ProbeFlow(done, f); !errors.Is(err, context.Canceled) || len(k.requests()) != before {
		t.Errorf("ProbeFlow with a done context: %v, %d requests", err, len(k.requests())-before)
	}
}

// TestDatapathCommandsContext checks that the Datapath's commands beyond
// odp.Datapath send nothing once their context is done, and otherwise go
// to the handle's datapath.
func TestDatapathCommandsContext(t *testing.T) {
	k, d := dpFake(t, FeatureUnaligned|FeatureDispatchUpcallPerCPU)
	next := k.handle
	k.handle = func(r fakeReq) ([]fakeMsg, error) {
		if r.Family == familyDatapath || r.Family == familyVport {
			return next(r)
		}
		if r.DPIndex != 5 {
			t.Errorf("%s request %d for datapath %d, want 5", r.Family, r.Cmd, r.DPIndex)
		}
		switch {
		case r.Family == familyMeter && r.Cmd == meterCmdFeatures:
			return []fakeMsg{{Cmd: meterCmdFeatures, Data: withHeader(5, encodeAttrs(t, func(ae *netlink.AttributeEncoder) {
				ae.Uint32(meterAttrMaxMeters, 64)
				ae.Uint32(meterAttrMaxBands, 1)
			}))}}, nil
		case r.Family == familyMeter && (r.Cmd == meterCmdGet || r.Cmd == meterCmdDel):
			return []fakeMsg{{Cmd: r.Cmd, Data: withHeader(5, encodeAttrs(t, func(ae *netlink.AttributeEncoder) { ae.Uint32(meterAttrID, r.u32(meterAttrID)) }))}}, nil
		case r.Family == familyCTLimit && r.Cmd == ctLimitCmdGet:
			return []fakeMsg{{Cmd: r.Cmd, Data: withHeader(5, encodeAttrs(t, func(ae *netlink.AttributeEncoder) {
				ae.Bytes(ctLimitAttrZoneLimit, zoneLimitBytes([]ZoneLimit{{Zone: 7, Limit: 5, Count: 1}}))
			}))}}, nil
		}
		return nil, nil
	}
	key, err := odp.UnmarshalKey(rawKey(t, 1))
	if err != nil {
		t.Fatal(err)
	}
	ids := []odp.FlowID{{UFID: odp.UFID{1}}, {Key: key}}
	calls := map[string]func(ctx context.Context) error{
		"DelFlows": func(ctx context.Context) error {
			errs, err := d.DelFlows(ctx, ids)
			return errors.Join(err, errors.Join(errs...))
		},
		"SetMasksCacheSize": func(ctx context.Context) error { return d.SetMasksCacheSize(ctx, 1024) },
		"MeterFeatures": func(ctx context.Context) error {
			mf, err := d.MeterFeatures(ctx)
			if err == nil && mf.MaxMeters != 64 {
				err = fmt.Errorf("max meters %d, want 64", mf.MaxMeters)
			}
			return err
		},
		"SetMeter": func(ctx context.Context) error {
			return d.SetMeter(ctx, odp.MeterInfo{ID: 3, Bands: []odp.MeterBand{{Rate: 1}}}, true)
		},
		"GetMeter": func(ctx context.Context) error {
			m, err := d.GetMeter(ctx, 3)
			if err == nil && m.ID != 3 {
				err = fmt.Errorf("meter %d, want 3", m.ID)
			}
			return err
		},
		"DelMeter":      func(ctx context.Context) error { _, err := d.DelMeter(ctx, 3); return err },
		"SetZoneLimits": func(ctx context.Context) error { return d.SetZoneLimits(ctx, []ZoneLimit{{Zone: 7, Limit: 5}}) },
		"ZoneLimits": func(ctx context.Context) error {
			ls, err := d.ZoneLimits(ctx, 7)
			if err == nil && (len(ls) != 1 || ls[0].Count != 1) {
				err = fmt.Errorf("limits %+v", ls)
			}
			return err
		},
		"DelZoneLimits": func(ctx context.Context) error { return d.DelZoneLimits(ctx, 7) },
	}
	done, cancel := context.WithCancel(context.Background())
	cancel()
	for name, call := range calls {
		before := len(k.requests())
		if err := call(done); !errors.Is(err, context.Canceled) || len(k.requests()) != before {
			t.Errorf("%s with a done context: %v, %d requests", name, err, len(k.requests())-before)
		}
		if err := call(context.Background()); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		if len(k.requests()) == before {
			t.Errorf("%s sent nothing", name)
		}
	}
}
