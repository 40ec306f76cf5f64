package main

import (
	"bytes"
	"context"
	"net/netip"
	"strconv"
	"strings"
	"testing"

	"github.com/ovsdp/ovsdp/internal/header"
	"github.com/ovsdp/ovsdp/internal/header/headertest"
	"github.com/ovsdp/ovsdp/odp"
	"github.com/ovsdp/ovsdp/userdp"
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
// userspace datapath (through its control socket): its tracker answers
// dump, flush, statistics, the counts, the buckets (a 16-bucket table
// holding two connections), the TCP sequence check and sweep settings
// and the fragment reassembler's settings and status (with two IPv4
// fragments of one datagram and one of another held, one duplicate
// refused); every command's argument errors come first. Before, the
// tuning and ipf commands failed with "not available on this datapath's
// tracker yet".
func TestGoldenConntrack(t *testing.T) {
	h := newHarness(t)
	dp := h.hostDP("br0", userdp.WithConntrackMax(16))
	// One command a line: what the userspace tracker answers (through the
	// control socket: its empty table here; userdp's TestConntrackAdmin
	// fills one).
	const served = `dump-conntrack
		dump-conntrack -m -s netdev@br0 zone=1
		flush-conntrack
		flush-conntrack netdev@br0 zone=3 ct_nw_src=10.0.0.1,ct_nw_proto=6,ct_tp_dst=80
		ct-stats-show zone=1 verbose
		ct-set-maxconns 10
		ct-get-maxconns netdev@br0
		ct-get-nconns
		ct-get-tcp-seq-chk
		ct-disable-tcp-seq-chk
		ct-get-tcp-seq-chk
		ct-enable-tcp-seq-chk netdev@br0
		ct-get-tcp-seq-chk
		ct-get-sweep-interval
		ct-set-sweep-interval 100
		ct-get-sweep-interval netdev@br0
		ipf-get-status
		ipf-set-disabled netdev@br0 v6
		ipf-set-enabled v6
		ipf-set-min-frag v4 1000
		ipf-set-min-frag v4 0
		ipf-set-max-nfrags 100`
	for _, line := range strings.Split(served, "\n") {
		h.mustRun("", strings.Fields(line)...)
	}
	// Two committed connections, three fragments (one a duplicate).
	ctx := context.Background()
	execute := func(frame []byte, acts string) {
		t.Helper()
		a, err := odp.ParseActions(acts)
		if err != nil {
			t.Fatal(err)
		}
		if err := dp.Execute(ctx, &odp.Packet{Data: frame, Key: odp.FlowKey{odp.InPort(1)}, Actions: a}); err != nil {
			t.Fatal(err)
		}
	}
	ip := func(sport uint16, payload int) []byte {
		return headertest.IPv4(headertest.IPv4Hdr{Src: headertest.IP4("10.0.0.1"), Dst: headertest.IP4("10.0.0.2"), Proto: header.IPProtoUDP, TTL: 64, ID: sport},
			headertest.UDP(sport, 53, make([]byte, payload)))
	}
	eth := func(ip []byte) []byte {
		return headertest.Eth(headertest.MAC("02:00:00:00:00:02"), headertest.MAC("02:00:00:00:00:01"), header.EtherTypeIPv4, ip)
	}
	execute(eth(ip(1000, 10)), "ct(commit)")
	execute(eth(ip(1001, 10)), "ct(commit,zone=5)")
	f := headertest.Fragment4(ip(2000, 2000), headertest.Pieces(2008, 1000)...)
	g := headertest.Fragment4(ip(2001, 2000), headertest.Pieces(2008, 1000)...)
	for _, fr := range [][]byte{f[0], f[1], f[1], g[2]} {
		execute(eth(fr), "ct(zone=7)")
	}
	// Which buckets the connections are in depends on the table's random
	// hash seed: the transcript shows a threshold above them, this the
	// count.
	saved := h.log.String()
	r := h.mustRun("", "ct-bkts", "gt=0")
	h.log.Reset()
	h.log.WriteString(saved) // not in the transcript
	n := 0
	for _, line := range strings.Split(r.stdout, "\n") {
		if _, row, ok := strings.Cut(line, "| "); ok && strings.Contains(line, "..") {
			for _, f := range strings.Fields(row) {
				if f != "." {
					c, err := strconv.Atoi(f)
					if err != nil {
						t.Fatalf("ct-bkts row %q", line)
					}
					n += c
				}
			}
		}
	}
	if n != 2 {
		t.Fatalf("ct-bkts counts %d connections, want 2:\n%s", n, r.stdout)
	}
	const filled = `ct-bkts gt=2
		ipf-get-status
		ipf-get-status -m netdev@br0
		--format=json ipf-get-status -m`
	for _, line := range strings.Split(filled, "\n") {
		h.mustRun("", strings.Fields(line)...)
	}
	h.mustFail("requested minimum fragment size too small; see documentation", "", "ipf-set-min-frag", "v6", "399")
	h.mustFail("setting maximum fragments failed", "", "ipf-set-max-nfrags", "5001")
	h.mustFail("setting maximum fragments failed", "", "ipf-set-max-nfrags", "0")
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
