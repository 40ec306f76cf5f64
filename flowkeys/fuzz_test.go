package flowkeys_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/ovsdp/ovsdp/flowkeys"
	"github.com/ovsdp/ovsdp/flowkeys/flowkeystest"
)

var knownErrs = []error{flowkeys.ErrShortFrame, flowkeys.ErrL3VLAN, flowkeys.ErrNSHShort, flowkeys.ErrNSHVersion,
	flowkeys.ErrNSHLength, flowkeys.ErrNSHMD1Length, flowkeys.ErrNSHMDType}

func FuzzExtract(f *testing.F) {
	for _, p := range flowkeystest.Corpus() {
		f.Add(p.Data, p.InPort)
	}
	f.Fuzz(func(t *testing.T, data []byte, inPort uint32) {
		md := &flowkeys.Metadata{InPort: inPort}
		var k1, k2 flowkeys.Key
		// Extract must not depend on old contents: every head word
		// and the old options (the 0x55 bytes TunOptsLen says it has;
		// the option bytes past TunOptsLen of a key are always zero).
		for i := range k2.Words()[:flowkeys.KeyHeadWords] {
			k2.Words()[i] = 0x5555555555555555
		}
		for i := range k2.TunOpts[:k2.TunOptsLen] {
			k2.TunOpts[i] = 0x55
		}
		// A copy with no spare capacity: reading beyond len panics in
		// neither case, but a read of data[len:cap] would go unnoticed.
		d := bytes.Clone(data)
		err1 := flowkeys.Extract(d[:len(d):len(d)], md, &k1)
		err2 := flowkeys.Extract(d, md, &k2)
		if err1 != err2 || (err1 == nil && k1 != k2) {
			t.Fatalf("two runs differ: %v / %v\n%+v\n%+v", err1, err2, k1, k2)
		}
		var k3 flowkeys.Key
		if err3 := flowkeys.ExtractPort(d, inPort, &k3); err3 != err1 || (err1 == nil && k3 != k1) {
			t.Fatalf("ExtractPort differs from Extract: %v / %v\n%+v\n%+v", err3, err1, k3, k1)
		}
		if !bytes.Equal(d, data) {
			t.Fatal("Extract modified the packet")
		}
		if err1 != nil {
			known := false
			for _, e := range knownErrs {
				known = known || errors.Is(err1, e)
			}
			if !known {
				t.Fatalf("unexpected error %v", err1)
			}
			if (len(data) < 14) != errors.Is(err1, flowkeys.ErrShortFrame) {
				t.Fatalf("ErrShortFrame for %d bytes", len(data))
			}
			return
		}
		checkConsistent(t, data, &k1)
	})
}

// checkConsistent checks the key against the packet bytes where the
// relation is simple enough to restate.
func checkConsistent(t *testing.T, p []byte, k *flowkeys.Key) {
	t.Helper()
	if len(p) < 14 || k.MacProto != flowkeys.MacProtoEthernet {
		t.Fatalf("short frame or MacProto %d accepted", k.MacProto)
	}
	if !bytes.Equal(k.EthDst[:], p[0:6]) || !bytes.Equal(k.EthSrc[:], p[6:12]) {
		t.Fatal("Ethernet addresses differ from the packet")
	}
	nh := 14
	if k.VLANTCI != 0 {
		if k.VLANTCI&flowkeys.VLANTagPresent == 0 || k.VLANTPID != uint16(p[12])<<8|uint16(p[13]) {
			t.Fatalf("outer VLAN %#x/%#x inconsistent", k.VLANTPID, k.VLANTCI)
		}
		nh += 4
	}
	if k.CVLANTCI != 0 {
		if k.VLANTCI == 0 || k.CVLANTCI&flowkeys.VLANTagPresent == 0 {
			t.Fatal("inner VLAN without outer")
		}
		nh += 4
	}
	if uint16(p[nh-2])<<8|uint16(p[nh-1]) < 0x600 && k.EthType != flowkeys.EthType8022 {
		nh += 8 // SNAP
	}
	if k.TCPFlags&^0x0fff != 0 || k.IPv6ExtHdrs&^0x1ff != 0 || k.IPFrag > flowkeys.FragLater {
		t.Fatalf("field out of range: %+v", k)
	}
	if k.IPFrag == flowkeys.FragLater && (k.TpSrc != 0 || k.TpDst != 0 || k.TCPFlags != 0) {
		t.Fatal("later fragment with L4 fields")
	}
	if k.TCPFlags != 0 && k.IPProto != 6 {
		t.Fatal("TCP flags without TCP")
	}
	switch k.EthType {
	case flowkeys.EthTypeIPv4:
		ok := len(p) >= nh+20 && int(p[nh]&15)*4 >= 20 && len(p) >= nh+int(p[nh]&15)*4
		if ok {
			if !bytes.Equal(k.IPv4Src[:], p[nh+12:nh+16]) || !bytes.Equal(k.IPv4Dst[:], p[nh+16:nh+20]) || k.IPProto != p[nh+9] || k.IPTTL != p[nh+8] {
				t.Fatal("IPv4 fields differ from the packet")
			}
		} else if k.IPProto != 0 || k.IPv4Src != [4]byte{} || k.TpSrc != 0 {
			t.Fatal("IPv4 fields from an invalid header")
		}
	case flowkeys.EthTypeIPv6:
		if len(p) >= nh+40 {
			if !bytes.Equal(k.IPv6Src[:], p[nh+8:nh+24]) || !bytes.Equal(k.IPv6Dst[:], p[nh+24:nh+40]) || k.IPTTL != p[nh+7] {
				t.Fatal("IPv6 fields differ from the packet")
			}
		} else if k.IPv6Src != [16]byte{} || k.IPProto != 0 {
			t.Fatal("IPv6 fields from a truncated header")
		}
		if k.NDTarget != [16]byte{} && (k.IPProto != 58 || (k.TpSrc != 135 && k.TpSrc != 136)) {
			t.Fatal("ND target outside ND")
		}
	case flowkeys.EthTypeARP, flowkeys.EthTypeRARP:
		if k.ARPSHA != [6]byte{} && !bytes.Equal(k.ARPSHA[:], p[nh+8:nh+14]) {
			t.Fatal("ARP SHA differs from the packet")
		}
	default:
		if k.IPProto != 0 || k.IPv4Src != [4]byte{} || k.IPv6Src != [16]byte{} || k.TpSrc != 0 {
			t.Fatalf("IP fields for Ethernet type %#x", k.EthType)
		}
	}
	if k.MPLSLabelsMask != 0 && k.EthType != flowkeys.EthTypeMPLS && k.EthType != flowkeys.EthTypeMPLSMC {
		t.Fatal("MPLS labels without MPLS")
	}
}
