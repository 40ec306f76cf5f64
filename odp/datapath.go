package odp

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// UFID is a unique flow identifier (OVS_FLOW_ATTR_UFID), 128 bits. Open
// vSwitch prints it as "ufid:" followed by a UUID.
type UFID [16]byte

// IsZero reports whether u is all zero (no UFID).
func (u UFID) IsZero() bool { return u == UFID{} }

// String formats u as Open vSwitch does: "ufid:xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx".
// Open vSwitch treats the 16 bytes as four host-order 32-bit words
// (struct uuid) and prints word 0, the halves of words 1 and 2, and word 3;
// the kernel stores the bytes unchanged.
func (u UFID) String() string {
	w := func(i int) uint32 { return binary.NativeEndian.Uint32(u[4*i:]) }
	return fmt.Sprintf("ufid:%08x-%04x-%04x-%04x-%04x%08x",
		w(0), w(1)>>16, w(1)&0xffff, w(2)>>16, w(2)&0xffff, w(3))
}

// ParseUFID parses "ufid:UUID" (the "ufid:" prefix is optional), the
// inverse of UFID.String.
func ParseUFID(s string) (UFID, error) {
	var u UFID
	t := strings.TrimPrefix(s, "ufid:")
	if len(t) != 36 || t[8] != '-' || t[13] != '-' || t[18] != '-' || t[23] != '-' {
		return u, fmt.Errorf("odp: bad UFID %q: want xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", s)
	}
	h := t[0:8] + t[9:13] + t[14:18] + t[19:23] + t[24:36]
	var raw [16]byte
	if _, err := hex.Decode(raw[:], []byte(h)); err != nil {
		return u, fmt.Errorf("odp: bad UFID %q: %w", s, err)
	}
	for i := 0; i < 4; i++ {
		binary.NativeEndian.PutUint32(u[4*i:], binary.BigEndian.Uint32(raw[4*i:]))
	}
	return u, nil
}

// FlowStats are a flow's counters as the kernel reports them.
type FlowStats struct {
	Packets uint64
	Bytes   uint64
	// Used is when the flow last matched a packet, in milliseconds of the
	// system's monotonic clock (CLOCK_MONOTONIC, as the kernel's
	// OVS_FLOW_ATTR_USED); zero if never.
	Used uint64
	// TCPFlags is the OR of the TCP flags seen (OVS_FLOW_ATTR_TCP_FLAGS).
	TCPFlags uint16
}

// Flow is a datapath flow: its match (key and mask), actions, identifier
// and statistics.
type Flow struct {
	// UFID identifies the flow; zero means none (the key identifies it).
	UFID UFID
	// Key is the flow key; Mask its mask (nil: exact match).
	Key  FlowKey
	Mask FlowKey
	// Actions are executed on every packet that matches.
	Actions Actions
	// Stats are filled in by Get, Dump and Del.
	Stats FlowStats
}

// PutFlags select how PutFlow behaves, as OVS_FLOW_CMD_NEW/SET with
// NLM_F_CREATE do in the kernel.
type PutFlags uint8

// The PutFlow modes.
const (
	// PutCreate creates a new flow; it fails with ErrExist if one with the
	// same key (or UFID) exists.
	PutCreate PutFlags = 1 << iota
	// PutModify replaces the actions of an existing flow; it fails with
	// ErrNotExist if there is none.
	PutModify
	// PutZeroStats clears the statistics of a modified flow.
	PutZeroStats
)

// FlowID names one flow: by UFID when UFID is not zero, else by Key.
type FlowID struct {
	UFID UFID
	Key  FlowKey
}

// DumpOptions control a flow dump.
type DumpOptions struct {
	// Terse asks for UFIDs and statistics only (the kernel's UFID flags
	// OMIT_KEY, OMIT_MASK and OMIT_ACTIONS).
	Terse bool
}

// PortType is a datapath port type.
type PortType string

// Port types, as ovs-dpctl names them.
const (
	PortNetdev   PortType = "netdev"
	PortInternal PortType = "internal"
	PortVXLAN    PortType = "vxlan"
	PortGeneve   PortType = "geneve"
	PortGRE      PortType = "gre"
	PortTap      PortType = "tap"
)

// PortStats are per-port counters, as the kernel's struct
// ovs_vport_stats.
type PortStats struct {
	RxPackets, TxPackets uint64
	RxBytes, TxBytes     uint64
	RxErrors, TxErrors   uint64
	RxDropped, TxDropped uint64
}

// Port is a datapath port.
type Port struct {
	Number uint32
	Name   string
	Type   PortType
	// Options are type-specific settings, e.g. "dst_port" for tunnels.
	Options map[string]string
	Stats   PortStats
}

// PortSpec describes a port to add. Number 0 lets the datapath choose
// (the local port 0 exists from the start).
type PortSpec struct {
	Name    string
	Type    PortType
	Number  uint32
	Options map[string]string
}

// DatapathStats are a datapath's counters, as the kernel's
// struct ovs_dp_stats and struct ovs_dp_megaflow_stats.
type DatapathStats struct {
	Hit, Missed, Lost, Flows uint64
	MaskHits                 uint64
	Masks                    uint32
	CacheHits                uint64
}

// DatapathInfo describes a datapath.
type DatapathInfo struct {
	Name  string
	Index int // the kernel's ifindex of the local port, 0 for userspace
	Stats DatapathStats
	// Features are the OVS_DP_F_* user features in use.
	Features uint32
	// UpcallMode is "per-cpu" or "per-vport".
	UpcallMode string
	// MasksCacheSize is the number of entries of the mask cache.
	MasksCacheSize uint32
	// FlowLimit is the most flows the datapath accepts (a userspace
	// datapath's cap, userdp.WithFlowLimit); 0 means no cap (the
	// kernel's datapath has none).
	FlowLimit uint64 `json:",omitempty"`
}

// Packet is a packet to execute on a datapath.
type Packet struct {
	Data []byte
	// Key holds the packet's metadata (in_port, priority, skb_mark,
	// tunnel, ...); the datapath extracts the rest from Data.
	Key     FlowKey
	Actions Actions
	// MRU, when non-zero, is the maximum receive unit for reassembled
	// fragments (OVS_PACKET_ATTR_MRU).
	MRU uint16
	// Hash, when non-zero, is the packet's skb hash (OVS_PACKET_ATTR_HASH).
	Hash uint64
	// Probe suppresses error logging in the kernel (OVS_PACKET_ATTR_PROBE).
	Probe bool
	// UpcallPID, when non-zero, is the netlink port that upcalls made
	// while executing the packet (a userspace action) go to, in place of
	// the datapath's, the vport's and per-CPU dispatch's
	// (OVS_PACKET_ATTR_UPCALL_PID, added in 2025, Linux 6.17; genl
	// refuses it with errors.ErrUnsupported on an older kernel, which would
	// ignore it). Only the kernel datapath has netlink ports: the
	// userspace datapath refuses a packet that sets it.
	UpcallPID uint32
}

// UpcallKind tells why a packet came up to userspace.
type UpcallKind uint8

// Upcall kinds, as OVS_PACKET_CMD_MISS and OVS_PACKET_CMD_ACTION.
const (
	UpcallMiss   UpcallKind = 1
	UpcallAction UpcallKind = 2
)

// String returns "miss" or "action".
func (k UpcallKind) String() string {
	if s, ok := upcallKindNames[k]; ok {
		return s
	}
	return fmt.Sprintf("upcall%d", uint8(k))
}

var upcallKindNames = map[UpcallKind]string{UpcallMiss: "miss", UpcallAction: "action"}

// Upcall is a packet sent to userspace: a miss, or a userspace action.
type Upcall struct {
	Kind UpcallKind
	// Port is the datapath port the packet came in on.
	Port uint32
	// Key is the flow key the datapath extracted from the packet.
	Key FlowKey
	// Packet is the packet's bytes.
	Packet []byte
	// Userdata is the userspace action's userdata (Kind == UpcallAction).
	Userdata []byte
	// Actions are the flow's actions, when the userspace action asked
	// for them.
	Actions Actions
	// MRU is the maximum receive unit of a reassembled packet, or 0.
	MRU uint16
	// Hash is the packet's hash, or 0.
	Hash uint64
	// EgressTunnel is the egress tunnel key of a userspace action with
	// tunnel_out_port=P (OVS_PACKET_ATTR_EGRESS_TUN_KEY): the metadata
	// of the packet's last set(tunnel) as tunnel port P fills it in
	// before sending (the kernel's dev_fill_metadata_dst): the source
	// address of the route when set(tunnel) gave none, and the UDP
	// ports that port would use. nil when the action has no
	// tunnel_out_port, P is not a tunnel port, the packet had no
	// set(tunnel), or P could not send it (no route; IPv6 metadata on
	// a GRE port). The UDP source port is the flow hash scaled into the
	// port's range, and the kernel's hash is seeded per boot, so it
	// differs between the datapaths as dp_hash does.
	EgressTunnel *Tunnel
}

// UpcallReceiver receives upcalls for one handler.
type UpcallReceiver interface {
	// Recv fills ups with up to len(ups) upcalls, blocking until at least
	// one arrives or ctx is done. It returns how many it filled.
	Recv(ctx context.Context, ups []Upcall) (int, error)
	// Close stops receiving.
	Close() error
}

// Datapath is a datapath: the kernel's (package genl) or the userspace
// one (package userdp). Code above them uses only this interface.
type Datapath interface {
	// Name is the datapath's name without its type ("br0").
	Name() string
	// Type is "system" (the kernel) or "netdev" (userspace).
	Type() string
	// Info returns the datapath's statistics and settings.
	Info(ctx context.Context) (DatapathInfo, error)
	// Close releases the handle; the datapath itself stays.
	Close() error

	// Ports lists the datapath's ports, ordered by number.
	Ports(ctx context.Context) ([]Port, error)
	// AddPort adds a port and returns it with its number.
	AddPort(ctx context.Context, spec PortSpec) (Port, error)
	// SetPort changes a port's options.
	SetPort(ctx context.Context, spec PortSpec) error
	// DelPort removes a port by number.
	DelPort(ctx context.Context, number uint32) error

	// PutFlow creates or modifies a flow according to flags. It returns
	// the flow's previous statistics when it modified one.
	PutFlow(ctx context.Context, f *Flow, flags PutFlags) (FlowStats, error)
	// GetFlow returns one flow.
	GetFlow(ctx context.Context, id FlowID) (*Flow, error)
	// DelFlow deletes one flow and returns its final statistics.
	DelFlow(ctx context.Context, id FlowID) (FlowStats, error)
	// FlushFlows deletes every flow.
	FlushFlows(ctx context.Context) error
	// DumpFlows calls fn for every flow, without holding the whole table
	// in memory. An error from fn stops the dump and is returned.
	DumpFlows(ctx context.Context, opts DumpOptions, fn func(*Flow) error) error

	// Execute runs actions on a packet.
	Execute(ctx context.Context, p *Packet) error
	// Upcalls opens n upcall receivers (handlers) and directs the
	// datapath's upcalls to them.
	Upcalls(ctx context.Context, n int) ([]UpcallReceiver, error)
}

// Errors a Datapath returns, wrapped, so that callers can test them with
// errors.Is; they match os.ErrExist and os.ErrNotExist too.
var (
	// ErrUnsupported is returned for a key or action this datapath cannot
	// handle; the wrapping error names it.
	ErrUnsupported = errors.New("not supported by this datapath")
)
