package genl

import "fmt"

// DatapathSpec describes a datapath to create with Client.NewDatapath.
type DatapathSpec struct {
	Name string
	// UpcallPID is the socket that receives the local port's upcalls
	// (0: none).
	UpcallPID uint32
	// Features are the OVS_DP_F_* user features to request.
	Features uint32
	// Ifindex, when not zero, asks for this ifindex for the local port
	// (OVS_DP_ATTR_IFINDEX, kernels 6.1 and newer).
	Ifindex uint32
}

// DatapathSettings are what Client.SetDatapath changes.
type DatapathSettings struct {
	// Features are the OVS_DP_F_* user features. The kernel resets the
	// features to zero when a SET omits them, so they are always sent:
	// start from the current DPInfo.UserFeatures.
	Features uint32
	// MasksCacheSize, when not nil, sets the mask cache size (0 disables
	// the cache; the kernel wants a power of two).
	MasksCacheSize *uint32
	// PerCPUPIDs, when not nil, sets the upcall socket for each CPU (with
	// FeatureDispatchUpcallPerCPU).
	PerCPUPIDs []uint32
}

// VportSpec describes a vport to create or change.
type VportSpec struct {
	// Name names the vport (for NewVport; for SetVport when PortNo is
	// zero).
	Name string
	// Type is required by NewVport; SetVport sends it, when not zero, for
	// the kernel to check.
	Type VportType
	// PortNo asks NewVport for a port number (0: the kernel picks one).
	PortNo uint32
	// Options are the tunnel options (VXLAN, Geneve).
	Options *VportOptions
	// UpcallPIDs are the sockets for the vport's upcalls in per-vport
	// mode. NewVport sends [0] (no upcalls) when empty.
	UpcallPIDs []uint32
	// Ifindex, when not zero, asks for this ifindex for an internal
	// vport's device (kernels 6.1 and newer).
	Ifindex uint32
}

// FlowOptions modify flow commands.
type FlowOptions struct {
	// UFIDFlags leave parts out of the kernel's replies (Terse for UFIDs
	// and statistics only). The kernel applies them to flows that have a
	// UFID.
	UFIDFlags UFIDFlags
	// Probe marks the command as a feature probe: the kernel does not
	// log its failure.
	Probe bool
}

// VportEventKind tells what happened to a vport.
type VportEventKind uint8

// Vport event kinds (the notification's OVS_VPORT_CMD_*).
const (
	VportAdded   VportEventKind = vportCmdNew
	VportDeleted VportEventKind = vportCmdDel
	VportChanged VportEventKind = vportCmdSet
)

// String returns "added", "deleted" or "changed".
func (k VportEventKind) String() string {
	switch k {
	case VportAdded:
		return "added"
	case VportDeleted:
		return "deleted"
	case VportChanged:
		return "changed"
	}
	return fmt.Sprintf("vport-event-%d", uint8(k))
}

// VportEvent is a notification from the ovs_vport multicast group.
type VportEvent struct {
	Kind  VportEventKind
	Vport *VportInfo
}
