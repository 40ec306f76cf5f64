package crosscheck

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
	"unsafe"

	"github.com/ovsdp/ovsdp/testenv"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// Host is one host of a scenario: a network namespace with one
// interface, the peer of a veth pair whose other end is datapath port
// Port.
type Host struct {
	Name string
	// MAC is the host interface's address.
	MAC string
	// Port is the datapath port number of the pair's other end.
	Port uint32
	// Addrs are CIDR addresses on the interface (IPv4 or IPv6).
	Addrs []string
	// IPv6 enables IPv6 on the interface (without a link-local address,
	// router solicitations, DAD or repeated MLD reports, so that it
	// sends nothing on its own once the settle time is over). Without
	// it IPv6 is disabled and the host is silent.
	IPv6 bool
	// Neigh are static neighbour entries, "IP MAC".
	Neigh [][2]string
}

// liveHost is a host set up for one run.
type liveHost struct {
	Host
	ns      *testenv.Netns
	ifname  string // the host's end
	dpEnd   string // the datapath's end, in the test's namespace
	ifindex int
}

// writeSysctl writes a /proc/sys/net value inside ns.
func writeSysctl(ns *testenv.Netns, path, value string) error {
	return ns.Do(func() error {
		if err := os.WriteFile(filepath.Join("/proc/sys/net", path), []byte(value), 0o644); err != nil {
			return fmt.Errorf("sysctl net/%s=%s in namespace %s: %w", path, value, ns, err)
		}
		return nil
	})
}

// setTxChecksum turns transmit checksum offload on or off (the legacy
// ETHTOOL_STXCSUM ioctl), so that the stack computes full checksums.
func setTxChecksum(ns *testenv.Netns, ifname string, on bool) error {
	return ns.Do(func() error {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		val := struct{ cmd, data uint32 }{cmd: unix.ETHTOOL_STXCSUM}
		if on {
			val.data = 1
		}
		var ifr [40]byte
		copy(ifr[:unix.IFNAMSIZ-1], ifname)
		*(*uintptr)(unsafe.Pointer(&ifr[unix.IFNAMSIZ])) = uintptr(unsafe.Pointer(&val))
		if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(&ifr))); e != 0 {
			return fmt.Errorf("ETHTOOL_STXCSUM on %s in namespace %s: %w", ifname, ns, e)
		}
		return nil
	})
}

// setupHost creates h's namespace and veth pair, configured before the
// links come up so that neither end sends anything unasked.
func setupHost(t testing.TB, h Host) (*liveHost, error) {
	t.Helper()
	cur := testenv.Current(t)
	ns := testenv.NewNetns(t)
	lh := &liveHost{Host: h, ns: ns, ifname: testenv.NewName(), dpEnd: testenv.NewName()}
	link := &netlink.Veth{
		LinkAttrs:     netlink.LinkAttrs{Name: lh.dpEnd, Namespace: netlink.NsFd(cur.NsHandle())},
		PeerName:      lh.ifname,
		PeerNamespace: netlink.NsFd(ns.NsHandle()),
	}
	if err := netlink.LinkAdd(link); err != nil {
		return nil, fmt.Errorf("host %s: creating veth %s/%s: %w", h.Name, lh.dpEnd, lh.ifname, err)
	}
	t.Cleanup(func() {
		if l, err := cur.Handle().LinkByName(lh.dpEnd); err == nil {
			cur.Handle().LinkDel(l)
		}
	})
	steps := []func() error{
		func() error { return writeSysctl(cur, "ipv6/conf/"+lh.dpEnd+"/disable_ipv6", "1") },
		func() error { return writeSysctl(ns, "ipv4/tcp_timestamps", "0") },
		func() error { return writeSysctl(ns, "ipv6/auto_flowlabels", "0") },
		func() error { return setTxChecksum(ns, lh.ifname, false) },
	}
	if len(h.Addrs) > 0 {
		// Slow answers (a loaded machine, an upcall on the first packet)
		// must not make neighbour discovery retry within a scenario.
		steps = append(steps, func() error { return writeSysctl(ns, "ipv4/neigh/"+lh.ifname+"/retrans_time_ms", "10000") })
		if h.IPv6 {
			steps = append(steps, func() error { return writeSysctl(ns, "ipv6/neigh/"+lh.ifname+"/retrans_time_ms", "10000") })
		}
	}
	if h.IPv6 {
		for _, kv := range [][2]string{
			{"addr_gen_mode", "1"}, {"accept_ra", "0"}, {"router_solicitations", "0"},
			{"dad_transmits", "0"}, {"mldv2_unsolicited_report_interval", "1"},
			{"mldv1_unsolicited_report_interval", "1"},
		} {
			kv := kv
			steps = append(steps, func() error { return writeSysctl(ns, "ipv6/conf/"+lh.ifname+"/"+kv[0], kv[1]) })
		}
	} else {
		steps = append(steps, func() error { return writeSysctl(ns, "ipv6/conf/"+lh.ifname+"/disable_ipv6", "1") })
	}
	for _, s := range steps {
		if err := s(); err != nil {
			return nil, fmt.Errorf("host %s: %w", h.Name, err)
		}
	}
	if h.MAC != "" {
		ns.SetMAC(t, lh.ifname, h.MAC)
	}
	for _, a := range h.Addrs {
		ns.AddAddr(t, lh.ifname, a)
	}
	ns.LinkUp(t, lh.ifname)
	// Nor may TCP retransmit a segment that is merely slow: raise the
	// minimum retransmission timeout of the subnet routes.
	for _, a := range h.Addrs {
		_, n, err := net.ParseCIDR(a)
		if err != nil {
			return nil, fmt.Errorf("host %s: address %q: %w", h.Name, a, err)
		}
		fam := "-4"
		if n.IP.To4() == nil {
			fam = "-6"
		}
		if _, err := ns.Run("ip", fam, "route", "replace", n.String(), "dev", lh.ifname, "rto_min", "4s"); err != nil {
			return nil, fmt.Errorf("host %s: %w", h.Name, err)
		}
	}
	cur.LinkUp(t, lh.dpEnd)
	for _, n := range h.Neigh {
		ns.AddNeigh(t, lh.ifname, n[0], n[1])
	}
	lh.ifindex = ns.Index(t, lh.ifname)
	return lh, nil
}
