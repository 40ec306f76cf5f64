//go:build !genl_stub

package genl

import (
	"iter"
	"testing"

	"github.com/mdlayher/netlink"
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
