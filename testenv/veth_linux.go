package testenv

import (
	"testing"

	"github.com/vishvananda/netlink"
)

// Veth is a veth pair: the end Name in namespace NS and the end PeerName in
// PeerNS. Both ends are up.
type Veth struct {
	Name, PeerName   string
	Index, PeerIndex int
	NS, PeerNS       *Netns
}

// NewVeth creates a veth pair with one end in ns and the other in peerNS
// (either may be nil for the process's own namespace, e.g. for the end a
// datapath port attaches to) and sets both ends up. The pair is deleted
// when the test ends.
func NewVeth(t testing.TB, ns, peerNS *Netns) *Veth {
	t.Helper()
	sweepOnceQuietly()
	if ns == nil {
		ns = Current(t)
	}
	if peerNS == nil {
		peerNS = Current(t)
	}
	v := &Veth{Name: NewName(), PeerName: NewName(), NS: ns, PeerNS: peerNS}
	link := &netlink.Veth{
		LinkAttrs:     netlink.LinkAttrs{Name: v.Name, Namespace: netlink.NsFd(ns.handle)},
		PeerName:      v.PeerName,
		PeerNamespace: netlink.NsFd(peerNS.handle),
	}
	// Created from the process's namespace; the kernel places each end.
	if err := netlink.LinkAdd(link); err != nil {
		t.Fatalf("testenv: creating veth pair %s (namespace %s) / %s (namespace %s): %v", v.Name, ns, v.PeerName, peerNS, err)
	}
	t.Cleanup(func() {
		for _, end := range []struct {
			ns   *Netns
			name string
		}{{v.NS, v.Name}, {v.PeerNS, v.PeerName}} {
			l, err := end.ns.nl.LinkByName(end.name)
			if err != nil {
				if isNotFound(err) {
					continue // moved, or gone with its namespace
				}
				t.Errorf("testenv: looking up veth %s in namespace %s: %v", end.name, end.ns, err)
				return
			}
			if err := end.ns.nl.LinkDel(l); err != nil && !isNotFound(err) {
				t.Errorf("testenv: deleting veth %s in namespace %s: %v", end.name, end.ns, err)
			}
			return
		}
	})
	ns.LinkUp(t, v.Name)
	peerNS.LinkUp(t, v.PeerName)
	v.Index = ns.Index(t, v.Name)
	v.PeerIndex = peerNS.Index(t, v.PeerName)
	return v
}
