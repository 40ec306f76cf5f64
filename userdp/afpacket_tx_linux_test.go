package userdp

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// epollTargets returns the descriptors in any epoll set of the process
// (the "tfd:" lines of /proc/self/fdinfo of its eventpoll descriptors).
func epollTargets(t *testing.T) map[int]bool {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	in := make(map[int]bool)
	for _, e := range ents {
		if l, err := os.Readlink("/proc/self/fd/" + e.Name()); err != nil || l != "anon_inode:[eventpoll]" {
			continue
		}
		info, err := os.ReadFile("/proc/self/fdinfo/" + e.Name())
		if err != nil {
			continue // closed meanwhile
		}
		for _, line := range strings.Split(string(info), "\n") {
			f := strings.Fields(line)
			if len(f) >= 2 && f[0] == "tfd:" {
				if n, err := strconv.Atoi(f[1]); err == nil {
					in[n] = true
				}
			}
		}
	}
	return in
}

// TestNetdevTxSocket: an AF_PACKET port sends on a socket of its own
// that is in no epoll set (openTx says why), while its receiving socket
// is in Go's poller; frames written come out of the peer in order and
// unchanged; after Close the transmit socket is gone and WriteBatch
// fails with ErrPortClosed.
func TestNetdevTxSocket(t *testing.T) {
	for _, mode := range []NetdevMode{NetdevRing, NetdevMmsg} {
		t.Run(mode.String(), func(t *testing.T) {
			p, peer, _ := portPair(t, mode, NetdevMmsg)
			a := afPacketOf(t, p)
			rxFd := -1
			a.rc.Control(func(fd uintptr) { rxFd = int(fd) })
			if a.txFd < 0 || a.txFd == rxFd {
				t.Fatalf("transmit socket %d, receiving socket %d: want one of its own", a.txFd, rxFd)
			}
			in := epollTargets(t)
			if !in[rxFd] {
				t.Fatalf("receiving socket %d in no epoll set (%v): the check cannot tell", rxFd, in)
			}
			if in[a.txFd] {
				t.Fatalf("transmit socket %d is in an epoll set", a.txFd)
			}

			const n = 200
			batch := make([][]byte, 0, 50)
			for i := 0; i < n; i += 50 {
				batch = batch[:0]
				for j := i; j < i+50; j++ {
					batch = append(batch, seqFrame(uint32(j)))
				}
				if sent, err := p.WriteBatch(batch); sent != len(batch) || err != nil {
					t.Fatalf("WriteBatch: %d of %d, %v", sent, len(batch), err)
				}
			}
			bufs := make([][]byte, 64)
			sizes := make([]int, 64)
			for i := range bufs {
				bufs[i] = make([]byte, BufferSize(peer.MTU()))
			}
			next := 0
			for deadline := time.Now().Add(5 * time.Second); next < n && time.Now().Before(deadline); {
				baseOf(peer).file.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
				k, _ := peer.ReadBatch(bufs, sizes, DefaultHeadroom)
				for i := 0; i < k; i++ {
					f := bufs[i][DefaultHeadroom : DefaultHeadroom+sizes[i]]
					if !isSeqFrame(f) {
						continue
					}
					if !bytes.Equal(f, seqFrame(uint32(next))) {
						t.Fatalf("frame %d received: % x, want % x", next, f, seqFrame(uint32(next)))
					}
					next++
				}
			}
			if next != n {
				t.Fatalf("%d of %d frames received", next, n)
			}
			if st := p.Stats(); st.TxPackets != n || st.TxErrors != 0 || st.TxDropped != 0 {
				t.Fatalf("stats %+v: want %d frames sent, no errors or drops", st, n)
			}

			if err := p.Close(); err != nil {
				t.Fatal(err)
			}
			if a.txFd != -1 || a.txWait != nil {
				t.Fatalf("after Close: transmit socket %d, waiter %v", a.txFd, a.txWait)
			}
			if _, err := p.WriteBatch([][]byte{seqFrame(0)}); !errors.Is(err, ErrPortClosed) {
				t.Fatalf("WriteBatch after Close: %v, want ErrPortClosed", err)
			}
		})
	}
}
