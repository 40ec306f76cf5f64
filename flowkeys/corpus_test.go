package flowkeys_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/ovsdp/ovsdp/flowkeys"
	"github.com/ovsdp/ovsdp/flowkeys/flowkeystest"
)

var ignoreBlank = cmpopts.IgnoreUnexported(flowkeys.Key{})

func TestCorpus(t *testing.T) {
	corpus := flowkeystest.Corpus()
	names := map[string]bool{}
	var errs, oks int
	for _, p := range corpus {
		if names[p.Name] {
			t.Errorf("duplicate corpus name %q", p.Name)
		}
		names[p.Name] = true
		var k flowkeys.Key
		err := flowkeys.Extract(p.Data, &flowkeys.Metadata{InPort: p.InPort}, &k)
		if p.WantErr != nil {
			errs++
			if !errors.Is(err, p.WantErr) {
				t.Errorf("%s: Extract error = %v, want %v", p.Name, err, p.WantErr)
			}
			continue
		}
		oks++
		if err != nil {
			t.Errorf("%s: Extract: %v", p.Name, err)
			continue
		}
		if d := cmp.Diff(p.Want, k, ignoreBlank); d != "" {
			t.Errorf("%s: key mismatch (-want +got):\n%s", p.Name, d)
		}
	}
	t.Logf("%d corpus packets: %d keys and %d errors checked", len(corpus), oks, errs)
	if len(corpus) < 500 {
		t.Errorf("corpus has only %d packets", len(corpus))
	}
}

func TestExtractClearsKey(t *testing.T) {
	data := flowkeystest.Corpus()[0].Data
	var dirty flowkeys.Key
	for i := range dirty.Words() {
		dirty.Words()[i] = ^uint64(0)
	}
	var clean flowkeys.Key
	if err := flowkeys.Extract(data, nil, &dirty); err != nil {
		t.Fatal(err)
	}
	if err := flowkeys.Extract(data, nil, &clean); err != nil {
		t.Fatal(err)
	}
	if dirty != clean {
		t.Errorf("Extract into a dirty key differs:\n%s", cmp.Diff(clean, dirty, ignoreBlank))
	}
}

func TestExtractL3(t *testing.T) {
	ip := flowkeystest.IPv4(flowkeystest.IPv4Opts{Proto: 17, TTL: 5}, flowkeystest.UDP(10, 20, nil))
	var k flowkeys.Key
	md := &flowkeys.Metadata{InPort: 4, L3: true, EthType: flowkeys.EthTypeIPv4}
	if err := flowkeys.Extract(ip, md, &k); err != nil {
		t.Fatal(err)
	}
	want := flowkeys.Key{InPort: 4, MacProto: flowkeys.MacProtoNone, EthType: 0x0800, IPProto: 17, IPTTL: 5,
		IPv4Src: flowkeystest.IPv4Src, IPv4Dst: flowkeystest.IPv4Dst, TpSrc: 10, TpDst: 20}
	if d := cmp.Diff(want, k, ignoreBlank); d != "" {
		t.Errorf("L3 IPv4 key (-want +got):\n%s", d)
	}
	// Too short for even an Ethernet header, but L3 packets need none.
	if err := flowkeys.Extract(ip[:5], md, &k); err != nil {
		t.Errorf("short L3 packet: %v", err)
	}
	md.EthType = flowkeys.EthTypeVLAN
	if err := flowkeys.Extract(ip, md, &k); !errors.Is(err, flowkeys.ErrL3VLAN) {
		t.Errorf("L3 VLAN: err = %v, want ErrL3VLAN", err)
	}
}

func TestExtractMetadata(t *testing.T) {
	md := &flowkeys.Metadata{
		InPort: 7, Priority: 3, SkbMark: 0xdead, RecircID: 9, DPHash: 0x1234,
		Tunnel: flowkeys.Tunnel{Proto: flowkeys.TunProtoIPv4, ID: 5000, IPv4Src: [4]byte{1, 1, 1, 1}, IPv4Dst: [4]byte{2, 2, 2, 2},
			Flags: 0x1, TOS: 4, TTL: 60, TpSrc: 1000, TpDst: 4789, GBP: 77},
		CTState: 0x22, CTOrigProto: 6, CTZone: 10, CTMark: 99, CTLabels: [16]byte{15: 1},
		CTOrigIPv4Src: [4]byte{3, 3, 3, 3}, CTOrigIPv4Dst: [4]byte{4, 4, 4, 4}, CTOrigTpSrc: 1, CTOrigTpDst: 2,
	}
	var k flowkeys.Key
	if err := flowkeys.Extract(flowkeystest.Eth(0x88cc), md, &k); err != nil {
		t.Fatal(err)
	}
	want := flowkeystest.EthKey(7, 0x88cc)
	want.Priority, want.SkbMark, want.RecircID, want.DPHash = 3, 0xdead, 9, 0x1234
	want.TunProto, want.TunID, want.TunIPv4Src, want.TunIPv4Dst = 2, 5000, [4]byte{1, 1, 1, 1}, [4]byte{2, 2, 2, 2}
	want.TunFlags, want.TunTOS, want.TunTTL, want.TunTpSrc, want.TunTpDst, want.TunGBP = 1, 4, 60, 1000, 4789, 77
	want.CTState, want.CTOrigProto, want.CTZone, want.CTMark, want.CTLabels = 0x22, 6, 10, 99, [16]byte{15: 1}
	want.CTOrigIPv4Src, want.CTOrigIPv4Dst, want.CTOrigTpSrc, want.CTOrigTpDst = [4]byte{3, 3, 3, 3}, [4]byte{4, 4, 4, 4}, 1, 2
	if d := cmp.Diff(want, k, ignoreBlank); d != "" {
		t.Errorf("metadata (-want +got):\n%s", d)
	}
	// Tunnel fields are ignored without a tunnel protocol.
	md.Tunnel.Proto = 0
	if err := flowkeys.Extract(flowkeystest.Eth(0x88cc), md, &k); err != nil {
		t.Fatal(err)
	}
	if k.TunID != 0 || k.TunIPv4Src != [4]byte{} {
		t.Errorf("tunnel fields copied without a tunnel: %+v", k)
	}
}

// ExtractPort gives Extract's key with only in_port as metadata, for
// every packet of the corpus.
func TestExtractPortIsExtract(t *testing.T) {
	for _, p := range flowkeystest.Corpus() {
		var want, got flowkeys.Key
		err1 := flowkeys.Extract(p.Data, &flowkeys.Metadata{InPort: p.InPort}, &want)
		// Old contents in every field (ExtractPort wants a key
		// without Geneve options: those are Extract's to clear).
		for i := range got.Words()[:flowkeys.KeyHeadWords] {
			got.Words()[i] = ^uint64(0)
		}
		got.TunOptsLen = 0
		err2 := flowkeys.ExtractPort(p.Data, p.InPort, &got)
		if err1 != err2 || got != want {
			t.Errorf("%s: ExtractPort %v %+v\nExtract %v %+v", p.Name, err2, got, err1, want)
		}
	}
	var k flowkeys.Key
	pkt := flowkeystest.Corpus()[0].Data
	if n := testing.AllocsPerRun(100, func() { _ = flowkeys.ExtractPort(pkt, 1, &k) }); n != 0 {
		t.Errorf("ExtractPort allocates %.1f times", n)
	}
}

func TestExtractErrorsSayWhat(t *testing.T) {
	var k flowkeys.Key
	err := flowkeys.Extract([]byte{1, 2, 3}, nil, &k)
	if err == nil || err.Error() != "flowkeys: Ethernet header: frame shorter than 14 bytes (never reaches key_extract)" {
		t.Errorf("short frame error = %v", err)
	}
}

func TestExtractAllocs(t *testing.T) {
	corpus := flowkeystest.Corpus()
	md := &flowkeys.Metadata{InPort: 1}
	var k flowkeys.Key
	n := testing.AllocsPerRun(20, func() {
		for i := range corpus {
			_ = flowkeys.Extract(corpus[i].Data, md, &k)
		}
	})
	if n != 0 {
		t.Errorf("Extract over the corpus allocates %.1f times per run, want 0", n)
	}
}
