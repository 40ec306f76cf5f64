package policy

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/ovsdp/ovsdp/flowkeys"
)

// Mirrors copy selected traffic to a port, as Open vSwitch's Mirror table
// does (ovs-vswitchd.conf.db(5): select_src_port, select_dst_port,
// select_all, select_vlan, output_port):
//
//   - a packet received on a selected source port is copied to the
//     output port as it came, before any action (ingress);
//   - a packet sent to a selected destination port is copied, as it was
//     sent there, right after that output (egress);
//   - select_vlan narrows both to the packets of those VLANs: the VLAN
//     the packet belongs to on its input port (VLANTable.InputVLAN);
//   - a packet its input port drops for its VLAN gets no ingress copy,
//     and an ingress copy leaves the output port with that port's VLAN
//     treatment, as normal would send it there (mirror_packet's
//     input_vid_is_valid and output_normal); an egress copy is the
//     packet as it was sent (not yet OVS's: it re-derives the VLAN from
//     the port the packet was sent to and tags the copy for the
//     mirror's output port);
//   - each mirror copies a packet once, however often it selects it, and
//     never back to the packet's input port (nor again to the port the
//     selecting output went to);
//   - the learning switch (normal) neither learns on, floods to nor
//     forwards to a mirror's output port, and drops what comes in on it
//     ("reserved exclusively for mirroring"). An explicit output, flood
//     or all in a rule still reaches it.
//
// Megaflows carry the copies as extra outputs. What selection reads is
// in their mask: the input port exactly (Env.DecideInto), the outer
// tag's present bit and, for a tagged packet, its VID, and the whole
// outer tag when its VID is 0 or the ports have VLAN configuration. The output ports a decision sends to come from
// bits the decision already read.

// MaxMirrors is how many mirrors an Env may have.
const MaxMirrors = 32

// Mirror is one mirror with port numbers (Env.Mirrors).
type Mirror struct {
	// Name names the mirror in messages (its --mirror text).
	Name string
	// SrcPorts select the packets received on them (select_src_port).
	SrcPorts []uint32
	// DstPorts select the packets sent to them (select_dst_port).
	DstPorts []uint32
	// All selects every packet (select_all).
	All bool
	// VLANs, when not empty, narrow the selection to packets in these
	// VLANs (select_vlan).
	VLANs []uint16
	// Out is the port the copies go to (output_port).
	Out uint32
}

// selectsVLAN reports whether m selects VLAN vlan; ok is false when the
// input port does not accept the packet's VLAN (then nothing selects it
// by VLAN).
func (m *Mirror) selectsVLAN(vlan uint16, ok bool) bool {
	return len(m.VLANs) == 0 || ok && slices.Contains(m.VLANs, vlan)
}

// MirrorSpec is a mirror by port names, as upcalld's --mirror gives it.
type MirrorSpec struct {
	// Text is the specification as given.
	Text string
	// Src, Dst, All and VLANs are Mirror's, by port name.
	Src, Dst []string
	All      bool
	VLANs    []uint16
	// Out is the output port's name.
	Out string
}

// ParseMirror parses one --mirror value, SELECT:OUT, where OUT names the
// output port and SELECT is a comma-separated list of:
//
//	NAME       packets received on or sent to port NAME (both directions)
//	in=NAME    packets received on port NAME (select_src_port)
//	out=NAME   packets sent to port NAME (select_dst_port)
//	all        every packet (select_all)
//	vlan=N     only packets in VLAN N (repeatable; select_vlan)
//
// For example "veth0:mon0", "in=veth0,out=veth1,vlan=10:mon0". Interface
// names cannot hold ':' (Linux refuses them), so the last ':' splits.
func ParseMirror(s string) (MirrorSpec, error) {
	m := MirrorSpec{Text: s}
	sel, out, ok := cut(s)
	if !ok {
		return m, fmt.Errorf("mirror %q: want SELECT:OUTPUT_PORT (for example veth0:mon0)", s)
	}
	if out == "" {
		return m, fmt.Errorf("mirror %q: no output port after ':'", s)
	}
	m.Out = out
	if sel == "" {
		return m, fmt.Errorf("mirror %q: nothing selected before ':' (a port, in=PORT, out=PORT or all)", s)
	}
	for i, item := range strings.Split(sel, ",") {
		k, v, hasV := strings.Cut(item, "=")
		switch {
		case item == "":
			return m, fmt.Errorf("mirror %q: empty item %d of the selection", s, i+1)
		case item == "all":
			m.All = true
		case hasV && k == "in" && v != "":
			m.Src = append(m.Src, v)
		case hasV && k == "out" && v != "":
			m.Dst = append(m.Dst, v)
		case hasV && k == "vlan":
			n, err := strconv.ParseUint(v, 10, 16)
			if err != nil || n > 4095 {
				return m, fmt.Errorf("mirror %q: vlan=%q: want a VLAN ID from 0 to 4095", s, v)
			}
			if !slices.Contains(m.VLANs, uint16(n)) {
				m.VLANs = append(m.VLANs, uint16(n))
			}
		case hasV && (k == "in" || k == "out"):
			return m, fmt.Errorf("mirror %q: %s= needs a port name", s, k)
		case hasV:
			return m, fmt.Errorf("mirror %q: unknown selection %q (want PORT, in=PORT, out=PORT, vlan=N or all)", s, item)
		default:
			m.Src = append(m.Src, item)
			m.Dst = append(m.Dst, item)
		}
	}
	if !m.All && len(m.Src) == 0 && len(m.Dst) == 0 {
		return m, fmt.Errorf("mirror %q: selects no port (vlan= only narrows a selection: add ports or all)", s)
	}
	if slices.Contains(m.Src, m.Out) || slices.Contains(m.Dst, m.Out) {
		return m, fmt.Errorf("mirror %q: the output port %s is also selected", s, m.Out)
	}
	return m, nil
}

// cut splits s at its last ':'.
func cut(s string) (before, after string, found bool) {
	i := strings.LastIndexByte(s, ':')
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+1:], true
}

// Resolve gives m with port numbers from ports (by name). A selected
// port that is not in ports selects nothing (it is returned in missing);
// an output port that is not there makes the mirror unusable (ok false,
// and it is in missing).
func (m *MirrorSpec) Resolve(ports map[string]uint32) (mir Mirror, missing []string, ok bool) {
	mir = Mirror{Name: m.Text, All: m.All, VLANs: m.VLANs}
	for _, n := range m.Src {
		if p, found := ports[n]; found {
			mir.SrcPorts = append(mir.SrcPorts, p)
		} else {
			missing = append(missing, n)
		}
	}
	for _, n := range m.Dst {
		if p, found := ports[n]; found {
			mir.DstPorts = append(mir.DstPorts, p)
		} else if !slices.Contains(missing, n) {
			missing = append(missing, n)
		}
	}
	out, found := ports[m.Out]
	if !found {
		return mir, append(missing, m.Out), false
	}
	mir.Out = out
	return mir, missing, true
}

// DecideInto decides for k with rs (RuleSet.DecideInto) and adds to the
// decision's mask what env's mirrors select on (see Mirror): with the
// rule set's mask alone, a megaflow could carry one packet's mirror
// copies to another.
func (e *Env) DecideInto(rs *RuleSet, k *flowkeys.Key, d *Decision) {
	rs.DecideInto(k, d)
	e.mirrorMask(d, k)
}

// DecideAtInto is DecideInto starting in table (RuleSet.DecideAtInto:
// a packet recirculated after ct(...,table=N)).
func (e *Env) DecideAtInto(rs *RuleSet, k *flowkeys.Key, table int, d *Decision) {
	rs.DecideAtInto(k, table, d)
	e.mirrorMask(d, k)
}

// mirrorMask adds to d's mask the bits the mirrors' selection reads.
func (e *Env) mirrorMask(d *Decision, k *flowkeys.Key) {
	if e == nil || len(e.Mirrors) == 0 || testFault == faultNoMirrorMask {
		return
	}
	d.Mask.InPort = 0xffffffff
	// A recirculated packet was copied by the ingress mirrors on its
	// first pass (mirrorIngress): recirc_id tells the passes apart.
	d.Mask.RecircID = 0xffffffff
	if testFault == faultNoMirrorVLANMask {
		return
	}
	// The packet's VLAN decides whether it is copied (its input port may
	// drop it; select_vlan) and the copy's tag (outputForm): a priority
	// tag with PCP 0 is removed, and with port VLAN configuration the
	// copy's tag may replace the packet's, keeping its PCP and TPID.
	d.Mask.VLANTCI |= flowkeys.VLANTagPresent
	if k.VLANTCI&flowkeys.VLANTagPresent != 0 {
		d.Mask.VLANTCI |= 0xfff
		if k.VLANTCI&0xfff == 0 || e.VLANs != nil {
			d.Mask.VLANTCI, d.Mask.VLANTPID = 0xffff, 0xffff
		}
	}
}

// isMirrorOut reports whether port is some mirror's output port.
func (e *Env) isMirrorOut(port uint32) bool {
	for i := range e.Mirrors {
		if e.Mirrors[i].Out == port {
			return true
		}
	}
	return false
}

// mirrorState is a translation's mirrors: which have copied the packet,
// and what they select on.
type mirrorState struct {
	env    *Env
	in     uint32
	vlan   uint16
	vlanOK bool
	done   uint64 // bit i: mirror i has copied the packet
}

// mirrorIngress starts a translation's mirrors: the packet's input port
// and VLAN (read: the mask has them, see mirrorMask), and the copies of
// the mirrors that select its input port.
func (w *walker) mirrorIngress(env *Env) {
	t := w.tr
	if env == nil || len(env.Mirrors) == 0 || t == nil {
		return
	}
	ms := &t.mirrors
	ms.env = env
	ms.in = w.read32(offInPort)
	tci := w.tagRead(&w.outer, flowkeys.VLANTagPresent, 0)
	if tci&flowkeys.VLANTagPresent != 0 {
		tci = w.tagRead(&w.outer, 0xfff, 0) & (flowkeys.VLANTagPresent | 0xfff)
	}
	ms.vlan, ms.vlanOK = env.VLANs.InputVLAN(ms.in, tci)
	if w.cur.RecircID != 0 || !ms.vlanOK {
		// Recirculated (after ct): the ingress copies were made on the
		// packet's first pass; mirrorMask makes recirc_id exact. A
		// packet its input port drops for its VLAN is not copied
		// (mirror_packet's input_vid_is_valid).
		return
	}
	for i := range env.Mirrors {
		m := &env.Mirrors[i]
		if (m.All || slices.Contains(m.SrcPorts, ms.in)) && m.selectsVLAN(ms.vlan, ms.vlanOK) {
			ms.done |= 1 << i
			if m.Out != ms.in {
				// With the output port's VLAN treatment, as normal
				// sends (mirror_packet's output_normal).
				w.setForm(w.outputForm(env.VLANs.port(m.Out).outputVID(ms.vlan)))
				t.output(m.Out)
			}
		}
	}
	w.setForm(vlanForm{kind: formKeep})
}

// mirrorEgress emits the copies of the mirrors that select the output
// to port just emitted.
func (t *translator) mirrorEgress(port uint32) {
	ms := &t.mirrors
	if ms.env == nil {
		return
	}
	for i := range ms.env.Mirrors {
		m := &ms.env.Mirrors[i]
		if ms.done&(1<<i) != 0 || !(m.All || slices.Contains(m.DstPorts, port)) || !m.selectsVLAN(ms.vlan, ms.vlanOK) {
			continue
		}
		ms.done |= 1 << i
		if m.Out != ms.in && m.Out != port {
			t.output(m.Out)
		}
	}
}
