package odp_test

import (
	"errors"
	"testing"

	"github.com/ovsdp/ovsdp/flowkeys"
	"github.com/ovsdp/ovsdp/flowkeys/flowkeystest"
	"github.com/ovsdp/ovsdp/odp"
)

// matches reports whether a packet with key k hits the flow (fk, fm) as
// the datapaths' lookups compare: k & fm == fk (fk is stored masked).
func matches(k, fk, fm *flowkeys.Key) bool {
	kw, fkw, fmw := k.Words(), fk.Words(), fm.Words()
	for i := range kw {
		if kw[i]&fmw[i] != fkw[i] {
			return false
		}
	}
	return true
}

// covers reports whether the installed mask fm has every bit of want.
func covers(fm, want *flowkeys.Key) bool {
	fmw, ww := fm.Words(), want.Words()
	for i := range fmw {
		if ww[i]&^fmw[i] != 0 {
			return false
		}
	}
	return true
}

// TestMegaflowFromFlowKeysCorpus: for every corpus packet and a few
// masks (exact Ethernet type only, L2 only, every field), the megaflow
// is accepted by the kernel's flow rules, matches the packet, and its
// mask has every bit asked for. Before MegaflowFromFlowKeys, the key of
// an MPLS packet without a bottom-of-stack entry had a 0-byte mpls
// attribute, that of a frame whose VLAN tag is cut short eth_type(0) with
// a vlan attribute, the mask of an NSH packet an nsh nest without an
// exact Ethernet type: every such flow was EINVAL. With a mask on the
// Ethernet type, a frame whose tag is cut short has no flow
// (ErrInexpressible).
func TestMegaflowFromFlowKeysCorpus(t *testing.T) {
	var truncated, cutTags int
	for _, p := range flowkeystest.Corpus() {
		var k flowkeys.Key
		if err := flowkeys.Extract(p.Data, &flowkeys.Metadata{InPort: p.InPort}, &k); err != nil {
			continue
		}
		isMPLS := k.EthType == flowkeys.EthTypeMPLS || k.EthType == flowkeys.EthTypeMPLSMC
		if isMPLS && k.MPLSLabelsMask == 0 {
			truncated++
		}
		if truncatedTag(&k) {
			cutTags++
		}
		var l2, typ flowkeys.Key
		l2.RecircID, l2.InPort = ^uint32(0), 0xffff
		l2.EthSrc, l2.EthDst = [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
		typ = l2
		typ.EthType = 0xffff
		for _, m := range []struct {
			name string
			mask flowkeys.Key
		}{{"l2", l2}, {"eth_type", typ}} {
			key, mask, err := odp.MegaflowFromFlowKeys(&k, &m.mask)
			if truncatedTag(&k) && m.name == "eth_type" {
				// The type of a frame whose tag is cut short is the
				// TPID, which no flow can match on.
				if !errors.Is(err, odp.ErrInexpressible) {
					t.Errorf("%s/%s: MegaflowFromFlowKeys: %v, want ErrInexpressible", p.Name, m.name, err)
				}
				continue
			}
			if err != nil {
				t.Errorf("%s/%s: MegaflowFromFlowKeys: %v", p.Name, m.name, err)
				continue
			}
			fk, fm, err := odp.ToFlowKeys(key, mask)
			if err != nil {
				// The kernel's other refusals (a VLAN eth_type behind
				// a third tag, say) are not the megaflow's: the same
				// key is refused exactly too.
				if _, _, err2 := odp.ToFlowKeys(odp.KeyFromFlowKeys(&k), nil); err2 == nil || isMPLS {
					t.Errorf("%s/%s: ToFlowKeys(%s): %v", p.Name, m.name, odp.FormatKey(key, mask, true), err)
				}
				continue
			}
			if !matches(&k, &fk, &fm) {
				t.Errorf("%s/%s: the megaflow %s does not match its packet", p.Name, m.name, odp.FormatKey(key, mask, true))
			}
			m.mask.VLANTCI, m.mask.CVLANTCI = 0, 0 // the kernel adds them
			if !covers(&fm, &m.mask) {
				t.Errorf("%s/%s: the megaflow %s lost mask bits", p.Name, m.name, odp.FormatKey(key, mask, true))
			}
		}
	}
	if truncated < 3 || cutTags < 3 {
		t.Errorf("only %d corpus packets have an MPLS stack without bottom of stack, %d a VLAN tag cut short", truncated, cutTags)
	}
}

// truncatedTag reports whether k's VLAN tag, outer or inner, is cut
// short: its TPID is the key's Ethernet type.
func truncatedTag(k *flowkeys.Key) bool {
	return (k.EthType == 0x8100 || k.EthType == 0x88a8) && (k.VLANTCI == 0 || k.CVLANTCI == 0)
}

// TestMegaflowMPLSInexpressible: masks on the label stack that no flow
// can carry are refused with ErrInexpressible, those it can are put.
func TestMegaflowMPLSInexpressible(t *testing.T) {
	base := func(labels uint32) flowkeys.Key {
		var k flowkeys.Key
		k.MacProto = flowkeys.MacProtoEthernet
		k.InPort = 1
		k.EthType = flowkeys.EthTypeMPLS
		k.MPLSLSE = [3]uint32{1<<12 | 0x100 | 9}
		k.MPLSLabelsMask = labels
		return k
	}
	mask := func(lm uint32, lse ...uint32) flowkeys.Key {
		var m flowkeys.Key
		m.InPort, m.EthType, m.MPLSLabelsMask = 0xffff, 0xffff, lm
		copy(m.MPLSLSE[:], lse)
		return m
	}
	for _, c := range []struct {
		name   string
		k, m   flowkeys.Key
		refuse bool
	}{
		{"no-labels-no-mask", base(0), mask(0), false},
		{"no-labels-count", base(0), mask(1, 0xfffff000), true},
		{"no-labels-entry-only", base(0), mask(0, 0xfffff000), true},
		{"one-label", base(1), mask(1, 0xfffff000), false},
		{"entry-past-count", base(1), mask(1, 0xfffff000, 1), true},
		{"count-not-from-top", base(1), mask(2, 0xfffff000, 1), true},
		{"count-without-entries", base(1), mask(1), true},
	} {
		key, m, err := odp.MegaflowFromFlowKeys(&c.k, &c.m)
		if c.refuse {
			if !errors.Is(err, odp.ErrInexpressible) {
				t.Errorf("%s: err = %v, want ErrInexpressible", c.name, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		fk, fm, err := odp.ToFlowKeys(key, m)
		if err != nil {
			t.Errorf("%s: ToFlowKeys(%s): %v", c.name, odp.FormatKey(key, m, true), err)
			continue
		}
		if !matches(&c.k, &fk, &fm) || !covers(&fm, &c.m) {
			t.Errorf("%s: %s does not match its packet with the mask asked for", c.name, odp.FormatKey(key, m, true))
		}
	}
}
