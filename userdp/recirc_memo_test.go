package userdp

import (
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/ovsdp/ovsdp/odp"
)

// memoFixture is a datapath with the first-pass flow
// in_port(1),udp → ct(commit,zone=1),recirc(1) on capturing ports 1-3,
// and a worker; put installs a recirculated flow (UFID u) and send
// processes a frame, returning the ports it came out of.
type memoFixture struct {
	t     *testing.T
	w     *worker
	ports []*capPort
}

const memoUDP = "eth_type(0x0800),ipv4(proto=17/0xff),udp(src=0/0)"

func newMemoFixture(t *testing.T) *memoFixture {
	dp, err := New("memo", WithoutLocalPort())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dp.Close() })
	m := &memoFixture{t: t, ports: make([]*capPort, 4)}
	for i := 1; i <= 3; i++ {
		m.ports[i] = &capPort{sinkPort: *newSinkPort(fmt.Sprintf("c%d", i))}
		if _, err := dp.AttachPort(m.ports[i], uint32(i)); err != nil {
			t.Fatal(err)
		}
	}
	m.w = newWorker(dp, DefaultCacheEntries)
	m.w.now = dp.nowMs()
	m.put(odp.UFID{0: 1}, "recirc_id(0),in_port(1),"+anyEth+memoUDP, "ct(commit,zone=1),recirc(1)", odp.PutCreate)
	return m
}

func (m *memoFixture) put(u odp.UFID, key, acts string, flags odp.PutFlags) {
	m.t.Helper()
	f := parseFlow(m.t, key, acts)
	f.UFID = u
	if _, err := m.w.dp.PutFlow(m.t.Context(), f, flags); err != nil {
		m.t.Fatalf("put %s → %s: %v", key, acts, err)
	}
}

func (m *memoFixture) del(u odp.UFID) {
	m.t.Helper()
	if _, err := m.w.dp.DelFlow(m.t.Context(), odp.FlowID{UFID: u}); err != nil {
		m.t.Fatal(err)
	}
}

func (m *memoFixture) send(frame []byte) []int {
	buf := make([]byte, BufferSize(1500))
	copy(buf[DefaultHeadroom:], frame)
	m.w.process(buf, DefaultHeadroom, len(frame), 1)
	m.w.flush()
	var out []int
	for i := 1; i <= 3; i++ {
		for range m.ports[i].frames {
			out = append(out, i)
		}
		m.ports[i].frames = nil
	}
	return out
}

func (m *memoFixture) expect(frame []byte, want []int, what string) {
	m.t.Helper()
	if got := m.send(frame); fmt.Sprint(got) != fmt.Sprint(want) {
		m.t.Errorf("%s: out of ports %v, want %v", what, got, want)
	}
}

// TestRecircMemoFlowChanges: the recirculated flow that the memo
// remembers is deleted, replaced, modified and deleted again between
// packets of one connection, and each packet follows the table as it is
// then. It fails without the memo's dead-flow check.
func TestRecircMemoFlowChanges(t *testing.T) {
	m := newMemoFixture(t)
	u2 := odp.UFID{0: 2}
	key2 := "recirc_id(1),in_port(1),ct_state(+trk)," + anyEth + memoUDP
	m.put(u2, key2, "3", odp.PutCreate)
	a := udpFrame(1, 2, 1000)
	m.expect(a, []int{3}, "first packet")
	m.expect(a, []int{3}, "second packet (through the memo)")
	filled := 0
	for i := range m.w.memo {
		if m.w.memo[i].f2 != nil {
			filled++
		}
	}
	if filled == 0 {
		t.Fatal("the memo was not filled")
	}
	m.del(u2)
	m.put(u2, key2, "2", odp.PutCreate) // replaced: a new flow
	m.expect(a, []int{2}, "after the flow was replaced")
	m.expect(a, []int{2}, "the replacement through the memo")
	m.put(u2, key2, "3", odp.PutModify) // the same flow, new actions
	m.expect(a, []int{3}, "after the flow was modified")
	m.del(u2)
	m.expect(a, nil, "after the flow was deleted")
	m.put(odp.UFID{0: 3}, key2, "2", odp.PutCreate)
	m.expect(a, []int{2}, "after another flow was put")
	// The first-pass flow's actions change: a new recirculation ID.
	m.put(odp.UFID{0: 4}, "recirc_id(2),in_port(1),ct_state(+trk),"+anyEth+memoUDP, "1", odp.PutCreate)
	m.put(odp.UFID{0: 1}, "recirc_id(0),in_port(1),"+anyEth+memoUDP, "ct(commit,zone=1),recirc(2)", odp.PutModify)
	m.expect(a, []int{1}, "after the first-pass flow was modified")
	if err := m.w.dp.FlushFlows(t.Context()); err != nil {
		t.Fatal(err)
	}
	m.expect(a, nil, "after a flush")
}

// TestRecircMemoMaskBeyondFirstPass: the recirculated flows match a
// field (the Ethernet source) that the first-pass flow does not, so two
// packets of one connection that differ only there meet different
// flows; with one memo entry for both, each still gets its own. It fails
// without the memo's mask test (subsetOutsideCT).
func TestRecircMemoMaskBeyondFirstPass(t *testing.T) {
	defer func(n int) { recircMemoEntries = n }(recircMemoEntries)
	recircMemoEntries = 1
	m := newMemoFixture(t)
	const rest = "eth_type(0x0800),ipv4(proto=17/0xff),udp(src=0/0)"
	m.put(odp.UFID{0: 2}, "recirc_id(1),in_port(1),ct_state(+trk),eth(src=00:00:00:00:00:01,dst=00:00:00:00:00:00/00:00:00:00:00:00),"+rest, "3", odp.PutCreate)
	m.put(odp.UFID{0: 3}, "recirc_id(1),in_port(1),ct_state(+trk),eth(src=00:00:00:00:00:09,dst=00:00:00:00:00:00/00:00:00:00:00:00),"+rest, "2", odp.PutCreate)
	a := udpFrame(1, 2, 1000)
	b := udpFrame(1, 2, 1000)
	b[11] = 9
	for i := range 3 {
		m.expect(a, []int{3}, fmt.Sprintf("round %d, source :01", i))
		m.expect(b, []int{2}, fmt.Sprintf("round %d, source :09", i))
	}
}

// TestRecircMemoCTStateChanges: the connection's state changes between
// packets (new, then established once answered), and the recirculated
// lookup follows it. It fails without the memo's ct field comparison.
func TestRecircMemoCTStateChanges(t *testing.T) {
	m := newMemoFixture(t)
	m.put(odp.UFID{0: 2}, "recirc_id(1),in_port(1),ct_state(+new+trk),"+anyEth+memoUDP, "3", odp.PutCreate)
	m.put(odp.UFID{0: 3}, "recirc_id(1),in_port(1),ct_state(-new+est+trk),"+anyEth+memoUDP, "2", odp.PutCreate)
	a := udpFrame(1, 2, 1000)
	m.expect(a, []int{3}, "new")
	m.expect(a, []int{3}, "still new")
	reply := udpFrame(2, 1, 2000)
	binary.BigEndian.PutUint16(reply[14+22:], 1000)
	fixIPv4(reply, 14)
	acts, _ := odp.ParseActions("ct(zone=1)")
	if err := m.w.dp.Execute(t.Context(), &odp.Packet{Data: reply, Key: odp.FlowKey{odp.InPort(2)}, Actions: acts}); err != nil {
		t.Fatal(err)
	}
	m.expect(a, []int{2}, "established")
	m.expect(a, []int{2}, "still established")
}
