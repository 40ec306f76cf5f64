package flowkeys_test

import (
	"encoding/binary"
	"fmt"
	"net/netip"

	"github.com/ovsdp/ovsdp/flowkeys"
)

// udpFrame builds an Ethernet + IPv4 + UDP frame (checksums left zero:
// key extraction does not look at them).
func udpFrame(src, dst netip.Addr, sport, dport uint16) []byte {
	f := make([]byte, 14+20+8+4)
	copy(f[0:6], []byte{0x02, 0, 0, 0, 0, 0x02})  // destination MAC
	copy(f[6:12], []byte{0x02, 0, 0, 0, 0, 0x01}) // source MAC
	binary.BigEndian.PutUint16(f[12:], flowkeys.EthTypeIPv4)
	ip := f[14:]
	ip[0] = 0x45 // version 4, 20-byte header
	binary.BigEndian.PutUint16(ip[2:], uint16(len(f)-14))
	ip[8], ip[9] = 64, 17 // TTL, UDP
	s, d := src.As4(), dst.As4()
	copy(ip[12:16], s[:])
	copy(ip[16:20], d[:])
	udp := ip[20:]
	binary.BigEndian.PutUint16(udp[0:], sport)
	binary.BigEndian.PutUint16(udp[2:], dport)
	binary.BigEndian.PutUint16(udp[4:], 8+4)
	return f
}

// Extract the flow key of a frame received on port 1, then hash and
// compare keys under a mask that keeps the IPv4 destination and the UDP
// destination port only, as a megaflow table does.
func Example() {
	a := udpFrame(netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2"), 40000, 53)
	b := udpFrame(netip.MustParseAddr("10.0.0.9"), netip.MustParseAddr("10.0.0.2"), 40001, 53)

	var ka, kb flowkeys.Key
	if err := flowkeys.ExtractPort(a, 1, &ka); err != nil {
		fmt.Println(err)
		return
	}
	if err := flowkeys.ExtractPort(b, 1, &kb); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("in_port %d, eth_type %#04x, %v -> %v, proto %d, ports %d -> %d, ttl %d\n",
		ka.InPort, ka.EthType, netip.AddrFrom4(ka.IPv4Src), netip.AddrFrom4(ka.IPv4Dst),
		ka.IPProto, ka.TpSrc, ka.TpDst, ka.IPTTL)

	// The mask: all-ones in the fields the flow matches.
	var mask flowkeys.Key
	mask.IPv4Dst = [4]byte{0xff, 0xff, 0xff, 0xff}
	mask.TpDst = 0xffff
	r := mask.Range() // the words the mask touches: hash and compare only those
	var ma, mb flowkeys.Key
	flowkeys.ApplyMask(&ma, &ka, &mask, r)
	flowkeys.ApplyMask(&mb, &kb, &mask, r)

	fmt.Println("equal:", ka == kb)
	fmt.Println("equal under the mask:", flowkeys.EqualMasked(&ka, &kb, &mask, r))
	fmt.Println("same hash under the mask:", flowkeys.Hash(&ma, r, 0) == flowkeys.Hash(&mb, r, 0))
	// A table whose keys come from the network hashes with a secret.
	h := flowkeys.NewKeyedHasher()
	fmt.Println("same keyed hash under the mask:", flowkeys.HashKeyed(&ma, r, h, 0) == flowkeys.HashKeyed(&mb, r, h, 0))
	// Output:
	// in_port 1, eth_type 0x0800, 10.0.0.1 -> 10.0.0.2, proto 17, ports 40000 -> 53, ttl 64
	// equal: false
	// equal under the mask: true
	// same hash under the mask: true
	// same keyed hash under the mask: true
}

// Extract refuses only what the kernel refuses, such as a frame shorter
// than an Ethernet header; truncated headers give the kernel's key.
func ExampleExtract() {
	var k flowkeys.Key
	fmt.Println(flowkeys.Extract([]byte{1, 2, 3}, &flowkeys.Metadata{InPort: 2}, &k))

	f := udpFrame(netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("192.0.2.2"), 1, 2)
	err := flowkeys.Extract(f[:14+20+2], &flowkeys.Metadata{InPort: 2}, &k) // UDP header cut short
	fmt.Println(err, k.InPort, k.IPProto, k.TpSrc, k.TpDst)
	// Output:
	// flowkeys: Ethernet header: frame shorter than 14 bytes (never reaches key_extract)
	// <nil> 2 17 0 0
}
