package conntrack

import "testing"

// TestTCPSeqCheckOff: with ct-disable-tcp-seq-chk (SetTCPSeqCheck(false))
// a segment far outside the windows, invalid while checking is on, is
// tracked (the windows move on with it); checking on again, one far
// below them is invalid.
func TestTCPSeqCheckOff(t *testing.T) {
	tr, _ := newTestTracker(t, Config{})
	_, s := synRecv(t, tr)
	// The server's segments (which do not complete the handshake).
	far := seg{flags: TCPAck, seq: 5001 + 1<<20, ack: 1001, win: 65535}
	if !tr.TCPSeqCheck() {
		t.Fatal("TCP sequence checking off by default")
	}
	mustState(t, tr, tcpPacket(s, far), Action{}, trkInv)
	tr.SetTCPSeqCheck(false)
	if tr.TCPSeqCheck() {
		t.Fatal("TCP sequence checking still on")
	}
	mustState(t, tr, tcpPacket(s, far), Action{}, trkEstRpl)
	tr.SetTCPSeqCheck(true)
	mustState(t, tr, tcpPacket(s, seg{flags: TCPAck, seq: 5001, ack: 1<<32 - 100000 + 1001, win: 65535}), Action{}, trkInv)
}

// TestEntryBucket: each dumped connection's bucket is within Buckets,
// the table's size (a power of two at least half the maximum: six
// slots a bucket).
func TestEntryBucket(t *testing.T) {
	tr, _ := newTestTracker(t, Config{MaxConns: 20})
	if tr.Buckets() != 16 {
		t.Fatalf("%d buckets, want 16", tr.Buckets())
	}
	for p := uint16(1); p <= 8; p++ {
		mustState(t, tr, &Packet{Tuple: tuple(t, "10.0.0.1", "10.0.0.2", ProtoUDP, p, 53)}, commit, trkNew)
	}
	seen := map[int]bool{}
	tr.Dump(Filter{}, func(e *Entry) error {
		if e.Bucket < 0 || e.Bucket >= tr.Buckets() {
			t.Errorf("bucket %d out of range", e.Bucket)
		}
		seen[e.Bucket] = true
		return nil
	})
	if len(seen) < 2 {
		t.Errorf("8 connections all in %d bucket(s)", len(seen))
	}
}
