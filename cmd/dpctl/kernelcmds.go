package main

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/ovsdp/ovsdp/genl"
	"github.com/ovsdp/ovsdp/internal/monoclock"
	"github.com/ovsdp/ovsdp/odp"
)

// Commands for the kernel's ovs_meter and ovs_ct_limit families, which
// ovs-dpctl does not expose (the conntrack-limit ones have the names,
// arguments and output of ovs-appctl dpctl/ct-*-limits).
func kernelFamilyCommands() []*cli.Command {
	return []*cli.Command{
		{Name: "meter-features", Usage: "show what the datapath's meters support", ArgsUsage: "[DP]", Category: "meters", Action: action(cmdMeterFeatures)},
		{Name: "add-meter", Usage: "add or replace meter ID with drop bands (default unit kbps)", ArgsUsage: "[DP] ID [kbps|pktps] rate=R[,burst=B]...", Category: "meters", Action: action(cmdAddMeter)},
		{Name: "show-meters", Usage: "show the statistics of meters (without IDs: of the IDs below 1024)", ArgsUsage: "[DP] [ID...]", Category: "meters", Action: action(cmdShowMeters)},
		{Name: "del-meter", Usage: "delete meters (with -s: print their final statistics)", ArgsUsage: "[DP] ID...", Category: "meters", Action: action(cmdDelMeter)},
		{Name: "ct-set-limits", Usage: "set the default and per-zone conntrack connection limits", ArgsUsage: "[DP] [default=L] [zone=N,limit=L]...", Category: "conntrack limits", Action: action(cmdCTSetLimits)},
		{Name: "ct-del-limits", Usage: "delete per-zone conntrack limits (default: reset the default to unlimited)", ArgsUsage: "[DP] [default] [zone=N1[,N2]...]", Category: "conntrack limits", Action: action(cmdCTDelLimits)},
		{Name: "ct-get-limits", Usage: "show conntrack limits and connection counts", ArgsUsage: "[DP] [zone=N1[,N2]...]", Category: "conntrack limits", Action: action(cmdCTGetLimits)},
	}
}

// notKernel is the error of a kernel-only command (what) given a
// userspace datapath: the commands need dp to be a systemDP.
func notKernel(dp odp.Datapath, what string) error {
	return fmt.Errorf("%s: %w (%s@%s)", what, errNotSupportedUserspace, dp.Type(), dp.Name())
}

// manyArgs is the maxArgs of optDP for commands with a variable number
// of arguments: the DP is taken from the first argument only when it
// names a datapath.
const manyArgs = math.MaxInt

// meterFeaturesJSON is the JSON form of meter-features.
type meterFeaturesJSON struct {
	MaxMeters uint32   `json:"max_meters"`
	MaxBands  uint32   `json:"max_bands"`
	BandTypes []string `json:"band_types"`
}

// bandTypeName names a meter band type.
func bandTypeName(t uint32) string {
	if t == genl.MeterBandDrop {
		return "drop"
	}
	return "type" + strconv.FormatUint(uint64(t), 10)
}

func cmdMeterFeatures(e *env, args []string) error {
	dp, args, err := optDP(e.ctx, args, 1)
	if err != nil {
		return err
	}
	defer dp.Close()
	if len(args) != 0 {
		return fmt.Errorf("meter-features: unexpected argument %q", args[0])
	}
	kd, ok := dp.(systemDP)
	if !ok {
		return notKernel(dp, "meters")
	}
	f, err := kd.MeterFeatures(e.ctx)
	if err != nil {
		return fmt.Errorf("reading meter features: %w", err)
	}
	j := meterFeaturesJSON{MaxMeters: f.MaxMeters, MaxBands: f.MaxBands, BandTypes: []string{}}
	for _, t := range f.BandTypes {
		j.BandTypes = append(j.BandTypes, bandTypeName(t))
	}
	if e.json {
		return e.printJSON(j)
	}
	fmt.Fprintf(e.out, "max meters: %d\nmax bands: %d\nband types: %s\n", j.MaxMeters, j.MaxBands, strings.Join(j.BandTypes, ","))
	return nil
}

// parseMeterID parses a meter ID.
func parseMeterID(s string) (uint32, error) {
	v, err := strconv.ParseUint(s, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("%q is not a meter ID (a number from 0 to %d)", s, uint32(math.MaxUint32))
	}
	return uint32(v), nil
}

// parseMeterSpec parses add-meter's arguments after the ID: the unit
// ("kbps" or "pktps", default kbps) and one band per "rate=R[,burst=B]"
// argument; the unit may also be an item of a band argument.
func parseMeterSpec(id uint32, args []string) (genl.Meter, error) {
	m := genl.Meter{ID: id, KBPS: true}
	unit := ""
	setUnit := func(u string) error {
		if unit != "" && unit != u {
			return fmt.Errorf("both %s and %s given", unit, u)
		}
		unit = u
		m.KBPS = u == "kbps"
		return nil
	}
	for _, a := range args {
		var band genl.MeterBand
		hasRate, hasBand := false, false
		for _, item := range strings.Split(a, ",") {
			k, v, isKV := strings.Cut(item, "=")
			switch {
			case !isKV && (k == "kbps" || k == "pktps"):
				if err := setUnit(k); err != nil {
					return m, fmt.Errorf("%q: %w", a, err)
				}
			case isKV && (k == "rate" || k == "burst"):
				n, err := strconv.ParseUint(v, 10, 32)
				if err != nil {
					return m, fmt.Errorf("%q: %s=%q is not a number from 0 to %d", a, k, v, uint32(math.MaxUint32))
				}
				if k == "rate" {
					band.Rate, hasRate = uint32(n), true
				} else {
					band.Burst = uint32(n)
				}
				hasBand = true
			case isKV && k == "type":
				if v != "drop" {
					return m, fmt.Errorf("%q: band type %q: the kernel has drop bands only", a, v)
				}
				hasBand = true
			default:
				return m, fmt.Errorf("%q: unknown item %q (want kbps, pktps, rate=R, burst=B, type=drop)", a, item)
			}
		}
		if hasBand {
			if !hasRate {
				return m, fmt.Errorf("%q: a band needs rate=R", a)
			}
			band.Type = genl.MeterBandDrop
			m.Bands = append(m.Bands, band)
		}
	}
	if len(m.Bands) == 0 {
		return m, fmt.Errorf("meter %d: no band given (rate=R[,burst=B])", id)
	}
	return m, nil
}

func cmdAddMeter(e *env, args []string) error {
	dp, args, err := optDP(e.ctx, args, manyArgs)
	if err != nil {
		return err
	}
	defer dp.Close()
	if err := needArgs(args, 2, -1, "add-meter [DP] ID [kbps|pktps] rate=R[,burst=B]..."); err != nil {
		return err
	}
	id, err := parseMeterID(args[0])
	if err != nil {
		return err
	}
	m, err := parseMeterSpec(id, args[1:])
	if err != nil {
		return err
	}
	kd, ok := dp.(systemDP)
	if !ok {
		return notKernel(dp, "meters")
	}
	if err := kd.SetMeter(e.ctx, m, e.c.Bool("clear")); err != nil {
		return fmt.Errorf("adding meter %d: %w", id, err)
	}
	return nil
}

// meterJSON is the JSON form of a meter's statistics. The kernel
// reports statistics only (not the unit, rates or bursts it was set with).
type meterJSON struct {
	ID      uint32          `json:"id"`
	Packets uint64          `json:"packets"`
	Bytes   uint64          `json:"bytes"`
	Used    uint64          `json:"used_ms,omitempty"`
	Bands   []meterBandJSON `json:"bands"`
}

type meterBandJSON struct {
	Packets uint64 `json:"packets"`
	Bytes   uint64 `json:"bytes"`
}

func toMeterJSON(m *genl.Meter) meterJSON {
	j := meterJSON{ID: m.ID, Packets: m.Packets, Bytes: m.Bytes, Used: m.Used, Bands: []meterBandJSON{}}
	for _, b := range m.Bands {
		j.Bands = append(j.Bands, meterBandJSON{Packets: b.Packets, Bytes: b.Bytes})
	}
	return j
}

// formatMeter writes a meter's statistics as show-meters prints them.
func formatMeter(b *strings.Builder, m *genl.Meter, nowMS uint64) {
	fmt.Fprintf(b, "meter:%d ", m.ID)
	formatStats(b, odp.FlowStats{Packets: m.Packets, Bytes: m.Bytes, Used: m.Used}, nowMS)
	b.WriteByte('\n')
	for i, band := range m.Bands {
		fmt.Fprintf(b, "  band %d: packets:%d bytes:%d\n", i, band.Packets, band.Bytes)
	}
}

// scanMeterIDs is how many meter IDs show-meters reads when given none:
// the kernel has no meter dump.
const scanMeterIDs = 1024

func cmdShowMeters(e *env, args []string) error {
	dp, args, err := optDP(e.ctx, args, manyArgs)
	if err != nil {
		return err
	}
	defer dp.Close()
	kd, ok := dp.(systemDP)
	if !ok {
		return notKernel(dp, "meters")
	}
	var ids []uint32
	scan := len(args) == 0
	if scan {
		n := uint32(scanMeterIDs)
		if f, err := kd.MeterFeatures(e.ctx); err != nil {
			return fmt.Errorf("reading meter features: %w", err)
		} else if f.MaxMeters < n {
			n = f.MaxMeters
		}
		for i := uint32(0); i < n; i++ {
			ids = append(ids, i)
		}
	}
	for _, a := range args {
		id, err := parseMeterID(a)
		if err != nil {
			return err
		}
		ids = append(ids, id)
	}
	now := monoclock.Millis()
	out := []meterJSON{}
	var b strings.Builder
	for _, id := range ids {
		m, err := kd.Meter(e.ctx, id)
		if err != nil {
			if scan && isNotExist(err) {
				continue
			}
			return fmt.Errorf("reading meter %d: %w", id, err)
		}
		if e.json {
			out = append(out, toMeterJSON(m))
		} else {
			formatMeter(&b, m, now)
		}
	}
	if e.json {
		return e.printJSON(out)
	}
	_, err = fmt.Fprint(e.out, b.String())
	return err
}

func cmdDelMeter(e *env, args []string) error {
	dp, args, err := optDP(e.ctx, args, manyArgs)
	if err != nil {
		return err
	}
	defer dp.Close()
	if err := needArgs(args, 1, -1, "del-meter [DP] ID..."); err != nil {
		return err
	}
	kd, ok := dp.(systemDP)
	if !ok {
		return notKernel(dp, "meters")
	}
	now := monoclock.Millis()
	out := []meterJSON{}
	var b strings.Builder
	for _, a := range args {
		id, err := parseMeterID(a)
		if err != nil {
			return err
		}
		m, err := kd.DelMeter(e.ctx, id)
		if err != nil {
			return fmt.Errorf("deleting meter %d: %w", id, err)
		}
		if e.json {
			out = append(out, toMeterJSON(m))
		} else if e.c.Bool("statistics") {
			formatMeter(&b, m, now)
		}
	}
	if e.json {
		return e.printJSON(out)
	}
	_, err = fmt.Fprint(e.out, b.String())
	return err
}

// parseZoneLimit parses "zone=N,limit=L" (either order) as
// ct_dpif_parse_zone_limit_tuple does.
func parseZoneLimit(s string) (genl.ZoneLimit, error) {
	var zl genl.ZoneLimit
	hasZone, hasLimit := false, false
	for _, item := range strings.Split(s, ",") {
		if item == "" {
			continue
		}
		k, v, _ := strings.Cut(item, "=")
		if v == "" {
			return zl, fmt.Errorf("%q: field %s missing value", s, k)
		}
		switch k {
		case "zone":
			n, err := strconv.ParseUint(v, 0, 16)
			if err != nil {
				return zl, fmt.Errorf("%q: invalid zone %q (0 to 65535)", s, v)
			}
			zl.Zone, hasZone = int32(n), true
		case "limit":
			n, err := strconv.ParseUint(v, 0, 32)
			if err != nil {
				return zl, fmt.Errorf("%q: invalid limit %q (0 to %d)", s, v, uint32(math.MaxUint32))
			}
			zl.Limit, hasLimit = uint32(n), true
		default:
			return zl, fmt.Errorf("%q: invalid zone limit field: %s", s, k)
		}
	}
	if !hasZone || !hasLimit {
		return zl, fmt.Errorf("%q: failed to parse zone limit (want zone=N,limit=L)", s)
	}
	return zl, nil
}

// parseZoneList parses "zone=N1[,N2]...".
func parseZoneList(s string) ([]int32, error) {
	rest, ok := strings.CutPrefix(s, "zone=")
	if !ok {
		return nil, fmt.Errorf("invalid argument %s (want zone=N1[,N2]...)", s)
	}
	var zones []int32
	for _, z := range strings.Split(rest, ",") {
		if z == "" {
			continue
		}
		n, err := strconv.ParseUint(z, 10, 16)
		if err != nil {
			return nil, fmt.Errorf("%s: invalid zone %q (0 to 65535)", s, z)
		}
		zones = append(zones, int32(n))
	}
	if len(zones) == 0 {
		return nil, fmt.Errorf("%s: no zone given", s)
	}
	return zones, nil
}

func cmdCTSetLimits(e *env, args []string) error {
	dp, args, err := optDP(e.ctx, args, manyArgs)
	if err != nil {
		return err
	}
	defer dp.Close()
	if len(args) == 0 {
		return fmt.Errorf("ct-set-limits: too few arguments; usage: ct-set-limits [DP] [default=L] [zone=N,limit=L]...")
	}
	var limits []genl.ZoneLimit
	if v, ok := strings.CutPrefix(args[0], "default="); ok {
		n, err := strconv.ParseUint(v, 10, 32)
		if err != nil {
			return fmt.Errorf("ct-set-limits: invalid default limit %q", v)
		}
		limits = append(limits, genl.ZoneLimit{Zone: genl.DefaultZone, Limit: uint32(n)})
		args = args[1:]
	}
	for _, a := range args {
		zl, err := parseZoneLimit(a)
		if err != nil {
			return fmt.Errorf("ct-set-limits: %w", err)
		}
		limits = append(limits, zl)
	}
	kd, ok := dp.(systemDP)
	if !ok {
		return notKernel(dp, "conntrack limits")
	}
	if err := kd.SetZoneLimits(e.ctx, limits); err != nil {
		return fmt.Errorf("failed to set conntrack limit: %w", err)
	}
	return nil
}

func cmdCTDelLimits(e *env, args []string) error {
	dp, args, err := optDP(e.ctx, args, 3)
	if err != nil {
		return err
	}
	defer dp.Close()
	if len(args) == 0 {
		return fmt.Errorf("ct-del-limits: too few arguments; usage: ct-del-limits [DP] [default] [zone=N1[,N2]...]")
	}
	var zones []int32
	if args[0] == "default" {
		zones = append(zones, genl.DefaultZone)
		args = args[1:]
	}
	if len(args) > 1 {
		return fmt.Errorf("ct-del-limits: unexpected argument %q", args[1])
	}
	if len(args) == 1 {
		zs, err := parseZoneList(args[0])
		if err != nil {
			return fmt.Errorf("ct-del-limits: %w", err)
		}
		zones = append(zones, zs...)
	}
	kd, ok := dp.(systemDP)
	if !ok {
		return notKernel(dp, "conntrack limits")
	}
	if err := kd.DelZoneLimits(e.ctx, zones...); err != nil {
		return fmt.Errorf("failed to delete conntrack limit: %w", err)
	}
	return nil
}

// zoneLimitsJSON is the JSON form of ct-get-limits.
type zoneLimitsJSON struct {
	Default *uint32         `json:"default,omitempty"`
	Zones   []zoneLimitJSON `json:"zones"`
}

type zoneLimitJSON struct {
	Zone  uint16 `json:"zone"`
	Limit uint32 `json:"limit"`
	Count uint32 `json:"count"`
}

func cmdCTGetLimits(e *env, args []string) error {
	dp, args, err := optDP(e.ctx, args, 2)
	if err != nil {
		return err
	}
	defer dp.Close()
	if len(args) > 1 {
		return fmt.Errorf("ct-get-limits: unexpected argument %q", args[1])
	}
	var query []int32
	if len(args) == 1 {
		zs, err := parseZoneList(args[0])
		if err != nil {
			return fmt.Errorf("ct-get-limits: %w", err)
		}
		// As ovs-dpctl: the default limit is always asked for too.
		query = append([]int32{genl.DefaultZone}, zs...)
	}
	kd, ok := dp.(systemDP)
	if !ok {
		return notKernel(dp, "conntrack limits")
	}
	ls, err := kd.ZoneLimits(e.ctx, query...)
	if err != nil {
		return fmt.Errorf("failed to get conntrack limit: %w", err)
	}
	j := zoneLimitsJSON{Zones: []zoneLimitJSON{}}
	for _, l := range ls {
		if l.Zone == genl.DefaultZone {
			v := l.Limit
			j.Default = &v
			continue
		}
		j.Zones = append(j.Zones, zoneLimitJSON{Zone: uint16(l.Zone), Limit: l.Limit, Count: l.Count})
	}
	if e.json {
		return e.printJSON(j)
	}
	var b strings.Builder
	if j.Default != nil {
		fmt.Fprintf(&b, "default limit=%d", *j.Default)
	}
	for _, z := range j.Zones {
		fmt.Fprintf(&b, "\nzone=%d,limit=%d,count=%d", z.Zone, z.Limit, z.Count)
	}
	fmt.Fprintln(e.out, b.String())
	return nil
}
