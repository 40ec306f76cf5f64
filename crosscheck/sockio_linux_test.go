package crosscheck

import (
	"errors"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// loopbackListener listens on 127.0.0.1 with the smallest backlog and
// returns the socket and its address.
func loopbackListener(t *testing.T) (int, *unix.SockaddrInet4) {
	t.Helper()
	lfd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(lfd) })
	if err := unix.Bind(lfd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := unix.Listen(lfd, 0); err != nil {
		t.Fatal(err)
	}
	sa, err := unix.Getsockname(lfd)
	if err != nil {
		t.Fatal(err)
	}
	return lfd, sa.(*unix.SockaddrInet4)
}

// timedSocket is a TCP socket with the send and receive timeouts socketIn
// sets.
func timedSocket(t *testing.T, timeout time.Duration) int {
	t.Helper()
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	tv := unix.NsecToTimeval(timeout.Nanoseconds())
	unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
	unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_SNDTIMEO, &tv)
	return fd
}

// connectInterrupted runs do on a locked thread whose connect blocks (the
// listener's accept queue is full, so loopback drops the SYN until it is
// retransmitted), signals that thread until do returns, and frees the
// queue after the first signals so that the retransmitted SYN succeeds.
func connectInterrupted(t *testing.T, do func(fd int, sa unix.Sockaddr) error) (err error, signals int) {
	t.Helper()
	lfd, sa := loopbackListener(t)
	// Fill the accept queue (backlog 0 holds one connection).
	first := timedSocket(t, 5*time.Second)
	if err := unix.Connect(first, sa); err != nil {
		t.Fatalf("first connect: %v", err)
	}
	fd := timedSocket(t, 5*time.Second)
	tid := make(chan int, 1)
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		tid <- unix.Gettid()
		done <- do(fd, sa)
	}()
	target := <-tid
	var sent atomic.Int32
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case err := <-done:
			return err, int(sent.Load())
		case <-tick.C:
			// SIGURG is what the Go runtime itself uses to preempt a
			// thread; its handler is installed with SA_RESTART.
			unix.Tgkill(unix.Getpid(), target, unix.SIGURG)
			if sent.Add(1) == 10 {
				nfd, _, err := unix.Accept(lfd)
				if err == nil {
					defer unix.Close(nfd)
				}
			}
		case <-timeout:
			t.Fatal("connect did not return in 10 s")
		}
	}
}

// TestConnectSurvivesSignals shows why connect exists: a plain connect(2)
// on a socket with SO_SNDTIMEO fails with EINTR when the thread is
// signalled (this failed TestIntegrationCrosscheck/tcp-ipv6 in CI), and
// connect carries on to the established connection instead.
func TestConnectSurvivesSignals(t *testing.T) {
	err, n := connectInterrupted(t, func(fd int, sa unix.Sockaddr) error {
		return unix.Connect(fd, sa)
	})
	if !errors.Is(err, unix.EINTR) {
		t.Fatalf("plain connect under %d signals returned %v, want EINTR (the test no longer reproduces the failure)", n, err)
	}
	err, n = connectInterrupted(t, func(fd int, sa unix.Sockaddr) error {
		return connect(fd, sa, time.Now().Add(8*time.Second))
	})
	if err != nil {
		t.Fatalf("connect under %d signals: %v", n, err)
	}
}

// TestConnectErrors checks that connect reports a refused connection and
// a missed deadline as errors.
func TestConnectErrors(t *testing.T) {
	lfd, sa := loopbackListener(t)
	unix.Close(lfd) // nothing listens on sa's port any more
	fd := timedSocket(t, time.Second)
	if err := connect(fd, sa, time.Now().Add(time.Second)); !errors.Is(err, unix.ECONNREFUSED) {
		t.Fatalf("connect to a closed port: %v, want ECONNREFUSED", err)
	}
	_, sa2 := loopbackListener(t)
	first := timedSocket(t, time.Second)
	if err := unix.Connect(first, sa2); err != nil {
		t.Fatal(err)
	}
	fd2, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd2)
	if err := connect(fd2, sa2, time.Now().Add(300*time.Millisecond)); !errors.Is(err, unix.ETIMEDOUT) {
		t.Fatalf("connect to a full accept queue: %v, want ETIMEDOUT", err)
	}
}
