package testenv

import (
	"bytes"
	"crypto/rand"
	"io"
	"net"
	"testing"
	"time"
)

// TCPTransfer sends n random bytes by TCP from namespace a to a listener
// it opens at addr ("IP:port", IPv4) in namespace b, and fails the test
// unless exactly those bytes arrive (each step within 30 seconds).
func TCPTransfer(t testing.TB, a, b *Netns, addr string, n int) {
	t.Helper()
	data := make([]byte, n)
	rand.Read(data)
	var ln net.Listener
	if err := b.Do(func() (err error) { ln, err = net.Listen("tcp4", addr); return err }); err != nil {
		t.Fatalf("testenv: TCP listen on %s in namespace %s: %v", addr, b, err)
	}
	defer ln.Close()
	got := make(chan []byte, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- nil
			return
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(30 * time.Second))
		d, _ := io.ReadAll(c)
		got <- d
	}()
	var conn net.Conn
	if err := a.Do(func() (err error) {
		conn, err = (&net.Dialer{Timeout: 30 * time.Second}).Dial("tcp4", addr)
		return err
	}); err != nil {
		t.Fatalf("testenv: TCP connect from namespace %s to %s: %v", a, addr, err)
	}
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := conn.Write(data); err != nil {
		t.Fatalf("testenv: TCP write to %s: %v", addr, err)
	}
	conn.Close()
	if d := <-got; !bytes.Equal(d, data) {
		t.Fatalf("testenv: TCP transfer to %s: received %d bytes, want the %d sent", addr, len(d), len(data))
	}
}
