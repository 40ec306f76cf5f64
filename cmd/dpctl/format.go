package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/ovsdp/ovsdp/odp"
)

// formatStats writes a flow's statistics as ovs-dpctl does
// (dpif_flow_stats_format): "packets:N, bytes:N, used:X[, flags:F]".
// nowMS is the current monotonic time in milliseconds.
func formatStats(b *strings.Builder, st odp.FlowStats, nowMS uint64) {
	fmt.Fprintf(b, "packets:%d, bytes:%d, used:", st.Packets, st.Bytes)
	if st.Used != 0 {
		fmt.Fprintf(b, "%.3fs", float64(int64(nowMS)-int64(st.Used))/1000)
	} else {
		b.WriteString("never")
	}
	if st.TCPFlags != 0 {
		b.WriteString(", flags:")
		b.WriteString(tcpFlagsString(st.TCPFlags))
	}
}

// tcpFlagsString abbreviates TCP flags as Open vSwitch does
// (packet_format_tcp_flags): S F P R U . E C N.
func tcpFlagsString(f uint16) string {
	if f == 0 {
		return "none"
	}
	var b strings.Builder
	for _, x := range []struct {
		bit uint16
		s   string
	}{{0x002, "S"}, {0x001, "F"}, {0x008, "P"}, {0x004, "R"}, {0x020, "U"}, {0x010, "."},
		{0x040, "E"}, {0x080, "C"}, {0x100, "N"}, {0x200, "[200]"}, {0x400, "[400]"}, {0x800, "[800]"}} {
		if f&x.bit != 0 {
			b.WriteString(x.s)
		}
	}
	return b.String()
}

// formatFlow formats one flow as ovs-dpctl dump-flows prints it.
// opts.Verbose (-m) adds the UFID and the datapath layer and prints
// wildcarded fields too.
// Both datapaths report their flows as the "ovs" layer, as Open
// vSwitch's kernel and userspace datapaths do (", dp:ovs" with -m).
func formatFlow(f *odp.Flow, opts odp.FormatOptions, nowMS uint64) string {
	var b strings.Builder
	b.Grow(384) // a typical flow's line, without regrowing
	if opts.Verbose && !f.UFID.IsZero() {
		b.WriteString(f.UFID.String())
		b.WriteString(", ")
	}
	if f.Key != nil {
		b.WriteString(odp.FormatKeyWith(f.Key, f.Mask, opts))
		b.WriteString(", ")
	}
	formatStats(&b, f.Stats, nowMS)
	if opts.Verbose {
		b.WriteString(", dp:ovs")
	}
	b.WriteString(", actions:")
	// An empty list prints as "drop"; a terse flow (no key) has none.
	if f.Actions != nil || f.Key != nil {
		b.WriteString(odp.FormatActionsWith(f.Actions, opts))
	}
	return b.String()
}

// netdevStat reads a Linux device counter from sysfs, or "?".
func netdevStat(dev, field string) string {
	if strings.ContainsAny(dev, "/.") {
		return "?"
	}
	b, err := os.ReadFile("/sys/class/net/" + dev + "/statistics/" + field)
	if err != nil {
		return "?"
	}
	return strings.TrimSpace(string(b))
}

// humanSize is ovs-dpctl's print_human_size.
func humanSize(v uint64) string {
	switch {
	case v >= 1<<40:
		return fmt.Sprintf(" (%.1f TiB)", float64(v)/(1<<40))
	case v >= 1<<30:
		return fmt.Sprintf(" (%.1f GiB)", float64(v)/(1<<30))
	case v >= 1<<20:
		return fmt.Sprintf(" (%.1f MiB)", float64(v)/(1<<20))
	case v >= 1<<10:
		return fmt.Sprintf(" (%.1f KiB)", float64(v)/(1<<10))
	}
	return ""
}

// formatShow formats one datapath as ovs-dpctl show does.
func formatShow(b *strings.Builder, name dpName, info odp.DatapathInfo, ports []odp.Port, stats bool) {
	fmt.Fprintf(b, "%s:\n", name)
	st := info.Stats
	fmt.Fprintf(b, "  lookups: hit:%d missed:%d lost:%d\n  flows: %d", st.Hit, st.Missed, st.Lost, st.Flows)
	if info.FlowLimit > 0 {
		// A userspace datapath's cap (upcalld --flow-limit).
		fmt.Fprintf(b, " (limit %d)", info.FlowLimit)
	}
	b.WriteString("\n")
	n := st.Hit + st.Missed
	avg := 0.0
	if n > 0 {
		avg = float64(st.MaskHits) / float64(n)
	}
	fmt.Fprintf(b, "  masks: hit:%d total:%d hit/pkt:%.2f\n", st.MaskHits, st.Masks, avg)
	// Open vSwitch 3.1 does not read the kernel's cache hits, so its
	// ovs-dpctl prints no cache line for system@ datapaths; we keep its
	// output and print the line for our userspace datapath only (the
	// JSON form always has the number).
	if name.typ != "system" {
		rate := 0.0
		if n > 0 {
			rate = float64(st.CacheHits) / float64(n) * 100
		}
		fmt.Fprintf(b, "  cache: hit:%d hit-rate:%.2f%%\n", st.CacheHits, rate)
	}
	if info.MasksCacheSize != 0 || name.typ == "system" {
		fmt.Fprintf(b, "  caches:\n    masks-cache: size:%d\n", info.MasksCacheSize)
	}
	for _, p := range ports {
		fmt.Fprintf(b, "  port %d: %s", p.Number, p.Name)
		// A netdev port of netdev@ shows its backend (mode=ring, mmsg
		// or xdp, and why AF_XDP fell back), a system@ one nothing.
		if (p.Type != odp.PortNetdev && p.Type != "") || len(p.Options) > 0 {
			typ := p.Type
			if typ == "" {
				typ = odp.PortNetdev
			}
			fmt.Fprintf(b, " (%s", typ)
			for i, k := range sortedKeys(p.Options) {
				sep := ','
				if i == 0 {
					sep = ':'
				}
				fmt.Fprintf(b, "%c %s=%s", sep, k, p.Options[k])
			}
			b.WriteString(")")
		}
		b.WriteString("\n")
		if stats {
			s := p.Stats
			// The kernel's vport statistics lack these; ovs-dpctl reads
			// them from the Linux device, as we do for system@ ports.
			x := func(string) string { return "?" }
			if name.typ == "system" {
				x = func(f string) string { return netdevStat(p.Name, f) }
			}
			fmt.Fprintf(b, "    RX packets:%d errors:%d dropped:%d overruns:%s frame:%s\n", s.RxPackets, s.RxErrors, s.RxDropped, x("rx_fifo_errors"), x("rx_frame_errors"))
			fmt.Fprintf(b, "    TX packets:%d errors:%d dropped:%d aborted:%s carrier:%s\n", s.TxPackets, s.TxErrors, s.TxDropped, x("tx_aborted_errors"), x("tx_carrier_errors"))
			fmt.Fprintf(b, "    collisions:%s\n", x("collisions"))
			fmt.Fprintf(b, "    RX bytes:%d%s  TX bytes:%d%s\n", s.RxBytes, humanSize(s.RxBytes), s.TxBytes, humanSize(s.TxBytes))
		}
	}
}
