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
package genl
