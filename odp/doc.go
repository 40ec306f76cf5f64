// Package odp is the Open vSwitch datapath model shared by the kernel
// datapath (package genl) and the userspace datapath (package userdp).
//
// It holds three things:
//
//   - Flow keys and masks (FlowKey, a list of KeyAttr values, one per
//     OVS_KEY_ATTR_* attribute, in attribute order) and actions (Actions, a
//     list of Action values, one per OVS_ACTION_ATTR_* attribute).
//   - Their netlink encoding, exactly as the openvswitch kernel module
//     expects and answers: MarshalKey, UnmarshalKey, MarshalActions,
//     UnmarshalActions. Decoding never panics; errors name the attribute and
//     its byte offset (DecodeError).
//   - The ovs-dpctl text syntax (Open vSwitch's lib/odp-util.c): ParseKey,
//     ParseMaskedKey, FormatKey, ParseActions, FormatActions. Parse errors
//     name the column (SyntaxError).
//
// The Datapath interface, Flow and Upcall are what the command line, the
// upcall daemon and the cross-check tests use without knowing which
// datapath they hold.
package odp
