package crosscheck

import (
	"encoding/hex"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/ovsdp/ovsdp/internal/header"
	"github.com/ovsdp/ovsdp/odp"
)

// Received is what one host's interface received, in arrival order.
type Received struct {
	Host   string
	Frames []ObservedFrame
}

// ObservedFrame is one received frame: its summary (taken before
// normalization, so checksums are those on the wire) and its bytes
// after normalization.
type ObservedFrame struct {
	Summary string
	Data    []byte
}

// ObservedFlow is one megaflow as dumped: its canonical ovs-dpctl text
// (key/mask and actions, UFID aside; the upcall PID shown as $PID) and
// statistics.
type ObservedFlow struct {
	Text     string
	Packets  uint64
	Bytes    uint64
	TCPFlags uint16
}

// ObservedUpcall is one upcall: its kind, port, key as text (the
// datapath's), userdata and packet.
type ObservedUpcall struct {
	Kind string
	Port uint32
	Key  string
	// CT is the key's conntrack zone, mark and labels (which Key, as
	// dpctl prints keys without a mask, leaves out), or "" if all 0.
	CT       string
	Userdata []byte
	Packet   []byte
	// Extracted is flowkeys.Extract's key for the packet, as text,
	// converted with odp.KeyFromFlowKeys (misses only).
	Extracted string
}

// Observation is what one datapath did with a scenario.
type Observation struct {
	Datapath string // "system" or "netdev"
	Received []Received
	Flows    []ObservedFlow
	Upcalls  []ObservedUpcall
	// Meters are the statistics of the scenario's meters.
	Meters []ObservedMeter
	// Conntrack is the connection tracker's table after the traffic
	// (scenarios with Conntrack).
	Conntrack []odp.CTEntry
	// ZoneLimits are the scenario's zone limits after the traffic, with
	// their connection counts.
	ZoneLimits []odp.CTZoneLimit
	// Hit, Missed and Lost are the datapath's counters.
	Hit, Missed, Lost uint64
	// Noise counts frames and upcalls of the hosts' own background
	// traffic (MLD reports, router solicitations) left out above.
	Noise int
	// Errors are what went wrong while playing (traffic that failed,
	// flows the datapath refused, handler errors), one per entry.
	Errors []string
}

// ObservedMeter is a meter's statistics after the traffic.
type ObservedMeter struct {
	ID             uint32
	Packets, Bytes uint64
	// Bands are each band's packets and bytes.
	Bands [][2]uint64
}

// CompareOptions relax the comparison where a scenario's outcome
// legitimately depends on timing or on installer-defined behaviour.
type CompareOptions struct {
	// IgnoreFlowStats leaves per-flow packet and byte counts out (for
	// overlapping megaflows, where which flow a packet hits is the
	// installer's business).
	IgnoreFlowStats bool
	// UnorderedFrames compares each host's frames as a sorted list.
	UnorderedFrames bool
	// DedupFrames compares each host's distinct frames once, for traffic
	// from the hosts' own TCP stacks, which may send an identical segment
	// twice (a duplicate ACK fired by a timer) depending on timing alone.
	// Use it with UnorderedFrames.
	DedupFrames bool
	// IgnoreCounters leaves the hit/missed counters out.
	IgnoreCounters bool
	// IgnoreMeterStats leaves the meters' packet, byte and band counts
	// out (for a load whose outcome depends on time, compared within a
	// tolerance by its test).
	IgnoreMeterStats bool
	// MergeHosts compares the frames these hosts received as one sorted
	// list, for traffic split between them by dp_hash: the kernel seeds
	// its packet hash per boot, so which host gets which frame differs
	// between the datapaths (and between boots), while the frames do not.
	MergeHosts []string
	// IgnoreIPv6FragmentIDs compares IPv6 fragments (a fragment header
	// right after the fixed header) with their identification zeroed:
	// the kernel gives the fragments it makes a new one from a keyed
	// hash (ipv6_select_ident), userdp keeps the original fragments'.
	IgnoreIPv6FragmentIDs bool
}

// zeroIPv6FragmentID returns b, or for an IPv6 fragment whose fragment
// header follows the fixed header a copy with the identification zeroed.
func zeroIPv6FragmentID(b []byte) []byte {
	p := Parse(b)
	if p.L3 < 0 || p.EthType != header.EtherTypeIPv6 || len(b) < p.L3+48 || b[p.L3+header.IPv6NextHeaderOffset] != 44 {
		return b
	}
	c := append([]byte(nil), b...)
	clear(c[p.L3+44 : p.L3+48])
	return c
}

// Render returns the observation as text, the form Compare diffs.
// Upcalls and flows are sorted; frames keep their order unless
// o.UnorderedFrames.
func (ob *Observation) Render(o CompareOptions) string {
	var b strings.Builder
	received, mergedName := ob.Received, ""
	if len(o.MergeHosts) > 0 {
		mergedName = strings.Join(o.MergeHosts, "+")
		merged := Received{Host: mergedName}
		received = nil
		for _, r := range ob.Received {
			if slices.Contains(o.MergeHosts, r.Host) {
				merged.Frames = append(merged.Frames, r.Frames...)
			} else {
				received = append(received, r)
			}
		}
		received = append(received, merged)
	}
	for _, r := range received {
		lines := make([]string, 0, len(r.Frames))
		for _, f := range r.Frames {
			data := f.Data
			if o.IgnoreIPv6FragmentIDs {
				data = zeroIPv6FragmentID(data)
			}
			lines = append(lines, fmt.Sprintf("  %s | %s", f.Summary, hex.EncodeToString(data)))
		}
		if o.UnorderedFrames || r.Host == mergedName && mergedName != "" {
			sort.Strings(lines)
		}
		what := "frames"
		if o.DedupFrames {
			lines = dedupSorted(lines)
			what = "distinct frames"
		}
		fmt.Fprintf(&b, "== %s received (%d %s)\n", r.Host, len(lines), what)
		for _, l := range lines {
			b.WriteString(l)
			b.WriteByte('\n')
		}
	}
	fl := make([]string, 0, len(ob.Flows))
	for _, f := range ob.Flows {
		if o.IgnoreFlowStats {
			fl = append(fl, fmt.Sprintf("  %s", f.Text))
		} else {
			fl = append(fl, fmt.Sprintf("  %s packets:%d bytes:%d tcp_flags:%#x", f.Text, f.Packets, f.Bytes, f.TCPFlags))
		}
	}
	writeSorted(&b, "flows", fl)
	ul := make([]string, 0, len(ob.Upcalls))
	for _, u := range ob.Upcalls {
		s := fmt.Sprintf("  %s port %d key %s", u.Kind, u.Port, u.Key)
		if u.CT != "" {
			s += " " + u.CT
		}
		if u.Userdata != nil {
			s += " userdata " + hex.EncodeToString(u.Userdata)
		}
		s += " | packet " + hex.EncodeToString(u.Packet)
		ul = append(ul, s)
	}
	writeSorted(&b, "upcalls", ul)
	if len(ob.Meters) > 0 {
		fmt.Fprintf(&b, "== meters (%d)\n", len(ob.Meters))
		for _, m := range ob.Meters {
			if o.IgnoreMeterStats {
				fmt.Fprintf(&b, "  meter:%d\n", m.ID)
				continue
			}
			fmt.Fprintf(&b, "  meter:%d packets:%d bytes:%d", m.ID, m.Packets, m.Bytes)
			for i, band := range m.Bands {
				fmt.Fprintf(&b, " band %d: packets:%d bytes:%d", i, band[0], band[1])
			}
			b.WriteByte('\n')
		}
	}
	if ob.Conntrack != nil {
		cl := make([]string, 0, len(ob.Conntrack))
		for _, e := range ob.Conntrack {
			cl = append(cl, "  "+ctLine(e))
		}
		writeSorted(&b, "conntrack", cl)
	}
	if len(ob.ZoneLimits) > 0 {
		zl := make([]string, 0, len(ob.ZoneLimits))
		for _, l := range ob.ZoneLimits {
			zone := fmt.Sprint(l.Zone)
			if l.Zone == odp.CTDefaultZone {
				zone = "default"
			}
			zl = append(zl, fmt.Sprintf("  zone=%s,limit=%d,count=%d", zone, l.Limit, l.Count))
		}
		writeSorted(&b, "zone limits", zl)
	}
	if o.IgnoreCounters {
		fmt.Fprintf(&b, "== counters (lost %d)\n", ob.Lost)
	} else {
		fmt.Fprintf(&b, "== counters (hit %d missed %d lost %d)\n", ob.Hit, ob.Missed, ob.Lost)
	}
	if len(ob.Errors) > 0 {
		fmt.Fprintf(&b, "== errors (%d)\n", len(ob.Errors))
		for _, e := range ob.Errors {
			fmt.Fprintf(&b, "  %s\n", e)
		}
	}
	return b.String()
}

// writeSorted writes the section name with lines, sorted.
func writeSorted(b *strings.Builder, name string, lines []string) {
	sort.Strings(lines)
	fmt.Fprintf(b, "== %s (%d)\n", name, len(lines))
	for _, l := range lines {
		b.WriteString(l)
		b.WriteByte('\n')
	}
}

// ctLine is a conntrack entry as dump-conntrack -m prints it (status
// bits and TCP state included), without what is the datapath's own: the
// kernel's entry ID; counters are not printed. The timeout, which counts
// down, is shown as the smallest of the kernel's default timeouts that
// is at least it (ctTimeoutClasses): the state's timeout, compared.
//
// A UDP connection that has seen a reply becomes a stream (ASSURED, 120 s)
// with the first packet that comes 2 s or more after its first one
// (nf_conntrack_udp_packet's stream_ts, which userdp's tracker follows):
// which side of 2 s a paced scenario's packet falls on is the machine's
// speed (TCG), so for UDP the ASSURED bit is left out and 30 and 120 s are
// one class.
func ctLine(e odp.CTEntry) string {
	e.ID = 0
	class := "longer"
	for _, c := range ctTimeoutClasses {
		if e.Timeout <= c {
			class = fmt.Sprint(c)
			break
		}
	}
	if e.Orig.Proto == odp.IPProtoUDP {
		e.Status &^= odp.CTStatusAssured
		if e.Timeout <= 120 {
			class = "120"
		}
	}
	return strings.Replace(odp.FormatCTEntry(&e, true, false, nil), "),id=0", ")", 1) + ",timeout<=" + class
}

// ctTimeoutClasses are the kernel's default conntrack timeouts in
// seconds, ascending (nf_conntrack_proto_tcp/udp/icmp/generic.c: TCP
// CLOSE 10, LAST_ACK and UDP unreplied and ICMP 30, SYN_RECV and
// CLOSE_WAIT 60, SYN_SENT, FIN_WAIT, TIME_WAIT and UDP streams 120, TCP
// unacknowledged 300, generic 600, ESTABLISHED 5 days).
var ctTimeoutClasses = []uint32{10, 30, 60, 120, 300, 600, 432000}

// KeyMismatches returns, for every miss upcall whose datapath key
// differs from flowkeys.Extract's key for its packet, a readable report
// with the packet and both keys.
func (ob *Observation) KeyMismatches() []string {
	var out []string
	for _, u := range ob.Upcalls {
		if u.Kind != "miss" || u.Key == u.Extracted {
			continue
		}
		out = append(out, fmt.Sprintf("%s datapath key differs from flowkeys.Extract's for packet %s (%s):\n%s",
			ob.Datapath, hex.EncodeToString(u.Packet), Describe(u.Packet),
			Diff(ob.Datapath+" key", strings.ReplaceAll(u.Key, "),", "),\n"),
				"flowkeys.Extract", strings.ReplaceAll(u.Extracted, "),", "),\n"))))
	}
	return out
}

// Compare returns "" when a and b are the same under o, else a unified
// diff of their renderings, section by section (each host's frames, the
// flows, the upcalls, the counters, the errors), so that a difference in
// one section does not blur the others.
func Compare(a, b *Observation, o CompareOptions) string {
	as, bs := sections(a.Render(o)), sections(b.Render(o))
	var out strings.Builder
	seen := map[string]bool{}
	var names []string
	for _, s := range append(as, bs...) {
		if !seen[s.name] {
			seen[s.name] = true
			names = append(names, s.name)
		}
	}
	find := func(ss []section, name string) section {
		for _, s := range ss {
			if s.name == name {
				return s
			}
		}
		return section{name: name, head: "(none)"}
	}
	for _, n := range names {
		sa, sb := find(as, n), find(bs, n)
		if sa.head == sb.head && sa.body == sb.body {
			continue
		}
		fmt.Fprintf(&out, "== %s: %s | %s\n", n, strings.TrimPrefix(sa.head, "== "), strings.TrimPrefix(sb.head, "== "))
		out.WriteString(Diff(a.Datapath+" "+n, sa.body, b.Datapath+" "+n, sb.body))
	}
	return out.String()
}

// section is one "== NAME (COUNTS)" section of a rendering: its name,
// the header line and the lines below it.
type section struct {
	name, head, body string
}

func sections(r string) []section {
	var ss []section
	for _, l := range strings.SplitAfter(r, "\n") {
		if strings.HasPrefix(l, "== ") {
			head := strings.TrimSuffix(l, "\n")
			name, _, _ := strings.Cut(strings.TrimPrefix(head, "== "), " (")
			ss = append(ss, section{name: name, head: head})
			continue
		}
		if len(ss) > 0 {
			ss[len(ss)-1].body += l
		}
	}
	return ss
}

// dedupSorted drops repeated lines from a sorted list.
func dedupSorted(lines []string) []string {
	out := lines[:0]
	for i, l := range lines {
		if i == 0 || l != lines[i-1] {
			out = append(out, l)
		}
	}
	return out
}
