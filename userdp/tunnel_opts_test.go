package userdp

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/ovsdp/ovsdp/flowkeys"
	"github.com/ovsdp/ovsdp/odp"
)

// geneveOptFlow is a flow for packets from the tunnel port (2) with
// Geneve options opts (the text inside geneve(...)), the other tunnel
// fields but the ID and destination wildcarded.
func geneveOptFlow(opts string) string {
	return "tunnel(tun_id=0x5,src=0.0.0.0/0.0.0.0,dst=10.1.1.2,ttl=0/0,geneve(" + opts + "),flags(+key)),in_port(2)," +
		anyEth + "eth_type(0x0800)" + anyIPv4
}

// TestTunnelGeneveOptsMatch: flows match the Geneve option bytes of a
// packet received on a tunnel port, under their mask, as the kernel's
// do (tun_opts and tun_opts_len in the key): a packet whose option value
// the flow has hits it, one with another value misses, one with longer
// options misses a flow that matches the first option only (the length
// is exact), and a flow with a masked value matches both values. The
// flows dump as they were put.
func TestTunnelGeneveOptsMatch(t *testing.T) {
	ft := newFakeTunnel(tunnelGeneve, 6081, false)
	dp := tunnelFixture(t, ft, "tun_id=0x5,dst=10.1.1.2,ttl=64,geneve({class=0x102,type=0x80,len=4,0xa1b2c3d4}),flags(key)")
	outerA := sendAndCapture(t, dp, ft, udpFrame(1, 2, 1000))
	i := bytes.Index(outerA, []byte{0xa1, 0xb2, 0xc3, 0xd4})
	if i < 0 {
		t.Fatalf("the outer packet % x has no option value", outerA)
	}
	outerA[26], outerA[27] = 0, 0 // no UDP checksum, so that the value can change
	outerB := bytes.Clone(outerA)
	outerB[i+3] = 0xd5
	ctx := context.Background()
	put := func(key string) {
		t.Helper()
		if _, err := dp.PutFlow(ctx, parseFlow(t, key, "drop"), odp.PutCreate); err != nil {
			t.Fatalf("put %s: %v", key, err)
		}
	}
	w := newWorker(dp, DefaultCacheEntries)
	md := flowkeys.Metadata{InPort: 2}
	buf := make([]byte, BufferSize(1500))
	// recv runs an outer packet through the tunnel port's receive path
	// and returns the hits and misses it made.
	recv := func(outer []byte) (hits, misses uint64) {
		t.Helper()
		before, _ := dp.Info(ctx)
		n := copy(buf[DefaultHeadroom:], outer)
		off, ln, _, err := decapTunnel(buf[DefaultHeadroom:DefaultHeadroom+n], &ft.cfg, &md.Tunnel, &w.tunOpts)
		if err != nil {
			t.Fatal(err)
		}
		w.processTunnel(buf, DefaultHeadroom+off, ln, &md)
		w.flush()
		after, _ := dp.Info(ctx)
		return after.Stats.Hit - before.Stats.Hit, after.Stats.Missed - before.Stats.Missed
	}

	put(geneveOptFlow("{class=0x102,type=0x80,len=4,0xa1b2c3d4}"))
	if h, m := recv(outerA); h != 1 || m != 0 {
		t.Errorf("option value 0xa1b2c3d4 with a flow for it: %d hits, %d misses; want a hit", h, m)
	}
	if h, m := recv(outerB); h != 0 || m != 1 {
		t.Errorf("option value 0xa1b2c3d5 with a flow for 0xa1b2c3d4 only: %d hits, %d misses; want a miss", h, m)
	}
	put(geneveOptFlow("{class=0x102,type=0x80,len=4,0xa1b2c3d5}"))
	if h, m := recv(outerB); h != 1 || m != 0 {
		t.Errorf("option value 0xa1b2c3d5 with a flow for it: %d hits, %d misses; want a hit", h, m)
	}

	// The flows dump with their options, as put.
	var dumped []string
	if err := dp.DumpFlows(ctx, odp.DumpOptions{}, func(f *odp.Flow) error {
		dumped = append(dumped, odp.FormatKey(f.Key, f.Mask, false))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	all := strings.Join(dumped, "\n")
	for _, want := range []string{"geneve({class=0x102,type=0x80,len=4,0xa1b2c3d4})", "geneve({class=0x102,type=0x80,len=4,0xa1b2c3d5})"} {
		if !strings.Contains(all, want) {
			t.Errorf("dump lacks %s:\n%s", want, all)
		}
	}

	// A second datapath: a flow with a masked value takes both; a flow
	// with the same first option but 8 bytes takes neither (4 bytes of
	// options are not 8).
	ft2 := newFakeTunnel(tunnelGeneve, 6081, false)
	dp = tunnelFixture(t, ft2, "")
	w = newWorker(dp, DefaultCacheEntries)
	put(geneveOptFlow("{class=0x102,type=0x80,len=4,0xa1b2c3d4}{class=0x1,type=0x1,len=0}"))
	if h, m := recv(outerA); h != 0 || m != 1 {
		t.Errorf("4 bytes of options with a flow for 8: %d hits, %d misses; want a miss", h, m)
	}
	put(geneveOptFlow("{class=0x102,type=0x80,len=4,0xa1b2c3d0/0xfffffff0}"))
	for _, p := range [][]byte{outerA, outerB} {
		if h, m := recv(p); h != 1 || m != 0 {
			t.Errorf("option value %x with a flow for 0xa1b2c3d0/0xfffffff0: %d hits, %d misses; want a hit", p[i:i+4], h, m)
		}
	}

	// A flow whose tunnel leaves the options out matches them all, as
	// before options were held in the key.
	ft3 := newFakeTunnel(tunnelGeneve, 6081, false)
	dp = tunnelFixture(t, ft3, "")
	w = newWorker(dp, DefaultCacheEntries)
	put("tunnel(tun_id=0x5,src=0.0.0.0/0.0.0.0,dst=10.1.1.2,ttl=0/0,flags(+key)),in_port(2)," + anyEth + "eth_type(0x0800)" + anyIPv4)
	for _, p := range [][]byte{outerA, outerB} {
		if h, m := recv(p); h != 1 || m != 0 {
			t.Errorf("option value %x with a flow without options: %d hits, %d misses; want a hit", p[i:i+4], h, m)
		}
	}
}

// TestTnlPopGeneveOpts: tnl_pop fills the key's Geneve options, so that
// the inner packet's flow matches them, and leaves the worker's key
// without them afterwards, for the next frame's ExtractPort (which
// does not clear options).
func TestTnlPopGeneveOpts(t *testing.T) {
	ft := newFakeTunnel(tunnelGeneve, 6081, false)
	dp := tunnelFixture(t, ft, "tun_id=0x5,dst=10.1.1.2,ttl=64,geneve({class=0x102,type=0x80,len=4,0xa1b2c3d4}),flags(key)")
	outer := sendAndCapture(t, dp, ft, udpFrame(1, 2, 1000))
	frame := append([]byte{2, 0, 0, 0, 0, 9, 2, 0, 0, 0, 0, 8, 0x08, 0x00}, outer...)

	ft2 := newFakeTunnel(tunnelGeneve, 6081, false)
	dp2 := tunnelFixtureActs(t, ft2, "tnl_pop(2)")
	ctx := context.Background()
	if _, err := dp2.PutFlow(ctx, parseFlow(t, geneveOptFlow("{class=0x102,type=0x80,len=4,0xa1b2c3d4}"), "drop"), odp.PutCreate); err != nil {
		t.Fatal(err)
	}
	w := newWorker(dp2, DefaultCacheEntries)
	buf := make([]byte, BufferSize(1500))
	before, _ := dp2.Info(ctx)
	copy(buf[DefaultHeadroom:], frame)
	w.process(buf, DefaultHeadroom, len(frame), 1)
	w.flush()
	after, _ := dp2.Info(ctx)
	if h, m := after.Stats.Hit-before.Stats.Hit, after.Stats.Missed-before.Stats.Missed; h != 2 || m != 0 {
		t.Errorf("tnl_pop then the inner flow on the options: %d hits, %d misses; want 2 hits (outer and inner)", h, m)
	}
	if k := &w.ctx.key; k.TunOptsLen != 0 || k.TunOpts != ([flowkeys.TunOptsMax]byte{}) {
		t.Errorf("after tnl_pop the worker's key keeps options % x (length %d)", k.TunOpts[:8], k.TunOptsLen)
	}
}
