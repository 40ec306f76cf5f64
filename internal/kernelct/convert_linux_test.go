package kernelct

import (
	"context"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ti-mo/conntrack"

	"github.com/ovsdp/ovsdp/odp"
)

func TestEntry(t *testing.T) {
	a := netip.MustParseAddr
	tcp := conntrack.Flow{
		ID: 77, Timeout: 120, Zone: 9, Mark: 3, Status: conntrack.Status(0xffffffff),
		TupleOrig: conntrack.Tuple{IP: conntrack.IPTuple{SourceAddress: a("10.0.0.1"), DestinationAddress: a("10.0.0.2")},
			Proto: conntrack.ProtoTuple{Protocol: 6, SourcePort: 1000, DestinationPort: 80}},
		TupleReply: conntrack.Tuple{IP: conntrack.IPTuple{SourceAddress: a("10.0.0.2"), DestinationAddress: a("10.0.0.1")},
			Proto: conntrack.ProtoTuple{Protocol: 6, SourcePort: 80, DestinationPort: 1000}},
		// struct nf_ct_tcp_flags {flags, mask}, big-endian as a u16: flags
		// WINDOW_SCALE|SACK_PERM (0x03) and an unnamed bit 0x80 that
		// ovs-dpctl drops, mask 0xff.
		ProtoInfo:     conntrack.ProtoInfo{TCP: &conntrack.ProtoInfoTCP{State: 7 /* TCP_CONNTRACK_TIME_WAIT */, OriginalWindowScale: 7, ReplyWindowScale: 6, OriginalFlags: 0x83ff, ReplyFlags: 0x23ff}},
		CountersOrig:  conntrack.Counter{Packets: 5, Bytes: 300},
		CountersReply: conntrack.Counter{Packets: 4, Bytes: 200, Direction: true},
		Timestamp:     conntrack.Timestamp{Start: time.Unix(10, 5e6)},
		// ct_label bit 0 and bit 64 set, as the kernel's two unsigned longs.
		Labels: []byte{1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0},
		Helper: conntrack.Helper{Name: "ftp"},
	}
	got := Entry(&tcp)
	want := odp.CTEntry{
		Orig:  odp.CTTuple{Src: a("10.0.0.1"), Dst: a("10.0.0.2"), Proto: 6, SrcPort: 1000, DstPort: 80},
		Reply: odp.CTTuple{Src: a("10.0.0.2"), Dst: a("10.0.0.1"), Proto: 6, SrcPort: 80, DstPort: 1000},
		Zone:  9, Mark: 3, Status: odp.CTStatusMask, Timeout: 120, ID: 77,
		OrigCounters: odp.CTCounters{Packets: 5, Bytes: 300}, ReplyCounters: odp.CTCounters{Packets: 4, Bytes: 200},
		Start: 10_005_000_000,
		ProtoInfo: odp.CTProtoInfo{Proto: 6, StateOrig: odp.CTTCPTimeWait, StateReply: odp.CTTCPTimeWait,
			WScaleOrig: 7, WScaleReply: 6, FlagsOrig: odp.CTTCPWindowScale | odp.CTTCPSackPerm,
			FlagsReply: odp.CTTCPWindowScale | odp.CTTCPSackPerm | odp.CTTCPMaxAckSet},
		Helper: "ftp", Bucket: -1,
	}
	want.Labels[7], want.Labels[15] = 1, 1
	if got != want {
		t.Errorf("TCP entry:\ngot  %+v\nwant %+v", got, want)
	}
	if s := odp.FormatCTEntry(&got, false, false, time.UTC); !strings.Contains(s, ",labels=0x10000000000000001,") {
		t.Errorf("labels print as %s", s)
	}

	ping := conntrack.Flow{
		TupleOrig: conntrack.Tuple{IP: conntrack.IPTuple{SourceAddress: a("fc00::1"), DestinationAddress: a("fc00::2")},
			Proto: conntrack.ProtoTuple{Protocol: 58, ICMPv6: true, ICMPID: 9, ICMPType: 128, SourcePort: 1}},
		TupleReply: conntrack.Tuple{IP: conntrack.IPTuple{SourceAddress: a("fc00::2"), DestinationAddress: a("fc00::1")},
			Proto: conntrack.ProtoTuple{Protocol: 58, ICMPv6: true, ICMPID: 9, ICMPType: 129}},
		TupleMaster: conntrack.Tuple{IP: conntrack.IPTuple{SourceAddress: a("fc00::1"), DestinationAddress: a("fc00::3")},
			Proto: conntrack.ProtoTuple{Protocol: 17, SourcePort: 5, DestinationPort: 6}},
		Labels: []byte{2}, // short: padded with zeros
	}
	e := Entry(&ping)
	if e.Orig != (odp.CTTuple{Src: a("fc00::1"), Dst: a("fc00::2"), Proto: 58, ICMPID: 9, ICMPType: 128}) ||
		e.Reply.ICMPType != 129 || e.Parent.DstPort != 6 || e.Labels[15] != 2 || e.ProtoInfo.Proto != 0 {
		t.Errorf("ICMPv6 entry: %+v", e)
	}
}

func TestSCTPState(t *testing.T) {
	for k, want := range map[uint8]uint8{0: 0, 1: 0, 2: 1, 4: 3, 9: 8, 10: 0} {
		if got := sctpState(k); got != want {
			t.Errorf("kernel SCTP state %d: %d, want %d", k, got, want)
		}
	}
	sctp := conntrack.Flow{ProtoInfo: conntrack.ProtoInfo{SCTP: &conntrack.ProtoInfoSCTP{State: 4, VTagOriginal: 1, VTagReply: 2}}}
	if p := Entry(&sctp).ProtoInfo; p != (odp.CTProtoInfo{Proto: 132, SCTPState: 3, SCTPVTagOrig: 1, SCTPVTagRp: 2}) {
		t.Errorf("SCTP protoinfo %+v", p)
	}
}

func TestMaxConnsSysctl(t *testing.T) {
	dir := t.TempDir()
	tr := &Tracker{sysctlDir: dir}
	ctx := context.Background()
	if _, err := tr.MaxConns(ctx); err == nil || !strings.Contains(err.Error(), "reading the maximum number of connections") {
		t.Errorf("missing file: %v", err)
	}
	path := filepath.Join(dir, "nf_conntrack_max")
	for _, bad := range []string{"", "abc\n", "-1\n", "4294967296\n"} {
		if err := os.WriteFile(path, []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := tr.MaxConns(ctx); err == nil || !strings.Contains(err.Error(), "not a number of connections") {
			t.Errorf("%q: %v", bad, err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "nf_conntrack_count"), []byte("17\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if n, err := tr.ConntrackCount(ctx); err != nil || n != 17 {
		t.Errorf("count: %d, %v", n, err)
	}
	if err := tr.SetMaxConns(ctx, 262144); err != nil {
		t.Fatal(err)
	}
	if n, err := tr.MaxConns(ctx); err != nil || n != 262144 {
		t.Errorf("after set: %d, %v", n, err)
	}
	if err := tr.SetMaxConns(ctx, 1<<31); err == nil || !strings.Contains(err.Error(), "at most 2147483647") {
		t.Errorf("2^31: %v", err)
	}
	// A write the file refuses. Root writes a read-only file anyway, so
	// there the refusal is a directory in the file's place (EISDIR, not a
	// permission error: no namespace hint); others get the read-only
	// file, as in a network namespace other than the initial one.
	if os.Geteuid() == 0 {
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
		if err := os.Mkdir(path, 0o755); err != nil {
			t.Fatal(err)
		}
		err := tr.SetMaxConns(ctx, 5)
		if err == nil || !strings.Contains(err.Error(), "setting the maximum number of connections") || strings.Contains(err.Error(), "namespace") {
			t.Errorf("unwritable (a directory): %v", err)
		}
		return
	}
	if err := os.Chmod(path, 0o444); err != nil {
		t.Fatal(err)
	}
	if err := tr.SetMaxConns(ctx, 5); err == nil || !strings.Contains(err.Error(), "only the initial network namespace") {
		t.Errorf("read-only: %v", err)
	}
}
