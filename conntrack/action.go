package conntrack

import (
	"bytes"
	"fmt"
	"net/netip"
	"syscall"

	"github.com/ovsdp/ovsdp/odp"
)

// CompileAction validates a ct action for a flow of the given EtherType
// as the kernel's ovs_ct_copy_action and parse_nat do (EINVAL where they
// say EINVAL), and converts it for Execute. Helpers and timeout
// policies, which the tracker does not have, are answered as kernel 6.1
// answers a name it does not have (checked in the VM by
// crosscheck's TestIntegrationCTHelperTimeout):
//   - every helper is EINVAL, the kernel's answer to a helper that is not
//     loaded ("Unknown helper"; with nf_conntrack_ftp and _tftp loaded it
//     accepts ftp on TCP and tftp on UDP flows, and still refuses ftp on
//     UDP and unknown names);
//   - a timeout policy is accepted and has no effect: the kernel only
//     logs ("Failed to associated timeout policy") a policy it cannot
//     find and keeps its default timeouts, and this tracker has no
//     policies to find.
func CompileAction(c *odp.CT, ethType uint16) (Action, error) {
	var a Action
	var v6 bool
	switch ethType {
	case 0x0800:
	case 0x86dd:
		v6 = true
	default:
		return a, einval("ct: the flow's EtherType %#04x is neither IPv4 nor IPv6 (ct family unspecified)", ethType)
	}
	if c.Helper != "" {
		return a, einval("ct: helper %q: unknown helper (the userspace tracker has no connection helpers; the kernel answers the same to a helper it has not loaded)", c.Helper)
	}
	// c.Timeout is ignored, as the kernel ignores a policy it cannot find.
	a.Commit = c.Commit || c.ForceCommit
	a.Force = c.ForceCommit
	if c.HasZone {
		a.Zone = c.Zone
	}
	if c.HasMark {
		if c.MarkMask == 0 {
			return a, einval("ct: ct_mark mask cannot be 0")
		}
		if !a.Commit {
			return a, einval("ct: setting conntrack mark requires 'commit' flag")
		}
		a.MarkValue, a.MarkMask = c.MarkValue, c.MarkMask
	}
	if c.HasLabels {
		if c.LabelsMask == ([16]byte{}) {
			return a, einval("ct: ct_labels mask cannot be 0")
		}
		if !a.Commit {
			return a, einval("ct: setting conntrack labels requires 'commit' flag")
		}
		a.LabelsValue, a.LabelsMask, a.HasLabels = c.LabelsValue, c.LabelsMask, true
	}
	if c.NAT != nil {
		n, err := compileNAT(c.NAT, v6, a.Commit)
		if err != nil {
			return a, err
		}
		a.NAT, a.HasNAT = n, true
	}
	return a, nil
}

func compileNAT(n *odp.NAT, v6, commit bool) (NATRange, error) {
	r := NATRange{Src: n.Src, Dst: n.Dst, V6: v6, Persistent: n.Persistent, Hash: n.ProtoHash, Random: n.ProtoRandom}
	if n.Src && n.Dst {
		return r, fmt.Errorf("ct: nat: only one type of NAT may be specified: %w", syscall.ERANGE)
	}
	if n.IPMax.IsValid() && !n.IPMin.IsValid() {
		return r, einval("ct: nat: an address maximum %v without a minimum", n.IPMax)
	}
	if n.IPMin.IsValid() {
		max := n.IPMax
		if !max.IsValid() {
			max = n.IPMin
		}
		for _, ip := range []struct {
			what string
			a    [16]byte
			ok   bool
		}{{"minimum", addrBytes(n.IPMin, v6), n.IPMin.Is6() == v6}, {"maximum", addrBytes(max, v6), max.Is6() == v6}} {
			if !ip.ok {
				return r, einval("ct: nat: address %s is not of the flow's family (IPv6: %v)", ip.what, v6)
			}
		}
		r.IPMin, r.IPMax, r.HasIP = addrBytes(n.IPMin, v6), addrBytes(max, v6), true
		if bytes.Compare(r.IPMin[:], r.IPMax[:]) > 0 {
			return r, einval("ct: nat: address range %v-%v is empty", n.IPMin, max)
		}
	}
	if n.ProtoMin != 0 {
		r.ProtoMin, r.ProtoMax, r.HasProto = n.ProtoMin, n.ProtoMax, true
		if n.ProtoMax == 0 {
			r.ProtoMax = n.ProtoMin
		}
		if r.ProtoMin > r.ProtoMax {
			return r, einval("ct: nat: port range %d-%d is empty", r.ProtoMin, r.ProtoMax)
		}
	} else if n.ProtoMax != 0 {
		return r, einval("ct: nat: a port maximum %d without a minimum", n.ProtoMax)
	}
	if !n.Src && !n.Dst {
		if r.HasIP || r.HasProto || n.Persistent || n.ProtoHash || n.ProtoRandom {
			return r, einval("ct: nat: NAT flags may be given only when NAT range (SRC or DST) is also specified")
		}
		return r, nil
	}
	if !commit {
		return r, einval("ct: nat: NAT attributes may be specified only when CT COMMIT flag is also specified")
	}
	return r, nil
}

func addrBytes(a netip.Addr, v6 bool) (b [16]byte) {
	if v6 {
		if a.Is6() {
			return a.As16()
		}
		return b
	}
	if a.Is6() {
		return b
	}
	a4 := a.As4()
	copy(b[:], a4[:])
	return b
}

func einval(format string, args ...any) error {
	return fmt.Errorf(format+": %w", append(args, syscall.EINVAL)...)
}
