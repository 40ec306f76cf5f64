//go:build !genl_stub

package genl

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"

	"github.com/ovsdp/ovsdp/odp"
)

func mustAttrs(t *testing.T, f func(ae *netlink.AttributeEncoder)) []byte { return encodeAttrs(t, f) }

// rawKey is in_port(1),eth_type(0x0800) in the kernel's layout.
func rawKey(t *testing.T, inPort uint32) []byte {
	return mustAttrs(t, func(ae *netlink.AttributeEncoder) {
		ae.Uint32(uint16(odp.KeyInPort), inPort)
		ae.Bytes(uint16(odp.KeyEthertype), []byte{0x08, 0x00})
	})
}

// rawActions is output(2).
func rawActions(t *testing.T) []byte {
	return mustAttrs(t, func(ae *netlink.AttributeEncoder) { ae.Uint32(1, 2) })
}

func TestDialModuleMissing(t *testing.T) {
	k := newFake(t, nil)
	k.noModule = true
	_, err := newClientWith(k.dial)
	if !errors.Is(err, ErrModuleNotLoaded) || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("err = %v, want ErrModuleNotLoaded and os.ErrNotExist", err)
	}
	if !strings.Contains(err.Error(), "modprobe openvswitch") {
		t.Errorf("error %q does not say how to load the module", err)
	}
}

func TestOptionalFamiliesMissing(t *testing.T) {
	k := newFake(t, func(fakeReq) ([]fakeMsg, error) { t.Fatal("no request expected"); return nil, nil })
	k.noMeter = true
	c := k.client()
	if fams := c.families(); len(fams) != 4 || fams[familyMeter] != 0 || fams[familyCTLimit] != 0 {
		t.Fatalf("families without ovs_meter and ovs_ct_limit: %v", fams)
	}
	if _, err := c.meterFeatures(1); !errors.Is(err, ErrFamilyMissing) {
		t.Errorf("MeterFeatures: %v, want ErrFamilyMissing", err)
	}
	if err := c.setZoneLimits(1, nil); !errors.Is(err, ErrFamilyMissing) {
		t.Errorf("SetZoneLimits: %v, want ErrFamilyMissing", err)
	}
}

func TestDatapathCommands(t *testing.T) {
	k := newFake(t, nil)
	k.handle = func(r fakeReq) ([]fakeMsg, error) {
		if r.Family != familyDatapath {
			t.Fatalf("family %s", r.Family)
		}
		switch r.Cmd {
		case dpCmdNew:
			if string(r.Attrs[dpAttrName]) != "br0\x00" || r.u32(dpAttrUpcallPID) != 9 || r.u32(dpAttrUserFeatures) != 3 || r.u32(dpAttrIfindex) != 99 {
				t.Errorf("new: attrs %v", r.Attrs)
			}
			return []fakeMsg{{Cmd: dpCmdNew, Data: dpReply(t, 99, "br0", 3, nil)}}, nil
		case dpCmdGet:
			if r.Flags&netlink.Dump == netlink.Dump {
				return []fakeMsg{{Cmd: dpCmdNew, Data: dpReply(t, 5, "a", 0, nil)}, {Cmd: dpCmdNew, Data: dpReply(t, 6, "b", 8, nil)}}, nil
			}
			if r.has(dpAttrName) {
				if string(r.Attrs[dpAttrName]) != "br0\x00" {
					return nil, kerr{errno: unix.ENODEV}
				}
				return []fakeMsg{{Cmd: dpCmdNew, Data: dpReply(t, 99, "br0", 3, nil)}}, nil
			}
			if r.DPIndex != 99 {
				return nil, kerr{errno: unix.ENODEV}
			}
			return []fakeMsg{{Cmd: dpCmdNew, Data: dpReply(t, 99, "br0", 3, func(ae *netlink.AttributeEncoder) {
				ae.Bytes(dpAttrPerCPUPIDs, u32Bytes([]uint32{4, 5}))
			})}}, nil
		case dpCmdSet:
			if r.DPIndex != 99 || !r.has(dpAttrUserFeatures) {
				t.Errorf("set: %+v", r)
			}
			return []fakeMsg{{Cmd: dpCmdNew, Data: dpReply(t, 99, "br0", r.u32(dpAttrUserFeatures), nil)}}, nil
		case dpCmdDel:
			if r.DPIndex != 99 && string(r.Attrs[dpAttrName]) != "br0\x00" {
				return nil, kerr{errno: unix.ENODEV}
			}
			return nil, nil
		}
		t.Fatalf("unexpected command %d", r.Cmd)
		return nil, nil
	}
	c := k.client()

	d, err := c.newDatapath(DatapathSpec{Name: "br0", UpcallPID: 9, Features: 3, Ifindex: 99})
	if err != nil {
		t.Fatal(err)
	}
	want := &DPInfo{Index: 99, Name: "br0", UserFeatures: 3, MasksCacheSize: 256, HasMasksCacheSize: true, HasMegaflowStats: true,
		Stats: odp.DatapathStats{Hit: 10, Missed: 20, Lost: 30, Flows: 40, MaskHits: 100, Masks: 3, CacheHits: 77}}
	if diff := cmp.Diff(want, d); diff != "" {
		t.Errorf("NewDatapath (-want +got):\n%s", diff)
	}
	if d.UpcallMode() != UpcallModePerVport {
		t.Errorf("UpcallMode = %s", d.UpcallMode())
	}
	if k.requests()[0].Flags&netlink.Acknowledge == 0 {
		t.Error("request without NLM_F_ACK")
	}

	if d, err = c.getDatapath("br0"); err != nil || d.Index != 99 {
		t.Fatalf("GetDatapath: %v %v", d, err)
	}
	if d, err = c.getDatapathByIndex(99); err != nil || !cmp.Equal(d.PerCPUPIDs, []uint32{4, 5}) {
		t.Fatalf("GetDatapathByIndex: %+v %v", d, err)
	}
	_, err = c.getDatapath("nope")
	if !errors.Is(err, os.ErrNotExist) || !errors.Is(err, unix.ENODEV) {
		t.Errorf("GetDatapath(nope) = %v, want ErrNotExist", err)
	}
	size := uint32(512)
	if d, err = c.setDatapath(99, datapathSettings{Features: 9, MasksCacheSize: &size, PerCPUPIDs: []uint32{1, 2}}); err != nil || d.UpcallMode() != UpcallModePerCPU {
		t.Fatalf("SetDatapath: %+v %v", d, err)
	}
	last := k.requests()[len(k.requests())-1]
	if last.u32(dpAttrMasksCacheSize) != 512 || !bytes.Equal(last.Attrs[dpAttrPerCPUPIDs], u32Bytes([]uint32{1, 2})) {
		t.Errorf("SetDatapath sent %v", last.Attrs)
	}
	if d, err := c.getDatapathByIndex(99); err != nil || !d.HasMasksCacheSize || d.MasksCacheSize != 256 {
		t.Errorf("masks cache size of %+v, %v: want 256", d, err)
	}
	if err := c.setMasksCacheSize(99, 1024); err != nil {
		t.Fatal(err)
	}
	last = k.requests()[len(k.requests())-1]
	if last.u32(dpAttrMasksCacheSize) != 1024 || last.u32(dpAttrUserFeatures) != 3 {
		t.Errorf("SetMasksCacheSize must keep the features: sent %v", last.Attrs)
	}
	ds, err := c.datapaths()
	if err != nil || len(ds) != 2 || ds[0].Name != "a" || ds[1].Name != "b" || ds[1].UpcallMode() != UpcallModePerCPU {
		t.Fatalf("Datapaths = %v, %v", ds, err)
	}
	if err := c.delDatapath(99); err != nil {
		t.Fatal(err)
	}
	if err := c.delDatapath(3); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("DelDatapath(3) = %v", err)
	}
}

func TestDumpInterruptedRestarts(t *testing.T) {
	n := 0
	k := newFake(t, func(r fakeReq) ([]fakeMsg, error) {
		n++
		var fl netlink.HeaderFlags
		if n == 1 {
			fl = netlink.DumpInterrupted
		}
		return []fakeMsg{{Cmd: 1, Data: dpReply(t, 1, "a", 0, nil), Flags: fl}}, nil
	})
	ds, err := k.client().datapaths()
	if err != nil || len(ds) != 1 || n != 2 {
		t.Fatalf("Datapaths = %v, %v after %d dumps; want 1 datapath after 2", ds, err, n)
	}
	n = -100 // always interrupted
	k.handle = func(r fakeReq) ([]fakeMsg, error) {
		return []fakeMsg{{Cmd: 1, Data: dpReply(t, 1, "a", 0, nil), Flags: netlink.DumpInterrupted}}, nil
	}
	if _, err := k.client().datapaths(); !errors.Is(err, ErrDumpInterrupted) {
		t.Fatalf("err = %v, want ErrDumpInterrupted", err)
	}
}

func TestNegotiation(t *testing.T) {
	for _, tc := range []struct {
		name     string
		accept   func(f uint32) bool
		want     uint32
		wantMode string
	}{
		{"per-cpu kernel", func(f uint32) bool { return f&featureProbeUnknown == 0 }, FeatureUnaligned | FeatureDispatchUpcallPerCPU, UpcallModePerCPU},
		{"vport-pids kernel", func(f uint32) bool { return f&(featureProbeUnknown|FeatureDispatchUpcallPerCPU) == 0 }, FeatureUnaligned | FeatureVportPIDs, UpcallModePerVport},
		{"unchecking kernel", func(uint32) bool { return true }, FeatureUnaligned | FeatureVportPIDs, UpcallModePerVport},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cur := uint32(0)
			created := false
			k := newFake(t, func(r fakeReq) ([]fakeMsg, error) {
				switch r.Cmd {
				case dpCmdNew, dpCmdSet:
					f := r.u32(dpAttrUserFeatures)
					if !tc.accept(f) {
						return nil, kerr{errno: unix.EOPNOTSUPP}
					}
					if r.Cmd == dpCmdNew {
						if created {
							return nil, kerr{errno: unix.EEXIST}
						}
						created = true
					}
					cur = f
				}
				return []fakeMsg{{Cmd: 1, Data: dpReply(t, 7, "dp", cur, nil)}}, nil
			})
			c := k.client()
			d, err := c.createDatapath(DatapathSpec{Name: "dp"})
			if err != nil {
				t.Fatal(err)
			}
			if d.UserFeatures != tc.want || d.UpcallMode() != tc.wantMode || cur != tc.want {
				t.Errorf("features %#x (kernel %#x) mode %s, want %#x %s", d.UserFeatures, cur, d.UpcallMode(), tc.want, tc.wantMode)
			}
			cur = 0
			if d, err = c.negotiateFeatures(7); err != nil || d.UserFeatures != tc.want {
				t.Errorf("NegotiateFeatures = %+v, %v", d, err)
			}
		})
	}
	// Any other error stops the negotiation.
	k := newFake(t, func(r fakeReq) ([]fakeMsg, error) { return nil, kerr{errno: unix.EPERM} })
	_, err := k.client().createDatapath(DatapathSpec{Name: "dp"})
	if !errors.Is(err, os.ErrPermission) || !strings.Contains(err.Error(), "CAP_NET_ADMIN") {
		t.Fatalf("err = %v, want ErrPermission mentioning CAP_NET_ADMIN", err)
	}
	if n := len(k.requests()); n != 1 {
		t.Errorf("%d requests after EPERM, want 1", n)
	}
}

func TestExtendedAck(t *testing.T) {
	k := newFake(t, func(r fakeReq) ([]fakeMsg, error) {
		return nil, kerr{errno: unix.EINVAL, msg: "Flow actions may not be safe on all matching packets", offset: 24}
	})
	c := k.client()
	_, err := c.putFlow(1, &odp.Flow{Key: odp.FlowKey{odp.UnknownKey{Type: 3, Data: []byte{1, 0, 0, 0}}}}, odp.PutCreate, flowOptions{})
	var ge *Error
	if !errors.As(err, &ge) {
		t.Fatalf("err = %#v, want *Error", err)
	}
	if ge.Errno != unix.EINVAL || ge.Message != "Flow actions may not be safe on all matching packets" || ge.Offset != 24 {
		t.Errorf("Error = %+v", ge)
	}
	var oe *netlink.OpError
	if !errors.As(err, &oe) || oe.Message == "" {
		t.Errorf("the netlink.OpError is not kept: %v", err)
	}
	if !strings.Contains(err.Error(), "may not be safe") || !strings.Contains(err.Error(), "ovs_flow new") {
		t.Errorf("message %q lacks the kernel's text or the operation", err)
	}
	for _, tc := range []struct {
		errno  unix.Errno
		target error
	}{{unix.ENOENT, os.ErrNotExist}, {unix.ENODEV, os.ErrNotExist}, {unix.EEXIST, os.ErrExist}, {unix.EPERM, os.ErrPermission}, {unix.EACCES, os.ErrPermission}} {
		e := &Error{Op: "x", Errno: tc.errno, Err: tc.errno}
		if !errors.Is(e, tc.target) {
			t.Errorf("errno %v does not match %v", tc.errno, tc.target)
		}
	}
	if errors.Is(&Error{Op: "x", Errno: unix.EINVAL, Err: unix.EINVAL}, os.ErrNotExist) {
		t.Error("EINVAL matches ErrNotExist")
	}
}

func TestVportCommands(t *testing.T) {
	k := newFake(t, nil)
	k.handle = func(r fakeReq) ([]fakeMsg, error) {
		if r.Family != familyVport {
			t.Fatalf("family %s", r.Family)
		}
		switch r.Cmd {
		case vportCmdNew:
			if r.u32(vportAttrType) != uint32(VportVXLAN) || string(r.Attrs[vportAttrName]) != "vx\x00" || r.u32(vportAttrPortNo) != 4 {
				t.Errorf("new: %v", r.Attrs)
			}
			if !bytes.Equal(r.Attrs[vportAttrUpcallPID], u32Bytes([]uint32{0})) {
				t.Errorf("new without PIDs must send [0], sent %v", r.Attrs[vportAttrUpcallPID])
			}
			var o VportOptions
			if err := decodeVportOptions(r.Attrs[vportAttrOptions], 0, &o); err != nil || o.DstPort != 4790 || !o.GBP {
				t.Errorf("options %+v %v", o, err)
			}
			return []fakeMsg{{Cmd: vportCmdNew, Data: vportReply(t, r.DPIndex, 4, VportVXLAN, "vx", func(ae *netlink.AttributeEncoder) {
				ae.Bytes(vportAttrOptions, r.Attrs[vportAttrOptions])
			})}}, nil
		case vportCmdGet:
			if r.Flags&netlink.Dump == netlink.Dump {
				return []fakeMsg{
					{Cmd: vportCmdNew, Data: vportReply(t, r.DPIndex, 0, VportInternal, "br0", nil)},
					{Cmd: vportCmdNew, Data: vportReply(t, r.DPIndex, 1, VportNetdev, "veth0", func(ae *netlink.AttributeEncoder) {
						ae.Nested(vportAttrUpcallStats, func(ne *netlink.AttributeEncoder) error {
							ne.Uint64(vportUpcallAttrSuccess, 5)
							ne.Uint64(vportUpcallAttrFail, 1)
							return nil
						})
					})},
				}, nil
			}
			if r.has(vportAttrName) {
				return []fakeMsg{{Cmd: vportCmdNew, Data: vportReply(t, 3, 1, VportNetdev, "veth0", nil)}}, nil
			}
			if r.u32(vportAttrPortNo) != 1 {
				return nil, kerr{errno: unix.ENODEV}
			}
			return []fakeMsg{{Cmd: vportCmdNew, Data: vportReply(t, r.DPIndex, 1, VportNetdev, "veth0", nil)}}, nil
		case vportCmdSet:
			if !bytes.Equal(r.Attrs[vportAttrUpcallPID], u32Bytes([]uint32{7, 8})) {
				t.Errorf("set pids %v", r.Attrs[vportAttrUpcallPID])
			}
			return []fakeMsg{{Cmd: vportCmdNew, Data: vportReply(t, r.DPIndex, 1, VportNetdev, "veth0", nil)}}, nil
		case vportCmdDel:
			return []fakeMsg{{Cmd: vportCmdDel, Data: vportReply(t, r.DPIndex, 1, VportNetdev, "veth0", nil)}}, nil
		}
		return nil, kerr{errno: unix.EOPNOTSUPP}
	}
	c := k.client()
	v, err := c.newVport(3, vportSpec{Name: "vx", Type: VportVXLAN, PortNo: 4, Options: &VportOptions{DstPort: 4790, GBP: true}})
	if err != nil {
		t.Fatal(err)
	}
	if v.Options.DstPort != 4790 || !v.Options.GBP || v.PortNo != 4 || v.Type != VportVXLAN || v.Ifindex != 44 || !v.HasStats || v.Stats.TxDropped != 8 {
		t.Errorf("NewVport = %+v", v)
	}
	p := v.Port()
	if p.Type != odp.PortVXLAN || p.Options["dst_port"] != "4790" || p.Options["exts"] != "gbp" {
		t.Errorf("Port() = %+v", p)
	}
	if _, err := c.newVport(3, vportSpec{Name: "x"}); err == nil {
		t.Error("NewVport without a type succeeded")
	}
	if v, err = c.getVport(3, 1); err != nil || v.Name != "veth0" {
		t.Fatalf("GetVport = %v %v", v, err)
	}
	if _, err = c.getVport(3, 9); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("GetVport(9) = %v", err)
	}
	if v, err = c.getVportByName("veth0"); err != nil || v.DPIndex != 3 {
		t.Fatalf("GetVportByName = %v %v", v, err)
	}
	if _, err = c.setVport(3, vportSpec{PortNo: 1, UpcallPIDs: []uint32{7, 8}}); err != nil {
		t.Fatal(err)
	}
	if v, err = c.delVport(3, 1); err != nil || v.Name != "veth0" {
		t.Fatalf("DelVport = %v %v", v, err)
	}
	vs, err := c.vports(3)
	if err != nil || len(vs) != 2 || vs[1].UpcallSuccess != 5 || vs[1].UpcallFail != 1 || !vs[1].HasUpcallStats {
		t.Fatalf("Vports = %+v, %v", vs, err)
	}
}

func TestFlowCommands(t *testing.T) {
	key, err := odp.UnmarshalKey(rawKey(t, 1))
	if err != nil {
		t.Fatal(err)
	}
	acts, err := odp.UnmarshalActions(rawActions(t))
	if err != nil {
		t.Fatal(err)
	}
	ufid := odp.UFID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	flowReply := func(n uint64) []byte {
		return withHeader(2, mustAttrs(t, func(ae *netlink.AttributeEncoder) {
			ae.Bytes(flowAttrKey, rawKey(t, uint32(n)))
			ae.Bytes(flowAttrUFID, ufid[:])
			ae.Bytes(flowAttrMask, rawKey(t, 0xffffffff))
			st := binary.NativeEndian.AppendUint64(nil, n)
			st = binary.NativeEndian.AppendUint64(st, 64*n)
			ae.Bytes(flowAttrStats, st)
			ae.Uint8(flowAttrTCPFlags, 0x12)
			ae.Uint64(flowAttrUsed, 1234)
			ae.Bytes(flowAttrActions, rawActions(t))
		}))
	}
	type call struct {
		Cmd   uint8
		Flags netlink.HeaderFlags
	}
	var calls []call
	k := newFake(t, func(r fakeReq) ([]fakeMsg, error) {
		if r.Family != familyFlow {
			t.Fatalf("family %s", r.Family)
		}
		calls = append(calls, call{r.Cmd, r.Flags &^ (netlink.Request | netlink.Acknowledge)})
		if r.Flags&netlink.Dump == netlink.Dump {
			if r.u32(flowAttrUFIDFlags) != uint32(Terse) {
				t.Errorf("dump UFID flags %v", r.Attrs[flowAttrUFIDFlags])
			}
			var ms []fakeMsg
			for i := 1; i <= 25; i++ {
				ms = append(ms, fakeMsg{Cmd: flowCmdNew, Data: flowReply(uint64(i))})
			}
			return ms, nil
		}
		switch r.Cmd {
		case flowCmdNew, flowCmdSet:
			if !bytes.Equal(r.Attrs[flowAttrKey], rawKey(t, 1)) || !bytes.Equal(r.Attrs[flowAttrActions], rawActions(t)) || !bytes.Equal(r.Attrs[flowAttrUFID], ufid[:]) {
				t.Errorf("put attrs %v", r.Attrs)
			}
			if r.Cmd == flowCmdSet && !r.has(flowAttrClear) {
				t.Error("set without CLEAR")
			}
			if !r.has(flowAttrProbe) {
				t.Error("no PROBE")
			}
			if r.Flags&netlink.Echo == 0 {
				return nil, nil
			}
			return []fakeMsg{{Cmd: flowCmdNew, Data: flowReply(3)}}, nil
		case flowCmdGet:
			if !r.has(flowAttrUFID) && !r.has(flowAttrKey) {
				t.Error("get without key or UFID")
			}
			return []fakeMsg{{Cmd: flowCmdNew, Data: flowReply(3)}}, nil
		case flowCmdDel:
			if !r.has(flowAttrUFID) && !r.has(flowAttrKey) {
				return nil, nil // flush
			}
			return []fakeMsg{{Cmd: flowCmdDel, Data: flowReply(4)}}, nil
		}
		return nil, kerr{errno: unix.EINVAL}
	})
	c := k.client()
	f := &odp.Flow{UFID: ufid, Key: key, Actions: acts}
	o := flowOptions{Probe: true}
	if _, err := c.putFlow(2, f, odp.PutCreate, o); err != nil {
		t.Fatal(err)
	}
	st, err := c.putFlow(2, f, odp.PutModify|odp.PutZeroStats, o)
	if err != nil || st.Packets != 3 || st.Bytes != 192 || st.TCPFlags != 0x12 || st.Used != 1234 {
		t.Fatalf("PutFlow modify = %+v, %v", st, err)
	}
	if _, err := c.putFlow(2, f, odp.PutCreate|odp.PutModify, o); err != nil {
		t.Fatal(err)
	}
	if _, err := c.putFlow(2, f, 0, o); err == nil {
		t.Error("PutFlow without create or modify succeeded")
	}
	wantCalls := []call{{flowCmdNew, netlink.Create | netlink.Excl}, {flowCmdSet, netlink.Echo}, {flowCmdNew, netlink.Echo}}
	if diff := cmp.Diff(wantCalls, calls[:3]); diff != "" {
		t.Errorf("commands (-want +got):\n%s", diff)
	}
	got, err := c.getFlow(2, odp.FlowID{UFID: ufid}, flowOptions{})
	if err != nil {
		t.Fatal(err)
	}
	kb, _ := odp.MarshalKey(got.Key)
	mb, _ := odp.MarshalKey(got.Mask)
	ab, _ := odp.MarshalActions(got.Actions)
	if got.UFID != ufid || !bytes.Equal(kb, rawKey(t, 3)) || !bytes.Equal(mb, rawKey(t, 0xffffffff)) || !bytes.Equal(ab, rawActions(t)) || got.Stats.Packets != 3 {
		t.Errorf("GetFlow = %+v", got)
	}
	if st, err = c.delFlow(2, odp.FlowID{Key: key}, flowOptions{}); err != nil || st.Packets != 4 {
		t.Fatalf("DelFlow = %+v, %v", st, err)
	}
	if _, err = c.delFlow(2, odp.FlowID{}, flowOptions{}); err == nil {
		t.Error("DelFlow without key or UFID succeeded")
	}
	if err := c.flushFlows(2); err != nil {
		t.Fatal(err)
	}
	var seen []uint64
	err = c.dumpFlows(2, flowOptions{UFIDFlags: Terse}, func(f *odp.Flow) error {
		seen = append(seen, f.Stats.Packets)
		return nil
	})
	if err != nil || len(seen) != 25 || seen[0] != 1 || seen[24] != 25 {
		t.Fatalf("DumpFlows saw %v, %v", seen, err)
	}
	stop := errors.New("stop")
	n := 0
	err = c.dumpFlows(2, flowOptions{UFIDFlags: Terse}, func(*odp.Flow) error {
		n++
		if n == 3 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || n != 3 {
		t.Fatalf("DumpFlows with a failing callback: %v after %d flows", err, n)
	}
	// The client still works after an abandoned dump.
	if _, err := c.getFlow(2, odp.FlowID{UFID: ufid}, flowOptions{}); err != nil {
		t.Fatal(err)
	}
}

func TestDumpFlowsInterrupted(t *testing.T) {
	k := newFake(t, func(r fakeReq) ([]fakeMsg, error) {
		d := withHeader(2, mustAttrs(t, func(ae *netlink.AttributeEncoder) { ae.Bytes(flowAttrKey, rawKey(t, 1)) }))
		return []fakeMsg{{Cmd: 1, Data: d}, {Cmd: 1, Data: d, Flags: netlink.DumpInterrupted}, {Cmd: 1, Data: d}}, nil
	})
	n := 0
	err := k.client().dumpFlows(2, flowOptions{}, func(*odp.Flow) error { n++; return nil })
	if !errors.Is(err, ErrDumpInterrupted) || n != 3 {
		t.Fatalf("err = %v after %d flows, want ErrDumpInterrupted after 3", err, n)
	}
}

func TestDumpFlowsBadReply(t *testing.T) {
	k := newFake(t, func(r fakeReq) ([]fakeMsg, error) {
		return []fakeMsg{{Cmd: 1, Data: withHeader(2, []byte{8, 0, 3, 0, 1})}}, nil
	})
	err := k.client().dumpFlows(2, flowOptions{}, func(*odp.Flow) error { return nil })
	var de *odp.DecodeError
	if !errors.As(err, &de) {
		t.Fatalf("err = %v, want a DecodeError", err)
	}
}

func TestExecute(t *testing.T) {
	k := newFake(t, func(r fakeReq) ([]fakeMsg, error) {
		if r.Family != familyPacket || r.Cmd != packetCmdExecute {
			t.Fatalf("request %+v", r)
		}
		if !bytes.Equal(r.Attrs[packetAttrPacket], []byte("frame")) || !bytes.Equal(r.Attrs[packetAttrKey], rawKey(t, 1)) ||
			!bytes.Equal(r.Attrs[packetAttrActions], rawActions(t)) || !r.has(packetAttrProbe) ||
			binary.NativeEndian.Uint16(r.Attrs[packetAttrMRU]) != 1500 || binary.NativeEndian.Uint64(r.Attrs[packetAttrHash]) != 0xabcdef ||
			binary.NativeEndian.Uint32(r.Attrs[packetAttrUpcallPID]) != 4242 {
			t.Errorf("execute attrs %v", r.Attrs)
		}
		return nil, nil
	})
	key, _ := odp.UnmarshalKey(rawKey(t, 1))
	acts, _ := odp.UnmarshalActions(rawActions(t))
	err := k.client().execute(1, &odp.Packet{Data: []byte("frame"), Key: key, Actions: acts, MRU: 1500, Hash: 0xabcdef, Probe: true, UpcallPID: 4242})
	if err != nil {
		t.Fatal(err)
	}
}

// A kernel whose ovs_packet family predates OVS_PACKET_ATTR_UPCALL_PID
// would ignore it: Execute and ExecuteBatch refuse a packet with an
// upcall PID there, and send nothing for it.
func TestExecuteUpcallPIDNeedsKernelSupport(t *testing.T) {
	k := newFake(t, func(r fakeReq) ([]fakeMsg, error) {
		if r.has(packetAttrUpcallPID) {
			t.Errorf("upcall PID sent to a kernel without it: %+v", r)
		}
		return nil, nil
	})
	k.packetMaxAttr = 11 // Linux 6.1
	c := k.client()
	key, _ := odp.UnmarshalKey(rawKey(t, 1))
	acts, _ := odp.UnmarshalActions(rawActions(t))
	err := c.execute(1, &odp.Packet{Data: []byte("frame"), Key: key, Actions: acts, UpcallPID: 9})
	if !errors.Is(err, errors.ErrUnsupported) || !strings.Contains(err.Error(), "up to 11") {
		t.Errorf("Execute with an upcall PID on an old kernel: %v, want errors.ErrUnsupported naming the family's maximum", err)
	}
	errs, err := c.executeBatch(1, []*odp.Packet{{Data: []byte("frame"), Key: key, Actions: acts, UpcallPID: 9}, {Data: []byte("frame"), Key: key, Actions: acts}})
	if err != nil || !errors.Is(errs[0], errors.ErrUnsupported) || errs[1] != nil {
		t.Errorf("ExecuteBatch: %v, %v", errs, err)
	}
	if err := c.execute(1, &odp.Packet{Data: []byte("frame"), Key: key, Actions: acts}); err != nil {
		t.Errorf("Execute without an upcall PID: %v", err)
	}
}

func TestMetersAndZoneLimits(t *testing.T) {
	k := newFake(t, func(r fakeReq) ([]fakeMsg, error) {
		switch r.Family {
		case familyMeter:
			switch r.Cmd {
			case meterCmdFeatures:
				return []fakeMsg{{Cmd: 1, Data: withHeader(1, mustAttrs(t, func(ae *netlink.AttributeEncoder) {
					ae.Uint32(meterAttrMaxMeters, 200)
					ae.Uint32(meterAttrMaxBands, 1)
					ae.Nested(meterAttrBands, func(be *netlink.AttributeEncoder) error {
						be.Nested(0, func(e *netlink.AttributeEncoder) error { e.Uint32(bandAttrType, odp.MeterBandDrop); return nil })
						return nil
					})
				}))}}, nil
			case meterCmdSet:
				var m *odp.MeterInfo
				m, err := decodeMeter(withHeader(1, mustAttrs(t, func(ae *netlink.AttributeEncoder) {
					ae.Bytes(meterAttrBands, r.Attrs[meterAttrBands])
				})))
				if err != nil || r.u32(meterAttrID) != 5 || !r.has(meterAttrKbps) || len(m.Bands) != 1 || m.Bands[0].Rate != 1000 || m.Bands[0].Burst != 10 || m.Bands[0].Type != odp.MeterBandDrop {
					t.Errorf("set meter: %+v %v %v", m, err, r.Attrs)
				}
				return []fakeMsg{{Cmd: 2, Data: withHeader(1, nil)}}, nil
			case meterCmdGet, meterCmdDel:
				if r.u32(meterAttrID) != 5 {
					return nil, kerr{errno: unix.ENOENT}
				}
				return []fakeMsg{{Cmd: 2, Data: withHeader(1, mustAttrs(t, func(ae *netlink.AttributeEncoder) {
					ae.Uint32(meterAttrID, 5)
					st := binary.NativeEndian.AppendUint64(nil, 9)
					ae.Bytes(meterAttrStats, binary.NativeEndian.AppendUint64(st, 900))
					ae.Nested(meterAttrBands, func(be *netlink.AttributeEncoder) error {
						be.Nested(0, func(e *netlink.AttributeEncoder) error {
							e.Bytes(bandAttrStats, make([]byte, 16))
							return nil
						})
						return nil
					})
				}))}}, nil
			}
		case familyCTLimit:
			switch r.Cmd {
			case ctLimitCmdSet, ctLimitCmdDel:
				if len(r.Attrs[ctLimitAttrZoneLimit]) != 24 {
					t.Errorf("zone limits %v", r.Attrs)
				}
				return nil, nil
			case ctLimitCmdGet:
				if r.has(ctLimitAttrZoneLimit) {
					t.Error("get all sent zones")
				}
				return []fakeMsg{{Cmd: 3, Data: withHeader(1, mustAttrs(t, func(ae *netlink.AttributeEncoder) {
					ae.Bytes(ctLimitAttrZoneLimit, u32Bytes([]uint32{0xffffffff, 10, 0, 7, 3, 2}))
				}))}}, nil
			}
		}
		return nil, kerr{errno: unix.EOPNOTSUPP}
	})
	c := k.client()
	mf, err := c.meterFeatures(1)
	if err != nil || mf.MaxMeters != 200 || mf.MaxBands != 1 || !cmp.Equal(mf.BandTypes, []uint32{odp.MeterBandDrop}) {
		t.Fatalf("MeterFeatures = %+v, %v", mf, err)
	}
	if err := c.setMeter(1, odp.MeterInfo{ID: 5, KBPS: true, Bands: []odp.MeterBand{{Rate: 1000, Burst: 10}}}, false); err != nil {
		t.Fatal(err)
	}
	m, err := c.getMeter(1, 5)
	if err != nil || m.Packets != 9 || m.Bytes != 900 || len(m.Bands) != 1 {
		t.Fatalf("GetMeter = %+v, %v", m, err)
	}
	if _, err := c.delMeter(1, 6); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("DelMeter(6) = %v", err)
	}
	if err := c.setZoneLimits(1, []ZoneLimit{{Zone: DefaultZone, Limit: 10}, {Zone: 7, Limit: 3}}); err != nil {
		t.Fatal(err)
	}
	ls, err := c.zoneLimits(1)
	want := []ZoneLimit{{Zone: DefaultZone, Limit: 10}, {Zone: 7, Limit: 3, Count: 2}}
	if err != nil || !cmp.Equal(ls, want) {
		t.Fatalf("ZoneLimits = %v, %v", ls, err)
	}
	if err := c.delZoneLimits(1, 7, 8); err != nil {
		t.Fatal(err)
	}
}

func TestVportWatcher(t *testing.T) {
	k := newFake(t, nil)
	c := k.client()
	k.multicast = [][]fakeMsg{{
		{Cmd: vportCmdNew, Data: vportReply(t, 1, 2, VportNetdev, "a", nil)},
		{Cmd: vportCmdDel, Data: vportReply(t, 1, 2, VportNetdev, "a", nil)},
	}}
	k.mcastDial = true
	w, err := c.watchVports()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for _, want := range []VportEventKind{VportAdded, VportDeleted} {
		ev, err := w.Recv()
		if err != nil || ev.Kind != want || ev.Vport.Name != "a" {
			t.Fatalf("Recv = %+v, %v; want %v", ev, err, want)
		}
	}
	if VportChanged.String() != "changed" {
		t.Error(VportChanged.String())
	}
}

func TestPutFlows(t *testing.T) {
	seen := 0
	k := newFake(t, func(r fakeReq) ([]fakeMsg, error) {
		if r.Family != familyFlow || r.Cmd != flowCmdNew || r.Flags&(netlink.Create|netlink.Excl) != netlink.Create|netlink.Excl {
			t.Fatalf("request %+v", r)
		}
		seen++
		if binary.NativeEndian.Uint32(r.Attrs[flowAttrKey][4:])%7 == 3 {
			return nil, kerr{errno: unix.EEXIST, msg: "exists"}
		}
		return nil, nil
	})
	c := k.client()
	acts, _ := odp.UnmarshalActions(rawActions(t))
	var fs []*odp.Flow
	for i := 0; i < 120; i++ {
		key, err := odp.UnmarshalKey(rawKey(t, uint32(i)))
		if err != nil {
			t.Fatal(err)
		}
		fs = append(fs, &odp.Flow{Key: key, Actions: acts})
	}
	before := len(k.sendsSince(0))
	errs, err := c.putFlows(1, fs, odp.PutCreate, flowOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if seen != 120 {
		t.Errorf("kernel saw %d requests, want 120", seen)
	}
	checkAckLast(t, k.requests(), k.sendsSince(before))
	for i, e := range errs {
		if wantErr := i%7 == 3; wantErr != (e != nil) || (wantErr && !errors.Is(e, os.ErrExist)) {
			t.Errorf("flow %d: %v", i, e)
		}
	}
	// The socket is in step afterwards.
	k.handle = func(r fakeReq) ([]fakeMsg, error) { return []fakeMsg{{Cmd: 1, Data: dpReply(t, 1, "x", 0, nil)}}, nil }
	if _, err := c.getDatapath("x"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.putFlows(1, fs, 0, flowOptions{}); err == nil {
		t.Error("PutFlows without create or modify succeeded")
	}
}

// checkAckLast checks that of the requests of each sendmsg of more than
// one (sends: the sizes of the last sendmsg calls; reqs: the requests in
// order, the last ones theirs) only the last asks for an
// acknowledgement: the kernel answers the others only when they fail,
// and the batch costs one read instead of one per request.
func checkAckLast(t *testing.T, reqs []fakeReq, sends []int) {
	t.Helper()
	total := 0
	for _, n := range sends {
		total += n
	}
	if total == 0 || total > len(reqs) {
		t.Fatalf("%d requests sent, %d seen", total, len(reqs))
	}
	at := len(reqs) - total
	for _, n := range sends {
		if n > 1 {
			for j, r := range reqs[at : at+n] {
				if got, want := r.Flags&netlink.Acknowledge != 0, j == n-1; got != want {
					t.Errorf("request %d of a sendmsg of %d: acknowledgement asked %v, want %v", j+1, n, got, want)
				}
			}
		}
		at += n
	}
}

// sendsSince returns the sizes of the sendmsg calls after the first n.
func (k *fakeKernel) sendsSince(n int) []int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]int(nil), k.sends[n:]...)
}

func TestExecuteBatch(t *testing.T) {
	var seen []string
	k := newFake(t, func(r fakeReq) ([]fakeMsg, error) {
		if r.Family != familyPacket || r.Cmd != packetCmdExecute || r.DPIndex != 3 {
			t.Fatalf("request %+v", r)
		}
		data := string(r.Attrs[packetAttrPacket])
		seen = append(seen, data)
		if !bytes.Equal(r.Attrs[packetAttrActions], rawActions(t)) || binary.NativeEndian.Uint16(r.Attrs[packetAttrMRU]) != 1500 {
			t.Errorf("%s: attrs %v", data, r.Attrs)
		}
		if strings.HasSuffix(data, "bad") {
			return nil, kerr{errno: unix.EINVAL, msg: "bad packet"}
		}
		return nil, nil
	})
	c := k.client()
	key, _ := odp.UnmarshalKey(rawKey(t, 1))
	acts, _ := odp.UnmarshalActions(rawActions(t))
	var huge odp.Actions
	for range 9000 {
		huge = append(huge, odp.Output{Port: 2})
	}
	const n = 120
	var pkts []*odp.Packet
	var want []string
	for i := range n {
		p := &odp.Packet{Data: fmt.Appendf(nil, "frame %d", i), Key: key, Actions: acts, MRU: 1500}
		switch {
		case i%9 == 4:
			p.Data = append(p.Data, " bad"...)
		case i == 50:
			p.Actions = huge // fails to encode: never sent
		}
		if i != 50 {
			want = append(want, string(p.Data))
		}
		pkts = append(pkts, p)
	}
	before := len(k.sendsSince(0))
	errs, err := c.executeBatch(3, pkts)
	if err != nil {
		t.Fatal(err)
	}
	if len(errs) != n {
		t.Fatalf("%d errors for %d packets", len(errs), n)
	}
	for i, e := range errs {
		switch {
		case i == 50:
			if e == nil || !strings.Contains(e.Error(), "exceed the limit") {
				t.Errorf("packet %d (unencodable actions): err %v", i, e)
			}
		case i%9 == 4:
			if !errors.Is(e, unix.EINVAL) || !strings.Contains(e.Error(), "bad packet") || !strings.Contains(e.Error(), fmt.Sprintf("packet %d of %d", i+1, n)) {
				t.Errorf("packet %d: err %v, want EINVAL with the kernel's message naming the packet", i, e)
			}
		default:
			if e != nil {
				t.Errorf("packet %d: %v", i, e)
			}
		}
	}
	if !slices.Equal(seen, want) {
		t.Errorf("kernel executed, in order:\n%q\nwant\n%q", seen, want)
	}
	// 119 requests: 50 + 50 + 19 per sendmsg.
	if got := k.sendsSince(before); !slices.Equal(got, []int{50, 50, 19}) {
		t.Errorf("messages per sendmsg %v, want [50 50 19]", got)
	}
	checkAckLast(t, k.requests(), k.sendsSince(before))

	// Large packets: a batch stays within executeBatchBytes.
	seen = nil
	big := make([]byte, 30<<10)
	pkts = []*odp.Packet{
		{Data: append(big[:len(big):len(big)], "a"...), Key: key, Actions: acts, MRU: 1500},
		{Data: append(big[:len(big):len(big)], "b"...), Key: key, Actions: acts, MRU: 1500},
		{Data: append(big[:len(big):len(big)], "c"...), Key: key, Actions: acts, MRU: 1500},
		{Data: make([]byte, 65000), Key: key, Actions: acts, MRU: 1500},
	}
	before = len(k.sendsSince(0))
	errs, err = c.executeBatch(3, pkts)
	if err != nil || len(errs) != 4 || errors.Join(errs...) != nil {
		t.Fatalf("ExecuteBatch = %v, %v", errs, err)
	}
	if got := k.sendsSince(before); !slices.Equal(got, []int{2, 1, 1}) {
		t.Errorf("messages per sendmsg %v, want [2 1 1] (at most %d bytes, a larger request alone)", got, executeBatchBytes)
	}
	if len(seen) != 4 {
		t.Errorf("kernel executed %d packets, want 4", len(seen))
	}

	// Empty batch: nothing sent.
	before = len(k.sendsSince(0))
	if errs, err := c.executeBatch(3, nil); err != nil || len(errs) != 0 {
		t.Errorf("empty batch: %v, %v", errs, err)
	}
	if got := k.sendsSince(before); len(got) != 0 {
		t.Errorf("empty batch sent %v", got)
	}

	// The socket is in step afterwards.
	k.handle = func(r fakeReq) ([]fakeMsg, error) { return []fakeMsg{{Cmd: 1, Data: dpReply(t, 3, "x", 0, nil)}}, nil }
	d, err := openOn(c, "x")
	if err != nil {
		t.Fatal(err)
	}
	// Through the Datapath handle; a done context sends nothing.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := d.ExecuteBatch(ctx, pkts); !errors.Is(err, context.Canceled) {
		t.Errorf("ExecuteBatch with a done context: %v", err)
	}
	if _, err := d.PutFlows(ctx, nil, odp.PutCreate); !errors.Is(err, context.Canceled) {
		t.Errorf("PutFlows with a done context: %v", err)
	}
	k.handle = func(r fakeReq) ([]fakeMsg, error) {
		if r.DPIndex != 3 {
			t.Errorf("request for datapath %d", r.DPIndex)
		}
		if r.Family == familyFlow && (r.Cmd != flowCmdNew || binary.NativeEndian.Uint32(r.Attrs[flowAttrUFIDFlags]) != uint32(Terse)) {
			t.Errorf("flow request %+v: want a terse new", r)
		}
		return nil, nil
	}
	fs := []*odp.Flow{{UFID: odp.UFID{1}, Key: key, Actions: acts}, {UFID: odp.UFID{2}, Key: key, Actions: acts}}
	if errs, err := d.PutFlows(context.Background(), fs, odp.PutCreate); err != nil || errors.Join(errs...) != nil {
		t.Errorf("Datapath.PutFlows: %v, %v", errs, err)
	}
	if errs, err := d.ExecuteBatch(context.Background(), pkts[:2]); err != nil || errors.Join(errs...) != nil {
		t.Errorf("Datapath.ExecuteBatch: %v, %v", errs, err)
	}
}
