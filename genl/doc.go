// Package genl is the Linux kernel's Open vSwitch datapath, driven over
// generic netlink: the ovs_datapath, ovs_vport, ovs_flow, ovs_packet,
// ovs_meter and ovs_ct_limit families.
//
// There is one way to each thing. Create (negotiating the datapath's
// features, or with exactly those of DatapathSpec) and Open return a
// Datapath: one kernel datapath on a socket of its own. It implements
// odp.Datapath (ports, flows, packets, upcall sockets) and has the
// kernel's other per-datapath commands (batched puts, deletes and
// executions, raw dumps, meters, conntrack limits, Delete). Dial returns
// a Client for what is not one datapath's: the families the kernel has,
// the list of datapaths, vport notifications.
//
// As in mdlayher/ethtool, the exported API is written once, in files
// without build tags, over an unexported client: client_linux.go and
// commands_linux.go on Linux, client_others.go (a stub whose every
// method fails with ErrNotSupported, naming the OS) elsewhere. The reply
// decoders (DecodeDatapath, DecodeVport, DecodeFlow, DecodeUpcall) are
// plain functions over the bytes that follow the generic netlink header,
// usable and fuzzable on any OS.
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
//	dp, err := genl.Create(genl.DatapathSpec{Name: "br0"}) // or genl.Open("br0")
//	defer dp.Close()
//	port, err := dp.AddPort(ctx, odp.PortSpec{Name: "br0p", Type: odp.PortInternal})
//	rs, err := dp.Upcalls(ctx, 1)  // upcall sockets
//	_, err = dp.PutFlow(ctx, &odp.Flow{Key: key, Mask: mask, Actions: acts}, odp.PutCreate)
//	n, err := rs[0].Recv(ctx, ups) // misses and userspace actions
package genl
