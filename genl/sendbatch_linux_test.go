//go:build !genl_stub

package genl

import (
	"errors"
	"iter"
	"testing"

	"github.com/mdlayher/genetlink"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// ackSock is a netlink.Socket that answers every sendmsg with one
// acknowledgement of its last message, as the kernel does for a batch
// whose requests all succeed (sendBatch asks only the last for one),
// and allocates nothing doing it.
type ackSock struct {
	seq uint32
	ack [20]byte // errno 0, then the request's header (unused)
}

func (s *ackSock) Close() error                        { return nil }
func (s *ackSock) Send(m netlink.Message) error        { s.seq = m.Header.Sequence; return nil }
func (s *ackSock) Receive() ([]netlink.Message, error) { return nil, nil }
func (s *ackSock) SendMessages(ms []netlink.Message) error {
	s.seq = ms[len(ms)-1].Header.Sequence
	return nil
}
func (s *ackSock) ReceiveIter() iter.Seq2[netlink.Message, error] {
	return func(yield func(netlink.Message, error) bool) {
		yield(netlink.Message{Header: netlink.Header{Type: netlink.Error, Sequence: s.seq, Length: 36}, Data: s.ack[:]}, nil)
	}
}

// TestSendBatchAllocs: sendBatch's bookkeeping of a batch's answers
// allocates nothing more for a batch of putBatch requests than for one
// (before: a map from sequence numbers, of the batch's size, every call).
func TestSendBatchAllocs(t *testing.T) {
	c := &client{conn: netlink.NewConn(&ackSock{}, 1)}
	allocs := func(n int) float64 {
		msgs := make([]netlink.Message, n)
		idx := make([]int, n)
		for j := range idx {
			msgs[j].Data = []byte{1, 2, 0, 0}
			idx[j] = j
		}
		errs := make([]error, n)
		op := func(int) string { return "op" }
		var err error
		a := testing.AllocsPerRun(100, func() { err = c.sendBatch("batch", msgs, idx, errs, op) })
		if err != nil {
			t.Fatalf("a batch of %d: %v", n, err)
		}
		for i, e := range errs {
			if e != nil {
				t.Fatalf("a batch of %d: request %d: %v", n, i, e)
			}
		}
		return a
	}
	one, many := allocs(1), allocs(putBatch)
	t.Logf("sendBatch allocates %v times for one request, %v for %d", one, many, putBatch)
	if many > one {
		t.Errorf("sendBatch allocates %v times for %d requests, %v for one", many, putBatch, one)
	}
}

// TestBatchIndex: an answer's request is found by its sequence number,
// by its distance from the first when they are consecutive, by looking
// when they are not, and not at all when it is none of them.
func TestBatchIndex(t *testing.T) {
	msgs := func(seqs ...uint32) []netlink.Message {
		var ms []netlink.Message
		for _, s := range seqs {
			ms = append(ms, netlink.Message{Header: netlink.Header{Sequence: s}})
		}
		return ms
	}
	for _, tc := range []struct {
		sent []netlink.Message
		seq  uint32
		want int
	}{
		{msgs(10, 11, 12), 10, 0},
		{msgs(10, 11, 12), 12, 2},
		{msgs(10, 11, 12), 13, -1},
		{msgs(10, 11, 12), 9, -1},
		{msgs(^uint32(0), 0, 1), 1, 2}, // the counter wraps
		{msgs(5, 9, 7), 7, 2},          // not consecutive
		{msgs(5, 9, 7), 6, -1},
		{nil, 1, -1},
	} {
		if got := batchIndex(tc.sent, tc.seq); got != tc.want {
			t.Errorf("batchIndex(%v, %d) = %d, want %d", tc.sent, tc.seq, got, tc.want)
		}
	}
}

// rawClient is a client on a real generic netlink socket, set up for
// sendEncoded's writes, without the Open vSwitch families (the host
// kernel need not have them).
func rawClient(t *testing.T) *client {
	t.Helper()
	conn, err := netlink.Dial(unix.NETLINK_GENERIC, nil)
	if err != nil {
		t.Fatalf("a generic netlink socket: %v", err)
	}
	t.Cleanup(func() { conn.Close() })
	c := &client{conn: conn}
	c.initRaw()
	if c.raw == nil {
		t.Fatal("a real netlink socket without a descriptor")
	}
	return c
}

// encodeBatch encodes generic netlink requests as putFlows and
// executeBatch do, with room for the netlink headers: for each cmd a
// request with that command, version 1, and for CTRL_CMD_GETFAMILY (3)
// the family name "nlctrl".
func encodeBatch(cmds []uint8) ([]byte, [][2]int) {
	var b []byte
	var ends [][2]int
	for _, cmd := range cmds {
		at := len(b)
		b = append(b, make([]byte, nlHdrLen)...)
		b = append(b, cmd, 1, 0, 0)
		if cmd == 3 {
			b = append(b, 11, 0, 2, 0, 'n', 'l', 'c', 't', 'r', 'l', 0) // CTRL_ATTR_FAMILY_NAME
		}
		b = padTo4(b)
		ends = append(ends, [2]int{at, len(b)})
	}
	return b, ends
}

// TestSendEncodedKernel: on a real socket (the kernel's nlctrl family),
// sendEncoded's one write carries every request of the batch, each with
// a header the kernel accepts (length, type, flags, sequence number,
// padding), and each answer goes to its request: CTRL_CMD_GETFAMILY
// requests succeed, and requests with a command nlctrl does not have
// fail with EOPNOTSUPP in their own slots, first, in the middle or
// last. Afterwards the socket is in step for netlink.Conn's own
// requests.
func TestSendEncodedKernel(t *testing.T) {
	c := rawClient(t)
	const good, bad = 3, 0xee
	for _, cmds := range [][]uint8{{good}, {bad}, {good, bad, good}, {bad, good, good, bad}} {
		b, ends := encodeBatch(cmds)
		errs := make([]error, len(cmds))
		idx := make([]int, len(cmds))
		for j := range idx {
			idx[j] = j
		}
		msgs, err := c.sendEncoded("test batch", unix.GENL_ID_CTRL, netlink.Request, b, ends, nil, idx, errs, func(int) string { return "request" })
		if err != nil {
			t.Fatalf("%v: %v", cmds, err)
		}
		if len(msgs) != len(cmds) {
			t.Errorf("%v: %d messages", cmds, len(msgs))
		}
		for j, e := range errs {
			if want := cmds[j] == bad; want != (e != nil) || (want && !errors.Is(e, unix.EOPNOTSUPP)) {
				t.Errorf("%v: request %d: %v", cmds, j, e)
			}
		}
	}
	// netlink.Conn's own request on the same socket is answered as usual.
	if _, err := genetlink.NewConn(c.conn).GetFamily("nlctrl"); err != nil {
		t.Errorf("nlctrl after the batches: %v", err)
	}
}

// TestSendEncodedAllocs: on a real socket, sending a batch through
// sendEncoded allocates no more for putBatch requests than for one
// (before, netlink.Conn.SendMessages marshalled each request into a
// message of its own and appended them all to a growing buffer: a batch
// of 50 allocated 50 times more and more).
func TestSendEncodedAllocs(t *testing.T) {
	c := rawClient(t)
	allocs := func(n int) float64 {
		// NLMSG_NOOP requests: the kernel answers only the last, which
		// asks for an acknowledgement.
		b, ends := encodeBatch(make([]uint8, n))
		errs, idx := make([]error, n), make([]int, n)
		for j := range idx {
			idx[j] = j
		}
		msgs := make([]netlink.Message, 0, n)
		var err error
		a := testing.AllocsPerRun(50, func() {
			msgs, err = c.sendEncoded("test batch", uint16(netlink.Noop), netlink.Request, b, ends, msgs, idx, errs, func(int) string { return "request" })
		})
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	one, many := allocs(1), allocs(putBatch)
	t.Logf("sendEncoded allocates %v times for one request, %v for %d", one, many, putBatch)
	if many > one {
		t.Errorf("sendEncoded allocates %v times for %d requests, %v for one", many, putBatch, one)
	}
}
