package header

// IP protocol numbers (the IPv4 protocol field, the IPv6 next-header
// value), including the IPv6 extension headers.
const (
	IPProtoHopByHop = 0  // IPv6 hop-by-hop options
	IPProtoICMP     = 1  // ICMP for IPv4
	IPProtoTCP      = 6  // TCP
	IPProtoUDP      = 17 // UDP
	IPProtoRouting  = 43 // IPv6 routing header
	IPProtoFragment = 44 // IPv6 fragment header
	IPProtoESP      = 50 // encapsulating security payload
	IPProtoAuth     = 51 // authentication header
	IPProtoICMPv6   = 58 // ICMP for IPv6
	IPProtoNoNext   = 59 // IPv6 "no next header"
	IPProtoDestOpts = 60 // IPv6 destination options
	IPProtoSCTP     = 132
)

// Fragment types, as the datapath's flow keys record them (the uapi's
// OVS_FRAG_TYPE_*).
const (
	FragNone  = 0 // not a fragment
	FragFirst = 1 // the first fragment (offset 0): it has the L4 header
	FragLater = 2 // a later fragment (offset not 0): no L4 header
)
