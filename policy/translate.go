package policy

import (
	"slices"

	"github.com/ovsdp/ovsdp/flowkeys"
	"github.com/ovsdp/ovsdp/internal/header"
	"github.com/ovsdp/ovsdp/odp"
)

// Env is what Translate needs besides the decision and the key.
type Env struct {
	// Ports are the datapath's port numbers, in the order flood and all
	// output to (the input port is skipped).
	Ports []uint32
	// Switch resolves "normal"; nil floods every normal packet.
	Switch *LearningSwitch
	// ControllerPID is the netlink port ID (or userdp handler ID) that
	// receives the upcalls of "controller" actions.
	ControllerPID uint32
	// VLANs is the ports' VLAN configuration that normal follows (nil:
	// every port is a trunk of every VLAN).
	VLANs *VLANTable
	// Mirrors copy selected traffic to their output ports (mirror.go; at
	// most MaxMirrors). Decide with Env.DecideInto when there are any.
	Mirrors []Mirror
	// Recirc hands out the recirculation IDs of ct(...,table=N); without
	// it a packet that reaches such an action is dropped.
	Recirc Recirculator
	// PortUp reports whether a port is up: the liveness of the group
	// buckets that watch it (nil: every port is up).
	PortUp func(port uint32) bool
}

// Learn teaches the learning switch what decision d for key k saw: when
// d reached normal, k's Ethernet source is on k's input port, in the
// VLAN the port maps d.NormalTCI to (nothing is learned from a frame the
// port drops). It reports the change, if any.
func (e *Env) Learn(d *Decision, k *flowkeys.Key) (Event, bool) {
	if !d.Normal || e.Switch == nil || e.isMirrorOut(k.InPort) {
		return Event{}, false
	}
	vlan, ok := e.VLANs.InputVLAN(k.InPort, d.NormalTCI)
	if !ok {
		return Event{}, false
	}
	return e.Switch.LearnVLAN(vlan, k.EthSrc, k.InPort)
}

// Translate turns a decision for key k into datapath actions: output
// ports, masked sets of only the modified fields (set_masked of eth,
// ipv4, ipv6, tcp or udp, emitted just before the action that needs
// them, one per header), pop_vlan/push_vlan (none after the last output
// or userspace action), and userspace. It depends
// only on the bits of k in d.Mask, on env, and (for "normal") on the
// learning switch's state. A decision that drops gives an empty list.
func Translate(d *Decision, k *flowkeys.Key, env *Env) odp.Actions {
	return AppendTranslate(odp.Actions{}, d, k, env)
}

// AppendTranslate is Translate appending to dst.
func AppendTranslate(dst odp.Actions, d *Decision, k *flowkeys.Key, env *Env) odp.Actions {
	tr := translator{out: dst}
	if env != nil {
		tr.ports, tr.sw, tr.pid, tr.vlans, tr.recirc, tr.portUp = env.Ports, env.Switch, env.ControllerPID, env.VLANs, env.Recirc, env.PortUp
	}
	// Starting from the decision's mask, the lookups of resubmit and
	// goto_table choose the proofs that decide chose (or ones it already
	// holds), so translation consults nothing outside it.
	var w walker
	w.init(k, &d.Mask, &tr)
	w.rs = d.rs
	n := len(dst)
	w.translate(d, env)
	if w.overflow {
		return tr.out[:n] // a pipeline past its bounds drops the packet
	}
	// Tags pushed or popped after the last output change nothing.
	out := tr.out
	for len(out) > n {
		switch out[len(out)-1].(type) {
		case odp.PushVLAN, odp.PopVLAN:
			out = out[:len(out)-1]
			continue
		}
		break
	}
	return out
}

// translate runs d's actions, with env's ingress mirrors first.
func (w *walker) translate(d *Decision, env *Env) {
	w.mirrorIngress(env)
	w.run(d.Actions)
}

// translator collects the datapath actions a walker emits.
type translator struct {
	ports   []uint32
	sw      *LearningSwitch
	pid     uint32
	vlans   *VLANTable
	recirc  Recirculator
	portUp  func(uint32) bool
	out     odp.Actions
	mirrors mirrorState
}

// skip reports whether normal leaves port p out: a mirror's output port.
func (t *translator) skip(p uint32) bool {
	return t.mirrors.env != nil && t.mirrors.env.isMirrorOut(p)
}

// normal emits what the learning switch does with the packet, whose
// outer tag (present bit and VID) is tci, from port inPort: drop it if
// the port does not accept its VLAN; otherwise send it to the port its
// destination was learned on in its VLAN, or flood it to every other
// port of the VLAN, each output with the tag its port wants (Open
// vSwitch's xlate_normal, input_vid_to_vlan and output_vlan_to_vid).
// The outputs that keep the packet's tag as it is come first, so that
// normal changes the tag at most once.
func (t *translator) normal(w *walker, inPort uint32, tci uint16) {
	vlan, ok := t.vlans.InputVLAN(inPort, tci)
	if !ok || t.skip(inPort) {
		return
	}
	dst := w.cur.EthDst
	if dst[0]&1 == 0 && t.sw != nil {
		if port, ok := t.sw.LookupVLAN(vlan, dst); ok {
			if pv := t.vlans.port(port); port != inPort && pv.includes(vlan) && !t.skip(port) {
				w.setForm(w.outputForm(pv.outputVID(vlan)))
				w.emitOutput(port)
			}
			return
		}
	}
	// The ports' forms, one form at a time (at most three: the tag kept,
	// removed, or replaced).
	var done [3]vlanForm
	for n := range len(done) {
		var next vlanForm
		found := false
		for _, p := range t.ports {
			pv := t.vlans.port(p)
			if p == inPort || !pv.includes(vlan) || t.skip(p) {
				continue
			}
			f := w.outputForm(pv.outputVID(vlan))
			if slices.Contains(done[:n], f) {
				continue
			}
			// The current form first, then no tag (a push after a pop
			// costs less than a pop after a push and a pop).
			if !found || f == w.dp || f.kind == formNone && next != w.dp {
				next, found = f, true
				if f == w.dp {
					break
				}
			}
		}
		if !found {
			return
		}
		done[n] = next
		for _, p := range t.ports {
			pv := t.vlans.port(p)
			if p != inPort && pv.includes(vlan) && !t.skip(p) && w.outputForm(pv.outputVID(vlan)) == next {
				w.setForm(next)
				w.emitOutput(p)
			}
		}
	}
}

func (t *translator) output(port uint32) { t.out = append(t.out, odp.Output{Port: port}) }

func (t *translator) userspace(userdata string) {
	u := odp.Userspace{PID: t.pid}
	if userdata != "" {
		u.Userdata = []byte(userdata)
	}
	t.out = append(t.out, u)
}

func (t *translator) popVLAN() { t.out = append(t.out, odp.PopVLAN{}) }

func (t *translator) pushVLAN(tpid, tci uint16) {
	t.out = append(t.out, odp.PushVLAN{TPID: tpid, TCI: tci})
}

// commit emits the walker's pending modifications as set_masked
// actions whose masks are exactly the modified bits.
func (t *translator) commit(w *walker) {
	p, c := &w.pending, &w.cur
	if p.EthSrc != [6]byte{} || p.EthDst != [6]byte{} {
		var v odp.Ethernet
		for i := range 6 {
			v.Src[i] = c.EthSrc[i] & p.EthSrc[i]
			v.Dst[i] = c.EthDst[i] & p.EthDst[i]
		}
		t.out = append(t.out, odp.SetMasked{Key: v, Mask: odp.Ethernet{Src: p.EthSrc, Dst: p.EthDst}})
	}
	if p.IPv4Src != [4]byte{} || p.IPv4Dst != [4]byte{} || p.IPTOS != 0 || p.IPTTL != 0 ||
		p.IPv6Src != [16]byte{} || p.IPv6Dst != [16]byte{} {
		// The action that made these pending has read the Ethernet type.
		switch w.read16(offEthType, 0xffff) {
		case ethIPv4:
			var v odp.IPv4
			for i := range 4 {
				v.Src[i] = c.IPv4Src[i] & p.IPv4Src[i]
				v.Dst[i] = c.IPv4Dst[i] & p.IPv4Dst[i]
			}
			v.TOS, v.TTL = c.IPTOS&p.IPTOS, c.IPTTL&p.IPTTL
			m := odp.IPv4{Src: p.IPv4Src, Dst: p.IPv4Dst, TOS: p.IPTOS, TTL: p.IPTTL}
			t.out = append(t.out, odp.SetMasked{Key: v, Mask: m})
		case ethIPv6:
			v := odp.IPv6{TClass: c.IPTOS & p.IPTOS, HLimit: c.IPTTL & p.IPTTL}
			for i := range 16 {
				v.Src[i] = c.IPv6Src[i] & p.IPv6Src[i]
				v.Dst[i] = c.IPv6Dst[i] & p.IPv6Dst[i]
			}
			m := odp.IPv6{Src: p.IPv6Src, Dst: p.IPv6Dst, TClass: p.IPTOS, HLimit: p.IPTTL}
			t.out = append(t.out, odp.SetMasked{Key: v, Mask: m})
		}
	}
	// Without a port in the packet the kernel refuses a port set
	// (portInKey, which made the megaflow exact on both ports then).
	if (p.TpSrc != 0 || p.TpDst != 0) && (w.origTpSrc != 0 || w.origTpDst != 0) {
		vs, vd := c.TpSrc&p.TpSrc, c.TpDst&p.TpDst
		switch w.read8(offIPProto, 0xff) {
		case header.IPProtoTCP:
			t.out = append(t.out, odp.SetMasked{Key: odp.TCP{Src: vs, Dst: vd}, Mask: odp.TCP{Src: p.TpSrc, Dst: p.TpDst}})
		case header.IPProtoUDP:
			t.out = append(t.out, odp.SetMasked{Key: odp.UDP{Src: vs, Dst: vd}, Mask: odp.UDP{Src: p.TpSrc, Dst: p.TpDst}})
		}
	}
}
