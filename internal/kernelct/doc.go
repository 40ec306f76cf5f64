// Package kernelct reads and changes the Linux kernel's connection
// tracking table (nf_conntrack, which the openvswitch module's ct action
// uses) in the terms of package odp: it implements odp.Conntracker for
// the kernel datapath, as Open vSwitch's lib/netlink-conntrack.c does for
// ovs-dpctl.
//
// Entries, flushes and statistics go over ctnetlink through
// github.com/ti-mo/conntrack; the maximum number of connections is the
// nf_conntrack_max sysctl under /proc/sys/net/netfilter. The kernel's
// table belongs to a network namespace, not to a datapath: a Tracker sees
// every connection of the namespace it was opened in.
package kernelct
