package crosscheck

import (
	"bytes"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/ovsdp/ovsdp/internal/header"
	"github.com/ovsdp/ovsdp/internal/header/headertest"
)

func auxOOB(aux tpacketAuxdata) []byte {
	n := int(unsafe.Sizeof(aux))
	oob := make([]byte, unix.CmsgSpace(n))
	h := (*unix.Cmsghdr)(unsafe.Pointer(&oob[0]))
	h.Level = unix.SOL_PACKET
	h.Type = unix.PACKET_AUXDATA
	h.SetLen(unix.CmsgLen(n))
	*(*tpacketAuxdata)(unsafe.Pointer(&oob[unix.CmsgLen(0)])) = aux
	return oob
}

func TestWithAuxVLAN(t *testing.T) {
	frame := udp4(headertest.IPv4Hdr{}, 1, 2, "x")
	got := withAuxVLAN(frame, auxOOB(tpacketAuxdata{Status: tpStatusVLANValid | tpStatusVLANTPIDValid, VLANTCI: 0x6014, VLANTPID: header.EtherTypeQinQ}))
	want := headertest.Eth(Nobody, MAC1, header.EtherTypeIPv4, frame[14:], [2]uint16{header.EtherTypeQinQ, 0x6014})
	if !bytes.Equal(got, want) {
		t.Errorf("802.1ad tag:\n got %x\nwant %x", got, want)
	}
	// Without a valid TPID the tag is 802.1Q.
	got = withAuxVLAN(frame, auxOOB(tpacketAuxdata{Status: tpStatusVLANValid, VLANTCI: 5}))
	want = headertest.Eth(Nobody, MAC1, header.EtherTypeIPv4, frame[14:], [2]uint16{header.EtherTypeVLAN, 5})
	if !bytes.Equal(got, want) {
		t.Errorf("802.1Q tag:\n got %x\nwant %x", got, want)
	}
	// No valid tag: the frame is unchanged (and copied).
	got = withAuxVLAN(frame, auxOOB(tpacketAuxdata{VLANTCI: 5}))
	if !bytes.Equal(got, frame) || &got[0] == &frame[0] {
		t.Errorf("untagged frame changed or not copied: %x", got)
	}
}
