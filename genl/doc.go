// Package genl is the Linux kernel's Open vSwitch datapath, driven over
// generic netlink: the ovs_datapath, ovs_vport, ovs_flow, ovs_packet,
// ovs_meter and ovs_ct_limit families.
//
// It has two levels. Client is a thin, per-command client in the style of
// mdlayher/ethtool: it resolves each family once and has one method per
// kernel command (NewDatapath, GetVport, PutFlow, DumpFlows, Execute,
// SetMeter, ...). Datapath wraps a Client and one kernel datapath and
// implements odp.Datapath, including feature negotiation and upcall
// sockets.
//
// The reply decoders (DecodeDatapath, DecodeVport, DecodeFlow,
// DecodeUpcall) are plain functions over the bytes that follow the generic
// netlink header, usable and fuzzable on any OS. Everything that opens a
// socket is Linux-only; elsewhere it returns ErrNotSupported.
//
// # Examples
//
// Example (example_linux_test.go; shown by pkgsite and godoc) creates a
// kernel datapath, adds an internal port, opens an upcall socket, puts a
// flow whose action sends IPv4 packets to userspace, transmits an ARP
// request and an IPv4 packet on the port and receives the resulting miss
// and action upcalls. It needs root and the openvswitch module, so go test
// compiles it but does not run it; TestIntegrationExample runs it against
// the kernel (in the VM, see testenv/README.md) and checks its output:
//
//	dp, err := genl.Create("br0")   // or genl.Open for an existing one
//	defer dp.Close()
//	port, err := dp.AddPort(ctx, odp.PortSpec{Name: "br0p", Type: odp.PortInternal})
//	rs, err := dp.Upcalls(ctx, 1)  // upcall sockets
//	_, err = dp.PutFlow(ctx, &odp.Flow{Key: key, Mask: mask, Actions: acts}, odp.PutCreate)
//	n, err := rs[0].Recv(ctx, ups) // misses and userspace actions
package genl
