package userdp

import (
	"context"
	"encoding/binary"
	"testing"
	"time"

	"github.com/ovsdp/ovsdp/internal/header"
	"github.com/ovsdp/ovsdp/odp"
	"github.com/ovsdp/ovsdp/testenv"
)

// TestNamespacesThroughDatapath connects two namespaces through the
// userspace datapath (each by a veth pair whose host end is a netdev
// port), installs ARP and IPv4 flows in both directions by hand, and
// checks ping, a TCP transfer, and TTL rewriting (set_masked ipv4 and
// dec_ttl) as seen by the receiver, checksum included. Needs root.
func TestNamespacesThroughDatapath(t *testing.T) {
	testenv.RequireRoot(t)
	nsA, nsB := testenv.NewNetns(t), testenv.NewNetns(t)
	va := testenv.NewVeth(t, nil, nsA)
	vb := testenv.NewVeth(t, nil, nsB)
	nsA.AddAddr(t, va.PeerName, "10.77.0.1/24")
	nsB.AddAddr(t, vb.PeerName, "10.77.0.2/24")
	// The veth offloads stay on (TSO, GSO, tx checksumming): the netdev
	// ports segment the senders' super-frames and complete their
	// checksums, as a user's default veth pairs need.

	dpName := testenv.NewName()
	dp, err := New(dpName)
	if err != nil {
		t.Fatalf("New with a local port: %v", err)
	}
	defer dp.Close()
	ctx := context.Background()
	pa, err := dp.AddPort(ctx, odp.PortSpec{Name: va.Name, Type: odp.PortNetdev})
	if err != nil {
		t.Fatal(err)
	}
	pb, err := dp.AddPort(ctx, odp.PortSpec{Name: vb.Name, Type: odp.PortNetdev})
	if err != nil {
		t.Fatal(err)
	}
	ports, _ := dp.Ports(ctx)
	if len(ports) != 3 || ports[0].Number != 0 || ports[0].Name != dpName || ports[0].Type != odp.PortInternal {
		t.Errorf("ports %+v: want the local port 0 and two netdevs", ports)
	}
	put := func(key, acts string, flags odp.PutFlags) {
		t.Helper()
		f := parseFlow(t, key, acts)
		f.Key, f.Mask = odp.AddTCPFlags(f.Key, f.Mask)
		if _, err := dp.PutFlow(ctx, f, flags); err != nil {
			t.Fatalf("put %s %s: %v", key, acts, err)
		}
	}
	in := func(p odp.Port) string { return "in_port(" + itoa(p.Number) + ")," }
	put(in(pa)+anyEth+"eth_type(0x0806),arp(sip=0.0.0.0/0.0.0.0)", itoa(pb.Number), odp.PutCreate)
	put(in(pb)+anyEth+"eth_type(0x0806),arp(sip=0.0.0.0/0.0.0.0)", itoa(pa.Number), odp.PutCreate)
	ipAB := in(pa) + anyEth + "eth_type(0x0800)" + anyIPv4
	put(ipAB, itoa(pb.Number), odp.PutCreate)
	put(in(pb)+anyEth+"eth_type(0x0800)"+anyIPv4, itoa(pa.Number), odp.PutCreate)

	if err := nsA.Ping("10.77.0.2", 10*time.Second); err != nil {
		t.Fatalf("ping through the datapath: %v", err)
	}

	// TCP: 1 MiB from A to B.
	testenv.TCPTransfer(t, nsA, nsB, "10.77.0.2:5001", 1<<20)

	// TTL rewriting, seen by the receiver.
	capB := nsB.Capture(t, vb.PeerName)
	checkTTL := func(want uint8) {
		t.Helper()
		if err := nsA.Ping("10.77.0.2", 10*time.Second); err != nil {
			t.Fatalf("ping: %v", err)
		}
		f, err := capB.WaitFor(5*time.Second, func(f testenv.Frame) bool {
			d := f.Data
			return !f.Outgoing && len(d) >= 34+8 && binary.BigEndian.Uint16(d[12:]) == header.EtherTypeIPv4 &&
				d[14+9] == header.IPProtoICMP && d[34] == 8
		})
		if err != nil {
			t.Fatalf("no echo request captured in B: %v", err)
		}
		if ttl := f.Data[14+8]; ttl != want {
			t.Errorf("receiver saw TTL %d, want %d", ttl, want)
		}
		checkIPv4(t, f.Data, 14)
	}
	put(ipAB, "set(ipv4(ttl=7)),"+itoa(pb.Number), odp.PutModify)
	checkTTL(7)
	put(ipAB, "dec_ttl(le_1(drop)),"+itoa(pb.Number), odp.PutModify)
	checkTTL(63)

	info, _ := dp.Info(ctx)
	if info.Stats.Hit == 0 || info.Stats.Flows != 4 {
		t.Errorf("datapath stats %+v", info.Stats)
	}
}
