package main

import (
	"testing"

	"github.com/ovsdp/ovsdp/odp"
)

// TestTruncateAtDrop: an explicit drop is found, and the list cut before
// it, at every level of every nested action (clone, sample, check_pkt_len's
// two lists, dec_ttl), with what comes before the drop kept.
func TestTruncateAtDrop(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"1,2", "1,2"},
		{"1,drop,2", "1"},
		{"drop", "drop"},
		{"clone(1,drop),2", "clone(1),2"},
		{"sample(sample=50.0%,actions(1,drop)),2", "sample(sample=50.0%,actions(1)),2"},
		{"check_pkt_len(size=100,gt(drop(3)),le(1)),2", "check_pkt_len(size=100,gt(),le(1)),2"},
		{"check_pkt_len(size=100,gt(1),le(2,drop)),3", "check_pkt_len(size=100,gt(1),le(2)),3"},
		{"dec_ttl(le_1(1,drop)),2", "dec_ttl(le_1(1)),2"},
		{"clone(dec_ttl(le_1(check_pkt_len(size=9,gt(drop(3)),le(1)))))", "clone(dec_ttl(le_1(check_pkt_len(size=9,gt(),le(1)))))"},
	} {
		as, err := odp.ParseActions(tc.in)
		if err != nil {
			t.Fatalf("%s: %v", tc.in, err)
		}
		want, err := odp.ParseActions(tc.want)
		if err != nil {
			t.Fatalf("%s: %v", tc.want, err)
		}
		if got := hasExplicitDrop(as); got != (tc.in != tc.want) {
			t.Errorf("hasExplicitDrop(%s) = %v", tc.in, got)
		}
		if got := truncateAtDrop(as); odp.FormatActions(got) != odp.FormatActions(want) {
			t.Errorf("truncateAtDrop(%s) = %s, want %s", tc.in, got, want)
		}
	}
}
