package main

import (
	"bytes"
	"net/netip"
	"strings"
	"testing"

	"github.com/ovsdp/ovsdp/odp"
)

func TestWriteCTStats(t *testing.T) {
	a := netip.MustParseAddr
	tcp := func(s odp.CTTCPState) odp.CTEntry {
		return odp.CTEntry{Orig: odp.CTTuple{Src: a("1.1.1.1"), Dst: a("2.2.2.2"), Proto: 6},
			ProtoInfo: odp.CTProtoInfo{Proto: 6, StateOrig: s, StateReply: s}}
	}
	proto := func(p uint8) odp.CTEntry {
		return odp.CTEntry{Orig: odp.CTTuple{Src: a("1.1.1.1"), Dst: a("2.2.2.2"), Proto: p}}
	}
	entries := []odp.CTEntry{tcp(odp.CTTCPEstablished), tcp(odp.CTTCPSynRecv), tcp(odp.CTTCPTimeWait), tcp(odp.CTTCPFinWait2),
		tcp(odp.CTTCPSynSent), proto(17), proto(17), proto(1), proto(58), proto(132), proto(47), proto(136), proto(33), proto(2)}
	var b bytes.Buffer
	writeCTStats(&b, entries, true)
	// ovs-dpctl counts ICMPv6 in the total only, and coalesces SYN_RECV
	// into ESTABLISHED and FIN_WAIT_2 into TIME_WAIT.
	want := "Connections Stats:\n    Total: 14\n  TCP: 5\n    Conn per TCP states:\n" +
		"\t  [SYN_SENT]=1\n\t  [ESTABLISHED]=2\n\t  [TIME_WAIT]=2\n" +
		"  UDP: 2\n  UDPLITE: 1\n  SCTP: 1\n  ICMP: 1\n  DCCP: 1\n  IGMP: 1\n  Other: 1\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
	b.Reset()
	writeCTStats(&b, nil, false)
	if b.String() != "Connections Stats:\n    Total: 0\n" {
		t.Errorf("empty: %q", b.String())
	}
}

func TestWriteCTBkts(t *testing.T) {
	var b bytes.Buffer
	entries := []odp.CTEntry{{Bucket: 0}, {Bucket: 0}, {Bucket: 3}, {Bucket: 9}, {Bucket: 20}, {Bucket: -1}}
	writeCTBkts(&b, entries, 10, 0)
	want := "Total Buckets: 10\nBucket nr out of range: 20 >= 10\nBucket nr out of range: -1 >= 10\nCurrent Connections: 6\n\n" +
		"+-----------+-----------------------------------------+\n" +
		"|  Buckets  |         Connections per Buckets         |\n" +
		"+-----------+-----------------------------------------+\n" +
		"   0..  7   |     2    .    .    1    .    .    .    .\n" +
		"   8.. 15   |     .    1\n\n"
	if b.String() != want {
		t.Errorf("got\n%q\nwant\n%q", b.String(), want)
	}
	b.Reset()
	writeCTBkts(&b, entries[:3], 4, 1)
	if want := "Total Buckets: 4\nCurrent Connections: 3\n\n" +
		"+-----------+-----------------------------------------+\n" +
		"|  Buckets  |         Connections per Buckets         |\n" +
		"+-----------+-----------------------------------------+\n" +
		"   0..  7   |     2    .    .    .\n\n"; b.String() != want {
		t.Errorf("gt=1: got\n%q\nwant\n%q", b.String(), want)
	}
}

func TestWriteIPFStatus(t *testing.T) {
	var b bytes.Buffer
	writeIPFStatus(&b, odp.IPFStatusAll{V4: odp.IPFStatus{Enabled: true, MinFragSize: 1000, Accepted: 5, CompletedSent: 4, ExpiredSent: 3, TooSmall: 2, Overlap: 1, Purged: 7},
		V6: odp.IPFStatus{MinFragSize: 1280}, MaxFrags: 1000, NFrags: 2})
	want := `        Fragmentation Module Status
        ---------------------------
        v4 enabled: 1
        v6 enabled: 0
        max num frags (v4/v6): 1000
        num frag: 2
        min v4 frag size: 1000
        v4 frags accepted: 5
        v4 frags completed: 4
        v4 frags expired: 3
        v4 frags too small: 2
        v4 frags overlapped: 1
        v4 frags purged: 7
        min v6 frag size: 1280
        v6 frags accepted: 0
        v6 frags completed: 0
        v6 frags expired: 0
        v6 frags too small: 0
        v6 frags overlapped: 0
        v6 frags purged: 0
`
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}

// TestGoldenConntrack runs the conntrack and fragment commands against a
// userspace datapath: its tracker answers dump, flush, statistics and the
// counts; what it lacks (buckets, TCP sequence checking and sweep
// settings, fragment reassembly) fails saying so, never a stub's
// success; every command's argument errors come first.
func TestGoldenConntrack(t *testing.T) {
	h := newHarness(t)
	h.hostDP("br0")
	// One command a line: what the userspace tracker answers (through the
	// control socket: its empty table here; userdp's TestConntrackAdmin
	// fills one), then what it lacks.
	const served = `dump-conntrack
		dump-conntrack -m -s netdev@br0 zone=1
		flush-conntrack
		flush-conntrack netdev@br0 zone=3 ct_nw_src=10.0.0.1,ct_nw_proto=6,ct_tp_dst=80
		ct-stats-show zone=1 verbose
		ct-set-maxconns 10
		ct-get-maxconns netdev@br0
		ct-get-nconns`
	for _, line := range strings.Split(served, "\n") {
		h.mustRun("", strings.Fields(line)...)
	}
	const refused = `ct-bkts gt=2
		ct-enable-tcp-seq-chk
		ct-disable-tcp-seq-chk
		ct-get-tcp-seq-chk
		ct-set-sweep-interval 100
		ct-get-sweep-interval
		ipf-set-enabled v4
		ipf-set-disabled netdev@br0 v6
		ipf-set-min-frag v4 1000
		ipf-set-max-nfrags 100
		ipf-get-status`
	for _, line := range strings.Split(refused, "\n") {
		h.mustFail("netdev@br0: not available on this datapath's tracker yet", "", strings.Fields(line)...)
	}
	// Argument errors come before the datapath's.
	h.mustFail(`"zone=x": the zone is not a number from 0 to 65535`, "", "dump-conntrack", "zone=x")
	h.mustFail(`"zone=65536": the zone is not a number`, "", "dump-conntrack", "zone=65536")
	h.mustFail("dump-conntrack: wrong number of arguments", "", "dump-conntrack", "netdev@br0", "extra")
	h.mustFail("datapath netdev@nope does not exist", "", "dump-conntrack", "netdev@nope")
	h.mustFail("flush-conntrack: original tuple: column 1", "", "flush-conntrack", "ct_nw_src=1.2.3")
	h.mustFail("invalid conntrack tuple field: bogus", "", "flush-conntrack", "netdev@br0", "bogus=1")
	h.mustFail("a port is set without ct_nw_proto", "", "flush-conntrack", "ct_tp_src=1")
	h.mustFail("unexpected argument", "", "flush-conntrack", "zone=1", "ct_nw_proto=6", "ct_nw_proto=6", "ct_nw_proto=6")
	h.mustFail(`"verbosely": did you mean verbose?`, "", "ct-stats-show", "verbosely")
	h.mustFail("the threshold is not a number", "", "ct-bkts", "gt=-1")
	h.mustFail("maxconns missing or malformed", "", "ct-set-maxconns")
	h.mustFail(`maxconns missing or malformed: "x" is not a number`, "", "ct-set-maxconns", "x")
	h.mustFail("wrong number of arguments", "", "ct-get-nconns", "netdev@br0", "1")
	h.mustFail("invalid sweep value \"0\"", "", "ct-set-sweep-interval", "0")
	h.mustFail("parameter missing: 'v4' for IPv4 or 'v6' for IPv6", "", "ipf-set-enabled", "v5")
	h.mustFail("parameter missing for minimum fragment size", "", "ipf-set-min-frag", "v4", "x")
	h.mustFail("parameter missing for maximum fragments", "", "ipf-set-max-nfrags", "x")
	h.mustFail("command does not work in read only mode", "", "--read-only", "ct-set-maxconns", "1")
	h.mustFail("command does not work in read only mode", "", "--read-only", "ipf-set-enabled", "v4")
	h.check("conntrack")
}
