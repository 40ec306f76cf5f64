package genl

import "fmt"

// DatapathSpec describes a datapath for Create.
type DatapathSpec struct {
	// Name names the datapath (and its local port's network device).
	Name string
	// UpcallPID is the socket that receives the local port's upcalls
	// (0: none).
	UpcallPID uint32
	// Features are the OVS_DP_F_* user features to start from. Create
	// negotiates the upcall dispatch on top of them as Open vSwitch
	// does: it adds FeatureUnaligned, then FeatureDispatchUpcallPerCPU
	// where the kernel has it, else FeatureVportPIDs (DPInfo.UpcallMode
	// tells which), unless ExactFeatures is set.
	Features uint32
	// ExactFeatures creates the datapath with exactly Features, without
	// negotiation (ovs-dpctl add-dp --features); the kernel refuses bits
	// it does not know.
	ExactFeatures bool
	// Ifindex, when not zero, asks for this ifindex for the local port
	// (OVS_DP_ATTR_IFINDEX, kernels 6.1 and newer).
	Ifindex uint32
}

// datapathSettings are what client.setDatapath changes.
type datapathSettings struct {
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

// vportSpec describes a vport to create or change.
type vportSpec struct {
	// Name names the vport (for newVport; for setVport when PortNo is
	// zero).
	Name string
	// Type is required by newVport; setVport sends it, when not zero, for
	// the kernel to check.
	Type VportType
	// PortNo asks newVport for a port number (0: the kernel picks one).
	PortNo uint32
	// Options are the tunnel options (VXLAN, Geneve).
	Options *VportOptions
	// UpcallPIDs are the sockets for the vport's upcalls in per-vport
	// mode. newVport sends [0] (no upcalls) when empty.
	UpcallPIDs []uint32
	// Ifindex, when not zero, asks for this ifindex for an internal
	// vport's device (kernels 6.1 and newer).
	Ifindex uint32
}

// flowOptions modify flow commands.
type flowOptions struct {
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
	if s, ok := vportEventNames[k]; ok {
		return s
	}
	return fmt.Sprintf("vport-event-%d", uint8(k))
}

var vportEventNames = map[VportEventKind]string{VportAdded: "added", VportDeleted: "deleted", VportChanged: "changed"}

// VportEvent is a notification from the ovs_vport multicast group.
type VportEvent struct {
	Kind  VportEventKind
	Vport *VportInfo
}
