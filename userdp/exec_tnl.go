package userdp

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/ovsdp/ovsdp/flowkeys"
	"github.com/ovsdp/ovsdp/internal/header"
	"github.com/ovsdp/ovsdp/odp"
)

// Executing tunnel actions: set(tunnel(...)) attaches egress tunnel
// metadata to the packet (the kernel's skb tunnel dst in TX mode; the
// flow key keeps the metadata the packet was received with, as in the
// kernel), and output to a tunnel port encapsulates with it (tunnel.go).
// A packet output to a tunnel port without egress metadata is dropped
// and counted as the port's tx drop, as the kernel's tunnel devices do
// ("no tunnel metadata").

// tunnelOut is a tunnel port as the executor sees it.
type tunnelOut interface {
	Port
	tunnelConfig() *tunnelConfig
	// route sets p's source address (src or src6) to the route's to
	// the metadata's destination for a packet of skb mark mark, when
	// the metadata has none.
	route(ti *tunnelInfo, mark uint32, now time.Time, p *encapParams) error
	// writeMarked is WriteBatch for outer packets whose skb marks
	// (the marks the host routes them with) are marks[i].
	writeMarked(pkts [][]byte, marks []uint32) (int, error)
	counters() *Counters
	defaultHopLimit() uint8
	localPortRange() (uint16, uint32)
	// ipv6Reader returns the reader of outer IPv6 packets, or nil.
	ipv6Reader() Port
}

// tunnelPortOf returns port n if it is a tunnel port.
func (w *worker) tunnelPortOf(n uint32) tunnelOut {
	if !w.tunnelPorts() {
		return nil
	}
	p := w.dp.portByNumber(n)
	if p == nil {
		return nil
	}
	t, _ := p.port.(tunnelOut)
	return t
}

// outputTunnel encapsulates frame (the packet c, cut as the output
// asks) for tunnel port n and queues the outer packet.
func (w *worker) outputTunnel(c *pktCtx, n uint32, tp tunnelOut, frame []byte) {
	ti := c.egress
	st := tp.counters()
	if ti == nil {
		st.TxDropped.Add(1)
		return
	}
	cfg := tp.tunnelConfig()
	if ti.v6 && cfg.kind == tunnelGRE {
		// The kernel's gretap is IPv4 only (gre_fb_xmit drops).
		st.TxDropped.Add(1)
		return
	}
	p, err := w.encapFor(c, tp, ti)
	if err != nil {
		st.TxErrors.Add(1)
		return
	}
	if h := pmtuHeadroom(cfg.kind, ti); h > 0 && p.mtu > 0 && p.l3 >= 0 && len(frame)-p.l3 > p.mtu-h {
		// skb_tunnel_check_pmtu (tunnel_pmtu.go): answered, or sent
		// as it is.
		if ln := w.pmtuExceeded(c, n, ti, p, frame, p.mtu-h); ln > 0 {
			if cfg.kind == tunnelVXLAN {
				// vxlan_encap_bypass counts the reply as sent and
				// received (the whole frame).
				st.tx(1, uint64(ln))
				st.rx(1, uint64(ln))
			} else {
				st.TxErrors.Add(1) // geneve_xmit's -EMSGSIZE
			}
			return
		}
	}
	size := ti.encapOverhead(cfg) + len(frame)
	if size > 65535 {
		st.TxErrors.Add(1)
		return
	}
	buf := w.reserve(n, size)
	if buf == nil {
		return
	}
	w.setTxMark(n, c.key.SkbMark)
	w.commit(n, encapTunnel(buf, frame, cfg, ti, p))
}

// setTxMark records mark as the skb mark of the frame that reserve has
// just given a buffer on port n's queue: the kernel routes a tunnel's
// outer packet with the packet's skb->mark and sends it with that mark.
func (w *worker) setTxMark(n uint32, mark uint32) {
	q := &w.txq[n]
	if q.marks == nil {
		q.marks = make([]uint32, len(q.pkts))
	}
	q.marks[q.n] = mark
}

// encapFor returns the parameters (w.encap) for sending packet c with
// metadata ti through tunnel port tp: the flow hash, the inner protocol
// and the source address of the route for the packet's skb mark (the
// kernel's tunnels look the route up with flowi4_mark or flowi6_mark =
// skb->mark, and so does their fill_metadata_dst).
func (w *worker) encapFor(c *pktCtx, tp tunnelOut, ti *tunnelInfo) (*encapParams, error) {
	var hash uint32
	if c.validKey() == nil {
		hash = l4Hash(&c.key, false, 0)
	}
	lo, hi := tp.localPortRange()
	l3 := -1
	if c.key.MacProto == flowkeys.MacProtoEthernet {
		l3 = c.l3()
	}
	// In the worker: the interface call would make a local escape.
	p := &w.encap
	*p = encapParams{hopLimit: tp.defaultHopLimit(), hash: hash, proto: c.proto, l3: l3, portMin: lo, portMax: hi}
	return p, tp.route(ti, c.key.SkbMark, w.wallNow(), p)
}

// egressKey is the egress tunnel key of userspace(tunnel_out_port=P):
// the packet's set(tunnel) metadata as port P fills it in.
type egressKey struct {
	ti           *tunnelInfo // nil: no key
	src          [4]byte     // the source address, set(tunnel)'s or the route's
	src6         [16]byte
	tpSrc, tpDst uint16
}

// egressKeyFor is the kernel's dev_fill_metadata_dst for tunnel port n
// (output_userspace with OVS_USERSPACE_ATTR_EGRESS_TUN_PORT): nothing
// when n is not a tunnel port or the packet has no set(tunnel)
// metadata; otherwise the source address of the route when the
// metadata has none (a failed route lookup gives nothing, as the
// kernel's error does) and the UDP ports the port would send with:
// vxlan_fill_metadata_dst (source port from the flow hash in the local
// port range, destination set(tunnel)'s tp_dst or the port's),
// geneve_fill_metadata_dst (source port from the hash in 1-65535,
// destination the port's); gre_fill_metadata_dst fills the source
// address only, and refuses IPv6 metadata.
func (w *worker) egressKeyFor(c *pktCtx, n uint32) egressKey {
	ti := c.egress
	tp := w.tunnelPortOf(n)
	if ti == nil || tp == nil {
		return egressKey{}
	}
	cfg := tp.tunnelConfig()
	if ti.v6 && cfg.kind == tunnelGRE {
		return egressKey{}
	}
	p, err := w.encapFor(c, tp, ti)
	if err != nil {
		return egressKey{}
	}
	k := egressKey{ti: ti, src: ti.src, src6: ti.src6, tpSrc: ti.tpSrc, tpDst: ti.tpDst}
	if k.src == ([4]byte{}) {
		k.src = p.src
	}
	if k.src6 == ([16]byte{}) {
		k.src6 = p.src6
	}
	switch cfg.kind {
	case tunnelVXLAN:
		k.tpSrc = udpSourcePort(p.hash, cfg, p)
		if k.tpDst == 0 {
			k.tpDst = cfg.dstPort
		}
	case tunnelGeneve:
		k.tpSrc, k.tpDst = udpSourcePort(p.hash, cfg, p), cfg.dstPort
	}
	return k
}

// tunnel converts k to the attributes the kernel's __ip_tun_to_nlattr
// writes: the id with the key flag, the addresses and TOS and ports
// when not zero, the TTL always, the flags, and the Geneve options, the
// VXLAN GBP or the ERSPAN metadata when set(tunnel) gave them. nil when k is empty.
func (k *egressKey) tunnel() *odp.Tunnel {
	ti := k.ti
	if ti == nil {
		return nil
	}
	t := &odp.Tunnel{Present: odp.TunnelHasTTL, TTL: ti.ttl}
	if ti.flags&odp.KernelTunnelKey != 0 {
		t.ID = ti.id
		t.Present |= odp.TunnelHasID
	}
	if ti.v6 {
		t.IPv6Src, t.IPv6Dst = k.src6, ti.dst6
		if k.src6 != ([16]byte{}) {
			t.Present |= odp.TunnelHasIPv6Src
		}
		t.Present |= odp.TunnelHasIPv6Dst
	} else {
		t.IPv4Src, t.IPv4Dst = k.src, ti.dst
		if k.src != ([4]byte{}) {
			t.Present |= odp.TunnelHasIPv4Src
		}
		t.Present |= odp.TunnelHasIPv4Dst
	}
	if ti.tos != 0 {
		t.TOS = ti.tos
		t.Present |= odp.TunnelHasTOS
	}
	for _, f := range tunnelFlagBits {
		if ti.flags&f.kernel != 0 {
			t.Flags |= f.attr
		}
	}
	if k.tpSrc != 0 {
		t.TPSrc = k.tpSrc
		t.Present |= odp.TunnelHasTPSrc
	}
	if k.tpDst != 0 {
		t.TPDst = k.tpDst
		t.Present |= odp.TunnelHasTPDst
	}
	switch {
	case ti.flags&odp.KernelTunnelGeneveOpt != 0:
		t.Geneve = append([]byte{}, ti.opts...)
		t.Present |= odp.TunnelHasGeneve
	case ti.flags&odp.KernelTunnelVXLANOpt != 0:
		t.VXLANGBP = ti.gbp
		t.Present |= odp.TunnelHasVXLAN
	case ti.flags&odp.KernelTunnelERSPANOpt != 0 && len(ti.opts) == odp.ERSPANMetadataLen:
		// dev_fill_metadata_dst keeps the tunnel info's options, and
		// __ip_tun_to_nlattr puts them as ERSPAN options.
		t.ERSPAN.Version = binary.NativeEndian.Uint32(ti.opts)
		t.ERSPAN.MD = [8]byte(ti.opts[4:])
		t.Present |= odp.TunnelHasERSPAN
	}
	return t
}

// wallNow returns the time for the route cache, read once per batch.
func (w *worker) wallNow() time.Time {
	if w.wallValid {
		return w.wall
	}
	w.wall, w.wallValid = time.Now(), true
	return w.wall
}

// Open vSwitch's userspace tunnel actions (lib/dpif-netdev.c,
// lib/netdev-native-tnl.c), which the kernel does not have:
//
//   - tnl_push(tnl_port(N),header(...),out_port(M)) puts the prebuilt
//     outer header (Ethernet, IPv4 or IPv6, UDP or GRE, the tunnel
//     header) in front of the packet, filling in what depends on it: the
//     IP total or payload length and the IPv4 checksum, the UDP length
//     and source port (the flow hash scaled to 32768-60999, as
//     netdev_tnl_get_src_port), the UDP checksum when the header's is
//     not zero, the GRE checksum when its flag is set. The packet is
//     changed in place; the output is the next action (Open vSwitch
//     emits clone(tnl_push(...),output(M)); out_port is informational).
//     As in Open vSwitch, tnl_push as the last action does nothing but
//     drop, and N must be a tunnel port of the datapath.
//   - tnl_pop(N) decapsulates a received outer packet (Ethernet, then the
//     outer IP header, which must have a good checksum) as tunnel port N
//     would (decapTunnel), and looks the inner frame up again as received
//     on N with that tunnel metadata and no other (pkt_metadata_init_tnl:
//     recirc_id, marks and conntrack state start from zero).

// tnlPushArgs are a compiled tnl_push.
type tnlPushArgs struct {
	hdr   []byte
	ipv6  bool
	l4    int  // offset of the UDP or GRE header in hdr
	udp   bool // UDP (geneve, vxlan); else GRE
	csum  bool // the UDP checksum is not zero, or GRE has its checksum flag
	tnlNo uint32
}

// compileTnlPush checks the prebuilt header of a tnl_push.
func compileTnlPush(a odp.TunnelPush, path string) (op, error) {
	h := a.Header
	switch a.TnlType {
	case odp.VportGeneve, odp.VportVXLAN, odp.VportGRE:
	default:
		return op{}, fmt.Errorf("%s: tnl_push of tunnel type %d (only geneve, vxlan and gre): %w", path, a.TnlType, odp.ErrUnsupported)
	}
	if len(h) < header.EthernetMinimumSize+ipv4HeaderLen {
		return op{}, einval("%s: tnl_push header of %d bytes is shorter than Ethernet and IPv4 headers", path, len(h))
	}
	args := &tnlPushArgs{hdr: append([]byte(nil), h...), udp: a.TnlType != odp.VportGRE, tnlNo: a.TnlPort}
	var proto uint8
	switch et := binary.BigEndian.Uint16(h[12:]); et {
	case header.EtherTypeIPv4:
		ihl := int(h[14]&0xf) * 4
		if h[14]>>4 != 4 || ihl < ipv4HeaderLen || len(h) < 14+ihl {
			return op{}, einval("%s: tnl_push header: bad IPv4 header", path)
		}
		proto, args.l4 = h[14+9], 14+ihl
	case header.EtherTypeIPv6:
		if len(h) < 14+ipv6HeaderLen || h[14]>>4 != 6 {
			return op{}, einval("%s: tnl_push header: bad IPv6 header", path)
		}
		proto, args.l4, args.ipv6 = h[14+6], 14+ipv6HeaderLen, true
	default:
		return op{}, einval("%s: tnl_push header: EtherType %#04x is neither IPv4 nor IPv6", path, et)
	}
	switch {
	case args.udp && (proto != header.IPProtoUDP || len(h) < args.l4+udpHeaderLen):
		return op{}, einval("%s: tnl_push header of a UDP tunnel without a UDP header", path)
	case !args.udp && (proto != ipProtoGRE || len(h) < args.l4+greBaseLen):
		return op{}, einval("%s: tnl_push header of a gre tunnel without a GRE header", path)
	case args.udp:
		args.csum = binary.BigEndian.Uint16(h[args.l4+6:]) != 0
	default:
		args.csum = binary.BigEndian.Uint16(h[args.l4:])&greFlagCSUM != 0
		if args.csum && len(h) < args.l4+8 {
			return op{}, einval("%s: tnl_push GRE header with a checksum flag but no checksum field", path)
		}
	}
	return op{kind: opTnlPush, push: args}, nil
}

// tnlPush runs tnl_push on c (not the last action).
func (w *worker) tnlPush(c *pktCtx, a *tnlPushArgs) bool {
	if w.tunnelPortOf(a.tnlNo) == nil {
		return false
	}
	if c.cutlen > 0 {
		c.f.Len = c.cutFrame()
		c.cutlen = 0
	}
	var hash uint32
	if c.validKey() == nil {
		hash = l4Hash(&c.key, false, 0)
	}
	frame := c.f.Bytes()
	hl := len(a.hdr)
	total := hl + len(frame)
	if total > MaxFrameLen+tnlPushMax {
		return false
	}
	need := DefaultHeadroom + total
	if cap(w.pushBuf) < need {
		w.pushBuf = make([]byte, max(need, 4096))
	}
	b := w.pushBuf[:need]
	copy(b[DefaultHeadroom+hl:], frame) // may overlap a previous push: copy moves
	copy(b[DefaultHeadroom:], a.hdr)
	c.f = frameBuf{Buf: b, Off: DefaultHeadroom, Len: total}
	c.steal = false
	p := b[DefaultHeadroom:]
	ip := p[14:]
	var pseudo uint64
	if a.ipv6 {
		binary.BigEndian.PutUint16(ip[4:], uint16(total-14-ipv6HeaderLen))
		pseudo = header.IPv6(ip).PseudoHeaderSum(header.IPProtoUDP, total-a.l4)
	} else {
		ih := header.IPv4(ip[:a.l4-14])
		ih.SetTotalLength(uint16(total - 14))
		ih.SetChecksum(0)
		ih.SetChecksum(ih.CalculateChecksum())
		pseudo = ih.PseudoHeaderSum(header.IPProtoUDP, total-a.l4)
	}
	l4 := p[a.l4:]
	if a.udp {
		u := header.UDP(l4)
		header.Ports(u).SetSource(uint16(uint64(hash)*(61000-32768)>>32 + 32768))
		u.SetLength(uint16(len(l4)))
		if a.csum {
			u.SetChecksum(0)
			cs := header.Checksum(u, pseudo)
			if cs == 0 {
				cs = 0xffff
			}
			u.SetChecksum(cs)
		}
	} else if a.csum {
		binary.BigEndian.PutUint16(l4[4:], 0)
		binary.BigEndian.PutUint16(l4[4:], header.Checksum(l4, 0))
	}
	c.invalidate()
	c.proto = binary.BigEndian.Uint16(p[12:])
	return true
}

// tnlPushMax is the largest tnl_push header (TNL_PUSH_HEADER_SIZE).
const tnlPushMax = 512

// tnlPop runs tnl_pop(port) on c (its own copy unless last).
func (w *worker) tnlPop(c *pktCtx, port uint32) {
	tp := w.tunnelPortOf(port)
	if tp == nil {
		w.actionError()
		return
	}
	if c.recirc >= maxRecirc {
		w.counters.recircDrops++
		return
	}
	if c.cutlen > 0 {
		c.f.Len = c.cutFrame()
		c.cutlen = 0
	}
	l3 := c.l3()
	b := c.f.Bytes()
	if l3 < 0 || l3 >= len(b) {
		w.actionError()
		return
	}
	pkt := b[l3:]
	if pkt[0]>>4 == 4 {
		ihl := int(pkt[0]&0xf) * 4
		if ihl < ipv4HeaderLen || ihl > len(pkt) || header.Checksum(pkt[:ihl], 0) != 0 {
			w.actionError() // ip_extract_tnl_md: a bad IPv4 header checksum
			return
		}
	}
	md := &w.popMD
	*md = flowkeys.Metadata{InPort: port}
	off, n, _, err := decapTunnel(pkt, tp.tunnelConfig(), &md.Tunnel, &w.popOpts)
	if err != nil {
		w.actionError()
		return
	}
	c.f.Off += l3 + off
	c.f.Len = n
	c.ct.Clear()
	c.egress = nil
	c.noEth = false // what tnl_pop leaves is an Ethernet frame
	c.invalidate()
	if err := flowkeys.Extract(c.f.Bytes(), md, &c.key); err != nil {
		w.counters.extractErrors++
		return
	}
	c.keyValid = true
	c.proto = keyProtocol(&c.key)
	c.recirc++
	w.lookupAndRun(c, w.cache.hashOf(&c.key))
	// The packet is done with (tnl_pop ends its actions); the worker's
	// next frame is extracted by ExtractPort, which wants a key
	// without Geneve options.
	c.key.SetTunOpts(nil)
}
