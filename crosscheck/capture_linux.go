package crosscheck

import (
	"encoding/binary"
	"errors"
	"fmt"
	"unsafe"

	"github.com/ovsdp/ovsdp/internal/header"
	"github.com/ovsdp/ovsdp/testenv"
	"golang.org/x/sys/unix"
)

// capture receives the frames coming in on one interface through
// AF_PACKET with PACKET_AUXDATA, so that a VLAN tag the kernel moved
// into packet metadata (veth accelerates tags) is put back into the
// bytes: the capture shows the frame as it was on the wire.
type capture struct {
	fd     int
	ifname string
	buf    []byte
	oob    []byte
}

// openCapture starts capturing incoming frames on ifname in ns.
func openCapture(ns *testenv.Netns, ifname string, ifindex int) (*capture, error) {
	var fd int
	err := ns.Do(func() error {
		var err error
		fd, err = unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, 0)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("capture on %s: AF_PACKET socket in namespace %s: %w", ifname, ns, err)
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_AUXDATA, 1); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("capture on %s: PACKET_AUXDATA: %w", ifname, err)
	}
	unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 16<<20)
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: header.Htons(unix.ETH_P_ALL), Ifindex: ifindex}); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("capture on %s: bind: %w", ifname, err)
	}
	return &capture{fd: fd, ifname: ifname, buf: make([]byte, 65536), oob: make([]byte, 256)}, nil
}

// drain returns every frame received so far (incoming ones only).
func (c *capture) drain() ([][]byte, error) {
	var out [][]byte
	for {
		n, oobn, _, from, err := unix.Recvmsg(c.fd, c.buf, c.oob, unix.MSG_TRUNC)
		if err != nil {
			if errors.Is(err, unix.EAGAIN) {
				return out, nil
			}
			if errors.Is(err, unix.EINTR) {
				continue
			}
			return out, fmt.Errorf("capture on %s: %w", c.ifname, err)
		}
		if ll, ok := from.(*unix.SockaddrLinklayer); ok && ll.Pkttype == unix.PACKET_OUTGOING {
			continue
		}
		if n > len(c.buf) {
			return out, fmt.Errorf("capture on %s: a %d-byte frame is larger than the buffer", c.ifname, n)
		}
		out = append(out, withAuxVLAN(c.buf[:n], c.oob[:oobn]))
	}
}

// tpacketAuxdata is struct tpacket_auxdata.
type tpacketAuxdata struct {
	Status   uint32
	Len      uint32
	Snaplen  uint32
	Mac      uint16
	Net      uint16
	VLANTCI  uint16
	VLANTPID uint16
}

const (
	tpStatusVLANValid     = 0x10
	tpStatusVLANTPIDValid = 0x40
)

// withAuxVLAN copies frame, re-inserting the VLAN tag that auxiliary
// data in oob reports.
func withAuxVLAN(frame, oob []byte) []byte {
	out := append([]byte(nil), frame...)
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return out
	}
	for _, m := range msgs {
		if m.Header.Level != unix.SOL_PACKET || m.Header.Type != unix.PACKET_AUXDATA || len(m.Data) < int(unsafe.Sizeof(tpacketAuxdata{})) {
			continue
		}
		aux := (*tpacketAuxdata)(unsafe.Pointer(&m.Data[0]))
		if aux.Status&tpStatusVLANValid == 0 || len(out) < 12 {
			continue
		}
		tpid := uint16(header.EtherTypeVLAN)
		if aux.Status&tpStatusVLANTPIDValid != 0 {
			tpid = aux.VLANTPID
		}
		tag := make([]byte, 4)
		binary.BigEndian.PutUint16(tag, tpid)
		binary.BigEndian.PutUint16(tag[2:], aux.VLANTCI)
		out = append(out[:12], append(tag, out[12:]...)...)
	}
	return out
}

func (c *capture) close() { unix.Close(c.fd) }
