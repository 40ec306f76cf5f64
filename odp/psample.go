package odp

import "context"

// PsampleEvent is one packet sample a psample action sent
// (OVS_ACTION_ATTR_PSAMPLE): in the kernel, a PSAMPLE_CMD_SAMPLE message
// of the psample generic netlink family's "packets" multicast group.
type PsampleEvent struct {
	// Group is PSAMPLE_ATTR_SAMPLE_GROUP, the action's group.
	Group uint32 `json:"group"`
	// Rate is PSAMPLE_ATTR_SAMPLE_RATE: the enclosing sample action's
	// probability (of 2^32-1), all ones outside one.
	Rate uint32 `json:"rate"`
	// InPort is the datapath port the packet came in on (the kernel
	// sends its ifindex, PSAMPLE_ATTR_IIFINDEX, instead).
	InPort uint32 `json:"in_port"`
	// OrigSize is PSAMPLE_ATTR_ORIGSIZE, the packet's length before a
	// trunc cut it.
	OrigSize uint32 `json:"orig_size"`
	// Cookie is PSAMPLE_ATTR_USER_COOKIE, the action's cookie (nil for
	// none).
	Cookie []byte `json:"cookie,omitempty"`
	// Data is PSAMPLE_ATTR_DATA, the packet as a trunc before the action
	// cut it.
	Data []byte `json:"data,omitempty"`
}

// Psampler is a datapath whose psample actions can be listened to.
type Psampler interface {
	// PsampleEvents delivers the samples of every psample action until
	// ctx is done or the datapath closes, when the channel is closed.
	PsampleEvents(ctx context.Context) (<-chan PsampleEvent, error)
}
