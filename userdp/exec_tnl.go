package userdp

import (
	"time"

	"github.com/ovsdp/ovsdp/flowkeys"
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
	// the metadata's destination, when the metadata has none.
	route(ti *tunnelInfo, now time.Time, p *encapParams) error
	counters() *Counters
	defaultHopLimit() uint8
	localPortRange() (uint16, uint32)
	// ipv6Reader returns the reader of outer IPv6 packets, or nil.
	ipv6Reader() Port
}

// tunnelPortOf returns port n if it is a tunnel port.
func (w *worker) tunnelPortOf(n uint32) tunnelOut {
	if w.dp == nil || w.dp.tunnels.Load() == 0 {
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
	if err := tp.route(ti, w.wallNow(), p); err != nil {
		st.TxErrors.Add(1)
		return
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
	w.commit(n, encapTunnel(buf, frame, cfg, ti, p))
}

// wallNow returns the time for the route cache, read once per batch.
func (w *worker) wallNow() time.Time {
	if w.wallValid {
		return w.wall
	}
	w.wall, w.wallValid = time.Now(), true
	return w.wall
}
