// Package header holds the packet headers every layer of ovsdp reads
// and writes: typed views over a packet's bytes with named offsets and
// accessors, in the style of gVisor's pkg/tcpip/header (Ethernet, VLAN
// tags, ARP, IPv4, IPv6 and its extension headers, TCP, UDP, ICMPv4,
// ICMPv6 and neighbour discovery), the constants that name their fields
// (EtherTypes, IP protocol numbers, fragment bits, the datapath's
// fragment types), the Internet checksum (RFC 1071, and the RFC 1624
// incremental update), and Htons.
//
// # Byte order
//
// A view (Ethernet, IPv4, TCP, ...) is a []byte holding the header as it
// is on the wire, in network byte order (big-endian). Every accessor
// returns a multi-byte field as a host-order value and every setter takes
// a host-order value and stores it big-endian; addresses are returned and
// taken as byte arrays in wire order. Checksums are handled the same way:
// a uint16 whose big-endian encoding is the field's bytes. Htons is the
// one exception that exists for the kernel's socket API: it returns the
// value whose in-memory (native) encoding is the big-endian encoding of
// its argument.
//
// # Lengths
//
// An accessor reads only the bytes its field occupies, at a fixed offset,
// and does not check the view's length: the caller checks, once, that
// the view holds at least the header's fixed part (IPv4MinimumSize,
// TCPMinimumSize, ...) before it reads fields, as the parsers of this
// module do for every malformed packet. The accessors are small enough
// to be inlined and allocate nothing; the parsers (IPv6ExtWalk, L2)
// never read beyond the slice they are given.
package header
