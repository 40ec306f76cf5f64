package policy

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/ovsdp/ovsdp/flowkeys"
)

// VLANMode is a port's VLAN mode, with the semantics of Open vSwitch's
// Port vlan_mode column (ovs-vswitchd.conf.db(5)).
type VLANMode uint8

// The VLAN modes.
const (
	// VLANTrunk: a frame that enters is in the VLAN of its 802.1Q tag
	// (VLAN 0 when untagged or priority-tagged) and is dropped unless the
	// port trunks that VLAN; a frame leaves tagged with its VLAN (VLAN 0
	// untagged). A port without VLAN configuration is a trunk of every
	// VLAN.
	VLANTrunk VLANMode = iota
	// VLANAccess: a frame that enters untagged (or priority-tagged) is in
	// the port's VLAN (Tag); a frame that enters with a VLAN ID other
	// than 0 is dropped. Frames of the port's VLAN leave untagged.
	VLANAccess
	// VLANNativeTagged: like a trunk, but an untagged frame that enters
	// is in the native VLAN (Tag), which the port always carries; frames
	// of the native VLAN leave tagged.
	VLANNativeTagged
	// VLANNativeUntagged: as VLANNativeTagged, but frames of the native
	// VLAN leave untagged.
	VLANNativeUntagged
)

var vlanModeNames = [...]string{
	VLANTrunk:          "trunk",
	VLANAccess:         "access",
	VLANNativeTagged:   "native-tagged",
	VLANNativeUntagged: "native-untagged",
}

// String returns the mode's name in the --port syntax.
func (m VLANMode) String() string {
	if int(m) < len(vlanModeNames) {
		return vlanModeNames[m]
	}
	return fmt.Sprintf("vlan_mode(%d)", uint8(m))
}

// PortVLAN is one port's VLAN configuration. The zero value is a trunk
// of every VLAN (a port without configuration).
type PortVLAN struct {
	Mode VLANMode
	// Tag is the access VLAN (VLANAccess) or the native VLAN (the native
	// modes), 0-4095.
	Tag uint16
	// Trunks are the VLANs a trunk or native port carries (besides the
	// native VLAN); empty means every VLAN.
	Trunks []uint16
}

// String formats the configuration in the --port option syntax (without
// the interface name), "" for a trunk of every VLAN.
func (c PortVLAN) String() string {
	var parts []string
	switch c.Mode {
	case VLANAccess:
		parts = append(parts, "vlan="+strconv.Itoa(int(c.Tag)))
	case VLANNativeTagged, VLANNativeUntagged:
		parts = append(parts, "vlan_mode="+c.Mode.String(), "tag="+strconv.Itoa(int(c.Tag)))
	}
	if len(c.Trunks) > 0 {
		ts := make([]string, len(c.Trunks))
		for i, t := range c.Trunks {
			ts[i] = strconv.Itoa(int(t))
		}
		parts = append(parts, "trunks="+strings.Join(ts, ","))
	}
	return strings.Join(parts, ",")
}

// PortSpec is one port of the daemon's --port option: a network device
// and its VLAN configuration.
type PortSpec struct {
	Name string
	VLAN PortVLAN
	// Mode is the option mode=ring|mmsg|xdp: the userspace datapath's
	// backend for the port (userdp.NetdevMode), "" for its default. It is
	// for the datapath, not the decisions.
	Mode string
}

// ParsePortSpecs parses the values of upcalld's --port options. Each
// value is a comma-separated list of interface names, each optionally
// followed by its options:
//
//	IFACE[,vlan=N|,tag=N][,trunks=N[,N...]][,vlan_mode=MODE][,mode=ring|mmsg|xdp]
//
// mode= chooses the userspace datapath's backend for the port (TPACKET
// ring, recvmmsg or AF_XDP), which PortSpec.Mode carries.
//
// vlan=N (or tag=N) alone makes an access port of VLAN N; trunks=LIST
// alone a trunk of those VLANs; vlan_mode=native-tagged or
// native-untagged with tag=N a port whose native VLAN is N (with
// trunks=, the other VLANs it carries); vlan_mode=trunk or access says
// the mode explicitly. A bare number after trunks= continues the list,
// so an interface whose name is all digits needs a --port of its own.
// VLAN IDs are 0-4095. Inconsistent options (trunks on an access port, a
// native mode without tag, tag on a trunk, an option given twice) are
// errors that name the interface and the option.
func ParsePortSpecs(values []string) ([]PortSpec, error) {
	var specs []PortSpec
	for _, v := range values {
		var cur *portBuilder
		var all []*portBuilder
		inTrunks := false
		for _, tok := range strings.Split(v, ",") {
			tok = strings.TrimSpace(tok)
			if tok == "" {
				continue
			}
			name, val, isOpt := strings.Cut(tok, "=")
			if !isOpt {
				if inTrunks && isDigits(tok) {
					if err := cur.addTrunk(tok); err != nil {
						return nil, err
					}
					continue
				}
				inTrunks = false
				cur = &portBuilder{name: tok}
				all = append(all, cur)
				continue
			}
			if cur == nil {
				return nil, fmt.Errorf("port option %q comes before any interface name (want IFACE,%s)", tok, tok)
			}
			inTrunks = false
			if err := cur.set(strings.ToLower(strings.TrimSpace(name)), strings.TrimSpace(val)); err != nil {
				return nil, err
			}
			if strings.EqualFold(strings.TrimSpace(name), "trunks") {
				inTrunks = true
			}
		}
		for _, b := range all {
			s, err := b.build()
			if err != nil {
				return nil, err
			}
			specs = append(specs, s)
		}
	}
	seen := make(map[string]bool, len(specs))
	for _, s := range specs {
		if seen[s.Name] {
			return nil, fmt.Errorf("port %s: given twice", s.Name)
		}
		seen[s.Name] = true
	}
	return specs, nil
}

func isDigits(s string) bool {
	for i := range len(s) {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// portBuilder collects one interface's options.
type portBuilder struct {
	name           string
	mode           VLANMode
	hasMode        bool
	tag            int
	hasTag         bool
	trunks         []uint16
	hasTrunks      bool
	modeTok, tagOp string
	backend        string
}

func parseVID(name, opt, s string) (uint16, error) {
	n, ok := parseNum(s, 16)
	if !ok || n > 4095 {
		return 0, fmt.Errorf("port %s: %s=%s: want a VLAN ID 0-4095", name, opt, s)
	}
	return uint16(n), nil
}

func (b *portBuilder) addTrunk(s string) error {
	n, err := parseVID(b.name, "trunks", s)
	if err != nil {
		return err
	}
	if slices.Contains(b.trunks, n) {
		return fmt.Errorf("port %s: trunks: VLAN %d listed twice", b.name, n)
	}
	b.trunks = append(b.trunks, n)
	return nil
}

func (b *portBuilder) set(opt, val string) error {
	switch opt {
	case "vlan", "tag":
		if b.hasTag {
			return fmt.Errorf("port %s: %s= given twice (vlan= and tag= are the same option)", b.name, opt)
		}
		n, err := parseVID(b.name, opt, val)
		if err != nil {
			return err
		}
		b.tag, b.hasTag, b.tagOp = int(n), true, opt
	case "trunks":
		if b.hasTrunks {
			return fmt.Errorf("port %s: trunks= given twice", b.name)
		}
		b.hasTrunks = true
		if val == "" {
			return fmt.Errorf("port %s: trunks=: want a list of VLAN IDs 0-4095", b.name)
		}
		return b.addTrunk(val)
	case "vlan_mode":
		if b.hasMode {
			return fmt.Errorf("port %s: vlan_mode= given twice", b.name)
		}
		i := slices.Index(vlanModeNames[:], strings.ToLower(val))
		if i < 0 {
			return fmt.Errorf("port %s: vlan_mode=%s: want trunk, access, native-tagged or native-untagged", b.name, val)
		}
		b.mode, b.hasMode = VLANMode(i), true
	case "mode":
		if b.backend != "" {
			return fmt.Errorf("port %s: mode= given twice", b.name)
		}
		switch val {
		case "ring", "mmsg", "xdp":
			b.backend = val
		default:
			return fmt.Errorf("port %s: mode=%s: want ring, mmsg or xdp", b.name, val)
		}
	default:
		return fmt.Errorf("port %s: unknown option %q (want vlan=, tag=, trunks=, vlan_mode= or mode=)", b.name, opt+"=")
	}
	return nil
}

func (b *portBuilder) build() (PortSpec, error) {
	s := PortSpec{Name: b.name, Mode: b.backend}
	mode := b.mode
	if !b.hasMode {
		// As Open vSwitch: a tag alone makes an access port, otherwise a
		// trunk.
		if b.hasTag {
			mode = VLANAccess
		}
	}
	switch mode {
	case VLANAccess:
		if !b.hasTag {
			return s, fmt.Errorf("port %s: vlan_mode=access needs vlan=N", b.name)
		}
		if b.hasTrunks {
			return s, fmt.Errorf("port %s: trunks= on an access port (vlan=%d): an access port carries only its own VLAN", b.name, b.tag)
		}
	case VLANTrunk:
		if b.hasTag {
			return s, fmt.Errorf("port %s: %s= on a trunk port: use vlan_mode=native-tagged or native-untagged for a native VLAN", b.name, b.tagOp)
		}
	default:
		if !b.hasTag {
			return s, fmt.Errorf("port %s: vlan_mode=%s needs tag=N (the native VLAN)", b.name, mode)
		}
	}
	s.VLAN = PortVLAN{Mode: mode, Trunks: b.trunks}
	if b.hasTag {
		s.VLAN.Tag = uint16(b.tag)
	}
	return s, nil
}

// VLANTable is the VLAN configuration of a datapath's ports, by port
// number, in the form the decisions use. A nil *VLANTable, and a port
// it does not list, is a trunk of every VLAN. It is immutable.
type VLANTable struct {
	ports map[uint32]*portVLAN
}

// portVLAN is a compiled PortVLAN.
type portVLAN struct {
	mode VLANMode
	tag  uint16
	// trunks is a bitmap of the VLANs the port trunks; nil: all.
	trunks *[4096 / 64]uint64
}

// NewVLANTable compiles the configurations of ports by number.
func NewVLANTable(ports map[uint32]PortVLAN) *VLANTable {
	t := &VLANTable{ports: make(map[uint32]*portVLAN, len(ports))}
	for n, c := range ports {
		pv := &portVLAN{mode: c.Mode, tag: c.Tag & 0xfff}
		native := c.Mode == VLANNativeTagged || c.Mode == VLANNativeUntagged
		if len(c.Trunks) > 0 && c.Mode != VLANAccess || native && pv.tag != 0 {
			pv.trunks = new([64]uint64)
			if len(c.Trunks) == 0 {
				for i := range pv.trunks {
					pv.trunks[i] = ^uint64(0)
				}
			}
			for _, v := range c.Trunks {
				pv.trunks[v&0xfff/64] |= 1 << (v & 63)
			}
			if native && pv.tag != 0 {
				// As ofproto-dpif's bundle_set: a native port always
				// trunks its native VLAN and never VLAN 0 (an untagged
				// frame that enters is in the native VLAN).
				pv.trunks[pv.tag/64] |= 1 << (pv.tag & 63)
				pv.trunks[0] &^= 1
			}
		}
		t.ports[n] = pv
	}
	return t
}

func (t *VLANTable) port(n uint32) *portVLAN {
	if t == nil {
		return nil
	}
	return t.ports[n]
}

// trunksVLAN reports whether the port carries vlan tagged (Open
// vSwitch's xbundle_trunks_vlan).
func (p *portVLAN) trunksVLAN(vlan uint16) bool {
	if p == nil {
		return true
	}
	return p.mode != VLANAccess && (p.trunks == nil || p.trunks[vlan/64]&(1<<(vlan&63)) != 0)
}

// includes reports whether frames of vlan may leave by the port.
func (p *portVLAN) includes(vlan uint16) bool {
	return p == nil || (p.mode != VLANTrunk && vlan == p.tag) || p.trunksVLAN(vlan)
}

// input maps the VLAN ID of a frame that entered by the port (0 when
// untagged or priority-tagged) to its VLAN; ok is false when the port
// drops it.
func (p *portVLAN) input(vid uint16) (vlan uint16, ok bool) {
	if p == nil {
		return vid, true
	}
	switch p.mode {
	case VLANAccess:
		return p.tag, vid == 0
	case VLANNativeTagged, VLANNativeUntagged:
		if vid == 0 {
			return p.tag, true
		}
	}
	return vid, p.trunksVLAN(vid)
}

// outputVID is the VLAN ID a frame of vlan leaves the port with, and
// whether the port strips the tag instead (Open vSwitch's
// xvlan_output_translate): an access port, and a native-untagged port
// for its native VLAN, strip it; the others tag the frame with vlan,
// which for VLAN 0 is a priority tag when the frame's PCP is not 0
// (xvlan_put).
func (p *portVLAN) outputVID(vlan uint16) (vid uint16, strip bool) {
	if p == nil {
		return vlan, false
	}
	switch p.mode {
	case VLANAccess:
		return 0, true
	case VLANNativeUntagged:
		if vlan == p.tag {
			return 0, true
		}
	}
	return vlan, false
}

// InputVLAN returns the VLAN that a frame entering by port with outer
// tag tci (a flowkeys.Key VLANTCI: 0 when untagged) is in, and whether
// the port accepts it.
func (t *VLANTable) InputVLAN(port uint32, tci uint16) (uint16, bool) {
	vid := uint16(0)
	if tci&flowkeys.VLANTagPresent != 0 {
		vid = tci & 0xfff
	}
	return t.port(port).input(vid)
}
