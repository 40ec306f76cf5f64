package genl

import "encoding/binary"

func putU32(b []byte, v uint32) { binary.NativeEndian.PutUint32(b, v) }

// u32Bytes encodes vs as an array of native-endian u32s.
func u32Bytes(vs []uint32) []byte {
	b := make([]byte, 4*len(vs))
	for i, v := range vs {
		binary.NativeEndian.PutUint32(b[4*i:], v)
	}
	return b
}
