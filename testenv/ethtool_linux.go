package testenv

import (
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TxChecksumOff turns off tx checksumming (and with it TSO) on the
// device dev in the namespace (the ETHTOOL_STXCSUM ioctl, as "ethtool -K
// dev tx off"): what a veth then sends has whole checksums, which a peer
// reading through a raw socket (that cannot see an skb's offload state)
// needs.
func (n *Netns) TxChecksumOff(t testing.TB, dev string) {
	t.Helper()
	if err := n.Do(func() error {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		val := struct{ cmd, data uint32 }{cmd: 0x17} // ETHTOOL_STXCSUM, data 0: off
		var ifr struct {
			name [unix.IFNAMSIZ]byte
			data *struct{ cmd, data uint32 }
			_    [16]byte
		}
		copy(ifr.name[:], dev)
		ifr.data = &val
		if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(&ifr))); e != 0 {
			return e
		}
		return nil
	}); err != nil {
		t.Fatalf("testenv: turning tx checksumming off on %s in namespace %s: %v", dev, n, err)
	}
}
