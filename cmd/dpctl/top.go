package main

import (
	"context"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/urfave/cli/v2"

	"github.com/ovsdp/ovsdp/flowkeys"
	"github.com/ovsdp/ovsdp/odp"
)

func topCommand() *cli.Command {
	return &cli.Command{
		Name:  "top",
		Usage: "the datapath's flows aggregated by a field, with packets/s and bytes/s between successive dumps",
		Description: "FIELDS (--by) is a comma-separated list of in_port, eth_src, eth_dst, eth_type, vlan,\n" +
			"ipv4_src, ipv4_dst, ipv6_src, ipv6_dst, ip_proto, tp_src, tp_dst, or flow (each flow\n" +
			"on its own). A flow that wildcards a field shows it as *. On a terminal the view\n" +
			"refreshes every --interval (keys: q quits, s switches the sort between packets and\n" +
			"bytes); --once prints one table (after one interval) and exits, also as -f json.",
		ArgsUsage: "[DP]",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "by", Value: "in_port", Usage: "aggregate by `FIELDS`"},
			&cli.DurationFlag{Name: "interval", Value: time.Second, Usage: "time between two dumps"},
			&cli.BoolFlag{Name: "once", Usage: "print one table and exit"},
			&cli.IntFlag{Name: "limit", Value: 20, Usage: "show at most `N` rows (0: all)"},
			&cli.StringFlag{Name: "sort", Value: "packets", Usage: "sort by packets or bytes (per second)"},
		},
		Action: action(cmdTop),
	}
}

// topFields are the fields top aggregates by: each gives the field's
// text from a flow's masked key and mask ("*" when wildcarded).
var topFields = map[string]func(k, m *flowkeys.Key, names map[uint32]string) string{
	"in_port": func(k, m *flowkeys.Key, names map[uint32]string) string {
		if m.InPort == 0 {
			return "*"
		}
		if n, ok := names[k.InPort]; ok {
			return n
		}
		return strconv.FormatUint(uint64(k.InPort), 10)
	},
	"eth_src": func(k, m *flowkeys.Key, _ map[uint32]string) string {
		return maskedBytes(k.EthSrc[:], m.EthSrc[:], func(b []byte) string { return net.HardwareAddr(b).String() })
	},
	"eth_dst": func(k, m *flowkeys.Key, _ map[uint32]string) string {
		return maskedBytes(k.EthDst[:], m.EthDst[:], func(b []byte) string { return net.HardwareAddr(b).String() })
	},
	"eth_type": func(k, m *flowkeys.Key, _ map[uint32]string) string {
		return maskedUint(uint64(k.EthType), uint64(m.EthType), 0xffff, "0x%04x")
	},
	"vlan": func(k, m *flowkeys.Key, _ map[uint32]string) string {
		if k.VLANTCI&flowkeys.VLANTagPresent == 0 {
			return "none"
		}
		return maskedUint(uint64(k.VLANTCI&0x0fff), uint64(m.VLANTCI&0x0fff), 0x0fff, "%d")
	},
	"ipv4_src": func(k, m *flowkeys.Key, _ map[uint32]string) string { return maskedIP(k.IPv4Src[:], m.IPv4Src[:]) },
	"ipv4_dst": func(k, m *flowkeys.Key, _ map[uint32]string) string { return maskedIP(k.IPv4Dst[:], m.IPv4Dst[:]) },
	"ipv6_src": func(k, m *flowkeys.Key, _ map[uint32]string) string { return maskedIP(k.IPv6Src[:], m.IPv6Src[:]) },
	"ipv6_dst": func(k, m *flowkeys.Key, _ map[uint32]string) string { return maskedIP(k.IPv6Dst[:], m.IPv6Dst[:]) },
	"ip_proto": func(k, m *flowkeys.Key, _ map[uint32]string) string {
		return maskedUint(uint64(k.IPProto), uint64(m.IPProto), 0xff, "%d")
	},
	"tp_src": func(k, m *flowkeys.Key, _ map[uint32]string) string {
		return maskedUint(uint64(k.TpSrc), uint64(m.TpSrc), 0xffff, "%d")
	},
	"tp_dst": func(k, m *flowkeys.Key, _ map[uint32]string) string {
		return maskedUint(uint64(k.TpDst), uint64(m.TpDst), 0xffff, "%d")
	},
}

// maskedUint formats a field's value, "*" when wildcarded and
// VALUE/MASK when partly masked (full is the field's all-ones mask).
func maskedUint(v, m, full uint64, format string) string {
	switch m {
	case 0:
		return "*"
	case full:
		return fmt.Sprintf(format, v)
	}
	return fmt.Sprintf(format, v) + "/" + fmt.Sprintf(format, m)
}

func maskedBytes(v, m []byte, f func([]byte) string) string {
	zero, full := true, true
	for _, b := range m {
		if b != 0 {
			zero = false
		}
		if b != 0xff {
			full = false
		}
	}
	switch {
	case zero:
		return "*"
	case full:
		return f(v)
	}
	return f(v) + "/" + f(m)
}

func maskedIP(v, m []byte) string {
	return maskedBytes(v, m, func(b []byte) string { return net.IP(b).String() })
}

// topSample is one flow of a dump: its identity, aggregate key and
// counters.
type topSample struct {
	agg            string
	packets, bytes uint64
}

// topRow is one aggregate of top's table.
type topRow struct {
	Key        string  `json:"key"`
	Flows      int     `json:"flows"`
	Packets    uint64  `json:"packets"`
	Bytes      uint64  `json:"bytes"`
	PacketsPer float64 `json:"packets_per_s"`
	BytesPer   float64 `json:"bytes_per_s"`
}

// parseTopFields checks --by.
func parseTopFields(s string) ([]string, error) {
	var out []string
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if _, ok := topFields[f]; !ok && f != "flow" {
			names := []string{"flow"}
			for n := range topFields {
				names = append(names, n)
			}
			sort.Strings(names)
			return nil, fmt.Errorf("top: --by %q: unknown field %q (want %s)", s, f, strings.Join(names, ", "))
		}
		out = append(out, f)
	}
	return out, nil
}

// topDump dumps dp's flows into samples by flow identity (UFID, or the
// key's text).
func topDump(ctx context.Context, dp odp.Datapath, fields []string, names map[uint32]string, opts odp.FormatOptions) (map[string]topSample, error) {
	out := map[string]topSample{}
	err := dp.DumpFlows(ctx, odp.DumpOptions{}, func(f *odp.Flow) error {
		keyText := odp.FormatKeyWith(f.Key, f.Mask, opts)
		id := keyText
		if !f.UFID.IsZero() {
			id = f.UFID.String()
		}
		k, m, kerr := odp.ToFlowKeys(f.Key, f.Mask)
		parts := make([]string, len(fields))
		for i, fl := range fields {
			switch {
			case fl == "flow":
				parts[i] = keyText
			case kerr != nil:
				parts[i] = "?"
			default:
				parts[i] = fl + "=" + topFields[fl](&k, &m, names)
			}
		}
		out[id] = topSample{agg: strings.Join(parts, ","), packets: f.Stats.Packets, bytes: f.Stats.Bytes}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("top: dumping flows: %w", err)
	}
	return out, nil
}

// topAggregate computes the table from two successive dumps dt apart: a
// flow's rate is its counters' growth (a flow new in cur counts from
// zero; one whose counters went down was replaced and counts from zero
// too), summed per aggregate, sorted by packets/s (or bytes/s) then key.
func topAggregate(prev, cur map[string]topSample, dt time.Duration, byBytes bool) []topRow {
	rows := map[string]*topRow{}
	secs := dt.Seconds()
	if secs <= 0 {
		secs = 1
	}
	for id, s := range cur {
		r := rows[s.agg]
		if r == nil {
			r = &topRow{Key: s.agg}
			rows[s.agg] = r
		}
		r.Flows++
		r.Packets += s.packets
		r.Bytes += s.bytes
		dp, db := s.packets, s.bytes
		if p, ok := prev[id]; ok && p.packets <= s.packets && p.bytes <= s.bytes {
			dp, db = s.packets-p.packets, s.bytes-p.bytes
		}
		r.PacketsPer += float64(dp) / secs
		r.BytesPer += float64(db) / secs
	}
	out := make([]topRow, 0, len(rows))
	for _, r := range rows {
		out = append(out, *r)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		x, y := a.PacketsPer, b.PacketsPer
		if byBytes {
			x, y = a.BytesPer, b.BytesPer
		}
		if x != y {
			return x > y
		}
		return a.Key < b.Key
	})
	return out
}

// formatTop renders the table as text.
func formatTop(rows []topRow, limit int, title string) string {
	var b strings.Builder
	if title != "" {
		b.WriteString(title + "\n")
	}
	fmt.Fprintf(&b, "%12s %12s %10s %14s %14s  %s\n", "packets/s", "bytes/s", "flows", "packets", "bytes", "key")
	for i, r := range rows {
		if limit > 0 && i >= limit {
			fmt.Fprintf(&b, "(%d more)\n", len(rows)-limit)
			break
		}
		fmt.Fprintf(&b, "%12.1f %12.1f %10d %14d %14d  %s\n", r.PacketsPer, r.BytesPer, r.Flows, r.Packets, r.Bytes, r.Key)
	}
	return b.String()
}

func cmdTop(e *env, args []string) error {
	dp, args, err := openDPArgs(e, args, 1, 0, 0, "top")
	if err != nil {
		return err
	}
	defer dp.Close()
	fields, err := parseTopFields(e.c.String("by"))
	if err != nil {
		return err
	}
	byBytes := false
	switch e.c.String("sort") {
	case "packets":
	case "bytes":
		byBytes = true
	default:
		return fmt.Errorf("top: --sort %q: want packets or bytes", e.c.String("sort"))
	}
	interval := e.c.Duration("interval")
	if interval <= 0 {
		return fmt.Errorf("top: --interval %v: want a positive duration", interval)
	}
	names, _ := portMaps(e, dp)
	opts := formatOptions(e, dp)
	dump := func() (map[string]topSample, time.Time, error) {
		s, err := topDump(e.ctx, dp, fields, names, opts)
		return s, time.Now(), err
	}
	if !e.c.Bool("once") {
		if !isTerminal(e.out) {
			return fmt.Errorf("top: standard output is not a terminal: use --once (and -f json) in scripts")
		}
		m := &topModel{dump: dump, interval: interval, byBytes: byBytes, limit: e.c.Int("limit"), title: dp.Type() + "@" + dp.Name()}
		_, err := tea.NewProgram(m, tea.WithContext(e.ctx), tea.WithOutput(e.out), tea.WithInput(e.c.App.Reader)).Run()
		if err != nil {
			return fmt.Errorf("top: %w", err)
		}
		return m.err
	}
	prev, t0, err := dump()
	if err != nil {
		return err
	}
	select {
	case <-time.After(interval):
	case <-e.ctx.Done():
		return e.ctx.Err()
	}
	cur, t1, err := dump()
	if err != nil {
		return err
	}
	rows := topAggregate(prev, cur, t1.Sub(t0), byBytes)
	if e.json {
		if l := e.c.Int("limit"); l > 0 && len(rows) > l {
			rows = rows[:l]
		}
		return e.printJSON(rows)
	}
	_, err = fmt.Fprint(e.out, formatTop(rows, e.c.Int("limit"), ""))
	return err
}

// topModel is top's terminal view (bubbletea): a dump every interval,
// the table of the last two.
type topModel struct {
	dump     func() (map[string]topSample, time.Time, error)
	interval time.Duration
	byBytes  bool
	limit    int
	title    string

	prev  map[string]topSample
	prevT time.Time
	rows  []topRow
	err   error
}

// topTick asks for the next dump.
type topTick struct{}

// topDumped is a dump's result.
type topDumped struct {
	s   map[string]topSample
	t   time.Time
	err error
}

func (m *topModel) Init() tea.Cmd { return m.doDump }

func (m *topModel) doDump() tea.Msg {
	s, t, err := m.dump()
	return topDumped{s: s, t: t, err: err}
}

func (m *topModel) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.KeyMsg:
		switch msg.String() {
		case "q", "ctrl+c", "esc":
			return m, tea.Quit
		case "s":
			m.byBytes = !m.byBytes
		}
		return m, nil
	case topDumped:
		if msg.err != nil {
			m.err = msg.err
			return m, tea.Quit
		}
		if m.prev != nil {
			m.rows = topAggregate(m.prev, msg.s, msg.t.Sub(m.prevT), m.byBytes)
		}
		m.prev, m.prevT = msg.s, msg.t
		return m, tea.Tick(m.interval, func(time.Time) tea.Msg { return topTick{} })
	case topTick:
		return m, m.doDump
	}
	return m, nil
}

func (m *topModel) View() string {
	sortBy := "packets/s"
	if m.byBytes {
		sortBy = "bytes/s"
	}
	title := fmt.Sprintf("%s: every %v, sorted by %s (s: switch, q: quit)", m.title, m.interval, sortBy)
	if m.rows == nil {
		return title + "\n(waiting for the second dump)\n"
	}
	return formatTop(m.rows, m.limit, title)
}
