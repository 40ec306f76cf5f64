package flowkeys_test

import (
	"testing"

	"github.com/ovsdp/ovsdp/flowkeys"
)

// TestMetadataOfRoundTrip: the metadata Extract is given is what
// MetadataOf reads back from the key, every field of it (the conntrack
// original tuple included), so that a packet extracted again keeps it.
func TestMetadataOfRoundTrip(t *testing.T) {
	md := flowkeys.Metadata{InPort: 3, Priority: 4, SkbMark: 5, RecircID: 6, DPHash: 7,
		Tunnel:  flowkeys.Tunnel{Proto: flowkeys.TunProtoIPv4, ID: 8, IPv4Src: [4]byte{1, 2, 3, 4}, TTL: 9, TpDst: 4789},
		CTState: 0x21, CTOrigProto: 17, CTZone: 10, CTMark: 11, CTLabels: [16]byte{12},
		CTOrigIPv4Src: [4]byte{10, 0, 0, 1}, CTOrigIPv4Dst: [4]byte{10, 0, 0, 2}, CTOrigIPv6Src: [16]byte{13},
		CTOrigIPv6Dst: [16]byte{14}, CTOrigTpSrc: 15, CTOrigTpDst: 16}
	frame := make([]byte, 60)
	frame[12], frame[13] = 0x88, 0xb5 // an EtherType with nothing after it to parse
	var k flowkeys.Key
	if err := flowkeys.Extract(frame, &md, &k); err != nil {
		t.Fatal(err)
	}
	if got := flowkeys.MetadataOf(&k); got != md {
		t.Fatalf("MetadataOf\n got %+v\nwant %+v", got, md)
	}
}
