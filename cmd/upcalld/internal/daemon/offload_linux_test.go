package daemon

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Ethtool commands of the legacy offload interface (linux/ethtool.h).
const (
	ethtoolSTXCSUM = 0x17
	ethtoolSSG     = 0x19
	ethtoolSTSO    = 0x1f
	ethtoolSGSO    = 0x24
	ethtoolSGRO    = 0x2c
)

// disableOffloads turns off the segmentation, receive coalescing and
// transmit checksum offloads of ifname, in the calling thread's
// namespace: a userspace datapath on AF_PACKET reads frames of at most
// MTU size, so a veth must hand it real frames (as Open vSwitch's
// documentation advises for its userspace datapath on veth).
func disableOffloads(ifname string) error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	for _, cmd := range []uint32{ethtoolSTSO, ethtoolSGSO, ethtoolSGRO, ethtoolSTXCSUM, ethtoolSSG} {
		val := struct{ cmd, data uint32 }{cmd, 0}
		var ifr struct {
			name [unix.IFNAMSIZ]byte
			data uintptr
			_    [16]byte
		}
		copy(ifr.name[:], ifname)
		ifr.data = uintptr(unsafe.Pointer(&val))
		if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(&ifr))); e != 0 {
			return fmt.Errorf("ethtool %#x on %s: %w", cmd, ifname, e)
		}
	}
	return nil
}
