package genl

import (
	"bytes"
	"context"
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
