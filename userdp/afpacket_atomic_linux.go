package userdp

import (
	"sync/atomic"
	"unsafe"
)

// atomicLoad32 and atomicStore32 access a 32-bit word in the shared
// TPACKET ring, which the kernel writes concurrently.
func atomicLoad32(b *byte) uint32 { return atomic.LoadUint32((*uint32)(unsafe.Pointer(b))) }

func atomicStore32(b *byte, v uint32) { atomic.StoreUint32((*uint32)(unsafe.Pointer(b)), v) }
