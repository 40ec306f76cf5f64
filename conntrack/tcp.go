package conntrack

// TCP tracking with the kernel's state machine and window checks
// (net/netfilter/nf_conntrack_proto_tcp.c, Linux 6.1): the transition
// table below is the kernel's tcp_conntracks, and the window rules are
// Guido van Rooij's as the kernel applies them (tcp_in_window).

// TCPState is a TCP connection's state, numbered as the kernel's
// TCP_CONNTRACK_*.
type TCPState uint8

// TCP states.
const (
	TCPNone TCPState = iota
	TCPSynSent
	TCPSynRecv
	TCPEstablished
	TCPFinWait
	TCPCloseWait
	TCPLastAck
	TCPTimeWait
	TCPClose
	TCPSynSent2
)

// tcpStates is the number of TCP states.
const tcpStates = 10 // TCPSynSent2 + 1

// Pseudo-states of the table: invalid, ignore.
const (
	sIV = TCPState(tcpStates)
	sIG = TCPState(tcpStates + 1)
)

var tcpStateNames = [...]string{"NONE", "SYN_SENT", "SYN_RECV", "ESTABLISHED", "FIN_WAIT",
	"CLOSE_WAIT", "LAST_ACK", "TIME_WAIT", "CLOSE", "SYN_SENT2", "INVALID", "IGNORE"}

// String returns the kernel's name of the state.
func (s TCPState) String() string {
	if int(s) < len(tcpStateNames) {
		return tcpStateNames[s]
	}
	return "UNKNOWN"
}

// Segment kinds (the table's rows), the kernel's tcp_bit_set.
const (
	tcpSynSet = iota
	tcpSynAckSet
	tcpFinSet
	tcpAckSet
	tcpRstSet
	tcpNoneSet
)

// Per-direction flags (IP_CT_TCP_FLAG_*).
const (
	tcpFlagWindowScale = 0x01
	tcpFlagSACKPerm    = 0x02
	tcpFlagCloseInit   = 0x04
	tcpFlagBeLiberal   = 0x08
	tcpFlagDataUnack   = 0x10
	tcpFlagMaxAckSet   = 0x20
)

// Flags kept in lastFlags besides the window-scale and SACK bits.
const (
	tcpSimultaneousOpen = 0x04
	tcpExpChallengeAck  = 0x40
)

const tcpMaxWScale = 14

// maxAckWinConst is MAXACKWINCONST.
const maxAckWinConst = 66000

const (
	sNO, sSS, sSR, sES, sFW, sCW, sLA, sTW, sCL, sS2 = TCPNone, TCPSynSent, TCPSynRecv,
		TCPEstablished, TCPFinWait, TCPCloseWait, TCPLastAck, TCPTimeWait, TCPClose, TCPSynSent2
)

// tcpTable[dir][kind][state] is the next state (the kernel's
// tcp_conntracks, Linux 6.1).
var tcpTable = [2][6][tcpStates]TCPState{
	{ // original
		/* syn */ {sSS, sSS, sIG, sIG, sIG, sIG, sIG, sSS, sSS, sS2},
		/* synack */ {sIV, sIV, sSR, sIV, sIV, sIV, sIV, sIV, sIV, sSR},
		/* fin */ {sIV, sIV, sFW, sFW, sLA, sLA, sLA, sTW, sCL, sIV},
		/* ack */ {sES, sIV, sES, sES, sCW, sCW, sTW, sTW, sCL, sIV},
		/* rst */ {sIV, sCL, sCL, sCL, sCL, sCL, sCL, sCL, sCL, sCL},
		/* none */ {sIV, sIV, sIV, sIV, sIV, sIV, sIV, sIV, sIV, sIV},
	},
	{ // reply
		/* syn */ {sIV, sS2, sIV, sIV, sIV, sIV, sIV, sSS, sIV, sS2},
		/* synack */ {sIV, sSR, sIG, sIG, sIG, sIG, sIG, sIG, sIG, sSR},
		/* fin */ {sIV, sIV, sFW, sFW, sLA, sLA, sLA, sTW, sCL, sIV},
		/* ack */ {sIV, sIG, sSR, sES, sCW, sCW, sTW, sTW, sCL, sIG},
		/* rst */ {sIV, sCL, sCL, sCL, sCL, sCL, sCL, sCL, sCL, sCL},
		/* none */ {sIV, sIV, sIV, sIV, sIV, sIV, sIV, sIV, sIV, sIV},
	},
}

// tcpDir is what is known of one direction's sequence space
// (struct ip_ct_tcp_state).
type tcpDir struct {
	end, maxend, maxwin, maxack uint32
	scale, flags                uint8
}

// tcpConn is a connection's TCP state (struct ip_ct_tcp).
type tcpConn struct {
	seen                  [2]tcpDir
	state                 TCPState
	lastDir, lastIndex    uint8
	lastWscale, lastFlags uint8
	retrans               uint8
	lastWin               uint16
	lastSeq, lastAck      uint32
	lastEnd               uint32
}

func tcpIndex(f uint8) int {
	switch {
	case f&TCPRst != 0:
		return tcpRstSet
	case f&TCPSyn != 0:
		if f&TCPAck != 0 {
			return tcpSynAckSet
		}
		return tcpSynSet
	case f&TCPFin != 0:
		return tcpFinSet
	case f&TCPAck != 0:
		return tcpAckSet
	}
	return tcpNoneSet
}

// tcpValidFlags reports whether the flags are a combination the kernel
// accepts (its tcp_valid_flags: PSH, ECE and CWR are always allowed).
func tcpValidFlags(f uint8) bool {
	switch f &^ (TCPEce | TCPCwr | TCPPsh) {
	case TCPSyn, TCPSyn | TCPUrg, TCPSyn | TCPAck, TCPRst, TCPRst | TCPAck,
		TCPFin | TCPAck, TCPFin | TCPAck | TCPUrg, TCPAck, TCPAck | TCPUrg:
		return true
	}
	return false
}

func before(a, b uint32) bool { return int32(a-b) < 0 }
func after(a, b uint32) bool  { return int32(b-a) < 0 }

func segEnd(tp *TCPInfo) uint32 {
	e := tp.Seq + tp.DataLen
	if tp.Flags&TCPSyn != 0 {
		e++
	}
	if tp.Flags&TCPFin != 0 {
		e++
	}
	return e
}

func nonZero(w uint32) uint32 {
	if w == 0 {
		return 1
	}
	return w
}

// options records the sender's window scale and SACK permission from a
// segment with options (tcp_options).
func (d *tcpDir) options(tp *TCPInfo) {
	if !tp.HasOptions {
		return
	}
	d.scale, d.flags = 0, 0
	if tp.SACKPerm {
		d.flags |= tcpFlagSACKPerm
	}
	if tp.HasWScale {
		d.scale = min(tp.WScale, tcpMaxWScale)
		d.flags |= tcpFlagWindowScale
	}
}

// tcpNew sets up a new connection's TCP state from its first segment, or
// reports that the segment cannot start one (tcp_new).
func (t *Tracker) tcpNew(st *tcpConn, tp *TCPInfo) bool {
	ns := tcpTable[dirOrig][tcpIndex(tp.Flags)][TCPNone]
	if ns >= tcpStates {
		return false
	}
	*st = tcpConn{}
	s0 := &st.seen[0]
	s0.end = segEnd(tp)
	s0.maxwin = nonZero(uint32(tp.Window))
	if ns == TCPSynSent {
		s0.maxend = s0.end
		s0.options(tp)
	} else {
		if t.noPickup {
			return false
		}
		// Picked up in the middle: its history is lost; assume SACK
		// and be liberal about the window.
		s0.maxend = s0.end + s0.maxwin
		st.seen[0].flags = tcpFlagSACKPerm | tcpFlagBeLiberal
		st.seen[1].flags = tcpFlagSACKPerm | tcpFlagBeLiberal
	}
	st.lastIndex = tcpNoneSet
	return true
}

// tcpPacket is nf_conntrack_tcp_packet: c's state machine and window
// checks for one segment in direction dir.
func (t *Tracker) tcpPacket(c *conn, dir uint8, p *Packet, now int64, isNew bool) int {
	tp := &p.TCP
	if !tcpValidFlags(tp.Flags) {
		return vInvalid
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	st := &c.tcp
	if isNew && !t.tcpNew(st, tp) {
		return vInvalid
	}
	old := st.state
	index := tcpIndex(tp.Flags)
	ns := tcpTable[dir][index][old]
	other := 1 - dir
	skipWindow := false

	switch ns {
	case TCPSynSent:
		if old < TCPTimeWait {
			break
		}
		// Reopening a closed or aborted connection: delete it and
		// track the SYN again (RFC 1122 TIME-WAIT reuse).
		if (st.seen[dir].flags|st.seen[other].flags)&tcpFlagCloseInit != 0 ||
			(st.lastDir == dir && st.lastIndex == tcpRstSet) {
			return vRepeat
		}
		fallthrough
	case sIG:
		if index == tcpSynAckSet && st.lastIndex == tcpSynSet && st.lastDir != dir && tp.Ack == st.lastEnd {
			// The SYN/ACK answers a SYN we ignored: both ends are in
			// sync and we are not; resync from what we noted.
			old, ns = TCPSynSent, TCPSynRecv
			ld := &st.seen[st.lastDir]
			ld.end, ld.maxend = st.lastEnd, st.lastEnd
			ld.maxwin = nonZero(uint32(st.lastWin))
			ld.scale = st.lastWscale
			st.lastFlags &^= tcpExpChallengeAck
			ld.flags = st.lastFlags
			st.seen[dir] = tcpDir{}
			break
		}
		st.lastIndex, st.lastDir = uint8(index), dir
		st.lastSeq, st.lastEnd, st.lastWin = tp.Seq, segEnd(tp), tp.Window
		if index == tcpSynSet && dir == dirOrig {
			var seen tcpDir
			seen.options(tp)
			st.lastFlags, st.lastWscale = 0, 0
			if seen.flags&tcpFlagWindowScale != 0 {
				st.lastFlags |= tcpFlagWindowScale
				st.lastWscale = seen.scale
			}
			if seen.flags&tcpFlagSACKPerm != 0 {
				st.lastFlags |= tcpFlagSACKPerm
			}
			if old == TCPLastAck {
				st.lastFlags |= tcpExpChallengeAck
			}
		}
		return vAccept // ignored: let through, state unchanged
	case sIV:
		return vInvalid
	case TCPTimeWait:
		if old == TCPLastAck && index == tcpAckSet && st.lastDir != dir &&
			st.lastIndex == tcpSynSet && st.lastFlags&tcpExpChallengeAck != 0 {
			// An RFC 5961 challenge ACK, not the ACK of the last FIN.
			st.lastFlags &^= tcpExpChallengeAck
			return vAccept
		}
	case TCPSynSent2:
		st.lastFlags |= tcpSimultaneousOpen
	case TCPSynRecv:
		if dir == dirReply && index == tcpAckSet && st.lastFlags&tcpSimultaneousOpen != 0 {
			ns = TCPEstablished
		}
	case TCPClose:
		if index != tcpRstSet {
			break
		}
		status := c.status.Load()
		if st.seen[other].flags&tcpFlagMaxAckSet != 0 {
			if before(tp.Seq, st.seen[other].maxack) {
				return vInvalid // RST below what the peer acknowledged
			}
			established := old == TCPEstablished && status&StatusAssured != 0
			if !established || tp.Seq == st.seen[other].maxack {
				break
			}
			if st.lastIndex == tcpAckSet && st.lastDir == dir && tp.Seq == st.lastEnd {
				break // a RST ending a train of data
			}
			ns = old // not an exact RST: keep the state for a challenge ACK
		}
		if ((status&StatusSeenReply != 0 && st.lastIndex == tcpSynSet) ||
			(status&StatusAssured == 0 && st.lastIndex == tcpAckSet)) && tp.Ack == st.lastEnd {
			// RST answering a SYN or ACK we let through: skip the
			// window check, it may acknowledge what we ignored.
			skipWindow = true
		}
	}

	if !skipWindow && !t.tcpInWindow(st, dir, index, tp) {
		return vInvalid
	}
	st.lastIndex, st.lastDir = uint8(index), dir
	st.state = ns
	if old != ns && ns == TCPFinWait {
		st.seen[dir].flags |= tcpFlagCloseInit
	}

	to := &t.to
	timeout := to[toTCP+int(ns)]
	switch {
	case st.retrans >= tcpMaxRetrans && timeout > to[toTCPRetrans]:
		timeout = to[toTCPRetrans]
	case index == tcpRstSet:
		timeout = to[toTCP+int(TCPClose)]
	case (st.seen[0].flags|st.seen[1].flags)&tcpFlagDataUnack != 0 && timeout > to[toTCPUnack]:
		timeout = to[toTCPUnack]
	case st.lastWin == 0 && timeout > to[toTCPRetrans]:
		timeout = to[toTCPRetrans]
	}
	status := c.status.Load()
	if status&StatusSeenReply == 0 {
		if tp.Flags&TCPRst != 0 {
			// The only reply is a RST: no connection to keep.
			return vKill
		}
		if ns == TCPEstablished && timeout > to[toTCPUnack] {
			timeout = to[toTCPUnack] // picked up mid-connection
		}
	} else if status&StatusAssured == 0 && (old == TCPSynRecv || old == TCPEstablished) && ns == TCPEstablished {
		c.status.Or(StatusAssured)
	}
	c.refresh(now + timeout)
	return vAccept
}

// tcpInWindow is tcp_in_window: whether the segment is within what each
// side has announced, updating both sides' windows when it is.
func (t *Tracker) tcpInWindow(st *tcpConn, dir uint8, index int, tp *TCPInfo) bool {
	sender, receiver := &st.seen[dir], &st.seen[1-dir]
	seq, ack := tp.Seq, tp.Ack
	sack := ack
	win := uint32(tp.Window)
	end := segEnd(tp)
	syn, ackf := tp.Flags&TCPSyn != 0, tp.Flags&TCPAck != 0
	if receiver.flags&tcpFlagSACKPerm != 0 && tp.HasSACK && after(tp.SACK, sack) {
		sack = tp.SACK
	}

	if sender.maxwin == 0 {
		if syn {
			// SYN/ACK answering a SYN, or a SYN from the reply side
			// in a simultaneous open.
			sender.end, sender.maxend = end, end
			sender.maxwin = nonZero(win)
			sender.options(tp)
			// RFC 1323: scaling only when both ends offer it.
			if sender.flags&tcpFlagWindowScale == 0 || receiver.flags&tcpFlagWindowScale == 0 {
				sender.scale, receiver.scale = 0, 0
			}
			if !ackf {
				return true
			}
		} else {
			// In the middle of a connection whose history we lost.
			sender.end = end
			sender.maxwin = nonZero(win << sender.scale)
			sender.maxend = end + sender.maxwin
			if receiver.maxwin == 0 {
				receiver.end, receiver.maxend = sack, sack
			} else if sack == receiver.end+1 {
				receiver.end++ // a keepalive's reply
			}
		}
	} else if syn && after(end, sender.end) && (st.state == TCPSynSent || st.state == TCPSynRecv) {
		// RFC 793: a reinitialised TCP uses higher sequence numbers
		// (for SYNs only, as Linux 6.1.8 on: "re-init for syn
		// packets only").
		sender.end, sender.maxend = end, end
		sender.maxwin = nonZero(win)
		sender.options(tp)
	}

	if !ackf {
		ack, sack = receiver.end, receiver.end
	} else if tp.Flags&TCPRst != 0 && ack == 0 {
		ack, sack = receiver.end, receiver.end // broken stacks: RST+ACK with ack 0
	}
	if tp.Flags&TCPRst != 0 && seq == 0 && st.state == TCPSynSent {
		seq, end = sender.end, sender.end // RST answering a SYN
	}

	inRecvWin := receiver.maxwin == 0 || after(end, sender.end-receiver.maxwin-1)
	maxAckWin := max(sender.maxwin, maxAckWinConst)
	if !(before(seq, sender.maxend+1) && inRecvWin && before(sack, receiver.end+1) &&
		after(sack, receiver.end-maxAckWin-1)) {
		return sender.flags&tcpFlagBeLiberal != 0 || t.liberal || t.seqOff.Load()
	}
	if !syn {
		win <<= sender.scale
	}
	if swin := win + (sack - ack); sender.maxwin < swin {
		sender.maxwin = swin
	}
	if after(end, sender.end) {
		sender.end = end
		sender.flags |= tcpFlagDataUnack
	}
	if ackf {
		if sender.flags&tcpFlagMaxAckSet == 0 {
			sender.maxack = ack
			sender.flags |= tcpFlagMaxAckSet
		} else if after(ack, sender.maxack) {
			sender.maxack = ack
		}
	}
	if receiver.maxwin != 0 && after(end, sender.maxend) {
		receiver.maxwin += end - sender.maxend
	}
	if after(sack+win, receiver.maxend-1) {
		receiver.maxend = sack + win
		if win == 0 {
			receiver.maxend++
		}
	}
	if ack == receiver.end {
		receiver.flags &^= tcpFlagDataUnack
	}
	if index == tcpAckSet {
		if st.lastDir == dir && st.lastSeq == seq && st.lastAck == ack && st.lastEnd == end && st.lastWin == tp.Window {
			if st.retrans < 255 {
				st.retrans++
			}
		} else {
			st.lastDir, st.lastSeq, st.lastAck, st.lastEnd, st.lastWin = dir, seq, ack, end, tp.Window
			st.retrans = 0
		}
	}
	return true
}
