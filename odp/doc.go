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
//
// # Examples
//
// Example (example_test.go; shown by pkgsite and godoc, run by go test)
// parses a megaflow and its actions in ovs-dpctl's syntax, prints them
// back and round-trips the key through its netlink encoding;
// ExampleFormatKey prints a megaflow as dump-flows and dump-flows -m do;
// ExampleParseActions_error shows a syntax error's column:
//
//	key, mask, err := odp.ParseMaskedKey("in_port(1),eth(),eth_type(0x0800),ipv4(dst=10.0.0.0/255.255.255.0,frag=no)")
//	acts, err := odp.ParseActions("set(ipv4(ttl=63)),2")
//	fmt.Println(odp.FormatKey(key, mask, false), odp.FormatActions(acts))
//	wire, err := odp.MarshalKey(key) // OVS_KEY_ATTR_* attributes, as the kernel takes them
package odp
