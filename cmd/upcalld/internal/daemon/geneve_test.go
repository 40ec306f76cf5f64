package daemon

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ovsdp/ovsdp/flowkeys"
	"github.com/ovsdp/ovsdp/odp"
	"github.com/ovsdp/ovsdp/policy"
)

// geneveOpt is one Geneve option: class 0x102, type 0x80, value
// 0xa1b2c3d4.
var geneveOpt = []byte{0x01, 0x02, 0x80, 0x01, 0xa1, 0xb2, 0xc3, 0xd4}

// missWithGeneve is missFrom(src, dst) received through a Geneve tunnel
// with options opts.
func missWithGeneve(t *testing.T, src, dst mac, opts []byte) odp.Upcall {
	t.Helper()
	up := missFrom(t, src, dst)
	tun := odp.Tunnel{Present: odp.TunnelHasID | odp.TunnelHasIPv4Src | odp.TunnelHasIPv4Dst | odp.TunnelHasTTL |
		odp.TunnelHasTPSrc | odp.TunnelHasTPDst | odp.TunnelHasGeneve,
		ID: 5, IPv4Src: [4]byte{10, 80, 0, 1}, IPv4Dst: [4]byte{10, 80, 0, 2}, TTL: 64, TPSrc: 40000, TPDst: 6081, Geneve: opts}
	up.Key = append(odp.FlowKey{tun}, up.Key...)
	return up
}

// A miss that came with Geneve options gets a megaflow on netdev@ (the
// learning switch reads no tunnel field: the options are wildcarded,
// as every other tunnel field), and the packet is forwarded. Before,
// the upcall's key was refused (odp.ToFlowKeysExact: "Geneve options
// cannot be held in a flowkeys.Key") and every such packet was a failed
// upcall.
func TestGeneveMissGetsAFlow(t *testing.T) {
	up := missWithGeneve(t, macN(1), macN(2), geneveOpt)
	hs := newHandlerState(0, 1)
	hs.ups[0] = up
	h, ctx := newHarness(t, 2, Config{Logger: discardLogger()}), context.Background()
	if err := h.d.Setup(ctx); err != nil {
		t.Fatal(err)
	}
	h.d.handleBatch(ctx, hs, hs.ups, shedNone, time.Now())
	if st := h.d.Status(); st.Handled != 1 || st.Failed != 0 || st.Installed != 1 {
		t.Fatalf("handled %d failed %d installed %d; want 1 0 1", st.Handled, st.Failed, st.Installed)
	}
	h.expect(2, up.Packet) // flooded
	fs := h.flows()
	if len(fs) != 1 || strings.Contains(fs[0], "geneve") || !strings.Contains(fs[0], "in_port(1)") {
		t.Errorf("flows %q, want one flow for in_port(1) that leaves the options out", fs)
	}
}

// A decision whose mask reads Geneve option bytes installs a megaflow
// that matches them, their length exactly (the kernel's rule for a mask
// on options), and the datapath takes it: it dumps with the options and
// their mask. megaflowMask adds the length and the flag.
func TestGeneveOptionMaskMegaflow(t *testing.T) {
	h := newHarness(t, 2, Config{Logger: discardLogger()})
	ctx := context.Background()
	up := missWithGeneve(t, macN(1), macN(2), geneveOpt)
	k, err := odp.ToFlowKeysExact(up.Key)
	if err != nil {
		t.Fatal(err)
	}
	var dec policy.Decision
	dec.Mask.EthType = 0xffff
	// The option: its header (which option it is) and its value, as
	// Open vSwitch masks the tun_metadata it matches.
	copy(dec.Mask.TunOpts[:8], []byte{0xff, 0xff, 0xff, 0x1f, 0xff, 0xff, 0xff, 0xff})
	m := megaflowMask(&dec)
	if m.TunOptsLen != 0xff || m.TunFlags&odp.KernelTunnelGeneveOpt == 0 {
		t.Fatalf("megaflowMask: options length mask %#x, flags %#x; want 0xff and the Geneve flag", m.TunOptsLen, m.TunFlags)
	}
	key, mask, err := odp.MegaflowFromFlowKeys(&k, &m)
	if err != nil {
		t.Fatal(err)
	}
	f := &odp.Flow{Key: key, Mask: mask, Actions: odp.Actions{odp.Output{Port: 2}}}
	if _, err := h.dp.PutFlow(ctx, f, odp.PutCreate); err != nil {
		t.Fatalf("put %s: %v", odp.FormatKey(key, mask, false), err)
	}
	fs := h.flows()
	if want := "geneve({class=0x102,type=0x80,len=4,0xa1b2c3d4})"; len(fs) != 1 || !strings.Contains(fs[0], want) {
		t.Errorf("flows %q, want one with %s", fs, want)
	}
	// The flow matches the packet's options (and not another value).
	gk, gm, err := odp.ToFlowKeys(key, mask)
	if err != nil {
		t.Fatal(err)
	}
	other, longer := k, k
	other.TunOpts[7] ^= 1
	longer.SetTunOpts(append(append([]byte{}, geneveOpt...), 0x01, 0x03, 0x01, 0x00)) // and an empty option after it
	if !flowkeys.EqualMasked(&k, &gk, &gm, flowkeys.FullRange) || flowkeys.EqualMasked(&other, &gk, &gm, flowkeys.FullRange) ||
		flowkeys.EqualMasked(&longer, &gk, &gm, flowkeys.FullRange) {
		t.Errorf("the flow %s does not match its packet's options alone (the same value, 4 bytes of options)", odp.FormatKey(key, mask, false))
	}
}
