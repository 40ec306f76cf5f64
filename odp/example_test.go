package odp_test

import (
	"errors"
	"fmt"

	"github.com/ovsdp/ovsdp/odp"
)

// Parse a megaflow in ovs-dpctl's syntax, print it back, and encode its
// key as the netlink attributes the kernel takes.
func Example() {
	key, mask, err := odp.ParseMaskedKey("in_port(1),eth(src=02:00:00:00:00:01,dst=02:00:00:00:00:02),eth_type(0x0800),ipv4(src=10.0.0.1,dst=10.0.0.0/255.255.255.0,proto=17,frag=no),udp(dst=53)")
	if err != nil {
		fmt.Println(err)
		return
	}
	acts, err := odp.ParseActions("set(ipv4(ttl=63)),push_vlan(vid=10,pcp=0),2")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(odp.FormatKey(key, mask, false))
	fmt.Println(odp.FormatActions(acts))

	wire, err := odp.MarshalKey(key)
	if err != nil {
		fmt.Println(err)
		return
	}
	back, err := odp.UnmarshalKey(wire)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%d attributes in %d bytes, same after decoding: %v\n", len(key), len(wire), odp.FormatKey(back, nil, true) == odp.FormatKey(key, nil, true))
	// Output:
	// in_port(1),eth(src=02:00:00:00:00:01,dst=02:00:00:00:00:02),eth_type(0x0800),ipv4(src=10.0.0.1,dst=10.0.0.0/255.255.255.0,proto=17,frag=no),udp(dst=53)
	// set(ipv4(ttl=63)),push_vlan(vid=10,pcp=0),2
	// 5 attributes in 56 bytes, same after decoding: true
}

// Parse errors say where the input went wrong.
func ExampleParseActions_error() {
	_, err := odp.ParseActions("set(ipv4(ttl=63)),outptu(2)")
	var se *odp.SyntaxError
	if errors.As(err, &se) {
		fmt.Println("column", se.Column())
	}
	fmt.Println(err)
	// Output:
	// column 19
	// column 19, at "outptu(2)": unknown action "outptu"
}

// A megaflow as dump-flows prints it, then in the verbose form of
// dump-flows -m, which shows the wildcarded fields too.
func ExampleFormatKey() {
	key, mask, err := odp.ParseMaskedKey("in_port(3),eth(),eth_type(0x86dd),ipv6(dst=2001:db8::/ffff:ffff::,frag=no)")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(odp.FormatKey(key, mask, false))
	fmt.Println(odp.FormatKey(key, mask, true))
	// Output:
	// in_port(3),eth(),eth_type(0x86dd),ipv6(dst=2001:db8::/ffff:ffff::,frag=no)
	// in_port(3),eth(src=00:00:00:00:00:00/00:00:00:00:00:00,dst=00:00:00:00:00:00/00:00:00:00:00:00),eth_type(0x86dd),ipv6(src=::/::,dst=2001:db8::/ffff:ffff::,label=0/0,proto=0/0,tclass=0/0,hlimit=0/0,frag=no)
}
