// Package statusaddr is the upcall subscription of upcalld's status
// socket (whose address is ctl.StatusSocket), for upcalld itself and for
// the tools that talk to it (dpctl monitor), which cannot import
// upcalld's internal packages.
package statusaddr

// SubscribeUpcalls is the line a client writes on the status socket,
// right after connecting, to receive the daemon's upcalls after its
// status: one JSON Upcall a line, until either side closes.
const SubscribeUpcalls = "subscribe upcalls"

// SubscribePacketIns is the line a client writes instead to receive the
// packet-ins: the upcalls of the rules' controller actions, as Upcalls
// of kind 2 (their Seq numbering the packet-ins), at most at the
// daemon's packet-in rate (upcalld --packet-in-rate, --packet-in-burst).
const SubscribePacketIns = "subscribe packet-ins"

// Upcall is one upcall as the subscription streams it.
type Upcall struct {
	// Seq numbers the upcalls the daemon received, from 1.
	Seq uint64 `json:"seq"`
	// Kind is 1 for a miss, 2 for a userspace action (odp.UpcallKind).
	Kind uint8 `json:"kind"`
	// Port is the datapath port the packet came in on.
	Port uint32 `json:"port"`
	// Key is the flow key the datapath extracted, as netlink attributes
	// (odp.MarshalKey).
	Key []byte `json:"key"`
	// Packet is the packet's bytes.
	Packet []byte `json:"packet"`
	// Userdata is a userspace action's userdata.
	Userdata []byte `json:"userdata,omitempty"`
	// EgressTunKey is the egress tunnel key of a userspace action with
	// tunnel_out_port (odp.Upcall.EgressTunnel; the kernel's
	// OVS_PACKET_ATTR_EGRESS_TUN_KEY), as a flow key holding that one
	// tunnel attribute (odp.MarshalKey of odp.FlowKey{tunnel}); absent
	// when the upcall has none.
	EgressTunKey []byte `json:"egress_tun_key,omitempty"`
	// TimeNS is when the daemon received it (Unix nanoseconds).
	TimeNS int64 `json:"time_ns"`
	// Dropped counts the upcalls this subscriber missed before this one
	// (it read too slowly).
	Dropped uint64 `json:"dropped,omitempty"`
	// RateLimited counts, on the packet-in stream, the packet-ins the
	// daemon's rate limit dropped (for every subscriber) since the one
	// before this.
	RateLimited uint64 `json:"rate_limited,omitempty"`
}
