package testenv

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// Netns is a network namespace: one created by NewNetns (deleted when the
// test ends) or the test process's own namespace (Current).
type Netns struct {
	// Name is the namespace's name in /var/run/netns, or "" for the
	// process's own namespace.
	Name   string
	handle netns.NsHandle
	nl     *netlink.Handle
}

// NewNetns creates a named network namespace with its loopback up. It is
// deleted, with everything in it, when the test ends.
func NewNetns(t testing.TB) *Netns {
	t.Helper()
	sweepOnceQuietly()
	if err := prepareNetnsDir(); err != nil {
		t.Fatal(err)
	}
	name := NewName()
	h, err := onNewThread(func() (netns.NsHandle, error) {
		return netns.NewNamed(name)
	})
	if err != nil {
		t.Fatalf("testenv: creating network namespace %s: %v", name, err)
	}
	n := &Netns{Name: name, handle: h}
	t.Cleanup(func() {
		if n.nl != nil {
			n.nl.Close()
		}
		n.handle.Close()
		if err := netns.DeleteNamed(name); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Errorf("testenv: deleting network namespace %s: %v", name, err)
		}
	})
	nl, err := netlink.NewHandleAt(h, unix.NETLINK_ROUTE)
	if err != nil {
		t.Fatalf("testenv: netlink handle in namespace %s: %v", name, err)
	}
	n.nl = nl
	n.LinkUp(t, "lo")
	return n
}

// Current returns the namespace the test process runs in (its initial
// thread's), which is never deleted.
func Current(t testing.TB) *Netns {
	t.Helper()
	if origNSErr != nil {
		t.Fatalf("testenv: the process's network namespace could not be opened at start: %v", origNSErr)
	}
	h, err := netns.GetFromPath(fmt.Sprintf("/proc/self/fd/%d", int(origNS)))
	if err != nil {
		t.Fatalf("testenv: opening the process's network namespace: %v", err)
	}
	nl, err := netlink.NewHandleAt(h, unix.NETLINK_ROUTE)
	if err != nil {
		h.Close()
		t.Fatalf("testenv: netlink handle in the process's namespace: %v", err)
	}
	n := &Netns{handle: h, nl: nl}
	t.Cleanup(func() {
		nl.Close()
		n.handle.Close()
	})
	return n
}

// String returns the namespace name, or "current" for the process's own.
func (n *Netns) String() string {
	if n == nil || n.Name == "" {
		return "current"
	}
	return n.Name
}

// Path returns the namespace's file (for ip netns, nsenter or
// netns.GetFromPath), or /proc/<pid>/ns/net for the process's own.
func (n *Netns) Path() string {
	if n.Name == "" {
		return fmt.Sprintf("/proc/%d/ns/net", os.Getpid())
	}
	return filepath.Join(netnsDir, n.Name)
}

// Handle returns a netlink handle bound to the namespace, for operations
// testenv does not wrap. It is closed when the test ends.
func (n *Netns) Handle() *netlink.Handle { return n.nl }

// NsHandle returns the namespace's file descriptor handle.
func (n *Netns) NsHandle() netns.NsHandle { return n.handle }

// origNS is the network namespace the process started in, opened while
// package initialisation runs on the main thread.
var origNS, origNSErr = netns.Get()

// onNewThread runs fn on an OS thread locked for the purpose. Afterwards
// the thread is put back into the process's original namespace and
// released; if that fails, it stays locked and is discarded, so a
// namespace switch never leaks into other goroutines.
func onNewThread[T any](fn func() (T, error)) (T, error) {
	type result struct {
		v   T
		err error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		v, err := fn()
		if origNSErr == nil {
			if cur, gerr := netns.Get(); gerr == nil {
				same := cur.Equal(origNS)
				cur.Close()
				if same || netns.Set(origNS) == nil {
					runtime.UnlockOSThread()
				}
			}
		}
		ch <- result{v, err}
	}()
	r := <-ch
	return r.v, r.err
}

// Do runs fn with the calling goroutine's work done on an OS thread that
// is inside the namespace: sockets fn opens belong to it, and processes fn
// starts run in it.
func (n *Netns) Do(fn func() error) error {
	_, err := onNewThread(func() (struct{}, error) {
		if err := netns.Set(n.handle); err != nil {
			return struct{}{}, fmt.Errorf("entering network namespace %s: %w", n, err)
		}
		return struct{}{}, fn()
	})
	return err
}

// Run runs a command in the namespace and returns its combined output. It
// gives up after a minute.
func (n *Netns) Run(name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	var out []byte
	err := n.Do(func() error {
		var err error
		out, err = cmd.CombinedOutput()
		return err
	})
	if err != nil {
		return string(out), fmt.Errorf("%s %v in namespace %s: %w: %s", name, args, n, err, out)
	}
	return string(out), nil
}

// MustRun is Run that fails the test on error.
func (n *Netns) MustRun(t testing.TB, name string, args ...string) string {
	t.Helper()
	out, err := n.Run(name, args...)
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	return out
}

// Start starts cmd in the namespace. When the test ends the process is
// killed (if still running) and waited for.
func (n *Netns) Start(t testing.TB, cmd *exec.Cmd) {
	t.Helper()
	if err := n.Do(cmd.Start); err != nil {
		t.Fatalf("testenv: starting %v in namespace %s: %v", cmd.Args, n, err)
	}
	done := make(chan struct{})
	go func() {
		cmd.Wait()
		close(done)
	}()
	t.Cleanup(func() {
		select {
		case <-done:
			return
		default:
		}
		cmd.Process.Signal(syscall.SIGKILL)
		<-done
	})
}

func (n *Netns) link(t testing.TB, name string) netlink.Link {
	t.Helper()
	l, err := n.nl.LinkByName(name)
	if err != nil {
		t.Fatalf("testenv: link %s in namespace %s: %v", name, n, err)
	}
	return l
}

// Link returns the named link in the namespace.
func (n *Netns) Link(t testing.TB, name string) netlink.Link {
	t.Helper()
	return n.link(t, name)
}

// LinkUp sets a link administratively up.
func (n *Netns) LinkUp(t testing.TB, name string) {
	t.Helper()
	if err := n.nl.LinkSetUp(n.link(t, name)); err != nil {
		t.Fatalf("testenv: setting %s up in namespace %s: %v", name, n, err)
	}
}

// LinkDown sets a link administratively down.
func (n *Netns) LinkDown(t testing.TB, name string) {
	t.Helper()
	if err := n.nl.LinkSetDown(n.link(t, name)); err != nil {
		t.Fatalf("testenv: setting %s down in namespace %s: %v", name, n, err)
	}
}

// SetMAC sets a link's hardware address, e.g. "02:00:00:00:00:01".
func (n *Netns) SetMAC(t testing.TB, name, mac string) {
	t.Helper()
	hw, err := net.ParseMAC(mac)
	if err != nil {
		t.Fatalf("testenv: SetMAC %s: %v", name, err)
	}
	if err := n.nl.LinkSetHardwareAddr(n.link(t, name), hw); err != nil {
		t.Fatalf("testenv: setting MAC %s on %s in namespace %s: %v", mac, name, n, err)
	}
}

// SetMTU sets a link's MTU.
func (n *Netns) SetMTU(t testing.TB, name string, mtu int) {
	t.Helper()
	if err := n.nl.LinkSetMTU(n.link(t, name), mtu); err != nil {
		t.Fatalf("testenv: setting MTU %d on %s in namespace %s: %v", mtu, name, n, err)
	}
}

// MAC returns a link's hardware address.
func (n *Netns) MAC(t testing.TB, name string) net.HardwareAddr {
	t.Helper()
	return n.link(t, name).Attrs().HardwareAddr
}

// Index returns a link's interface index.
func (n *Netns) Index(t testing.TB, name string) int {
	t.Helper()
	return n.link(t, name).Attrs().Index
}

// AddAddr adds an address in CIDR form ("10.0.0.1/24", "fd00::1/64") to a
// link, without IPv6 duplicate address detection so it is usable at once.
// It is removed when the test ends (if the link still exists).
func (n *Netns) AddAddr(t testing.TB, link, cidr string) {
	t.Helper()
	a, err := netlink.ParseAddr(cidr)
	if err != nil {
		t.Fatalf("testenv: AddAddr %s: %v", cidr, err)
	}
	if a.IP.To4() == nil {
		a.Flags |= unix.IFA_F_NODAD
	}
	l := n.link(t, link)
	if err := n.nl.AddrAdd(l, a); err != nil {
		t.Fatalf("testenv: adding address %s to %s in namespace %s: %v", cidr, link, n, err)
	}
	t.Cleanup(func() {
		if err := n.nl.AddrDel(l, a); err != nil && !isNotFound(err) {
			t.Errorf("testenv: removing address %s from %s in namespace %s: %v", cidr, link, n, err)
		}
	})
}

// AddRoute adds a route to dst (CIDR, or "default" / "default6") through
// gw (may be "") out of dev (may be "" when gw is given). It is removed when
// the test ends (if still there).
func (n *Netns) AddRoute(t testing.TB, dst, gw, dev string) {
	t.Helper()
	r := &netlink.Route{}
	switch dst {
	case "default":
		_, r.Dst, _ = net.ParseCIDR("0.0.0.0/0")
	case "default6":
		_, r.Dst, _ = net.ParseCIDR("::/0")
	default:
		_, d, err := net.ParseCIDR(dst)
		if err != nil {
			t.Fatalf("testenv: AddRoute destination %q: %v", dst, err)
		}
		r.Dst = d
	}
	if gw != "" {
		r.Gw = net.ParseIP(gw)
		if r.Gw == nil {
			t.Fatalf("testenv: AddRoute gateway %q is not an IP address", gw)
		}
	}
	if dev != "" {
		r.LinkIndex = n.link(t, dev).Attrs().Index
	}
	if gw == "" && dev == "" {
		t.Fatalf("testenv: AddRoute %s: need a gateway or a device", dst)
	}
	if err := n.nl.RouteAdd(r); err != nil {
		t.Fatalf("testenv: adding route %s via %q dev %q in namespace %s: %v", dst, gw, dev, n, err)
	}
	t.Cleanup(func() {
		if err := n.nl.RouteDel(r); err != nil && !isNotFound(err) {
			t.Errorf("testenv: deleting route %s in namespace %s: %v", dst, n, err)
		}
	})
}

// AddNeigh adds a permanent neighbour (ARP/ND) entry, so traffic needs no
// address resolution.
func (n *Netns) AddNeigh(t testing.TB, dev, ip, mac string) {
	t.Helper()
	hw, err := net.ParseMAC(mac)
	if err != nil {
		t.Fatalf("testenv: AddNeigh %s: %v", mac, err)
	}
	addr := net.ParseIP(ip)
	if addr == nil {
		t.Fatalf("testenv: AddNeigh: %q is not an IP address", ip)
	}
	fam := netlink.FAMILY_V6
	if addr.To4() != nil {
		fam = netlink.FAMILY_V4
	}
	ne := &netlink.Neigh{LinkIndex: n.link(t, dev).Attrs().Index, Family: fam, State: netlink.NUD_PERMANENT, IP: addr, HardwareAddr: hw}
	if err := n.nl.NeighSet(ne); err != nil {
		t.Fatalf("testenv: adding neighbour %s %s on %s in namespace %s: %v", ip, mac, dev, n, err)
	}
}

// isNotFound reports whether err says the object is already gone.
func isNotFound(err error) bool {
	var lnf netlink.LinkNotFoundError
	return errors.As(err, &lnf) || errors.Is(err, unix.ENODEV) || errors.Is(err, unix.ENOENT) ||
		errors.Is(err, unix.ESRCH) || errors.Is(err, unix.EADDRNOTAVAIL) || errors.Is(err, os.ErrNotExist)
}
