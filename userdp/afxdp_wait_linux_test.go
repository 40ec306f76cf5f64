package userdp

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestXDPReadWaitNaps: a read that finds the ring empty right after one
// that returned several frames naps and looks again, without waiting on the
// socket (here a pipe that never becomes readable in time: a wait on it
// would block until the test wakes the waiter); a read that finds it
// empty after the nap waits on the socket, without polling the ring,
// until the socket is readable.
func TestXDPReadWaitNaps(t *testing.T) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(p[0])
	defer unix.Close(p[1])
	w, err := newFdWaiter()
	if err != nil {
		t.Fatal(err)
	}
	defer w.close()
	x := &xdpSock{waiter: w, rxBusy: true}

	// After a busy read: one empty look, a nap, then frames.
	calls := 0
	done := make(chan error, 1)
	go func() {
		done <- x.readWait(uintptr(p[0]), func(uintptr) bool {
			calls++
			if calls == 2 { // a read of many frames (an empty one leaves rxBusy)
				x.rxBusy = true
			}
			return calls == 2
		})
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("readWait: %v", err)
		}
	case <-time.After(2 * time.Second):
		w.wake()
		<-done
		t.Fatal("a read right after a busy one waited on the socket instead of napping")
	}
	if calls != 2 || !x.rxBusy {
		t.Fatalf("after a nap: %d reads, busy %v; want 2, true", calls, x.rxBusy)
	}

	// Busy again: empty, nap, empty, then it waits on the socket until
	// it is readable.
	calls = 0
	x.rxBusy = true
	var readable atomic.Bool
	go func() {
		done <- x.readWait(uintptr(p[0]), func(uintptr) bool {
			calls++
			if readable.Load() { // a read of one frame
				x.rxBusy = false
				return true
			}
			return false
		})
	}()
	time.Sleep(100 * time.Millisecond)
	select {
	case err := <-done:
		t.Fatalf("readWait returned (%v) with nothing to read", err)
	default:
	}
	readable.Store(true) // read by the waiting goroutine after the pipe wakes it
	if _, err := unix.Write(p[1], []byte{1}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("readWait: %v", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("readWait not woken by the readable socket")
	}
	if calls != 3 {
		t.Errorf("%d reads for empty, nap, empty, wait, frames: want 3 (no polling of the ring)", calls)
	}

	// Woken for good while napping or waiting: errWaiterClosed.
	x.rxBusy = true
	if err := w.wake(); err != nil {
		t.Fatal(err)
	}
	if err := x.readWait(uintptr(p[0]), func(uintptr) bool { return false }); !errors.Is(err, errWaiterClosed) {
		t.Errorf("readWait on a woken waiter: %v, want errWaiterClosed", err)
	}
}
