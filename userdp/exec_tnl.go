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
	// route returns the source address of the route to dst.
	route(dst [4]byte, now time.Time) ([4]byte, error)
	counters() *Counters
	defaultHopLimit() uint8
	localPortRange() (uint16, uint32)
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
	now := w.wallNow()
	src, err := tp.route(ti.dst, now)
	if err != nil && ti.src == ([4]byte{}) {
		st.TxErrors.Add(1)
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
	p := encapParams{src: src, hopLimit: tp.defaultHopLimit(), hash: hash, proto: c.proto, l3: l3, portMin: lo, portMax: hi}
	size := ti.encapOverhead(cfg) + len(frame)
	if size > 65535 {
		st.TxErrors.Add(1)
		return
	}
	buf := w.reserve(n, size)
	if buf == nil {
		return
	}
	w.commit(n, encapTunnel(buf, frame, cfg, ti, &p))
}

// wallNow returns the time for the route cache, read once per batch.
func (w *worker) wallNow() time.Time {
	if w.wallValid {
		return w.wall
	}
	w.wall, w.wallValid = time.Now(), true
	return w.wall
}
