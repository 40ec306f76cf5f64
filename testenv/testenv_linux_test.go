package testenv

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
)

func TestNewNameFormat(t *testing.T) {
	seen := map[string]bool{}
	for i := 0; i < 2000; i++ {
		n := NewName()
		if len(n) > 15 {
			t.Fatalf("name %q is %d bytes, longer than IFNAMSIZ-1", n, len(n))
		}
		if seen[n] {
			t.Fatalf("name %q repeated", n)
		}
		seen[n] = true
		pid, ok := ownerPID(n)
		if !ok || pid != os.Getpid() {
			t.Fatalf("ownerPID(%q) = %d, %v; want %d, true", n, pid, ok, os.Getpid())
		}
	}
	for _, bad := range []string{"ovsdp-", "ovsdp-abc", "ovsdp--1", "ovsdp-1-", "ovsdp-1-2-3", "ovsdp-zz!-1", "eth0", "ovsdp-0-1", "ovsdp-br0"} {
		if pid, ok := ownerPID(bad); ok {
			t.Errorf("ownerPID(%q) = %d, true; want not ours", bad, pid)
		}
	}
}

func TestRequireRoot(t *testing.T) {
	// These tests run as root (CI does); RequireRoot must then accept.
	if msg := rootProblem(); msg != "" {
		t.Fatalf("not running with the privileges the namespace tests need: %s", msg)
	}
	RequireRoot(t)
}

// fakeTB records cleanups and turns Fatal into runtime.Goexit, so a test
// can watch a helper fail halfway and then run the cleanups itself.
type fakeTB struct {
	testing.TB
	mu       sync.Mutex
	cleanups []func()
	fatal    string
	errors   []string
}

func (f *fakeTB) Helper() {}
func (f *fakeTB) Cleanup(fn func()) {
	f.mu.Lock()
	f.cleanups = append(f.cleanups, fn)
	f.mu.Unlock()
}
func (f *fakeTB) Fatalf(format string, a ...any) {
	f.fatal = fmt.Sprintf(format, a...)
	runtime.Goexit()
}
func (f *fakeTB) Errorf(format string, a ...any) {
	f.errors = append(f.errors, fmt.Sprintf(format, a...))
}
func (f *fakeTB) runCleanups() {
	for i := len(f.cleanups) - 1; i >= 0; i-- {
		f.cleanups[i]()
	}
}

// runFake runs body with a fakeTB on its own goroutine (so Fatalf can
// Goexit) and then runs the cleanups.
func runFake(t *testing.T, body func(tb testing.TB)) *fakeTB {
	f := &fakeTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		body(f)
	}()
	<-done
	f.runCleanups()
	return f
}

func linkExists(name string) bool {
	_, err := netlink.LinkByName(name)
	return err == nil
}

func nsExists(name string) bool {
	_, err := os.Stat(filepath.Join(netnsDir, name))
	return err == nil
}

func TestFailingHalfwayLeavesNothing(t *testing.T) {
	RequireRoot(t)
	var nsName, vethRoot, vethPeer string
	f := runFake(t, func(tb testing.TB) {
		ns := NewNetns(tb)
		nsName = ns.Name
		v := NewVeth(tb, nil, ns)
		vethRoot, vethPeer = v.Name, v.PeerName
		ns.AddAddr(tb, v.PeerName, "10.9.0.1/24")
		ns.AddAddr(tb, v.PeerName, "not-an-address") // fails: Fatalf
		t.Error("the helper did not stop at the failure")
	})
	if !strings.Contains(f.fatal, "not-an-address") {
		t.Fatalf("expected a fatal error naming the bad address, got %q", f.fatal)
	}
	if len(f.errors) > 0 {
		t.Errorf("cleanup reported errors: %v", f.errors)
	}
	if nsName == "" || vethRoot == "" {
		t.Fatal("helpers did not run")
	}
	if nsExists(nsName) {
		t.Errorf("namespace %s left behind", nsName)
	}
	if linkExists(vethRoot) || linkExists(vethPeer) {
		t.Errorf("veth %s/%s left behind", vethRoot, vethPeer)
	}
}

func TestVethBetweenNamespacesPing(t *testing.T) {
	RequireRoot(t)
	a, b := NewNetns(t), NewNetns(t)
	v := NewVeth(t, a, b)
	if v.NS != a || v.PeerNS != b || v.Index == 0 || v.PeerIndex == 0 {
		t.Fatalf("unexpected veth %+v", v)
	}
	a.AddAddr(t, v.Name, "10.10.0.1/24")
	b.AddAddr(t, v.PeerName, "10.10.0.2/24")
	a.AddAddr(t, v.Name, "fd00:10::1/64")
	b.AddAddr(t, v.PeerName, "fd00:10::2/64")
	if err := a.Ping("10.10.0.2", 5*time.Second); err != nil {
		t.Fatalf("IPv4: %v", err)
	}
	if err := b.Ping("fd00:10::1", 5*time.Second); err != nil {
		t.Fatalf("IPv6: %v", err)
	}
	// The link is in the namespaces, not in ours.
	if linkExists(v.Name) || linkExists(v.PeerName) {
		t.Errorf("veth ends visible in the test's own namespace")
	}
	// Nothing answers an address that is not there.
	if err := a.Ping("10.10.0.3", 700*time.Millisecond); err == nil {
		t.Errorf("ping of an absent address succeeded")
	}
	// Down link: no reply.
	a.LinkDown(t, v.Name)
	if err := a.Ping("10.10.0.2", 700*time.Millisecond); err == nil {
		t.Errorf("ping over a down link succeeded")
	}
}

func TestRoutesThroughARouterNamespace(t *testing.T) {
	RequireRoot(t)
	a, r, c := NewNetns(t), NewNetns(t), NewNetns(t)
	ar := NewVeth(t, a, r)
	rc := NewVeth(t, r, c)
	a.AddAddr(t, ar.Name, "10.21.0.1/24")
	r.AddAddr(t, ar.PeerName, "10.21.0.2/24")
	r.AddAddr(t, rc.Name, "10.22.0.2/24")
	c.AddAddr(t, rc.PeerName, "10.22.0.1/24")
	r.MustRun(t, "sysctl", "-q", "-w", "net.ipv4.ip_forward=1")
	if err := a.Ping("10.22.0.1", 700*time.Millisecond); err == nil {
		t.Fatalf("reached 10.22.0.1 without a route")
	}
	a.AddRoute(t, "10.22.0.0/24", "10.21.0.2", "")
	c.AddRoute(t, "default", "10.22.0.2", rc.PeerName)
	if err := a.Ping("10.22.0.1", 5*time.Second); err != nil {
		t.Fatal(err)
	}
}

func TestRunInsideNamespace(t *testing.T) {
	RequireRoot(t)
	ns := NewNetns(t)
	v := NewVeth(t, nil, ns)
	out := ns.MustRun(t, "ip", "-o", "link", "show")
	if !strings.Contains(out, v.PeerName+"@") || strings.Contains(out, v.Name+"@") {
		t.Fatalf("ip link in namespace %s shows the wrong links:\n%s", ns, out)
	}
	if !strings.Contains(out, ": lo:") || !strings.Contains(out, "UP") {
		t.Fatalf("lo missing or down in %s:\n%s", ns, out)
	}
	if _, err := ns.Run("false"); err == nil {
		t.Fatalf("Run(false) reported success")
	}
	// The root end is ours and up.
	cur := Current(t)
	if l := cur.Link(t, v.Name); l.Attrs().Flags&(1<<0) == 0 {
		t.Fatalf("root end %s is not up: %v", v.Name, l.Attrs().Flags)
	}
}

func ethFrame(dst, src []byte, ethType uint16, payload []byte) []byte {
	f := append(append(append([]byte{}, dst...), src...), byte(ethType>>8), byte(ethType))
	return append(f, payload...)
}

func TestSendAndCaptureFrames(t *testing.T) {
	RequireRoot(t)
	a, b := NewNetns(t), NewNetns(t)
	v := NewVeth(t, a, b)
	a.SetMAC(t, v.Name, "02:00:00:00:0a:01")
	b.SetMAC(t, v.PeerName, "02:00:00:00:0b:01")
	if got := a.MAC(t, v.Name).String(); got != "02:00:00:00:0a:01" {
		t.Fatalf("MAC = %s", got)
	}
	capB := b.Capture(t, v.PeerName)
	capA := a.Capture(t, v.Name)
	payload := bytes.Repeat([]byte{0x5a}, 50)
	binary.BigEndian.PutUint32(payload, 0xfeedf00d)
	frame := ethFrame([]byte{2, 0, 0, 0, 0xb, 1}, []byte{2, 0, 0, 0, 0xa, 1}, 0x88b5, payload)
	a.SendFrame(t, v.Name, frame)
	same := func(f Frame) bool { return bytes.Equal(f.Data, frame) }
	got, err := capB.WaitFor(5*time.Second, same)
	if err != nil {
		t.Fatalf("frame not received on %s: %v", v.PeerName, err)
	}
	if got.Outgoing {
		t.Errorf("received frame marked outgoing")
	}
	out, err := capA.WaitFor(5*time.Second, same)
	if err != nil {
		t.Fatalf("sent frame not seen on %s: %v", v.Name, err)
	}
	if !out.Outgoing {
		t.Errorf("sent frame not marked outgoing (type %d)", out.PacketType)
	}
	// Nothing more of ours arrives.
	if f, err := capB.WaitFor(300*time.Millisecond, same); err == nil {
		t.Errorf("frame received twice: %x", f.Data)
	}
	if err := a.SendFrames(v.Name, []byte{1, 2, 3}); err == nil {
		t.Errorf("sending a 3-byte frame succeeded")
	}
}

func TestStartProcessKilledAtCleanup(t *testing.T) {
	RequireRoot(t)
	var pid int
	runFake(t, func(tb testing.TB) {
		ns := NewNetns(tb)
		cmd := execCommand("sleep", "600")
		ns.Start(tb, cmd)
		pid = cmd.Process.Pid
		// It runs in the namespace.
		link, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", pid))
		if err != nil {
			tb.Fatalf("%v", err)
		}
		st1, _ := os.Stat(fmt.Sprintf("/proc/%d/ns/net", pid))
		st2, _ := os.Stat(ns.Path())
		if !os.SameFile(st1, st2) {
			t.Errorf("process %d is in %s, not in namespace %s", pid, link, ns)
		}
	})
	if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err == nil {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		t.Errorf("process %d still exists after cleanup: %s", pid, b)
	}
}

// deadPID returns a pid with no process.
func deadPID(t *testing.T) int {
	for p := 4000000; p > 100000; p -= 7 {
		if _, err := os.Stat("/proc/" + strconv.Itoa(p)); os.IsNotExist(err) {
			return p
		}
	}
	t.Fatal("no free pid found")
	return 0
}

func TestSweepStale(t *testing.T) {
	RequireRoot(t)
	sweepOnceQuietly() // so that the helpers below do not sweep first
	dead := strconv.FormatInt(int64(deadPID(t)), 36)
	staleLink := NamePrefix + dead + "-1"
	stalePeer := NamePrefix + dead + "-2"
	// A stale veth pair in our namespace, as a crashed run leaves it.
	if err := netlink.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: staleLink}, PeerName: stalePeer}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if l, err := netlink.LinkByName(staleLink); err == nil {
			netlink.LinkDel(l)
		}
	})
	// A stale namespace, made with our own helper and renamed.
	live := NewNetns(t)
	staleNS := NamePrefix + dead + "-3"
	if err := os.WriteFile(filepath.Join(netnsDir, staleNS), nil, 0o444); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(filepath.Join(netnsDir, staleNS)) })
	// An object of a live process (ours) and one of another form stay.
	liveVeth := NewVeth(t, nil, nil)

	removed, err := SweepStale()
	if err != nil {
		t.Fatalf("SweepStale: %v", err)
	}
	joined := strings.Join(removed, ",")
	for _, want := range []string{"link " + staleLink, "netns " + staleNS} {
		if !strings.Contains(joined, want) {
			t.Errorf("SweepStale removed %v, missing %q", removed, want)
		}
	}
	if linkExists(staleLink) || linkExists(stalePeer) {
		t.Errorf("stale veth still there")
	}
	if nsExists(staleNS) {
		t.Errorf("stale namespace still there")
	}
	if !nsExists(live.Name) || !linkExists(liveVeth.Name) || !linkExists(liveVeth.PeerName) {
		t.Errorf("SweepStale removed objects of a live process: %v (ns %s %v, veth %s %v, %s %v)", removed,
			live.Name, nsExists(live.Name), liveVeth.Name, linkExists(liveVeth.Name), liveVeth.PeerName, linkExists(liveVeth.PeerName))
	}
}
