package userdp

import (
	"github.com/ovsdp/ovsdp/flowkeys"
	"github.com/ovsdp/ovsdp/internal/header"
)

// tunnelRxLoop is a tunnel port's forwarding goroutine: it reads outer
// packets, decapsulates them (decapTunnel) and looks the inner frames up
// with their tunnel metadata. A packet the kernel would drop is counted
// as the port's rx error; what it decapsulates as received (the inner
// frame's bytes, as the kernel's tunnel devices count).
func (dp *Datapath) tunnelRxLoop(w *worker, p *dpPort, t tunnelOut) {
	if r6 := t.ipv6Reader(); r6 != nil {
		done := make(chan struct{})
		defer func() { <-done }()
		go func() {
			defer close(done)
			dp.tunnelRx(newWorker(dp, dp.opts.cacheEntries), p, t, r6)
		}()
	}
	dp.tunnelRx(w, p, t, p.port)
}

// tunnelRx is the loop of one of a tunnel port's receive sockets, r.
func (dp *Datapath) tunnelRx(w *worker, p *dpPort, t tunnelOut, r Port) {
	st := t.counters()
	cfg := t.tunnelConfig()
	md := flowkeys.Metadata{InPort: p.number}
	dp.readLoop(p, r, w, func(bufs [][]byte, sizes []int, n int) {
		for i := 0; i < n; i++ {
			pkt := bufs[i][DefaultHeadroom : DefaultHeadroom+sizes[i]]
			off, ln, _, err := decapTunnel(pkt, cfg, &md.Tunnel, &w.tunOpts)
			if err != nil {
				st.RxErrors.Add(1)
				continue
			}
			st.rx(1, uint64(ln-header.EthernetMinimumSize)) // from the inner network header, as the kernel
			w.processTunnel(bufs[i], DefaultHeadroom+off, ln, &md)
		}
	})
}

// processTunnel runs a decapsulated frame, at buf[off:off+n], with its
// metadata md (its Geneve options, in w.tunOpts, go to the key).
func (w *worker) processTunnel(buf []byte, off, n int, md *flowkeys.Metadata) {
	c := &w.ctx
	w.start(c, buf, off, n)
	c.straight = false // the general extraction, with tunnel metadata
	if err := flowkeys.Extract(buf[off:off+n], md, &c.key); err != nil {
		w.counters.extractErrors++
		return
	}
	c.l3off = 0
	c.keyValid = true
	c.proto = keyProtocol(&c.key)
	w.lookupAndRun(c, w.cache.hashOf(&c.key))
}
