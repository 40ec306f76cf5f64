// Package crosscheck plays the same network scenarios through the kernel
// datapath (system@, package genl) and the userspace datapath (netdev@,
// package userdp) and compares what happened: the frames every host
// received (byte for byte, checksums verified), the megaflows installed
// with their statistics, the upcalls with their keys, and for every
// missed packet the key the datapath extracted versus flowkeys.Extract's.
//
// A Scenario is a topology (hosts in network namespaces, each on a veth
// pair whose other end is a datapath port), a datapath setup (explicit
// flows in ovs-dpctl syntax, installed through odp.Datapath like dpctl
// does, or a policy handler that answers upcalls), traffic (from the
// hosts' network stacks or raw frames injected with fixed contents) and a
// Check of what must hold on each datapath on its own. Play runs a
// scenario on one datapath and returns an Observation; Compare renders two
// observations as text and returns a unified diff when they differ.
//
// The kernel datapath exists only where the openvswitch module is loaded
// (on these machines: in the VM of testenv/vmrun), so the cross-check
// tests are kernel tests (TestIntegration*, build tag integration) that
// run both datapaths one after the other inside the same test binary.
package crosscheck
