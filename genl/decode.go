package genl

import (
	"encoding/binary"
	"fmt"
	"strconv"

	"github.com/ovsdp/ovsdp/internal/nlattr"
	"github.com/ovsdp/ovsdp/odp"
)

// malformed returns an *odp.DecodeError about a what message whose
// attribute attr (empty: its framing) is wrong as err says.
func malformed(what, attr string, err error) error {
	return &odp.DecodeError{What: what, Attr: attr, Err: err}
}

// errMissing is returned (wrapped) when a required attribute is absent.
type errMissing string

func (e errMissing) Error() string { return "missing attribute " + string(e) }

// walkAttrs calls fn for every netlink attribute of b (which begins at
// byte offset base of the message payload). fn gets the type (flags
// stripped), the payload and the header's offset. Malformed framing is
// reported as an *odp.DecodeError naming what. It does not allocate unless it
// fails.
func walkAttrs(b []byte, base int, what string, fn func(typ uint16, data []byte, off int) error) error {
	w := nlattr.NewWalker(b, base)
	for a := range w.All() {
		if err := fn(a.Type, a.Data, a.Offset); err != nil {
			return err
		}
	}
	return walkErr(&w, what)
}

// walkErr returns the framing error that stopped w, if any, as a
// *odp.DecodeError about a what message.
func walkErr(w *nlattr.Walker, what string) error {
	fe, ok := w.Err().(*nlattr.FramingError)
	if !ok {
		return nil
	}
	de := &odp.DecodeError{What: what, Offset: fe.Offset, Err: fe}
	if n := fe.Name(); n != "" {
		de.Attr = "attribute " + n
	}
	return de
}

// attrLenError reports an attribute of the wrong size.
func attrLenError(what, attr string, off, got, want int, exact bool) error {
	rel := "at least "
	if exact {
		rel = ""
	}
	return &odp.DecodeError{What: what, Attr: attr, Offset: off, Err: fmt.Errorf("%d bytes, want %s%d", got, rel, want)}
}

func getU32(what, attr string, data []byte, off int) (uint32, error) {
	if len(data) != 4 {
		return 0, attrLenError(what, attr, off, len(data), 4, true)
	}
	return binary.NativeEndian.Uint32(data), nil
}

func getU16(what, attr string, data []byte, off int) (uint16, error) {
	if len(data) != 2 {
		return 0, attrLenError(what, attr, off, len(data), 2, true)
	}
	return binary.NativeEndian.Uint16(data), nil
}

func getU64(what, attr string, data []byte, off int) (uint64, error) {
	if len(data) != 8 {
		return 0, attrLenError(what, attr, off, len(data), 8, true)
	}
	return binary.NativeEndian.Uint64(data), nil
}

// getString decodes a NUL-terminated string attribute (the NUL is
// optional; anything after it is ignored).
func getString(data []byte) string {
	for i, c := range data {
		if c == 0 {
			return string(data[:i])
		}
	}
	return string(data)
}

// getU32Array decodes an array of native-endian u32s.
func getU32Array(what, attr string, data []byte, off int) ([]uint32, error) {
	if len(data)%4 != 0 {
		return nil, &odp.DecodeError{What: what, Attr: attr, Offset: off, Err: fmt.Errorf("%d bytes, not a multiple of 4", len(data))}
	}
	out := make([]uint32, len(data)/4)
	for i := range out {
		out[i] = binary.NativeEndian.Uint32(data[4*i:])
	}
	return out, nil
}

// splitHeader splits a generic netlink payload into its struct ovs_header
// (the datapath's ifindex) and attributes.
func splitHeader(what string, b []byte) (int32, []byte, error) {
	if len(b) < ovsHeaderLen {
		return 0, nil, &odp.DecodeError{What: what, Err: fmt.Errorf("%d bytes, too short for struct ovs_header (4)", len(b))}
	}
	return int32(binary.NativeEndian.Uint32(b)), b[ovsHeaderLen:], nil
}

// DPInfo is a kernel datapath as the ovs_datapath family describes it.
type DPInfo struct {
	// Index is the ifindex of the datapath's local port (dp_ifindex).
	Index int32
	// Name is the datapath's name (OVS_DP_ATTR_NAME).
	Name string
	// Stats holds struct ovs_dp_stats and, when HasMegaflowStats, struct
	// ovs_dp_megaflow_stats.
	Stats            odp.DatapathStats
	HasMegaflowStats bool
	// UserFeatures are the OVS_DP_F_* bits in effect.
	UserFeatures uint32
	// MasksCacheSize is the mask cache's size; HasMasksCacheSize tells
	// whether the kernel reported it (5.9 and newer).
	MasksCacheSize    uint32
	HasMasksCacheSize bool
	// PerCPUPIDs are the upcall sockets' PIDs in per-CPU dispatch mode,
	// when the kernel reports them.
	PerCPUPIDs []uint32
}

// UpcallMode reports the upcall dispatch mode the features select:
// UpcallModePerCPU or UpcallModePerVport.
func (d *DPInfo) UpcallMode() string {
	if d.UserFeatures&FeatureDispatchUpcallPerCPU != 0 {
		return UpcallModePerCPU
	}
	return UpcallModePerVport
}

// DecodeDatapath decodes an ovs_datapath message: the generic netlink
// payload, struct ovs_header included. NAME and STATS are required.
func DecodeDatapath(b []byte) (*DPInfo, error) {
	const what = "datapath"
	idx, attrs, err := splitHeader(what, b)
	if err != nil {
		return nil, err
	}
	d := &DPInfo{Index: idx}
	var haveName, haveStats bool
	err = walkAttrs(attrs, ovsHeaderLen, what, func(t uint16, data []byte, off int) error {
		var err error
		switch t {
		case dpAttrName:
			d.Name, haveName = getString(data), true
		case dpAttrStats:
			if len(data) < 32 {
				return attrLenError(what, "OVS_DP_ATTR_STATS", off, len(data), 32, false)
			}
			d.Stats.Hit = binary.NativeEndian.Uint64(data[0:])
			d.Stats.Missed = binary.NativeEndian.Uint64(data[8:])
			d.Stats.Lost = binary.NativeEndian.Uint64(data[16:])
			d.Stats.Flows = binary.NativeEndian.Uint64(data[24:])
			haveStats = true
		case dpAttrMegaflowStats:
			if len(data) < 24 {
				return attrLenError(what, "OVS_DP_ATTR_MEGAFLOW_STATS", off, len(data), 24, false)
			}
			d.Stats.MaskHits = binary.NativeEndian.Uint64(data[0:])
			d.Stats.Masks = binary.NativeEndian.Uint32(data[8:])
			d.Stats.CacheHits = binary.NativeEndian.Uint64(data[16:])
			d.HasMegaflowStats = true
		case dpAttrUserFeatures:
			d.UserFeatures, err = getU32(what, "OVS_DP_ATTR_USER_FEATURES", data, off)
		case dpAttrMasksCacheSize:
			d.MasksCacheSize, err = getU32(what, "OVS_DP_ATTR_MASKS_CACHE_SIZE", data, off)
			d.HasMasksCacheSize = err == nil
		case dpAttrPerCPUPIDs:
			d.PerCPUPIDs, err = getU32Array(what, "OVS_DP_ATTR_PER_CPU_PIDS", data, off)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if !haveName {
		return nil, &odp.DecodeError{What: what, Err: errMissing("OVS_DP_ATTR_NAME")}
	}
	if !haveStats {
		return nil, &odp.DecodeError{What: what, Err: errMissing("OVS_DP_ATTR_STATS")}
	}
	return d, nil
}

// VportOptions are the tunnel options of a vport (OVS_VPORT_ATTR_OPTIONS).
type VportOptions struct {
	// DstPort is the UDP destination port of a VXLAN or Geneve vport (0:
	// not set; the kernel then uses the protocol's standard port).
	DstPort uint16
	// GBP enables the VXLAN Group Based Policy extension.
	GBP bool
}

// VportInfo is a kernel vport as the ovs_vport family describes it.
type VportInfo struct {
	// DPIndex is the ifindex of the datapath the vport belongs to.
	DPIndex int32
	PortNo  uint32
	Type    VportType
	Name    string
	Options VportOptions
	// UpcallPIDs are the sockets that receive the vport's upcalls in
	// per-vport dispatch mode.
	UpcallPIDs []uint32
	// Stats holds struct ovs_vport_stats when HasStats.
	Stats    odp.PortStats
	HasStats bool
	// Ifindex is the vport's network device ifindex (0 if not reported).
	Ifindex uint32
	// NetNSID is the network namespace ID of the vport's device relative
	// to the requester, when HasNetNSID.
	NetNSID    int32
	HasNetNSID bool
	// UpcallSuccess and UpcallFail count the vport's upcalls (kernels
	// 6.2 and newer, HasUpcallStats).
	UpcallSuccess, UpcallFail uint64
	HasUpcallStats            bool
}

// Port converts v to an odp.Port.
func (v *VportInfo) Port() odp.Port {
	p := odp.Port{Number: v.PortNo, Name: v.Name, Type: odp.PortType(v.Type.String()), Stats: v.Stats}
	if v.Options.DstPort != 0 || v.Options.GBP {
		p.Options = map[string]string{}
		if v.Options.DstPort != 0 {
			p.Options["dst_port"] = strconv.Itoa(int(v.Options.DstPort))
		}
		if v.Options.GBP {
			p.Options["exts"] = "gbp"
		}
	}
	return p
}

// DecodeVport decodes an ovs_vport message: the generic netlink payload,
// struct ovs_header included. PORT_NO, TYPE and NAME are required.
func DecodeVport(b []byte) (*VportInfo, error) {
	const what = "vport"
	idx, attrs, err := splitHeader(what, b)
	if err != nil {
		return nil, err
	}
	v := &VportInfo{DPIndex: idx}
	var have [3]bool
	err = walkAttrs(attrs, ovsHeaderLen, what, func(t uint16, data []byte, off int) error {
		var err error
		switch t {
		case vportAttrPortNo:
			v.PortNo, err = getU32(what, "OVS_VPORT_ATTR_PORT_NO", data, off)
			have[0] = true
		case vportAttrType:
			var x uint32
			x, err = getU32(what, "OVS_VPORT_ATTR_TYPE", data, off)
			v.Type = VportType(x)
			have[1] = true
		case vportAttrName:
			v.Name = getString(data)
			have[2] = true
		case vportAttrOptions:
			err = decodeVportOptions(data, off+4, &v.Options)
		case vportAttrUpcallPID:
			v.UpcallPIDs, err = getU32Array(what, "OVS_VPORT_ATTR_UPCALL_PID", data, off)
		case vportAttrStats:
			if len(data) < 64 {
				return attrLenError(what, "OVS_VPORT_ATTR_STATS", off, len(data), 64, false)
			}
			s := &v.Stats
			for i, p := range []*uint64{&s.RxPackets, &s.TxPackets, &s.RxBytes, &s.TxBytes, &s.RxErrors, &s.TxErrors, &s.RxDropped, &s.TxDropped} {
				*p = binary.NativeEndian.Uint64(data[8*i:])
			}
			v.HasStats = true
		case vportAttrIfindex:
			v.Ifindex, err = getU32(what, "OVS_VPORT_ATTR_IFINDEX", data, off)
		case vportAttrNetNSID:
			var x uint32
			x, err = getU32(what, "OVS_VPORT_ATTR_NETNSID", data, off)
			v.NetNSID, v.HasNetNSID = int32(x), true
		case vportAttrUpcallStats:
			err = walkAttrs(data, off+4, what, func(t uint16, data []byte, off int) error {
				var err error
				switch t {
				case vportUpcallAttrSuccess:
					v.UpcallSuccess, err = getU64(what, "OVS_VPORT_UPCALL_ATTR_SUCCESS", data, off)
				case vportUpcallAttrFail:
					v.UpcallFail, err = getU64(what, "OVS_VPORT_UPCALL_ATTR_FAIL", data, off)
				}
				return err
			})
			v.HasUpcallStats = err == nil
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	for i, name := range []string{"OVS_VPORT_ATTR_PORT_NO", "OVS_VPORT_ATTR_TYPE", "OVS_VPORT_ATTR_NAME"} {
		if !have[i] {
			return nil, &odp.DecodeError{What: what, Err: errMissing(name)}
		}
	}
	return v, nil
}

// decodeVportOptions decodes the nested OVS_TUNNEL_ATTR_* attributes.
func decodeVportOptions(b []byte, base int, o *VportOptions) error {
	const what = "vport"
	return walkAttrs(b, base, what, func(t uint16, data []byte, off int) error {
		var err error
		switch t {
		case tunnelAttrDstPort:
			o.DstPort, err = getU16(what, "OVS_TUNNEL_ATTR_DST_PORT", data, off)
		case tunnelAttrExtension:
			err = walkAttrs(data, off+4, what, func(t uint16, _ []byte, _ int) error {
				if t == vxlanExtGBP {
					o.GBP = true
				}
				return nil
			})
		}
		return err
	})
}

// DecodeFlow decodes an ovs_flow message: the generic netlink payload,
// struct ovs_header included. A flow needs a key or a UFID; key, mask and
// actions are absent from terse replies. Stats.Used is in milliseconds of
// the kernel's monotonic clock.
func DecodeFlow(b []byte) (*odp.Flow, error) {
	f := new(odp.Flow)
	if err := decodeFlowInto(b, f); err != nil {
		return nil, err
	}
	return f, nil
}

func decodeFlowInto(b []byte, f *odp.Flow) error { return decodeFlowFields(b, f, true) }

// decodeFlowStats reads only a flow reply's UFID and statistics, leaving
// its key, mask and actions undecoded (for the replies to modify and
// delete, where only the statistics are wanted).
func decodeFlowStats(b []byte, st *odp.FlowStats) error {
	var f odp.Flow
	err := decodeFlowFields(b, &f, false)
	*st = f.Stats
	return err
}

// decodeFlowFields decodes a flow reply into f; with full false it skips
// the key, mask and actions.
func decodeFlowFields(b []byte, f *odp.Flow, full bool) error {
	const what = "flow"
	_, attrs, err := splitHeader(what, b)
	if err != nil {
		return err
	}
	var haveKey, haveUFID bool
	err = walkAttrs(attrs, ovsHeaderLen, what, func(t uint16, data []byte, off int) error {
		var err error
		switch t {
		case flowAttrKey:
			haveKey = true
			if !full {
				break
			}
			f.Key, err = odp.UnmarshalKey(data)
			if err != nil {
				return &odp.DecodeError{What: what, Attr: "OVS_FLOW_ATTR_KEY", Offset: off, Err: err}
			}
		case flowAttrMask:
			if !full {
				break
			}
			f.Mask, err = odp.UnmarshalKey(data)
			if err != nil {
				return &odp.DecodeError{What: what, Attr: "OVS_FLOW_ATTR_MASK", Offset: off, Err: err}
			}
		case flowAttrActions:
			if !full {
				break
			}
			f.Actions, err = odp.UnmarshalActions(data)
			if err != nil {
				return &odp.DecodeError{What: what, Attr: "OVS_FLOW_ATTR_ACTIONS", Offset: off, Err: err}
			}
		case flowAttrStats:
			if len(data) < 16 {
				return attrLenError(what, "OVS_FLOW_ATTR_STATS", off, len(data), 16, false)
			}
			f.Stats.Packets = binary.NativeEndian.Uint64(data)
			f.Stats.Bytes = binary.NativeEndian.Uint64(data[8:])
		case flowAttrTCPFlags:
			if len(data) < 1 {
				return attrLenError(what, "OVS_FLOW_ATTR_TCP_FLAGS", off, len(data), 1, false)
			}
			// The kernel sends one byte (the low 8 TCP flags).
			f.Stats.TCPFlags = uint16(data[0])
			if len(data) >= 2 {
				f.Stats.TCPFlags = binary.NativeEndian.Uint16(data)
			}
		case flowAttrUsed:
			f.Stats.Used, err = getU64(what, "OVS_FLOW_ATTR_USED", data, off)
		case flowAttrUFID:
			if len(data) == 0 || len(data) > 16 {
				return &odp.DecodeError{What: what, Attr: "OVS_FLOW_ATTR_UFID", Offset: off, Err: fmt.Errorf("%d bytes, want 1 to 16", len(data))}
			}
			copy(f.UFID[:], data)
			haveUFID = true
		}
		return err
	})
	if err != nil {
		return err
	}
	if !haveKey && !haveUFID {
		return &odp.DecodeError{What: what, Err: errMissing("OVS_FLOW_ATTR_KEY (or OVS_FLOW_ATTR_UFID)")}
	}
	return nil
}

// RawUpcall is an upcall message split into its attributes without
// copying or decoding: the slices point into the received buffer and are
// valid until it is reused.
type RawUpcall struct {
	// Cmd is OVS_PACKET_CMD_MISS (1) or OVS_PACKET_CMD_ACTION (2).
	Cmd uint8
	// DPIndex is the datapath's ifindex.
	DPIndex int32
	// InPort is the key's OVS_KEY_ATTR_IN_PORT (0 if absent).
	InPort uint32
	// Packet, Key, Userdata, Actions and EgressTunKey are the raw payloads
	// of the corresponding OVS_PACKET_ATTR_* attributes, nil if absent.
	Packet, Key, Userdata, Actions, EgressTunKey []byte
	// MRU, Len and Hash are 0 when absent.
	MRU  uint16
	Len  uint32
	Hash uint64
}

// ParseUpcall splits an ovs_packet upcall (the generic netlink payload
// of command cmd) into r. It does not allocate unless it fails. PACKET
// and KEY are required.
func ParseUpcall(cmd uint8, b []byte, r *RawUpcall) error {
	const what = "upcall"
	*r = RawUpcall{Cmd: cmd}
	if cmd != packetCmdMiss && cmd != packetCmdAction {
		return &odp.DecodeError{What: what, Err: fmt.Errorf("command %d is neither MISS (1) nor ACTION (2)", cmd)}
	}
	if len(b) < ovsHeaderLen {
		return &odp.DecodeError{What: what, Err: fmt.Errorf("%d bytes, too short for struct ovs_header (4)", len(b))}
	}
	r.DPIndex = int32(binary.NativeEndian.Uint32(b))
	// Walk without a closure so that nothing escapes.
	w := nlattr.NewWalker(b[ovsHeaderLen:], ovsHeaderLen)
	keyOff := 0
	for a := range w.All() {
		data, off := a.Data, a.Offset
		switch a.Type {
		case packetAttrPacket:
			r.Packet = data
		case packetAttrKey:
			r.Key, keyOff = data, off
		case packetAttrUserdata:
			r.Userdata = data
		case packetAttrActions:
			r.Actions = data
		case packetAttrEgressTunKey:
			r.EgressTunKey = data
		case packetAttrMRU:
			if len(data) != 2 {
				return attrLenError(what, "OVS_PACKET_ATTR_MRU", off, len(data), 2, true)
			}
			r.MRU = binary.NativeEndian.Uint16(data)
		case packetAttrLen:
			if len(data) != 4 {
				return attrLenError(what, "OVS_PACKET_ATTR_LEN", off, len(data), 4, true)
			}
			r.Len = binary.NativeEndian.Uint32(data)
		case packetAttrHash:
			if len(data) != 8 {
				return attrLenError(what, "OVS_PACKET_ATTR_HASH", off, len(data), 8, true)
			}
			r.Hash = binary.NativeEndian.Uint64(data)
		}
	}
	if err := walkErr(&w, what); err != nil {
		return err
	}
	if r.Packet == nil {
		return &odp.DecodeError{What: what, Err: errMissing("OVS_PACKET_ATTR_PACKET")}
	}
	if r.Key == nil {
		return &odp.DecodeError{What: what, Err: errMissing("OVS_PACKET_ATTR_KEY")}
	}
	// Find in_port in the key without decoding it.
	kw := nlattr.NewWalker(r.Key, keyOff+nlattr.HdrLen)
	for a := range kw.All() {
		if a.Type == uint16(odp.KeyInPort) {
			if len(a.Data) != 4 {
				return &odp.DecodeError{What: what, Attr: "OVS_PACKET_ATTR_KEY.in_port", Offset: a.Offset, Err: fmt.Errorf("%d bytes, want 4", len(a.Data))}
			}
			r.InPort = binary.NativeEndian.Uint32(a.Data)
		}
	}
	if fe, ok := kw.Err().(*nlattr.FramingError); ok {
		return &odp.DecodeError{What: what, Attr: "OVS_PACKET_ATTR_KEY", Offset: fe.Offset, Err: fe}
	}
	return nil
}

// DecodeUpcall decodes an ovs_packet upcall (the generic netlink payload
// of command cmd) into u. The packet, userdata and decoded key and
// actions are copies owned by u.
func DecodeUpcall(cmd uint8, b []byte, u *odp.Upcall) error {
	var r RawUpcall
	if err := ParseUpcall(cmd, b, &r); err != nil {
		return err
	}
	return r.decode(u)
}

// decode fills u from r, copying what it keeps.
func (r *RawUpcall) decode(u *odp.Upcall) error {
	key, err := odp.UnmarshalKey(r.Key)
	if err != nil {
		return &odp.DecodeError{What: "upcall", Attr: "OVS_PACKET_ATTR_KEY", Err: err}
	}
	var acts odp.Actions
	if r.Actions != nil {
		if acts, err = odp.UnmarshalActions(r.Actions); err != nil {
			return &odp.DecodeError{What: "upcall", Attr: "OVS_PACKET_ATTR_ACTIONS", Err: err}
		}
	}
	*u = odp.Upcall{
		Kind:    odp.UpcallKind(r.Cmd),
		Port:    r.InPort,
		Key:     key,
		Packet:  append([]byte(nil), r.Packet...),
		Actions: acts,
		MRU:     r.MRU,
		Hash:    r.Hash,
	}
	if r.Userdata != nil {
		u.Userdata = append([]byte{}, r.Userdata...)
	}
	if r.EgressTunKey != nil {
		t, err := odp.UnmarshalTunnel(r.EgressTunKey)
		if err != nil {
			return &odp.DecodeError{What: "upcall", Attr: "OVS_PACKET_ATTR_EGRESS_TUN_KEY", Err: err}
		}
		u.EgressTunnel = &t
	}
	return nil
}

// decodeMeter decodes an ovs_meter reply (SET, GET, DEL).
func decodeMeter(b []byte) (*odp.MeterInfo, error) {
	const what = "meter"
	_, attrs, err := splitHeader(what, b)
	if err != nil {
		return nil, err
	}
	m := &odp.MeterInfo{}
	err = walkAttrs(attrs, ovsHeaderLen, what, func(t uint16, data []byte, off int) error {
		var err error
		switch t {
		case meterAttrID:
			m.ID, err = getU32(what, "OVS_METER_ATTR_ID", data, off)
		case meterAttrKbps:
			m.KBPS = true
		case meterAttrStats:
			if len(data) < 16 {
				return attrLenError(what, "OVS_METER_ATTR_STATS", off, len(data), 16, false)
			}
			m.Packets = binary.NativeEndian.Uint64(data)
			m.Bytes = binary.NativeEndian.Uint64(data[8:])
		case meterAttrUsed:
			m.Used, err = getU64(what, "OVS_METER_ATTR_USED", data, off)
		case meterAttrBands:
			err = walkAttrs(data, off+4, what, func(_ uint16, data []byte, off int) error {
				var band odp.MeterBand
				err := walkAttrs(data, off+4, what, func(t uint16, data []byte, off int) error {
					var err error
					switch t {
					case bandAttrType:
						band.Type, err = getU32(what, "OVS_BAND_ATTR_TYPE", data, off)
					case bandAttrRate:
						band.Rate, err = getU32(what, "OVS_BAND_ATTR_RATE", data, off)
					case bandAttrBurst:
						band.Burst, err = getU32(what, "OVS_BAND_ATTR_BURST", data, off)
					case bandAttrStats:
						if len(data) < 16 {
							return attrLenError(what, "OVS_BAND_ATTR_STATS", off, len(data), 16, false)
						}
						band.Packets = binary.NativeEndian.Uint64(data)
						band.Bytes = binary.NativeEndian.Uint64(data[8:])
					}
					return err
				})
				m.Bands = append(m.Bands, band)
				return err
			})
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return m, nil
}

// decodeMeterFeatures decodes the reply to OVS_METER_CMD_FEATURES.
func decodeMeterFeatures(b []byte) (*odp.MeterFeatures, error) {
	const what = "meter features"
	_, attrs, err := splitHeader(what, b)
	if err != nil {
		return nil, err
	}
	f := &odp.MeterFeatures{}
	var haveMax bool
	err = walkAttrs(attrs, ovsHeaderLen, what, func(t uint16, data []byte, off int) error {
		var err error
		switch t {
		case meterAttrMaxMeters:
			f.MaxMeters, err = getU32(what, "OVS_METER_ATTR_MAX_METERS", data, off)
			haveMax = true
		case meterAttrMaxBands:
			f.MaxBands, err = getU32(what, "OVS_METER_ATTR_MAX_BANDS", data, off)
		case meterAttrBands:
			err = walkAttrs(data, off+4, what, func(_ uint16, data []byte, off int) error {
				return walkAttrs(data, off+4, what, func(t uint16, data []byte, off int) error {
					if t != bandAttrType {
						return nil
					}
					bt, err := getU32(what, "OVS_BAND_ATTR_TYPE", data, off)
					f.BandTypes = append(f.BandTypes, bt)
					return err
				})
			})
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if !haveMax {
		return nil, &odp.DecodeError{What: what, Err: errMissing("OVS_METER_ATTR_MAX_METERS")}
	}
	return f, nil
}

// ZoneLimit is a conntrack zone's connection limit (struct
// ovs_zone_limit), odp's type, so that Datapath implements
// odp.CTLimiter. Zone DefaultZone is the default for zones without
// their own limit. Count is the zone's current number of connections
// (Get only). A Limit of 0 means unlimited.
type ZoneLimit = odp.CTZoneLimit

// decodeZoneLimits decodes an ovs_ct_limit GET reply.
func decodeZoneLimits(b []byte) ([]ZoneLimit, error) {
	const what = "ct limit"
	_, attrs, err := splitHeader(what, b)
	if err != nil {
		return nil, err
	}
	var out []ZoneLimit
	err = walkAttrs(attrs, ovsHeaderLen, what, func(t uint16, data []byte, off int) error {
		if t != ctLimitAttrZoneLimit {
			return nil
		}
		if len(data)%12 != 0 {
			return &odp.DecodeError{What: what, Attr: "OVS_CT_LIMIT_ATTR_ZONE_LIMIT", Offset: off,
				Err: fmt.Errorf("%d bytes, not a multiple of struct ovs_zone_limit (12)", len(data))}
		}
		for i := 0; i < len(data); i += 12 {
			out = append(out, ZoneLimit{
				Zone:  int32(binary.NativeEndian.Uint32(data[i:])),
				Limit: binary.NativeEndian.Uint32(data[i+4:]),
				Count: binary.NativeEndian.Uint32(data[i+8:]),
			})
		}
		return nil
	})
	return out, err
}
