// Package userdp is a userspace Open vSwitch datapath that behaves like
// the Linux kernel's: the same flow keys (package flowkeys), the same
// megaflow semantics and actions (package odp), the same errors, behind
// the same odp.Datapath interface as the kernel datapath (package genl).
// Use it to forward packets in userspace without the openvswitch module,
// to test flow programming code without root, or to compare with the
// kernel.
//
// A Datapath (New) has ports, each a Port (port.go) of one backend, in a
// file of its own: on an existing network device (odp.PortNetdev,
// OpenNetdev) memory-mapped rings (RingPort, the default: a TPACKET_V2
// slot ring for lone frames and a TPACKET_V3 block ring for streams), recvmmsg
// (MmsgPort) or an AF_XDP socket (XDPPort); a tap device (TapPort:
// odp.PortInternal, and the local port 0 unless WithoutLocalPort); or an
// in-memory pipe (MemPort: PortMemory, no privileges needed; MemoryPeer
// returns its far end); or a tunnel port (odp.PortGeneve, PortVXLAN,
// PortGRE: tunnel.go) on the host's stack, which decapsulates what it
// receives into the key's tunnel metadata as the kernel's tunnel
// devices do and encapsulates with the metadata of set(tunnel(...)) on
// output, over IPv4 or IPv6 (gre: IPv4). Open vSwitch's userspace
// tnl_push and tnl_pop run too (exec_tnl.go). Each port's goroutine reads batches of frames,
// extracts their keys, looks them up (a per-goroutine exact-match cache,
// a per-goroutine second-level cache once the traffic outgrows the first,
// then a tuple-space megaflow table with a keyed hash) and executes the
// flows' actions; misses go to the upcall receivers that Upcalls opens.
// Flows are installed with PutFlow, in the kernel's terms (key, mask,
// actions, UFID).
//
// # Concurrency
//
// A Datapath's methods may be called from any number of goroutines at
// once, while it forwards: flow changes (PutFlow, DelFlow, FlushFlows)
// never stop or slow the forwarding goroutines, whose lookups take no
// lock (table.go says how); port changes publish a new port table the
// same way; Execute runs one packet at a time. Counters and flow
// statistics are updated atomically and read without stopping anything,
// so a snapshot may be a packet behind. Each UpcallReceiver is read by one
// handler goroutine; the forwarding goroutines never block on it (a full
// queue loses the upcall, counted, as the kernel does). A Port has one
// reader and one writer at a time, as the datapath uses it (port.go).
// Close stops every goroutine the Datapath started before it returns.
//
// The ct action runs the datapath's connection tracker (package
// conntrack, the kernel's nf_conntrack semantics; Conntrack returns it):
// the key's ct fields are set after it for the recirculated lookup, and
// NAT rewrites the packet. A flow whose actions are ct(...),recirc(N)
// runs in a fast form, and each forwarding goroutine remembers the flow
// its recirculated packets met, checked as soundly as an exact-match
// cache entry (recirc_memo.go). A port's receive loop runs its frames in
// groups of conntrack.MaxBurst (32), and while a group's firewall ct
// flow (ct(...),recirc(N)) misses the exact-match cache, and so the
// conntrack.ConnCache indexed by the same hash (traffic over many
// connections), it first reads each frame's connection tuple from its
// headers and has the tracker prefetch the lines their lookups will
// read, so that the group's misses to memory overlap; the frames then
// run one by one, in order, with the results they have without it
// (exec_ct_prefetch.go).
//
// # Actions
//
// Every action Linux 6.1's openvswitch module accepts is accepted and
// executed as the kernel executes it (exec*.go; L3 packets without an
// Ethernet header, from pop_eth, add_mpls and push_nsh, in exec_l2.go and
// exec_nsh.go), with the kernel's validation (EINVAL where it says
// EINVAL), except these, refused with an error wrapping
// odp.ErrUnsupported:
//
//   - ct with a helper or a timeout policy: the tracker has no helpers
//     and no timeout policies (package conntrack);
//   - push_nsh with MD type 2 metadata whose length is not a multiple
//     of 4 or exceeds 244 bytes: the kernel pushes a header cut to what
//     its 6-bit length field counts (nothing at all for 248 bytes);
//   - lb_output: the Open vSwitch userspace datapath's balanced bond
//     output; there are no bonds here (and the kernel rejects it);
//   - set(tunnel(...,gtpu(...))): GTP-U metadata is the Open vSwitch
//     userspace datapath's own (the kernel's attribute 16 is
//     IPV4_INFO_BRIDGE, and it rejects the length), and no port here is
//     a GTP-U tunnel.
//
// set(tunnel(...,erspan(...))) is accepted and the metadata kept as the
// kernel keeps it, but no port encapsulates ERSPAN: the kernel has no
// ERSPAN vport type, and an erspan netdevice added as a netdev vport gets
// the metadata only inside the kernel, which an AF_PACKET socket cannot
// carry. Geneve ports size their option field from it, vxlan and gre
// ignore it, as Linux's devices do (tunnel.go).
//
// userspace(tunnel_out_port=P) gives its upcall the egress tunnel key
// (odp.Upcall.EgressTunnel) as the kernel's output_userspace does: the
// packet's set(tunnel) metadata as tunnel port P would send it, with
// the route's source address and the port's UDP ports (exec_tnl.go,
// egressKeyFor); the UDP source port is a flow hash, whose value
// differs from the kernel's (seeded per boot).
//
// Beyond Linux 6.1, which refuses them (EINVAL): tnl_push and tnl_pop
// (Open vSwitch's userspace tunnel actions, exec_tnl.go); psample (Linux 6.11's
// OVS_ACTION_ATTR_PSAMPLE) delivers to PsampleEvents' subscribers; drop
// with a reason other than 0; set
// and set_masked of icmp, icmpv6, arp and nd; hash with the symmetric L4
// algorithm; userspace with PID 0. set(ct_mark) and
// set(ct_label) are accepted and drop every packet, as the kernel's
// execute_masked_set_action fails them; set(nsh) is EINVAL in both forms,
// as Linux 6.1 answers (exec_nsh.go). internal/actsupport is the table of
// one sample flow per action type with both datapaths' answers, which
// the tests check (userdp's TestActionSupportTable, in the VM crosscheck's
// TestIntegrationActionSupport).
//
// # Port backends
//
// A netdev port's option mode= chooses its backend (AddPort; dpctl
// add-if netdev@X IFACE,mode=xdp, upcalld --port IFACE,mode=xdp): ring
// (RingPort, the default), mmsg (MmsgPort) or xdp (XDPPort). Where AF_XDP
// cannot be had (the kernel, the driver, another AF_XDP socket or XDP
// program on the interface) the port falls back to the ring, and its
// option xdp_fallback says why (dpctl add-if prints it, dpctl show shows
// the options).
//
// # Examples
//
// Example (example_test.go; shown by pkgsite and godoc, run by go test)
// creates an in-memory datapath with two ports, puts a flow that rewrites
// the IPv4 TTL and forwards from port 1 to port 2, pushes a frame in and
// reads it out rewritten, then receives a miss upcall for a frame no flow
// matches:
//
//	dp, _ := userdp.New("example", userdp.WithoutLocalPort())
//	dp.AddPort(ctx, odp.PortSpec{Name: "m1", Type: userdp.PortMemory})
//	dp.AddPort(ctx, odp.PortSpec{Name: "m2", Type: userdp.PortMemory})
//	key, mask, _ := odp.ParseMaskedKey("in_port(1),eth(),eth_type(0x0800),ipv4(proto=17,frag=no),udp(dst=53)")
//	acts, _ := odp.ParseActions("set(ipv4(ttl=63)),2")
//	dp.PutFlow(ctx, &odp.Flow{Key: key, Mask: mask, Actions: acts}, odp.PutCreate)
//	dp.MemoryPeer("m1").WriteBatch([][]byte{frame})     // in on port 1
//	n, _ := dp.MemoryPeer("m2").ReadBatch(bufs, sizes, 0) // out of port 2
package userdp
