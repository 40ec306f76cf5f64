//go:build !genl_stub

package genl_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/ovsdp/ovsdp/flowkeys/flowkeystest"
	"github.com/ovsdp/ovsdp/genl"
	"github.com/ovsdp/ovsdp/odp"
)

// Program the kernel datapath: create a datapath, add an internal port,
// open upcall sockets, put a flow that sends IPv4 to userspace with
// userdata, then send two frames into the port: an ARP request, which no
// flow matches (a miss), and an IPv4 packet, which the flow sends up (an
// action upcall). It needs root and the openvswitch module, so it has no
// Output: go test compiles it everywhere and runs it nowhere;
// TestIntegrationExample runs it in the VM and checks what it prints.
func Example() {
	ctx := context.Background()
	dp, err := genl.Create(genl.DatapathSpec{Name: "exampledp"})
	if err != nil {
		fmt.Println("error:", err) // no module, no root, or it exists
		return
	}
	defer dp.Close()
	defer dp.Delete() // a datapath outlives its handle: delete it

	port, err := dp.AddPort(ctx, odp.PortSpec{Name: "exampledp0", Type: odp.PortInternal})
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	fmt.Printf("port %d: %s (%s)\n", port.Number, port.Name, port.Type)

	// Upcall sockets: the kernel sends misses and userspace actions there.
	rs, err := dp.Upcalls(ctx, 1)
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	pid := rs[0].(*genl.UpcallSocket).PID()

	key, mask, err := odp.ParseMaskedKey(fmt.Sprintf("in_port(%d),eth(),eth_type(0x0800),ipv4(frag=no)", port.Number))
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	flow := &odp.Flow{Key: key, Mask: mask, Actions: odp.Actions{odp.Userspace{PID: pid, Userdata: []byte("ipv4")}}}
	if _, err := dp.PutFlow(ctx, flow, odp.PutCreate); err != nil {
		fmt.Println("error:", err)
		return
	}

	// A frame that the host transmits on an internal port enters the
	// datapath on that port.
	arp := append(flowkeystest.Eth(0x0806), flowkeystest.ARP(1, 0x0800, 6, 4, 1)...)
	ip := append(flowkeystest.Eth(0x0800), flowkeystest.IPv4(flowkeystest.IPv4Opts{Proto: 17, TTL: 64}, flowkeystest.UDP(1, 2, nil))...)
	if err := sendOn("exampledp0", arp, ip); err != nil {
		fmt.Println("error:", err)
		return
	}

	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	// Other packets may come up too (IPv6 neighbour discovery from the
	// port, now that it is up): wait for ours.
	got := map[odp.UpcallKind]odp.Upcall{}
	ups := make([]odp.Upcall, 8)
	for len(got) < 2 {
		n, err := rs[0].Recv(rctx, ups)
		if err != nil {
			fmt.Println("error:", err)
			return
		}
		for _, u := range ups[:n] {
			if bytes.Equal(u.Packet, arp) && u.Kind == odp.UpcallMiss || bytes.Equal(u.Packet, ip) && u.Kind == odp.UpcallAction {
				got[u.Kind] = u
			}
		}
	}
	for _, k := range []odp.UpcallKind{odp.UpcallMiss, odp.UpcallAction} {
		u := got[k]
		fmt.Printf("%s on port %d, userdata %q: %s\n", u.Kind, u.Port, u.Userdata, odp.FormatKey(u.Key, nil, false))
	}
	f, err := dp.GetFlow(ctx, odp.FlowID{Key: key})
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	fmt.Printf("flow %s: %d packet\n", odp.FormatKey(f.Key, f.Mask, false), f.Stats.Packets)
}

// sendOn brings the network device name up and transmits frames on it
// through an AF_PACKET socket.
func sendOn(name string, frames ...[]byte) error {
	link, err := netlink.LinkByName(name)
	if err != nil {
		return err
	}
	if err := netlink.LinkSetUp(link); err != nil {
		return fmt.Errorf("%s up: %w", name, err)
	}
	ifi, err := net.InterfaceByName(name)
	if err != nil {
		return err
	}
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("AF_PACKET socket: %w", err)
	}
	defer unix.Close(fd)
	for _, f := range frames {
		if err := unix.Sendto(fd, f, 0, &unix.SockaddrLinklayer{Ifindex: ifi.Index}); err != nil {
			return fmt.Errorf("send on %s: %w", name, err)
		}
	}
	return nil
}
