//go:build !genl_stub

package genl

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/mdlayher/genetlink"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"

	"github.com/ovsdp/ovsdp/odp"
)

// newDatapath creates a datapath (OVS_DP_CMD_NEW) with exactly the
// features of spec; createDatapath negotiates them instead.
func (c *client) newDatapath(spec DatapathSpec) (*DPInfo, error) {
	ae := netlink.NewAttributeEncoder()
	ae.String(dpAttrName, spec.Name)
	ae.Uint32(dpAttrUpcallPID, spec.UpcallPID)
	ae.Uint32(dpAttrUserFeatures, spec.Features)
	if spec.Ifindex != 0 {
		ae.Uint32(dpAttrIfindex, spec.Ifindex)
	}
	return c.dpCommand("ovs_datapath new "+spec.Name, dpCmdNew, 0, ae)
}

// dpCommand runs a datapath command expecting one datapath back.
func (c *client) dpCommand(op string, cmd uint8, idx int32, ae *netlink.AttributeEncoder) (*DPInfo, error) {
	b, err := ovsHeader(idx, ae)
	if err != nil {
		return nil, err
	}
	return single(c, request{op: op, family: c.dp.ID, cmd: cmd, version: versionDatapath, flags: netlink.Echo, data: b}, DecodeDatapath)
}

// getDatapath returns the datapath with the given name.
func (c *client) getDatapath(name string) (*DPInfo, error) {
	ae := netlink.NewAttributeEncoder()
	ae.String(dpAttrName, name)
	return c.dpCommand("ovs_datapath get "+name, dpCmdGet, 0, ae)
}

// getDatapathByIndex returns the datapath whose local port has the given
// ifindex.
func (c *client) getDatapathByIndex(index int32) (*DPInfo, error) {
	return c.dpCommand(fmt.Sprintf("ovs_datapath get ifindex %d", index), dpCmdGet, index, nil)
}

// setDatapath changes a datapath's settings (OVS_DP_CMD_SET).
func (c *client) setDatapath(index int32, s datapathSettings) (*DPInfo, error) {
	ae := netlink.NewAttributeEncoder()
	ae.Uint32(dpAttrUserFeatures, s.Features)
	if s.MasksCacheSize != nil {
		ae.Uint32(dpAttrMasksCacheSize, *s.MasksCacheSize)
	}
	if s.PerCPUPIDs != nil {
		ae.Bytes(dpAttrPerCPUPIDs, u32Bytes(s.PerCPUPIDs))
	}
	return c.dpCommand(fmt.Sprintf("ovs_datapath set ifindex %d", index), dpCmdSet, index, ae)
}

// setMasksCacheSize sets a datapath's mask cache size, keeping its
// features.
func (c *client) setMasksCacheSize(index int32, size uint32) error {
	d, err := c.getDatapathByIndex(index)
	if err != nil {
		return err
	}
	_, err = c.setDatapath(index, datapathSettings{Features: d.UserFeatures, MasksCacheSize: &size})
	return err
}

// delDatapath deletes a datapath and all its ports and flows.
func (c *client) delDatapath(index int32) error {
	b, _ := ovsHeader(index, nil)
	return c.do(request{op: fmt.Sprintf("ovs_datapath del ifindex %d", index), family: c.dp.ID, cmd: dpCmdDel, version: versionDatapath, data: b}, ignoreReply)
}

func ignoreReply(uint8, []byte) error { return nil }

// datapaths lists every datapath (a dump).
func (c *client) datapaths() ([]*DPInfo, error) {
	b, _ := ovsHeader(0, nil)
	var out []*DPInfo
	err := c.collectDump(request{op: "ovs_datapath dump", family: c.dp.ID, cmd: dpCmdGet, version: versionDatapath, data: b},
		func() { out = out[:0] },
		func(_ uint8, data []byte) error {
			d, err := DecodeDatapath(data)
			if err != nil {
				return err
			}
			out = append(out, d)
			return nil
		})
	return out, err
}

// isUnsupported reports whether err is the kernel refusing a feature.
func isUnsupported(err error) bool {
	return errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.EINVAL)
}

// negotiate runs Open vSwitch's feature negotiation with apply (a NEW or
// a SET with the given features): first a feature bit no kernel knows, to
// detect a kernel that does not check features; then per-CPU upcall
// dispatch; then per-vport PIDs.
func negotiate(base uint32, apply func(features uint32) (*DPInfo, error), fixLegacy func(*DPInfo) (*DPInfo, error)) (*DPInfo, error) {
	base &^= FeatureDispatchUpcallPerCPU | FeatureVportPIDs | featureProbeUnknown
	base |= FeatureUnaligned
	d, err := apply(base | FeatureVportPIDs | featureProbeUnknown)
	if err == nil {
		// The kernel took a bit it cannot know: it does not check
		// features, so per-CPU dispatch cannot be trusted. Use the
		// standard features.
		return fixLegacy(d)
	}
	if !isUnsupported(err) {
		return nil, err
	}
	d, err = apply(base | FeatureDispatchUpcallPerCPU)
	if err == nil {
		return d, nil
	}
	if !isUnsupported(err) {
		return nil, err
	}
	return apply(base | FeatureVportPIDs)
}

// createDatapath creates the datapath spec describes: with exactly
// spec.Features when spec.ExactFeatures is set, else negotiating the
// upcall dispatch as Open vSwitch does (see DatapathSpec).
func (c *client) createDatapath(spec DatapathSpec) (*DPInfo, error) {
	if spec.ExactFeatures {
		return c.newDatapath(spec)
	}
	return negotiate(spec.Features,
		func(f uint32) (*DPInfo, error) {
			s := spec
			s.Features = f
			return c.newDatapath(s)
		},
		func(d *DPInfo) (*DPInfo, error) {
			return c.setDatapath(d.Index, datapathSettings{Features: legacyFeatures(spec.Features)})
		})
}

// legacyFeatures are the features negotiate settles on, from base, for a
// kernel that does not check them: per-vport upcall PIDs.
func legacyFeatures(base uint32) uint32 {
	return base&^(FeatureDispatchUpcallPerCPU|featureProbeUnknown) | FeatureUnaligned | FeatureVportPIDs
}

// negotiateFeatures negotiates the features of an existing datapath as
// createDatapath does, keeping its other feature bits.
func (c *client) negotiateFeatures(index int32) (*DPInfo, error) {
	cur, err := c.getDatapathByIndex(index)
	if err != nil {
		return nil, err
	}
	set := func(f uint32) (*DPInfo, error) {
		return c.setDatapath(index, datapathSettings{Features: f})
	}
	return negotiate(cur.UserFeatures, set, func(*DPInfo) (*DPInfo, error) {
		return set(FeatureUnaligned | FeatureVportPIDs)
	})
}

func encodeVportOptions(ae *netlink.AttributeEncoder, o *VportOptions) {
	ae.Nested(vportAttrOptions, func(ne *netlink.AttributeEncoder) error {
		if o.DstPort != 0 {
			ne.Uint16(tunnelAttrDstPort, o.DstPort)
		}
		if o.GBP {
			ne.Nested(tunnelAttrExtension, func(xe *netlink.AttributeEncoder) error {
				xe.Flag(vxlanExtGBP, true)
				return nil
			})
		}
		return nil
	})
}

// vportCommand runs a vport command expecting one vport back.
func (c *client) vportCommand(op string, cmd uint8, dpIndex int32, ae *netlink.AttributeEncoder) (*VportInfo, error) {
	b, err := ovsHeader(dpIndex, ae)
	if err != nil {
		return nil, err
	}
	return single(c, request{op: op, family: c.vport.ID, cmd: cmd, version: versionVport, flags: netlink.Echo, data: b}, DecodeVport)
}

// newVport adds a vport to a datapath.
func (c *client) newVport(dpIndex int32, spec vportSpec) (*VportInfo, error) {
	if spec.Type == 0 {
		return nil, fmt.Errorf("genl: new vport %q: no type", spec.Name)
	}
	ae := netlink.NewAttributeEncoder()
	ae.String(vportAttrName, spec.Name)
	ae.Uint32(vportAttrType, uint32(spec.Type))
	if spec.PortNo != 0 {
		ae.Uint32(vportAttrPortNo, spec.PortNo)
	}
	pids := spec.UpcallPIDs
	if len(pids) == 0 {
		pids = []uint32{0}
	}
	ae.Bytes(vportAttrUpcallPID, u32Bytes(pids))
	if spec.Options != nil {
		encodeVportOptions(ae, spec.Options)
	}
	if spec.Ifindex != 0 {
		ae.Uint32(vportAttrIfindex, spec.Ifindex)
	}
	return c.vportCommand(fmt.Sprintf("ovs_vport new %s (%s)", spec.Name, spec.Type), vportCmdNew, dpIndex, ae)
}

// vportID encodes the vport's identity: its number or its name.
func vportID(ae *netlink.AttributeEncoder, portNo uint32, name string) string {
	if portNo != 0 || name == "" {
		ae.Uint32(vportAttrPortNo, portNo)
		return fmt.Sprintf("port %d", portNo)
	}
	ae.String(vportAttrName, name)
	return name
}

// setVport changes a vport's options or upcall PIDs. The vport is named
// by spec.PortNo, or by spec.Name when PortNo is zero.
func (c *client) setVport(dpIndex int32, spec vportSpec) (*VportInfo, error) {
	ae := netlink.NewAttributeEncoder()
	id := vportID(ae, spec.PortNo, spec.Name)
	if spec.Type != 0 {
		ae.Uint32(vportAttrType, uint32(spec.Type))
	}
	if spec.UpcallPIDs != nil {
		ae.Bytes(vportAttrUpcallPID, u32Bytes(spec.UpcallPIDs))
	}
	if spec.Options != nil {
		encodeVportOptions(ae, spec.Options)
	}
	return c.vportCommand("ovs_vport set "+id, vportCmdSet, dpIndex, ae)
}

// getVport returns a datapath's vport by number.
func (c *client) getVport(dpIndex int32, portNo uint32) (*VportInfo, error) {
	ae := netlink.NewAttributeEncoder()
	id := vportID(ae, portNo, "")
	return c.vportCommand("ovs_vport get "+id, vportCmdGet, dpIndex, ae)
}

// getVportByName returns the vport with the given name (in any datapath).
func (c *client) getVportByName(name string) (*VportInfo, error) {
	ae := netlink.NewAttributeEncoder()
	ae.String(vportAttrName, name)
	return c.vportCommand("ovs_vport get "+name, vportCmdGet, 0, ae)
}

// delVport removes a datapath's vport by number and returns it as it was.
func (c *client) delVport(dpIndex int32, portNo uint32) (*VportInfo, error) {
	ae := netlink.NewAttributeEncoder()
	id := vportID(ae, portNo, "")
	return c.vportCommand("ovs_vport del "+id, vportCmdDel, dpIndex, ae)
}

// vports lists a datapath's vports (a dump), ordered as the kernel gives
// them.
func (c *client) vports(dpIndex int32) ([]*VportInfo, error) {
	b, _ := ovsHeader(dpIndex, nil)
	var out []*VportInfo
	err := c.collectDump(request{op: fmt.Sprintf("ovs_vport dump ifindex %d", dpIndex), family: c.vport.ID, cmd: vportCmdGet, version: versionVport, data: b},
		func() { out = out[:0] },
		func(_ uint8, data []byte) error {
			v, err := DecodeVport(data)
			if err != nil {
				return err
			}
			out = append(out, v)
			return nil
		})
	return out, err
}

// flowAttrs encodes a flow's identity and match.
func flowAttrs(ae *netlink.AttributeEncoder, ufid odp.UFID, key, mask odp.FlowKey, o flowOptions) error {
	if key != nil {
		kb, err := odp.MarshalKey(key)
		if err != nil {
			return err
		}
		ae.Bytes(flowAttrKey, kb)
	}
	if mask != nil {
		mb, err := odp.MarshalKey(mask)
		if err != nil {
			return err
		}
		ae.Bytes(flowAttrMask, mb)
	}
	if !ufid.IsZero() {
		ae.Bytes(flowAttrUFID, ufid[:])
		if o.UFIDFlags != 0 {
			ae.Uint32(flowAttrUFIDFlags, uint32(o.UFIDFlags))
		}
	}
	if o.Probe {
		ae.Flag(flowAttrProbe, true)
	}
	return nil
}

// appendFlowPut appends a flow put's request payload (struct ovs_header
// and the attributes: key, mask, UFID and its flags, probe, actions and
// clear, in the order flowAttrs and putFlow add them to an
// AttributeEncoder) to b, encoding the key, mask and actions in place: no
// allocation once b has the room. len(b) must be a multiple of 4 (the
// attributes are aligned from b's start). On error it returns b
// unchanged.
func appendFlowPut(b []byte, dpIndex int32, f *odp.Flow, flags odp.PutFlags, o flowOptions) ([]byte, error) {
	start := len(b)
	b = binary.NativeEndian.AppendUint32(b, uint32(dpIndex))
	var err error
	for _, ka := range [...]struct {
		typ uint16
		k   odp.FlowKey
	}{{flowAttrKey, f.Key}, {flowAttrMask, f.Mask}} {
		if ka.k == nil {
			continue
		}
		at := len(b)
		b = binary.NativeEndian.AppendUint32(b, 0)
		if b, err = odp.AppendKey(b, ka.k); err != nil {
			return b[:start], err
		}
		if b, err = endAttr(b, at, ka.typ); err != nil {
			return b[:start], err
		}
	}
	if !f.UFID.IsZero() {
		b = appendAttrHeader(b, flowAttrUFID, len(f.UFID))
		b = append(b, f.UFID[:]...)
		if o.UFIDFlags != 0 {
			b = appendAttrHeader(b, flowAttrUFIDFlags, 4)
			b = binary.NativeEndian.AppendUint32(b, uint32(o.UFIDFlags))
		}
	}
	if o.Probe {
		b = appendAttrHeader(b, flowAttrProbe, 0)
	}
	at := len(b)
	b = binary.NativeEndian.AppendUint32(b, 0)
	if b, err = odp.AppendActions(b, f.Actions); err != nil {
		return b[:start], err
	}
	if b, err = endAttr(b, at, flowAttrActions); err != nil {
		return b[:start], err
	}
	if flags&odp.PutZeroStats != 0 {
		b = appendAttrHeader(b, flowAttrClear, 0)
	}
	return b, nil
}

// appendAttrHeader appends a netlink attribute header for a payload of
// n bytes (a multiple of 4: no padding follows).
func appendAttrHeader(b []byte, typ uint16, n int) []byte {
	return binary.NativeEndian.AppendUint16(binary.NativeEndian.AppendUint16(b, uint16(4+n)), typ)
}

// endAttr writes the header of the attribute that starts at b[at:] (its
// payload appended after a 4-byte placeholder) and pads b to the
// attribute alignment.
func endAttr(b []byte, at int, typ uint16) ([]byte, error) {
	n := len(b) - at
	if n > 0xffff {
		return b, fmt.Errorf("attribute %d of %d bytes exceeds the netlink limit", typ, n)
	}
	binary.NativeEndian.PutUint16(b[at:], uint16(n))
	binary.NativeEndian.PutUint16(b[at+2:], typ)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b, nil
}

// flowOp names a flow for errors.
func flowOp(cmd string, ufid odp.UFID, key odp.FlowKey) string {
	if !ufid.IsZero() {
		return "ovs_flow " + cmd + " " + ufid.String()
	}
	return "ovs_flow " + cmd + " " + odp.FormatKey(key, nil, false)
}

// putFlowCmd maps putFlow's flags to the kernel's command and netlink
// flags, as Open vSwitch's dpif-netlink does: create-only is
// OVS_FLOW_CMD_NEW with NLM_F_CREATE (and NLM_F_EXCL, which the kernel
// also accepts), failing with EEXIST if the flow exists; create-or-modify
// is OVS_FLOW_CMD_NEW without either flag, which modifies an existing
// flow (with NLM_F_CREATE the kernel would answer EEXIST); modify-only is
// OVS_FLOW_CMD_SET, failing with ENOENT if the flow is missing.
func putFlowCmd(flags odp.PutFlags) (cmd uint8, nlf netlink.HeaderFlags, name string, err error) {
	switch {
	case flags&odp.PutCreate != 0 && flags&odp.PutModify != 0:
		return flowCmdNew, 0, "put", nil
	case flags&odp.PutCreate != 0:
		return flowCmdNew, netlink.Create | netlink.Excl, "new", nil
	case flags&odp.PutModify != 0:
		return flowCmdSet, 0, "set", nil
	}
	return 0, 0, "", fmt.Errorf("genl: put flow: flags %#x ask neither to create nor to modify", flags)
}

// putFlow creates or modifies a flow, as flags say: odp.PutCreate alone
// creates (ErrExist if it exists); odp.PutModify alone modifies (ErrNotExist
// if it does not), clearing the statistics with odp.PutZeroStats; both
// create or modify. It returns the statistics the flow had before a
// modification.
func (c *client) putFlow(dpIndex int32, f *odp.Flow, flags odp.PutFlags, o flowOptions) (odp.FlowStats, error) {
	cmd, nlf, name, err := putFlowCmd(flags)
	if err != nil {
		return odp.FlowStats{}, err
	}
	if flags&odp.PutModify != 0 {
		// The reply carries the statistics before the modification.
		nlf |= netlink.Echo
	}
	op := func() string { return flowOp(name, f.UFID, f.Key) }
	b, err := appendFlowPut(make([]byte, 0, 512), dpIndex, f, flags, o)
	if err != nil {
		return odp.FlowStats{}, fmt.Errorf("genl: %s: %w", op(), err)
	}
	var st odp.FlowStats
	err = c.do(request{opFn: op, family: c.flow.ID, cmd: cmd, version: versionFlow, flags: nlf, data: b}, func(_ uint8, data []byte) error {
		if err := decodeFlowStats(data, &st); err != nil {
			return fmt.Errorf("genl: %s: %w", op(), err)
		}
		return nil
	})
	return st, err
}

// getFlow returns one flow, by UFID when id.UFID is set, else by key.
func (c *client) getFlow(dpIndex int32, id odp.FlowID, o flowOptions) (*odp.Flow, error) {
	op := func() string { return flowOp("get", id.UFID, id.Key) }
	ae := netlink.NewAttributeEncoder()
	if err := flowAttrs(ae, id.UFID, id.Key, nil, o); err != nil {
		return nil, fmt.Errorf("genl: %s: %w", op(), err)
	}
	b, err := ovsHeader(dpIndex, ae)
	if err != nil {
		return nil, err
	}
	return single(c, request{opFn: op, family: c.flow.ID, cmd: flowCmdGet, version: versionFlow, data: b}, DecodeFlow)
}

// delFlow deletes one flow and returns its last statistics.
func (c *client) delFlow(dpIndex int32, id odp.FlowID, o flowOptions) (odp.FlowStats, error) {
	if id.UFID.IsZero() && len(id.Key) == 0 {
		return odp.FlowStats{}, errors.New("genl: delete flow: neither UFID nor key given (FlushFlows deletes all)")
	}
	op := func() string { return flowOp("del", id.UFID, id.Key) }
	ae := netlink.NewAttributeEncoder()
	if err := flowAttrs(ae, id.UFID, id.Key, nil, o); err != nil {
		return odp.FlowStats{}, fmt.Errorf("genl: %s: %w", op(), err)
	}
	b, err := ovsHeader(dpIndex, ae)
	if err != nil {
		return odp.FlowStats{}, err
	}
	var st odp.FlowStats
	err = c.do(request{opFn: op, family: c.flow.ID, cmd: flowCmdDel, version: versionFlow, flags: netlink.Echo, data: b}, func(_ uint8, data []byte) error {
		if err := decodeFlowStats(data, &st); err != nil {
			return fmt.Errorf("genl: %s: %w", op(), err)
		}
		return nil
	})
	return st, err
}

// flushFlows deletes every flow of a datapath.
func (c *client) flushFlows(dpIndex int32) error {
	b, _ := ovsHeader(dpIndex, nil)
	return c.do(request{op: "ovs_flow flush", family: c.flow.ID, cmd: flowCmdDel, version: versionFlow, data: b}, ignoreReply)
}

// dumpFlows calls fn for every flow of a datapath, reading the kernel's
// replies one datagram at a time on a socket of its own, so that memory
// stays bounded however large the table and fn may use the client. An
// error from fn stops the dump. If the kernel reports NLM_F_DUMP_INTR,
// the dump runs to its end and then returns an error wrapping
// ErrDumpInterrupted. The *odp.Flow passed to fn is fn's to keep.
func (c *client) dumpFlows(dpIndex int32, o flowOptions, fn func(*odp.Flow) error) error {
	return c.dumpFlowsRaw(dpIndex, o, func(data []byte) error {
		f, err := DecodeFlow(data)
		if err != nil {
			return fmt.Errorf("genl: ovs_flow dump: %w", err)
		}
		return fn(f)
	})
}

// dumpFlowsRaw is dumpFlows without the decoding: fn gets each flow
// message's generic netlink payload (struct ovs_header included, what
// DecodeFlow takes), valid only until fn returns. It lets a caller decode
// on other goroutines (dpctl dump-flows does, on two CPUs).
func (c *client) dumpFlowsRaw(dpIndex int32, o flowOptions, fn func([]byte) error) error {
	ae := netlink.NewAttributeEncoder()
	if o.UFIDFlags != 0 {
		ae.Uint32(flowAttrUFIDFlags, uint32(o.UFIDFlags))
	}
	b, err := ovsHeader(dpIndex, ae)
	if err != nil {
		return err
	}
	intr, err := c.dumpOn(request{op: "ovs_flow dump", family: c.flow.ID, cmd: flowCmdGet, version: versionFlow, data: b}, func(_ uint8, data []byte) error {
		return fn(data)
	})
	if err != nil {
		return err
	}
	if intr {
		return fmt.Errorf("genl: ovs_flow dump: %w", ErrDumpInterrupted)
	}
	return nil
}

// execute runs actions on a packet (OVS_PACKET_CMD_EXECUTE). p.Key holds
// the packet's metadata (in_port, ...); MRU, Hash, Probe and UpcallPID
// are sent when set.
func (c *client) execute(dpIndex int32, p *odp.Packet) error {
	const op = "ovs_packet execute"
	b, err := c.appendExecute(make([]byte, 0, 256+len(p.Data)), dpIndex, p)
	if err != nil {
		return fmt.Errorf("genl: %s: %w", op, err)
	}
	return c.do(request{op: op, family: c.packet.ID, cmd: packetCmdExecute, version: versionPacket, data: b}, ignoreReply)
}

// appendExecute appends an OVS_PACKET_CMD_EXECUTE request's payload
// (ovs_header and attributes: packet, key, actions, probe, MRU, hash,
// upcall PID, in that order) for p to b, encoding the key and the
// actions in place: no allocation once b has the room. len(b) must be a
// multiple of 4. On error it returns b unchanged.
func (c *client) appendExecute(b []byte, dpIndex int32, p *odp.Packet) ([]byte, error) {
	if p.UpcallPID != 0 && c.packetMaxAttr < packetAttrUpcallPID {
		// Older kernels ignore an attribute beyond their maximum: the
		// upcall would silently go elsewhere.
		return b, fmt.Errorf("upcall PID %d: this kernel's %s family knows attributes up to %d, and OVS_PACKET_ATTR_UPCALL_PID (%d) came in 2025 (Linux 6.17): %w",
			p.UpcallPID, familyPacket, c.packetMaxAttr, packetAttrUpcallPID, errors.ErrUnsupported)
	}
	start := len(b)
	b = binary.NativeEndian.AppendUint32(b, uint32(dpIndex))
	at := len(b)
	b = binary.NativeEndian.AppendUint32(b, 0)
	b = append(b, p.Data...)
	var err error
	if b, err = endAttr(b, at, packetAttrPacket); err != nil {
		return b[:start], err
	}
	at = len(b)
	b = binary.NativeEndian.AppendUint32(b, 0)
	if b, err = odp.AppendKey(b, p.Key); err != nil {
		return b[:start], err
	}
	if b, err = endAttr(b, at, packetAttrKey); err != nil {
		return b[:start], err
	}
	at = len(b)
	b = binary.NativeEndian.AppendUint32(b, 0)
	if b, err = odp.AppendActions(b, p.Actions); err != nil {
		return b[:start], err
	}
	if b, err = endAttr(b, at, packetAttrActions); err != nil {
		return b[:start], err
	}
	if p.Probe {
		b = appendAttrHeader(b, packetAttrProbe, 0)
	}
	if p.MRU != 0 {
		// A 2-byte payload, padded to 4.
		b = binary.NativeEndian.AppendUint16(b, 6)
		b = binary.NativeEndian.AppendUint16(b, packetAttrMRU)
		b = binary.NativeEndian.AppendUint16(b, p.MRU)
		b = append(b, 0, 0)
	}
	if p.Hash != 0 {
		b = appendAttrHeader(b, packetAttrHash, 8)
		b = binary.NativeEndian.AppendUint64(b, p.Hash)
	}
	if p.UpcallPID != 0 {
		b = appendAttrHeader(b, packetAttrUpcallPID, 4)
		b = binary.NativeEndian.AppendUint32(b, p.UpcallPID)
	}
	return b, nil
}

// meterFamily returns the meter family or an error wrapping
// ErrFamilyMissing.
func (c *client) meterFamily() (uint16, error) {
	if c.meter == nil {
		return 0, fmt.Errorf("genl: meters: %w: %s (Linux 4.15 and newer)", ErrFamilyMissing, familyMeter)
	}
	return c.meter.ID, nil
}

// meterFeatures returns what the kernel's meters support.
func (c *client) meterFeatures(dpIndex int32) (*odp.MeterFeatures, error) {
	fam, err := c.meterFamily()
	if err != nil {
		return nil, err
	}
	b, _ := ovsHeader(dpIndex, nil)
	return single(c, request{op: "ovs_meter features", family: fam, cmd: meterCmdFeatures, version: versionMeter, data: b}, decodeMeterFeatures)
}

// setMeter adds or replaces meter m.ID with m's bands. With clear, the
// statistics of a replaced meter restart from zero.
func (c *client) setMeter(dpIndex int32, m odp.MeterInfo, clear bool) error {
	fam, err := c.meterFamily()
	if err != nil {
		return err
	}
	ae := netlink.NewAttributeEncoder()
	ae.Uint32(meterAttrID, m.ID)
	if m.KBPS {
		ae.Flag(meterAttrKbps, true)
	}
	if clear {
		ae.Flag(meterAttrClear, true)
	}
	ae.Nested(meterAttrBands, func(be *netlink.AttributeEncoder) error {
		for _, band := range m.Bands {
			be.Nested(0, func(e *netlink.AttributeEncoder) error {
				t := band.Type
				if t == 0 {
					t = odp.MeterBandDrop
				}
				e.Uint32(bandAttrType, t)
				e.Uint32(bandAttrRate, band.Rate)
				e.Uint32(bandAttrBurst, band.Burst)
				return nil
			})
		}
		return nil
	})
	b, err := ovsHeader(dpIndex, ae)
	if err != nil {
		return err
	}
	return c.do(request{op: fmt.Sprintf("ovs_meter set %d", m.ID), family: fam, cmd: meterCmdSet, version: versionMeter, data: b}, ignoreReply)
}

// getMeter returns a meter with its statistics.
func (c *client) getMeter(dpIndex int32, id uint32) (*odp.MeterInfo, error) {
	return c.meterByID("get", meterCmdGet, dpIndex, id)
}

// delMeter deletes a meter and returns its last statistics.
func (c *client) delMeter(dpIndex int32, id uint32) (*odp.MeterInfo, error) {
	return c.meterByID("del", meterCmdDel, dpIndex, id)
}

func (c *client) meterByID(name string, cmd uint8, dpIndex int32, id uint32) (*odp.MeterInfo, error) {
	fam, err := c.meterFamily()
	if err != nil {
		return nil, err
	}
	ae := netlink.NewAttributeEncoder()
	ae.Uint32(meterAttrID, id)
	b, err := ovsHeader(dpIndex, ae)
	if err != nil {
		return nil, err
	}
	m, err := single(c, request{op: fmt.Sprintf("ovs_meter %s %d", name, id), family: fam, cmd: cmd, version: versionMeter, data: b}, decodeMeter)
	if err != nil {
		return nil, err
	}
	m.ID = id
	return m, nil
}

// ctLimitFamily returns the conntrack-limit family or an error.
func (c *client) ctLimitFamily() (uint16, error) {
	if c.ctLimit == nil {
		return 0, fmt.Errorf("genl: conntrack limits: %w: %s (Linux 4.18 and newer, with conntrack)", ErrFamilyMissing, familyCTLimit)
	}
	return c.ctLimit.ID, nil
}

func zoneLimitBytes(ls []ZoneLimit) []byte {
	vs := make([]uint32, 0, 3*len(ls))
	for _, l := range ls {
		vs = append(vs, uint32(l.Zone), l.Limit, l.Count)
	}
	return u32Bytes(vs)
}

// setZoneLimits sets connection limits per conntrack zone (Zone
// DefaultZone sets the default).
func (c *client) setZoneLimits(dpIndex int32, limits []ZoneLimit) error {
	fam, err := c.ctLimitFamily()
	if err != nil {
		return err
	}
	ae := netlink.NewAttributeEncoder()
	ae.Bytes(ctLimitAttrZoneLimit, zoneLimitBytes(limits))
	b, err := ovsHeader(dpIndex, ae)
	if err != nil {
		return err
	}
	return c.do(request{op: "ovs_ct_limit set", family: fam, cmd: ctLimitCmdSet, version: versionCTLimit, data: b}, ignoreReply)
}

// zoneLimits returns the limits and connection counts of the given zones,
// or of the default and every zone with a limit when zones is empty.
func (c *client) zoneLimits(dpIndex int32, zones ...int32) ([]ZoneLimit, error) {
	fam, err := c.ctLimitFamily()
	if err != nil {
		return nil, err
	}
	ae := netlink.NewAttributeEncoder()
	if len(zones) > 0 {
		ls := make([]ZoneLimit, len(zones))
		for i, z := range zones {
			ls[i].Zone = z
		}
		ae.Bytes(ctLimitAttrZoneLimit, zoneLimitBytes(ls))
	}
	b, err := ovsHeader(dpIndex, ae)
	if err != nil {
		return nil, err
	}
	var out []ZoneLimit
	err = c.do(request{op: "ovs_ct_limit get", family: fam, cmd: ctLimitCmdGet, version: versionCTLimit, data: b}, func(_ uint8, data []byte) error {
		ls, err := decodeZoneLimits(data)
		out = append(out, ls...)
		return err
	})
	return out, err
}

// delZoneLimits removes the limits of the given zones (DefaultZone resets
// the default to unlimited).
func (c *client) delZoneLimits(dpIndex int32, zones ...int32) error {
	fam, err := c.ctLimitFamily()
	if err != nil {
		return err
	}
	ls := make([]ZoneLimit, len(zones))
	for i, z := range zones {
		ls[i].Zone = z
	}
	ae := netlink.NewAttributeEncoder()
	ae.Bytes(ctLimitAttrZoneLimit, zoneLimitBytes(ls))
	b, err := ovsHeader(dpIndex, ae)
	if err != nil {
		return err
	}
	return c.do(request{op: "ovs_ct_limit del", family: fam, cmd: ctLimitCmdDel, version: versionCTLimit, data: b}, ignoreReply)
}

// putBatch is how many flow requests putFlows sends in one sendmsg; their
// acknowledgements (one datagram each) fit the default socket buffer.
const putBatch = 50

// putFlows puts many flows as putFlow does (without returning their
// statistics), sending putBatch requests per system call and then reading
// their acknowledgements, as ovs-dpctl add-flows does. errs[i] is the
// error for flows[i], nil when it succeeded; err reports a failure of the
// socket itself, after which errs is incomplete.
func (c *client) putFlows(dpIndex int32, flows []*odp.Flow, flags odp.PutFlags, o flowOptions) (errs []error, err error) {
	cmd, nlf, _, err := putFlowCmd(flags)
	if err != nil {
		return nil, err
	}
	errs = make([]error, len(flows))
	c.mu.Lock()
	defer c.mu.Unlock()
	for start := 0; start < len(flows); start += putBatch {
		end := min(start+putBatch, len(flows))
		// Every request of the batch is encoded into the client's one
		// scratch buffer (c.mu is held; sendBatch is done with them
		// before the next batch reuses it), then sliced.
		idx, ends := c.putIdx[:0], c.putEnds[:0]
		b := c.putBuf[:0]
		for i := start; i < end; i++ {
			f := flows[i]
			at := len(b)
			// Room for the netlink header (sendEncoded writes it), then
			// the generic netlink header: command, version, reserved.
			b = append(b, make([]byte, nlHdrLen)...)
			b = append(b, cmd, versionFlow, 0, 0)
			var err error
			if b, err = appendFlowPut(b, dpIndex, f, flags, o); err != nil {
				b = b[:at]
				errs[i] = fmt.Errorf("genl: %s: %w", flowOp("put", f.UFID, f.Key), err)
				continue
			}
			b = padTo4(b)
			ends = append(ends, [2]int{at, len(b)})
			idx = append(idx, i)
		}
		c.putBuf, c.putIdx, c.putEnds = b, idx, ends
		if len(ends) == 0 {
			continue
		}
		var err error
		c.putMsgs, err = c.sendEncoded("ovs_flow put batch", c.flow.ID, netlink.Request|nlf, b, ends, c.putMsgs, idx, errs, func(i int) string {
			return flowOp("put", flows[i].UFID, flows[i].Key)
		})
		if err != nil {
			return errs, err
		}
	}
	return errs, nil
}

// sendBatch sends msgs in one system call and reads their outcomes;
// idx[j] is msgs[j]'s index in errs, where a kernel rejection is
// recorded (named by op(i)). The error returned is a failure of the
// socket itself. c.mu must be held.
//
// Only the last request asks for an acknowledgement: the kernel answers
// a request without NLM_F_ACK only when it fails (these commands send no
// reply on success without NLM_F_ECHO), and it handles the requests of
// one sendmsg in order, queueing each answer as it goes; so once the
// last one's acknowledgement (or error) is read, every earlier failure
// has been read too, and the requests without an answer succeeded. A
// batch of n costs one read of the socket, not n (and twice that:
// each read peeks first).
func (c *client) sendBatch(batchOp string, msgs []netlink.Message, idx []int, errs []error, op func(i int) string) error {
	for j := range msgs {
		if j < len(msgs)-1 {
			msgs[j].Header.Flags &^= netlink.Acknowledge
		} else {
			msgs[j].Header.Flags |= netlink.Acknowledge
		}
	}
	sent, err := c.conn.SendMessages(msgs)
	if err != nil {
		return wrapErr(batchOp, err)
	}
	return c.answers(batchOp, sent, idx, errs, op)
}

// nlHdrLen is the size of a netlink message header (struct nlmsghdr).
const nlHdrLen = 16

// padTo4 pads b with zeros to a multiple of 4 bytes, where the next
// netlink message starts.
func padTo4(b []byte) []byte {
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

// sendEncoded sends a batch of requests of family typ encoded back to
// back in buf and reads their outcomes, as sendBatch does (only the last
// asks for an acknowledgement). ends[j] bounds request j in buf:
// nlHdrLen bytes for its netlink header, which sendEncoded writes, then
// its generic netlink message, padded to 4 bytes. msgs is scratch for
// the requests' views, returned for reuse. With the socket's descriptor
// the batch leaves in one write of buf as it is (before: netlink.Conn
// copied every request into a message of its own, then all of them
// into one more buffer, growing it as it went); without one (a test
// fake) it goes through sendBatch. c.mu must be held.
func (c *client) sendEncoded(batchOp string, typ uint16, flags netlink.HeaderFlags, buf []byte, ends [][2]int, msgs []netlink.Message, idx []int, errs []error, op func(i int) string) ([]netlink.Message, error) {
	msgs = msgs[:0]
	for _, e := range ends {
		msgs = append(msgs, netlink.Message{Header: netlink.Header{Type: netlink.HeaderType(typ), Flags: flags}, Data: buf[e[0]+nlHdrLen : e[1] : e[1]]})
	}
	if len(msgs) == 0 {
		return msgs, nil
	}
	if c.raw == nil {
		return msgs, c.sendBatch(batchOp, msgs, idx, errs, op)
	}
	for j, e := range ends {
		h := &msgs[j].Header
		h.Flags &^= netlink.Acknowledge
		if j == len(ends)-1 {
			h.Flags |= netlink.Acknowledge
		}
		c.seq++
		h.Length, h.Sequence, h.PID = uint32(e[1]-e[0]), c.seq, c.pid
		hb := buf[e[0] : e[0]+nlHdrLen]
		binary.NativeEndian.PutUint32(hb, h.Length)
		binary.NativeEndian.PutUint16(hb[4:], uint16(h.Type))
		binary.NativeEndian.PutUint16(hb[6:], uint16(h.Flags))
		binary.NativeEndian.PutUint32(hb[8:], h.Sequence)
		binary.NativeEndian.PutUint32(hb[12:], h.PID)
	}
	c.wbuf = buf[ends[0][0]:ends[len(ends)-1][1]]
	err := c.raw.Write(c.write)
	n, werr := c.wn, c.werr
	c.wbuf, c.werr = nil, nil
	switch {
	case err != nil:
		return msgs, wrapErr(batchOp, err)
	case werr != nil:
		return msgs, wrapErr(batchOp, werr)
	case n != ends[len(ends)-1][1]-ends[0][0]:
		return msgs, wrapErr(batchOp, fmt.Errorf("wrote %d bytes of %d", n, ends[len(ends)-1][1]-ends[0][0]))
	}
	return msgs, c.answers(batchOp, msgs, idx, errs, op)
}

// answers reads the outcomes of the batch sent (sendBatch). c.mu must be
// held.
func (c *client) answers(batchOp string, sent []netlink.Message, idx []int, errs []error, op func(i int) string) error {
	if debugLog.Load() != nil {
		for _, m := range sent {
			debugMessage("request", batchOp, uint16(m.Header.Type), replyCmd(m.Data), uint16(m.Header.Flags), m.Header.Sequence, m.Data)
		}
	}
	if len(sent) == 0 {
		return nil
	}
	// pending[j]: sent[j] has no answer yet. The client's reused slice
	// (c.mu is held), not a map from sequence numbers: the batch's
	// messages are numbered one after another, so an answer's message is
	// found by its distance from the first (batchIndex), and a batch
	// allocates nothing here.
	pending := c.pending[:0]
	for range sent {
		pending = append(pending, true)
	}
	c.pending = pending
	left := len(sent)
	last := sent[len(sent)-1].Header.Sequence
	for left > 0 {
		n := 0
		for m, err := range c.conn.ReceiveIter() {
			n++
			seq := m.Header.Sequence
			if err != nil {
				var oe *netlink.OpError
				if !errors.As(err, &oe) || oe.Sequence == 0 {
					return wrapErr(batchOp, err)
				}
				seq = oe.Sequence
			}
			j := batchIndex(sent, seq)
			if j < 0 || !pending[j] {
				continue
			}
			i := idx[j]
			if debugLog.Load() != nil {
				what := "reply"
				if err != nil {
					what = "error"
				}
				debugMessage(what, op(i), uint16(m.Header.Type), 0, uint16(m.Header.Flags), seq, m.Data)
			}
			if err != nil {
				errs[i] = wrapErr(op(i), err)
				pending[j] = false
				left--
			} else if m.Header.Type == netlink.Error {
				pending[j] = false // the acknowledgement
				left--
			}
			if seq == last && (err != nil || m.Header.Type == netlink.Error) {
				// Every earlier answer came before this one: the
				// requests still without one succeeded.
				left = 0
			}
		}
		if n == 0 {
			return wrapErr(batchOp, errors.New("the socket returned no reply"))
		}
	}
	return nil
}

// batchIndex is the index in sent of the message numbered seq, -1 when
// none is. sent's messages are numbered one after another (netlink.Conn
// numbers each message it sends from one counter, and the client's
// requests go out one call at a time under its lock), so it is seq's
// distance from the first; it looks through sent only if they are not.
func batchIndex(sent []netlink.Message, seq uint32) int {
	if len(sent) == 0 {
		return -1
	}
	if off := seq - sent[0].Header.Sequence; off < uint32(len(sent)) && sent[off].Header.Sequence == seq {
		return int(off)
	}
	for j := range sent {
		if sent[j].Header.Sequence == seq {
			return j
		}
	}
	return -1
}

// delFlows deletes many flows as delFlow does, but without asking for
// their statistics, sending putBatch requests per system call and then
// reading their acknowledgements. errs[i] is the error for ids[i], nil
// when it succeeded; err reports a failure of the socket itself, after
// which errs is incomplete.
func (c *client) delFlows(dpIndex int32, ids []odp.FlowID, o flowOptions) (errs []error, err error) {
	errs = make([]error, len(ids))
	c.mu.Lock()
	defer c.mu.Unlock()
	op := func(i int) string { return flowOp("del", ids[i].UFID, ids[i].Key) }
	msgs := make([]netlink.Message, 0, putBatch)
	idx := make([]int, 0, putBatch)
	for start := 0; start < len(ids); start += putBatch {
		end := min(start+putBatch, len(ids))
		msgs, idx = msgs[:0], idx[:0]
		for i := start; i < end; i++ {
			id := ids[i]
			if id.UFID.IsZero() && len(id.Key) == 0 {
				errs[i] = errors.New("genl: delete flow: neither UFID nor key given (FlushFlows deletes all)")
				continue
			}
			ae := netlink.NewAttributeEncoder()
			if err := flowAttrs(ae, id.UFID, id.Key, nil, o); err != nil {
				errs[i] = fmt.Errorf("genl: %s: %w", op(i), err)
				continue
			}
			b, err := ovsHeader(dpIndex, ae)
			if err != nil {
				errs[i] = fmt.Errorf("genl: %s: %w", op(i), err)
				continue
			}
			gm := genetlink.Message{Header: genetlink.Header{Command: flowCmdDel, Version: versionFlow}, Data: b}
			gb, err := gm.MarshalBinary()
			if err != nil {
				errs[i] = fmt.Errorf("genl: %s: %w", op(i), err)
				continue
			}
			msgs = append(msgs, netlink.Message{Header: netlink.Header{Type: netlink.HeaderType(c.flow.ID), Flags: netlink.Request | netlink.Acknowledge}, Data: gb})
			idx = append(idx, i)
		}
		if len(msgs) == 0 {
			continue
		}
		if err := c.sendBatch("ovs_flow del batch", msgs, idx, errs, op); err != nil {
			return errs, err
		}
	}
	return errs, nil
}

// executeBatchBytes bounds the requests executeBatch sends in one
// sendmsg: the kernel refuses a datagram larger than the socket's send
// buffer (EMSGSIZE), and echoes a failed request whole in its error
// reply, so the replies to a batch that fails entirely must still fit
// the receive buffer (both about 208 KiB by default). A single larger
// request is sent alone.
const executeBatchBytes = 64 << 10

// executeBatch executes many packets as execute does, sending up to
// putBatch requests (and at most executeBatchBytes) per system call and
// then reading their acknowledgements, as Open vSwitch's handlers do
// with the packets of one batch of upcalls. The kernel runs the requests
// in order, so a packet executed after a flow put in an earlier call sees
// the flow. errs[i] is the error for pkts[i], nil when the kernel
// executed it; one packet's failure does not stop the others. err reports
// a failure of the socket itself, after which errs is incomplete.
func (c *client) executeBatch(dpIndex int32, pkts []*odp.Packet) (errs []error, err error) {
	const op = "ovs_packet execute"
	errs = make([]error, len(pkts))
	c.mu.Lock()
	defer c.mu.Unlock()
	// The requests are encoded into the client's scratch buffer (c.mu
	// is held), sliced into messages when a batch is sent.
	buf, ends, msgs, idx := c.execBuf[:0], c.putEnds[:0], c.putMsgs[:0], c.putIdx[:0]
	defer func() { c.execBuf, c.putEnds, c.putMsgs, c.putIdx = buf[:0], ends[:0], msgs[:0], idx[:0] }()
	size := 0
	// flush sends the requests encoded in buf[:upTo].
	flush := func(upTo int) error {
		if len(ends) == 0 {
			return nil
		}
		var err error
		msgs, err = c.sendEncoded("ovs_packet execute batch", c.packet.ID, netlink.Request, buf, ends, msgs, idx, errs, func(i int) string {
			return fmt.Sprintf("%s (packet %d of %d)", op, i+1, len(pkts))
		})
		buf = buf[:copy(buf, buf[upTo:])]
		ends, idx, size = ends[:0], idx[:0], 0
		return err
	}
	for i, p := range pkts {
		at := len(buf)
		// Room for the netlink header (sendEncoded writes it), then the
		// generic netlink header: command, version, reserved.
		b := append(buf, make([]byte, nlHdrLen)...)
		b = append(b, packetCmdExecute, versionPacket, 0, 0)
		b, err := c.appendExecute(b, dpIndex, p)
		if err != nil {
			buf = b[:at]
			errs[i] = fmt.Errorf("genl: %s: %w", op, err)
			continue
		}
		buf = padTo4(b)
		n := len(buf) - at
		if len(ends) == putBatch || (len(ends) > 0 && size+n > executeBatchBytes) {
			if err := flush(at); err != nil {
				return errs, err
			}
			at = 0
		}
		ends = append(ends, [2]int{at, at + n})
		idx = append(idx, i)
		size += n // with the netlink header
	}
	return errs, flush(len(buf))
}
