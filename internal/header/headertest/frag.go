package headertest

import (
	"encoding/binary"

	"github.com/ovsdp/ovsdp/internal/header"
)

// Piece is one fragment's share of a datagram's data: Len bytes from
// offset Off (after the IP header). MF is set when the piece ends before
// the data does, unless Last forces it off.
type Piece struct {
	Off, Len int
	Last     bool
}

// Pieces cuts n bytes of data into fragments of size bytes (a multiple
// of 8), the last one shorter.
func Pieces(n, size int) []Piece {
	var ps []Piece
	for off := 0; off < n; off += size {
		ps = append(ps, Piece{Off: off, Len: min(size, n-off)})
	}
	return ps
}

// Fragment4 cuts a whole IPv4 packet (header, options included, then
// data) into fragments: each has the header with its offset, MF, total
// length and checksum, and its piece of the data. Pieces may overlap or
// leave gaps; they are not checked.
func Fragment4(ip []byte, ps ...Piece) [][]byte {
	hl := int(ip[0]&0x0f) * 4
	data := ip[hl:]
	out := make([][]byte, 0, len(ps))
	for _, p := range ps {
		f := make([]byte, hl+p.Len)
		copy(f, ip[:hl])
		copy(f[hl:], data[p.Off:p.Off+p.Len])
		binary.BigEndian.PutUint16(f[header.IPv4TotalLenOffset:], uint16(hl+p.Len))
		fo := binary.BigEndian.Uint16(ip[header.IPv4FlagsFragOffset:])&header.IPv4FlagDontFragment | uint16(p.Off>>3)
		if p.Off+p.Len < len(data) && !p.Last {
			fo |= header.IPv4FlagMoreFragments
		}
		binary.BigEndian.PutUint16(f[header.IPv4FlagsFragOffset:], fo)
		binary.BigEndian.PutUint16(f[header.IPv4ChecksumOffset:], 0)
		binary.BigEndian.PutUint16(f[header.IPv4ChecksumOffset:], header.Checksum(f[:hl], 0))
		out = append(out, f)
	}
	return out
}

// Fragment6 cuts a whole IPv6 packet with no extension headers into
// fragments with identification id: each has the IPv6 header, a
// fragment header naming the original next header, and its piece.
func Fragment6(ip []byte, id uint32, ps ...Piece) [][]byte {
	const hl = header.IPv6MinimumSize
	data := ip[hl:]
	out := make([][]byte, 0, len(ps))
	for _, p := range ps {
		f := make([]byte, hl+header.IPv6FragmentHdrSize+p.Len)
		copy(f, ip[:hl])
		f[header.IPv6NextHeaderOffset] = 44
		binary.BigEndian.PutUint16(f[header.IPv6PayloadLenOffset:], uint16(header.IPv6FragmentHdrSize+p.Len))
		fh := f[hl:]
		fh[0] = ip[header.IPv6NextHeaderOffset]
		fo := uint16(p.Off) &^ 7
		if p.Off+p.Len < len(data) && !p.Last {
			fo |= 1
		}
		binary.BigEndian.PutUint16(fh[2:], fo)
		binary.BigEndian.PutUint32(fh[4:], id)
		copy(fh[header.IPv6FragmentHdrSize:], data[p.Off:p.Off+p.Len])
		out = append(out, f)
	}
	return out
}
