package genl

import "github.com/ovsdp/ovsdp/odp"

// Generic netlink family names and versions (include/uapi/linux/openvswitch.h).
const (
	familyDatapath = "ovs_datapath"
	familyVport    = "ovs_vport"
	familyFlow     = "ovs_flow"
	familyPacket   = "ovs_packet"
	familyMeter    = "ovs_meter"
	familyCTLimit  = "ovs_ct_limit"

	versionDatapath = 2
	versionVport    = 1
	versionFlow     = 1
	versionPacket   = 1
	versionMeter    = 1
	versionCTLimit  = 1

	// groupVport is the multicast group of vport notifications.
	groupVport = "ovs_vport"
)

// ovsHeaderLen is the size of struct ovs_header (int dp_ifindex).
const ovsHeaderLen = 4

// Datapath commands and attributes.
const (
	dpCmdNew = 1
	dpCmdDel = 2
	dpCmdGet = 3
	dpCmdSet = 4

	dpAttrName           = 1
	dpAttrUpcallPID      = 2
	dpAttrStats          = 3
	dpAttrMegaflowStats  = 4
	dpAttrUserFeatures   = 5
	dpAttrPad            = 6
	dpAttrMasksCacheSize = 7
	dpAttrPerCPUPIDs     = 8
	dpAttrIfindex        = 9
)

// User features of a datapath (OVS_DP_F_*), for DatapathSpec.Features and
// DPInfo.UserFeatures.
const (
	// FeatureUnaligned lets the last attribute of a message be unaligned.
	FeatureUnaligned uint32 = 1 << 0
	// FeatureVportPIDs lets each vport have several upcall PIDs.
	FeatureVportPIDs uint32 = 1 << 1
	// FeatureTCRecircSharing shares recirculation IDs with tc.
	FeatureTCRecircSharing uint32 = 1 << 2
	// FeatureDispatchUpcallPerCPU sends upcalls to the socket registered
	// for the CPU that received the packet (OVS_DP_ATTR_PER_CPU_PIDS).
	FeatureDispatchUpcallPerCPU uint32 = 1 << 3

	// featureProbeUnknown is a bit no kernel knows: a kernel that accepts
	// it does not check feature bits at all.
	featureProbeUnknown uint32 = 1 << 31
)

// Upcall dispatch modes, as reported by DPInfo.UpcallMode and
// odp.DatapathInfo.UpcallMode.
const (
	UpcallModePerCPU   = "per-cpu"
	UpcallModePerVport = "per-vport"
)

// Vport commands and attributes.
const (
	vportCmdNew = 1
	vportCmdDel = 2
	vportCmdGet = 3
	vportCmdSet = 4

	vportAttrPortNo      = 1
	vportAttrType        = 2
	vportAttrName        = 3
	vportAttrOptions     = 4
	vportAttrUpcallPID   = 5
	vportAttrStats       = 6
	vportAttrPad         = 7
	vportAttrIfindex     = 8
	vportAttrNetNSID     = 9
	vportAttrUpcallStats = 10

	vportUpcallAttrSuccess = 0
	vportUpcallAttrFail    = 1

	tunnelAttrDstPort   = 1
	tunnelAttrExtension = 2

	vxlanExtGBP = 1
)

// VportType is an OVS_VPORT_TYPE_* vport type.
type VportType uint32

// Vport types.
const (
	VportNetdev    VportType = 1
	VportInternal  VportType = 2
	VportGRE       VportType = 3
	VportVXLAN     VportType = 4
	VportGeneve    VportType = 5
	VportERSPAN    VportType = 107
	VportIP6ERSPAN VportType = 108
	VportIP6GRE    VportType = 109
	VportGTPU      VportType = 110
	VportBareUDP   VportType = 111
)

var vportTypeNames = map[VportType]string{
	VportNetdev:    "netdev",
	VportInternal:  "internal",
	VportGRE:       "gre",
	VportVXLAN:     "vxlan",
	VportGeneve:    "geneve",
	VportERSPAN:    "erspan",
	VportIP6ERSPAN: "ip6erspan",
	VportIP6GRE:    "ip6gre",
	VportGTPU:      "gtpu",
	VportBareUDP:   "bareudp",
}

// String returns the type's name as Open vSwitch writes it ("netdev",
// "internal", "vxlan", ...), or "type-N" for an unknown type.
func (t VportType) String() string {
	if n, ok := vportTypeNames[t]; ok {
		return n
	}
	return "type-" + itoa(uint64(t))
}

// ParseVportType returns the vport type with the given name (as String
// writes it). "system" is accepted for netdev, as Open vSwitch does.
func ParseVportType(s string) (VportType, bool) {
	if s == "system" || s == "" {
		return VportNetdev, true
	}
	for t, n := range vportTypeNames {
		if n == s {
			return t, true
		}
	}
	return 0, false
}

// Flow commands and attributes.
const (
	flowCmdNew = 1
	flowCmdDel = 2
	flowCmdGet = 3
	flowCmdSet = 4

	flowAttrKey       = 1
	flowAttrActions   = 2
	flowAttrStats     = 3
	flowAttrTCPFlags  = 4
	flowAttrUsed      = 5
	flowAttrClear     = 6
	flowAttrMask      = 7
	flowAttrProbe     = 8
	flowAttrUFID      = 9
	flowAttrUFIDFlags = 10
	flowAttrPad       = 11
)

// UFIDFlags are the OVS_UFID_F_* flags: which parts of a flow the kernel
// leaves out of its replies.
type UFIDFlags uint32

// UFID flags.
const (
	OmitKey     UFIDFlags = 1 << 0
	OmitMask    UFIDFlags = 1 << 1
	OmitActions UFIDFlags = 1 << 2
	// Terse omits key, mask and actions: a dump gives UFIDs and stats.
	Terse = OmitKey | OmitMask | OmitActions
)

// Packet commands and attributes.
const (
	packetCmdMiss    = 1
	packetCmdAction  = 2
	packetCmdExecute = 3

	packetAttrPacket       = 1
	packetAttrKey          = 2
	packetAttrActions      = 3
	packetAttrUserdata     = 4
	packetAttrEgressTunKey = 5
	packetAttrUnused1      = 6
	packetAttrUnused2      = 7
	packetAttrProbe        = 8
	packetAttrMRU          = 9
	packetAttrLen          = 10
	packetAttrHash         = 11
	packetAttrUpcallPID    = 12
)

// Meter commands and attributes.
const (
	meterCmdFeatures = 1
	meterCmdSet      = 2
	meterCmdDel      = 3
	meterCmdGet      = 4

	meterAttrID        = 1
	meterAttrKbps      = 2
	meterAttrStats     = 3
	meterAttrBands     = 4
	meterAttrUsed      = 5
	meterAttrClear     = 6
	meterAttrMaxMeters = 7
	meterAttrMaxBands  = 8

	bandAttrType  = 1
	bandAttrRate  = 2
	bandAttrBurst = 3
	bandAttrStats = 4
)

// Conntrack limit commands and attributes.
const (
	ctLimitCmdSet = 1
	ctLimitCmdDel = 2
	ctLimitCmdGet = 3

	ctLimitAttrZoneLimit = 1

	// DefaultZone is the zone ID that stands for the default limit of
	// every zone without its own (OVS_ZONE_LIMIT_DEFAULT_ZONE).
	DefaultZone = odp.CTDefaultZone
)

// itoa formats n in decimal without fmt.
func itoa(n uint64) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			break
		}
	}
	return string(b[i:])
}

// DatapathFamilyVersion is the version of the ovs_datapath family (and of
// its user feature bits) that this package speaks (OVS_DATAPATH_VERSION).
const DatapathFamilyVersion = versionDatapath
