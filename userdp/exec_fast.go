package userdp

import (
	"sync/atomic"

	"github.com/ovsdp/ovsdp/conntrack"
	"github.com/ovsdp/ovsdp/flowkeys"
	"github.com/ovsdp/ovsdp/internal/header"
	"github.com/ovsdp/ovsdp/odp"
)

// Specialised action programs. Most megaflows a switch installs end in
// one output, after at most a dec_ttl: for those lists the flow also
// carries a fastProg, chosen once when the flow is installed, which
// lookupAndRun executes straight-line instead of interpreting the
// compiled list (run). The fast form is taken only in the state in which
// it does exactly what run would do; in any other (a packet without an
// Ethernet header, a pending trunc or reassembled datagram, a datapath
// with a tunnel port, a TTL about to expire, an IPv4 header not where
// extraction found it) runFast declines before changing anything and run
// executes the list.

// fastKind is the form of a fastProg.
type fastKind uint8

const (
	fastNone         fastKind = iota // no fast form: run interprets the list
	fastOutput                       // output(port)
	fastDecTTLOutput                 // dec_ttl(le_1(...)), output(port)
	fastCTRecirc                     // ct(...), recirc(port): a firewall's first pass
)

// fastProg is the specialised form of a flow's compiled action list.
type fastProg struct {
	kind fastKind
	port uint32            // the output's port; fastCTRecirc's recirculation ID
	ct   *conntrack.Action // fastCTRecirc's ct action
}

// compileFast returns the fast form of the compiled list prog, or one of
// kind fastNone.
func compileFast(prog []op) fastProg {
	switch {
	case len(prog) == 1 && prog[0].kind == opOutput && prog[0].last:
		return fastProg{kind: fastOutput, port: prog[0].a}
	case len(prog) == 2 && prog[0].kind == opDecTTL && prog[1].kind == opOutput && prog[1].last:
		return fastProg{kind: fastDecTTLOutput, port: prog[1].a}
	case len(prog) == 2 && prog[0].kind == opCT && prog[1].kind == opRecirc && prog[1].last:
		return fastProg{kind: fastCTRecirc, port: prog[1].a, ct: prog[0].ct}
	}
	return fastProg{}
}

// newFlowActions returns a flow's actions as given (as) and compiled
// (prog), with prog's fast form.
func newFlowActions(as odp.Actions, prog []op) *flowActions {
	return &flowActions{odp: as, prog: prog, fast: compileFast(prog)}
}

// runFast executes the fast form p of the actions on the packet c, whose
// frame is b (c.f.Bytes()), and reports
// whether it did; when it did not, it changed nothing and the caller runs
// the compiled list. It is run's opDecTTL and opOutput cases for the
// state they are most often in, in the same order and with the same
// effects: the packet is an Ethernet frame (output would drop another
// and count it), no trunc is pending and no reassembled datagram is to
// be fragmented (cutlen), the frame is the receive buffer (steal), and no
// port of the datapath is a tunnel port (output would encapsulate). For
// dec_ttl the IPv4 header is where key extraction found it (l3off, with
// the key's protocol), whole in the frame, with a TTL above 1: run
// handles the other protocols, the errors and the le_1 actions.
func (w *worker) runFast(c *pktCtx, p fastProg, b []byte) bool {
	if c.noEth || c.cutlen != 0 || !c.steal {
		return false
	}
	return w.runFastReceived(c, p, b)
}

// runFastReceived is runFast for a packet in the state process's start
// leaves it in (an Ethernet frame, the receive buffer, no cutlen), which
// it does not test again. It changes nothing that start resets, and no
// key field but IPTTL (pktCtx.clean).
func (w *worker) runFastReceived(c *pktCtx, p fastProg, b []byte) bool {
	if w.tunnelPorts() {
		return false
	}
	if p.kind == fastDecTTLOutput {
		l3 := c.l3off
		if l3 <= 0 || c.proto != header.EtherTypeIPv4 || len(b)-l3 < header.IPv4MinimumSize {
			return false
		}
		ip := header.IPv4(b[l3 : l3+header.IPv4MinimumSize])
		ttl := ip.TTL()
		if ttl <= 1 {
			return false // run's le_1 actions
		}
		ip.SetTTL(ttl - 1)
		ip.SetChecksum(header.DecTTLChecksum(ip.Checksum()))
		if c.keyValid && c.key.IPTTL > 0 {
			c.key.IPTTL--
		}
	}
	if !w.tryQueue(p.port, b) {
		w.output(p.port, b, true)
	}
	return true
}

// runFastStraight is runFastReceived for a packet that flowkeys'
// straight-line path extracted (ExtractPortHashedOver's straight) and
// that only the fast forms ran on since (pktCtx.straight): the receive
// buffer, an untagged Ethernet frame b of 42 bytes or more with an IPv4
// header without options at offset 14 (l3off), no cutlen, its key valid
// with that header's TTL. It makes runFastReceived's
// decisions without testing again what that says.
func (w *worker) runFastStraight(c *pktCtx, p fastProg, b []byte) bool {
	if w.tunnelPorts() || len(b) < header.EthernetMinimumSize+header.IPv4MinimumSize {
		return false // the length never fails (42 bytes or more): it spares the bounds checks below
	}
	if p.kind == fastDecTTLOutput {
		ip := header.IPv4(b[header.EthernetMinimumSize : header.EthernetMinimumSize+header.IPv4MinimumSize])
		ttl := ip.TTL()
		if ttl <= 1 {
			return false // run's le_1 actions
		}
		ip.SetTTL(ttl - 1)
		ip.SetChecksum(header.DecTTLChecksum(ip.Checksum()))
		c.key.IPTTL = ttl - 1 // the key's TTL is the header's
	}
	if !w.tryQueue(p.port, b) {
		w.output(p.port, b, true)
	}
	return true
}

// runCTRecirc executes the fast form fastCTRecirc of f1's actions a on
// the packet c, which f1 answered: run's opCT and opRecirc cases for a
// list of the two, without the interpreter's loop and dispatch, and the
// recirculated lookup through the worker's memo (recirc_memo.go). Unlike
// the output forms it never declines: conntrack and recirculate handle
// every packet state, as they do under run.
func (w *worker) runCTRecirc(c *pktCtx, f1 *megaflow, a *flowActions) {
	// The ct state, the recirculation depth and the headers change, and
	// in the key only what clearKeyCT clears (and with NAT addresses
	// and ports): straight stays.
	c.clean = false
	p := &a.fast
	// Only the ct fields change, unless NAT rewrites the packet or a
	// fragment is reassembled.
	memo := !p.ct.HasNAT && c.key.IPFrag == flowkeys.FragNone
	if err := w.conntrack(c, p.ct); err != nil {
		if err != errCTStolen {
			w.ctDrop(err)
		}
		return
	}
	if c.recirc >= maxRecirc {
		w.counters.recircDrops++
		return
	}
	// The ct action leaves the key valid (conntrack extracts it first
	// when it is not), so recirculate's key test passes at once.
	w.recircFromCT(c, f1, a, memo && w.ctPkt.Rewritten == 0)
}

// tunnelPorts reports whether the datapath has a tunnel port (a port
// that output encapsulates for: tunnelPortOf).
func (w *worker) tunnelPorts() bool { return w.tunnels.Load() != 0 }

// noTunnels is the tunnel-port count of a worker without a datapath.
var noTunnels atomic.Int32
