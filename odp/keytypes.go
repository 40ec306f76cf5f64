package odp

import "strconv"

// KeyType is an OVS_KEY_ATTR_* attribute type.
type KeyType uint16

// The OVS_KEY_ATTR_* types, numbered as in the kernel's uapi header
// (include/uapi/linux/openvswitch.h). PacketType and NDExtensions are
// userspace-only: they parse and format but are never sent to the kernel.
// TunnelInfo is kernel-internal. IPv6ExtHdrs is newer than Open vSwitch 3.1.
const (
	KeyUnspec        KeyType = 0
	KeyEncap         KeyType = 1
	KeyPriority      KeyType = 2
	KeyInPort        KeyType = 3
	KeyEthernet      KeyType = 4
	KeyVLAN          KeyType = 5
	KeyEthertype     KeyType = 6
	KeyIPv4          KeyType = 7
	KeyIPv6          KeyType = 8
	KeyTCP           KeyType = 9
	KeyUDP           KeyType = 10
	KeyICMP          KeyType = 11
	KeyICMPv6        KeyType = 12
	KeyARP           KeyType = 13
	KeyND            KeyType = 14
	KeySkbMark       KeyType = 15
	KeyTunnel        KeyType = 16
	KeySCTP          KeyType = 17
	KeyTCPFlags      KeyType = 18
	KeyDPHash        KeyType = 19
	KeyRecircID      KeyType = 20
	KeyMPLS          KeyType = 21
	KeyCTState       KeyType = 22
	KeyCTZone        KeyType = 23
	KeyCTMark        KeyType = 24
	KeyCTLabels      KeyType = 25
	KeyCTOrigTupleV4 KeyType = 26
	KeyCTOrigTupleV6 KeyType = 27
	KeyNSH           KeyType = 28
	KeyPacketType    KeyType = 29
	KeyNDExtensions  KeyType = 30
	KeyTunnelInfo    KeyType = 31
	KeyIPv6ExtHdrs   KeyType = 32
)

// String returns the attribute's name in the text syntax ("ipv4",
// "eth_type", ...), or "keyN" for a type this package does not know.
func (t KeyType) String() string {
	if int(t) < keyTabLen {
		keyTables()
		if n := keyTab.name[t]; n != "" {
			return n
		}
	} else if n, ok := keyTypeNames[t]; ok {
		return n
	}
	return "key" + strconv.Itoa(int(t))
}

// keyTypeNames are the names Open vSwitch's odp-util.c uses
// (ovs_key_attr_to_string), plus ipv6_exthdrs for the newer kernel type.
var keyTypeNames = map[KeyType]string{
	KeyUnspec:        "unspec",
	KeyEncap:         "encap",
	KeyPriority:      "skb_priority",
	KeyInPort:        "in_port",
	KeyEthernet:      "eth",
	KeyVLAN:          "vlan",
	KeyEthertype:     "eth_type",
	KeyIPv4:          "ipv4",
	KeyIPv6:          "ipv6",
	KeyTCP:           "tcp",
	KeyUDP:           "udp",
	KeyICMP:          "icmp",
	KeyICMPv6:        "icmpv6",
	KeyARP:           "arp",
	KeyND:            "nd",
	KeySkbMark:       "skb_mark",
	KeyTunnel:        "tunnel",
	KeySCTP:          "sctp",
	KeyTCPFlags:      "tcp_flags",
	KeyDPHash:        "dp_hash",
	KeyRecircID:      "recirc_id",
	KeyMPLS:          "mpls",
	KeyCTState:       "ct_state",
	KeyCTZone:        "ct_zone",
	KeyCTMark:        "ct_mark",
	KeyCTLabels:      "ct_label",
	KeyCTOrigTupleV4: "ct_tuple4",
	KeyCTOrigTupleV6: "ct_tuple6",
	KeyNSH:           "nsh",
	KeyPacketType:    "packet_type",
	KeyNDExtensions:  "nd_ext",
	KeyTunnelInfo:    "tunnel_info",
	KeyIPv6ExtHdrs:   "ipv6_exthdrs",
}

// ActionType is an OVS_ACTION_ATTR_* attribute type.
type ActionType uint16

// The OVS_ACTION_ATTR_* types, numbered as in the kernel's uapi header.
// TunnelPush, TunnelPop and LBOutput are Open vSwitch userspace-datapath
// actions (numbered after the kernel's 25, as Open vSwitch numbers them);
// they parse and format but the kernel rejects them.
const (
	ActionUnspec      ActionType = 0
	ActionOutput      ActionType = 1
	ActionUserspace   ActionType = 2
	ActionSet         ActionType = 3
	ActionPushVLAN    ActionType = 4
	ActionPopVLAN     ActionType = 5
	ActionSample      ActionType = 6
	ActionRecirc      ActionType = 7
	ActionHash        ActionType = 8
	ActionPushMPLS    ActionType = 9
	ActionPopMPLS     ActionType = 10
	ActionSetMasked   ActionType = 11
	ActionCT          ActionType = 12
	ActionTrunc       ActionType = 13
	ActionPushEth     ActionType = 14
	ActionPopEth      ActionType = 15
	ActionCTClear     ActionType = 16
	ActionPushNSH     ActionType = 17
	ActionPopNSH      ActionType = 18
	ActionMeter       ActionType = 19
	ActionClone       ActionType = 20
	ActionCheckPktLen ActionType = 21
	ActionAddMPLS     ActionType = 22
	ActionDecTTL      ActionType = 23
	ActionDrop        ActionType = 24
	ActionPsample     ActionType = 25
	ActionTunnelPush  ActionType = 26
	ActionTunnelPop   ActionType = 27
	ActionLBOutput    ActionType = 28
)

// String returns a short name of the action type ("output", "set", ...).
func (t ActionType) String() string {
	if n, ok := actionTypeNames[t]; ok {
		return n
	}
	return "action" + strconv.Itoa(int(t))
}

var actionTypeNames = map[ActionType]string{
	ActionUnspec:      "unspec",
	ActionOutput:      "output",
	ActionUserspace:   "userspace",
	ActionSet:         "set",
	ActionPushVLAN:    "push_vlan",
	ActionPopVLAN:     "pop_vlan",
	ActionSample:      "sample",
	ActionRecirc:      "recirc",
	ActionHash:        "hash",
	ActionPushMPLS:    "push_mpls",
	ActionPopMPLS:     "pop_mpls",
	ActionSetMasked:   "set_masked",
	ActionCT:          "ct",
	ActionTrunc:       "trunc",
	ActionPushEth:     "push_eth",
	ActionPopEth:      "pop_eth",
	ActionCTClear:     "ct_clear",
	ActionPushNSH:     "push_nsh",
	ActionPopNSH:      "pop_nsh",
	ActionMeter:       "meter",
	ActionClone:       "clone",
	ActionCheckPktLen: "check_pkt_len",
	ActionAddMPLS:     "add_mpls",
	ActionDecTTL:      "dec_ttl",
	ActionDrop:        "drop",
	ActionPsample:     "psample",
	ActionTunnelPush:  "tnl_push",
	ActionTunnelPop:   "tnl_pop",
	ActionLBOutput:    "lb_output",
}
