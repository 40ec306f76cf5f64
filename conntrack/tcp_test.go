package conntrack

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// handshake opens a TCP connection client→server through tr (committing
// the SYN) and returns the original tuple.
func handshake(t *testing.T, tr *Tracker) Tuple {
	t.Helper()
	c := tuple(t, "10.0.0.1", "10.0.0.2", ProtoTCP, 40000, 80)
	s := rev(t, c)
	mustState(t, tr, tcpPacket(c, seg{flags: TCPSyn, seq: 1000, win: 65535}), commit, trkNew)
	mustState(t, tr, tcpPacket(s, seg{flags: TCPSyn | TCPAck, seq: 5000, ack: 1001, win: 65535}), commit, trkEstRpl)
	mustState(t, tr, tcpPacket(c, seg{flags: TCPAck, seq: 1001, ack: 5001, win: 65535}), commit, trkEst)
	return c
}

func tcpStateOf(t *testing.T, tr *Tracker, orig Tuple) TCPState {
	t.Helper()
	e, ok := connOf(t, tr, orig, 0)
	if !ok {
		t.Fatalf("no connection %v", orig)
	}
	return e.TCP
}

func TestTCPLifecycle(t *testing.T) {
	tr, clk := newTestTracker(t, Config{})
	c := tuple(t, "10.0.0.1", "10.0.0.2", ProtoTCP, 40000, 80)
	s := rev(t, c)
	steps := []struct {
		from  Tuple
		seg   seg
		state uint8
		tcp   TCPState
		to    time.Duration
	}{
		{c, seg{flags: TCPSyn, seq: 1000, win: 65535}, trkNew, TCPSynSent, 2 * time.Minute},
		{s, seg{flags: TCPSyn | TCPAck, seq: 5000, ack: 1001, win: 65535}, trkEstRpl, TCPSynRecv, 60 * time.Second},
		{c, seg{flags: TCPAck, seq: 1001, ack: 5001, win: 65535}, trkEst, TCPEstablished, 5 * 24 * time.Hour},
		{c, seg{flags: TCPAck | TCPPsh, seq: 1001, ack: 5001, win: 65535, data: 100}, trkEst, TCPEstablished, 5 * time.Minute}, // unacknowledged data
		{s, seg{flags: TCPAck, seq: 5001, ack: 1101, win: 65535}, trkEstRpl, TCPEstablished, 5 * 24 * time.Hour},
		{c, seg{flags: TCPFin | TCPAck, seq: 1101, ack: 5001, win: 65535}, trkEst, TCPFinWait, 2 * time.Minute},
		{s, seg{flags: TCPAck, seq: 5001, ack: 1102, win: 65535}, trkEstRpl, TCPCloseWait, 60 * time.Second},
		{s, seg{flags: TCPFin | TCPAck, seq: 5001, ack: 1102, win: 65535}, trkEstRpl, TCPLastAck, 30 * time.Second},
		{c, seg{flags: TCPAck, seq: 1102, ack: 5002, win: 65535}, trkEst, TCPTimeWait, 2 * time.Minute},
	}
	for i, st := range steps {
		mustState(t, tr, tcpPacket(st.from, st.seg), commit, st.state)
		e, ok := connOf(t, tr, c, 0)
		if !ok {
			t.Fatalf("step %d: connection gone", i)
		}
		if e.TCP != st.tcp {
			t.Errorf("step %d: TCP state %v, want %v", i, e.TCP, st.tcp)
		}
		if got := time.Duration(e.Timeout) * time.Second; got != st.to {
			t.Errorf("step %d (%v): timeout %v, want %v", i, st.tcp, got, st.to)
		}
	}
	if e, _ := connOf(t, tr, c, 0); e.Status&StatusAssured == 0 || e.Status&StatusSeenReply == 0 {
		t.Errorf("status %#x: want assured and seen-reply", e.Status)
	}
	// TIME_WAIT lasts 2 minutes; a new SYN on the closed connection
	// (close was initiated) reopens it as a new connection.
	clk.advance(time.Second)
	mustState(t, tr, tcpPacket(c, seg{flags: TCPSyn, seq: 90000, win: 65535}), commit, trkNew)
	if got := tcpStateOf(t, tr, c); got != TCPSynSent {
		t.Errorf("reopened: %v, want SYN_SENT", got)
	}
}

// TestTCPTransitions runs every (direction, segment kind, state) of the
// kernel's tcp_conntracks table through the tracker on a connection put
// in that state (with liberal windows, so that only the table decides)
// and checks the outcome: the next state, ignored (accepted, state
// kept), or invalid. The expectations are the kernel's table, written out
// from its source comments; the special cases of tcp_packet are noted.
func TestTCPTransitions(t *testing.T) {
	// One line per segment kind, columns sNO sSS sSR sES sFW sCW sLA sTW sCL sS2.
	want := map[string]string{
		"orig syn":     "SS SS IG IG IG IG IG SS SS S2",
		"orig synack":  "IV IV SR IV IV IV IV IV IV SR",
		"orig fin":     "IV IV FW FW LA LA LA TW CL IV",
		"orig ack":     "ES IV ES ES CW CW TW TW CL IV",
		"orig rst":     "IV CL CL CL CL CL CL CL CL CL",
		"orig none":    "IV IV IV IV IV IV IV IV IV IV",
		"reply syn":    "IV S2 IV IV IV IV IV SS IV S2",
		"reply synack": "IV SR IG IG IG IG IG IG IG SR",
		"reply fin":    "IV IV FW FW LA LA LA TW CL IV",
		"reply ack":    "IV IG SR ES CW CW TW TW CL IG",
		"reply rst":    "IV CL CL CL CL CL CL CL CL CL",
		"reply none":   "IV IV IV IV IV IV IV IV IV IV",
	}
	abbrev := map[string]TCPState{"NO": TCPNone, "SS": TCPSynSent, "SR": TCPSynRecv, "ES": TCPEstablished,
		"FW": TCPFinWait, "CW": TCPCloseWait, "LA": TCPLastAck, "TW": TCPTimeWait, "CL": TCPClose, "S2": TCPSynSent2,
		"IV": sIV, "IG": sIG}
	kinds := map[string]uint8{"syn": TCPSyn, "synack": TCPSyn | TCPAck, "fin": TCPFin | TCPAck,
		"ack": TCPAck, "rst": TCPRst, "none": 0}
	n := 0
	for row, cols := range want {
		f := strings.Fields(row)
		dir := uint8(dirOrig)
		if f[0] == "reply" {
			dir = dirReply
		}
		for old, cell := range strings.Fields(cols) {
			if old == int(TCPNone) {
				continue // an existing connection is never in NONE; see TestTCPNew
			}
			exp := abbrev[cell]
			name := fmt.Sprintf("%s/%v", row, TCPState(old))
			t.Run(name, func(t *testing.T) {
				checkTransition(t, dir, kinds[f[1]], TCPState(old), exp)
			})
			n++
		}
	}
	if n != 12*9 {
		t.Fatalf("ran %d transitions, want %d", n, 12*9)
	}
}

func checkTransition(t *testing.T, dir uint8, flags uint8, old, exp TCPState) {
	tr, _ := newTestTracker(t, Config{TCPLiberal: true})
	orig := handshake(t, tr)
	e, _ := tr.tab.find(&orig, 0, tr.now())
	c := e.conn()
	c.mu.Lock()
	c.tcp.state = old
	c.tcp.lastIndex = tcpNoneSet
	c.mu.Unlock()
	from := orig
	if dir == dirReply {
		from = rev(t, orig)
	}
	ack := uint32(5001)
	seq := uint32(1001)
	if dir == dirReply {
		seq, ack = 5001, 1001
	}
	s, err := run(t, tr, tcpPacket(from, seg{flags: flags, seq: seq, ack: ack, win: 65535}), Action{})
	if err != nil {
		t.Fatal(err)
	}
	got := c.tcp.state
	switch {
	case exp == sIV:
		if s.Flags&StateInvalid == 0 {
			t.Fatalf("ct_state %s, state %v: want invalid", stateString(s.Flags), got)
		}
		if got != old {
			t.Fatalf("invalid segment moved the state %v → %v", old, got)
		}
	case exp == sIG || (exp == TCPSynSent && old >= TCPTimeWait):
		// Ignored (tcp_packet: a SYN reopening TIME_WAIT or CLOSE
		// without a close or RST seen is ignored too).
		if s.Flags&StateInvalid != 0 || got != old {
			t.Fatalf("ct_state %s, state %v: want ignored (state %v kept)", stateString(s.Flags), got, old)
		}
	case exp == TCPClose && flags == TCPRst:
		if got != TCPClose {
			t.Fatalf("state %v, want CLOSE", got)
		}
	default:
		if s.Flags&StateInvalid != 0 {
			t.Fatalf("ct_state %s: want a valid transition to %v", stateString(s.Flags), exp)
		}
		if got != exp {
			t.Fatalf("state %v → %v, want %v", old, got, exp)
		}
	}
}

func TestTCPNew(t *testing.T) {
	for _, tc := range []struct {
		flags uint8
		want  uint8
		state TCPState
	}{
		{TCPSyn, trkNew, TCPSynSent},
		{TCPAck, trkNew, TCPEstablished}, // picked up mid-connection
		{TCPSyn | TCPAck, trkInv, 0},
		{TCPFin | TCPAck, trkInv, 0},
		{TCPRst, trkInv, 0},
		{0, trkInv, 0},
		{TCPSyn | TCPFin, trkInv, 0}, // not a valid flag combination
		{TCPSyn | TCPRst, trkInv, 0},
	} {
		tr, _ := newTestTracker(t, Config{})
		c := tuple(t, "10.0.0.1", "10.0.0.2", ProtoTCP, 1, 2)
		mustState(t, tr, tcpPacket(c, seg{flags: tc.flags, seq: 7, win: 100}), commit, tc.want)
		if tc.want == trkInv {
			if tr.Count() != 0 {
				t.Errorf("flags %#x: an invalid first segment was committed", tc.flags)
			}
			continue
		}
		if got := tcpStateOf(t, tr, c); got != tc.state {
			t.Errorf("flags %#x: state %v, want %v", tc.flags, got, tc.state)
		}
	}
	tr, _ := newTestTracker(t, Config{TCPNoPickup: true})
	mustState(t, tr, tcpPacket(tuple(t, "10.0.0.1", "10.0.0.2", ProtoTCP, 1, 2), seg{flags: TCPAck}), commit, trkInv)
}

// synRecv commits a connection 10.0.0.1:40000 → 10.0.0.2:80 with a SYN
// (sequence 1000) and its SYN/ACK (5000), both windows 65535, and
// returns the client's and the server's tuples.
func synRecv(t *testing.T, tr *Tracker) (c, s Tuple) {
	t.Helper()
	c = tuple(t, "10.0.0.1", "10.0.0.2", ProtoTCP, 40000, 80)
	s = rev(t, c)
	mustState(t, tr, tcpPacket(c, seg{flags: TCPSyn, seq: 1000, win: 65535}), commit, trkNew)
	mustState(t, tr, tcpPacket(s, seg{flags: TCPSyn | TCPAck, seq: 5000, ack: 1001, win: 65535}), commit, trkEstRpl)
	return c, s
}

// TestTCPOutOfWindowInvalid: before the connection is established and
// assured, segments outside what each side announced are invalid and
// change nothing; liberal tracking accepts them.
func TestTCPOutOfWindowInvalid(t *testing.T) {
	tr, _ := newTestTracker(t, Config{})
	c, s := synRecv(t, tr)
	for _, tc := range []struct {
		name string
		from Tuple
		seg  seg
	}{
		{"seq over the receiver's window", c, seg{flags: TCPAck, seq: 1001 + 200000, ack: 5001, win: 65535, data: 10}},
		{"seq under the lower bound", c, seg{flags: TCPAck, seq: 1<<32 - 200000 + 1001, ack: 5001, win: 65535, data: 10}},
		{"ack of data never sent", s, seg{flags: TCPAck, seq: 5001, ack: 1001 + 5000, win: 65535}},
		{"ack far below", s, seg{flags: TCPAck, seq: 5001, ack: 1<<32 - 100000 + 1001, win: 65535}},
		// Not a SYN: no re-initialisation of the server's window.
		{"server seq over the client's window", s, seg{flags: TCPAck, seq: 5001 + 1<<20, ack: 1001, win: 65535}},
	} {
		st := mustState(t, tr, tcpPacket(tc.from, tc.seg), Action{}, trkInv)
		if st.HasOrig || st.Mark != 0 {
			t.Errorf("%s: an invalid packet carries connection fields: %+v", tc.name, st)
		}
		if got := tcpStateOf(t, tr, c); got != TCPSynRecv {
			t.Errorf("%s: state %v after an invalid segment", tc.name, got)
		}
	}
	if tr.Stats().Invalid != 5 {
		t.Errorf("invalid counter %d, want 5", tr.Stats().Invalid)
	}
	// In window: the handshake completes.
	mustState(t, tr, tcpPacket(c, seg{flags: TCPAck, seq: 1001, ack: 5001, win: 65535}), Action{}, trkEst)
	// The same segments are accepted when tracking is liberal.
	lib, _ := newTestTracker(t, Config{TCPLiberal: true})
	synRecv(t, lib)
	mustState(t, lib, tcpPacket(c, seg{flags: TCPAck, seq: 1001 + 200000, ack: 5001, win: 65535, data: 10}), Action{}, trkEst)
}

// TestTCPLiberalOnceEstablished: openvswitch makes a committed TCP
// connection's window tracking liberal once it is established and
// assured (checked against the kernel by the crosscheck scenario
// ct-tcp-handshake-out-of-window): out-of-window data then passes, an
// out-of-window RST does not.
func TestTCPLiberalOnceEstablished(t *testing.T) {
	tr, _ := newTestTracker(t, Config{})
	c := handshake(t, tr)
	s := rev(t, c)
	mustState(t, tr, tcpPacket(s, seg{flags: TCPAck, seq: 5001 + 1<<24, ack: 1001, win: 65535, data: 13}), Action{}, trkEstRpl)
	mustState(t, tr, tcpPacket(c, seg{flags: TCPAck, seq: 1001 + 1<<24, ack: 5001, win: 65535, data: 13}), Action{}, trkEst)
	e, _ := connOf(t, tr, c, 0)
	if e.TCPFlagsOrig&tcpFlagBeLiberal == 0 || e.TCPFlagsReply&tcpFlagBeLiberal == 0 || e.Status&statusLiberal != 0 {
		t.Fatalf("flags %#x/%#x status %#x: want both directions liberal (and the internal bit hidden)", e.TCPFlagsOrig, e.TCPFlagsReply, e.Status)
	}
	// Not before the connection is committed: an uncommitted one is
	// tracked strictly.
	un, _ := newTestTracker(t, Config{})
	var st State
	p := tcpPacket(c, seg{flags: TCPAck, seq: 1, ack: 1, win: 100})
	if err := un.Execute(p, &Action{}, &st); err != nil || st.c == nil || st.c.status.Load()&statusLiberal != 0 {
		t.Fatalf("uncommitted pick-up: %v, liberal bit set: %v", err, st.c != nil && st.c.status.Load()&statusLiberal != 0)
	}
}

func TestTCPWindowScale(t *testing.T) {
	// Scaling applies to the segments after the SYNs; the handshake is
	// left unfinished (SYN_RECV) so that the windows are checked
	// strictly (see TestTCPLiberalOnceEstablished).
	c := tuple(t, "10.0.0.1", "10.0.0.2", ProtoTCP, 40000, 80)
	s := rev(t, c)
	for _, tc := range []struct {
		name        string
		serverScale bool
		want        uint8
	}{{"both scale", true, trkEst}, {"only the client offers scaling", false, trkInv}} {
		tr, _ := newTestTracker(t, Config{})
		syn := tcpPacket(c, seg{flags: TCPSyn, seq: 1000, win: 64240})
		syn.TCP.HasOptions, syn.TCP.HasWScale, syn.TCP.WScale = true, true, 7
		mustState(t, tr, syn, commit, trkNew)
		sa := tcpPacket(s, seg{flags: TCPSyn | TCPAck, seq: 5000, ack: 1001, win: 500})
		sa.TCP.HasOptions, sa.TCP.HasWScale, sa.TCP.WScale = true, tc.serverScale, 7
		mustState(t, tr, sa, commit, trkEstRpl)
		// The server's window 500, scaled by 7 when both offered it:
		// 64000 bytes, else 500.
		mustState(t, tr, tcpPacket(s, seg{flags: TCPAck, seq: 5001, ack: 1001, win: 500}), Action{}, trkEstRpl)
		mustState(t, tr, tcpPacket(c, seg{flags: TCPAck, seq: 1001 + 60000, ack: 5001, win: 500, data: 1000}), Action{}, tc.want)
		e, _ := connOf(t, tr, c, 0)
		if tc.serverScale && (e.WScaleOrig != 7 || e.WScaleReply != 7) {
			t.Errorf("%s: window scales %d, %d, want 7, 7", tc.name, e.WScaleOrig, e.WScaleReply)
		}
	}
}

func TestTCPRstWithoutReplyKills(t *testing.T) {
	tr, _ := newTestTracker(t, Config{})
	c := tuple(t, "10.0.0.1", "10.0.0.2", ProtoTCP, 40000, 80)
	mustState(t, tr, tcpPacket(c, seg{flags: TCPSyn, seq: 1000, win: 100}), commit, trkNew)
	// The server refuses: RST+ACK is the only reply.
	mustState(t, tr, tcpPacket(rev(t, c), seg{flags: TCPRst | TCPAck, seq: 0, ack: 1001}), Action{}, trkEstRpl)
	if tr.Count() != 0 {
		t.Fatalf("%d connections after a refused SYN, want 0", tr.Count())
	}
}

func TestTCPSimultaneousOpen(t *testing.T) {
	tr, _ := newTestTracker(t, Config{})
	c := tuple(t, "10.0.0.1", "10.0.0.2", ProtoTCP, 5000, 6000)
	s := rev(t, c)
	mustState(t, tr, tcpPacket(c, seg{flags: TCPSyn, seq: 100, win: 1000}), commit, trkNew)
	for _, st := range []struct {
		from Tuple
		seg  seg
		ct   uint8
		want TCPState
	}{
		{s, seg{flags: TCPSyn, seq: 900, win: 1000}, trkEstRpl, TCPSynSent2},
		{c, seg{flags: TCPSyn | TCPAck, seq: 100, ack: 901, win: 1000}, trkEst, TCPSynRecv},
		{s, seg{flags: TCPAck, seq: 901, ack: 101, win: 1000}, trkEstRpl, TCPEstablished},
	} {
		mustState(t, tr, tcpPacket(st.from, st.seg), Action{}, st.ct)
		if got := tcpStateOf(t, tr, c); got != st.want {
			t.Fatalf("state %v, want %v", got, st.want)
		}
	}
}

func TestTCPIgnoredSYNResync(t *testing.T) {
	// An established entry out of sync: a new SYN in ORIGINAL is
	// ignored, and the server's SYN/ACK answering it resyncs the entry.
	tr, _ := newTestTracker(t, Config{})
	c := handshake(t, tr)
	s := rev(t, c)
	mustState(t, tr, tcpPacket(c, seg{flags: TCPSyn, seq: 777777, win: 1000}), Action{}, trkEst)
	before := tcpStateOf(t, tr, c)
	mustState(t, tr, tcpPacket(s, seg{flags: TCPSyn | TCPAck, seq: 31337, ack: 777778, win: 1000}), Action{}, trkEstRpl)
	if after := tcpStateOf(t, tr, c); before != TCPEstablished || after != TCPSynRecv {
		t.Fatalf("states %v after the ignored SYN and %v after the SYN/ACK, want ESTABLISHED and SYN_RECV", before, after)
	}
	mustState(t, tr, tcpPacket(c, seg{flags: TCPAck, seq: 777778, ack: 31338, win: 1000}), Action{}, trkEst)
}
