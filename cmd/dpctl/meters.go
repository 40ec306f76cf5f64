package main

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/ovsdp/ovsdp/internal/monoclock"
	"github.com/ovsdp/ovsdp/odp"
)

// The meter commands work on every datapath with meters (odp.Meters):
// the kernel's ovs_meter family on system@, the userspace datapath's
// meters on netdev@, with the same output.

// openMeters is openDPArgs for the meter commands: it also returns the
// datapath's meters (a kernel datapath's are genl.Datapath's odp.Meters
// methods), or an error saying that it has none.
func openMeters(e *env, args []string, maxArgs, min, max int, usage string) (odp.Datapath, odp.Meters, []string, error) {
	dp, args, err := openDPArgs(e, args, maxArgs, min, max, usage)
	if err != nil {
		return nil, nil, nil, err
	}
	m, ok := dp.(odp.Meters)
	if !ok {
		dp.Close()
		return nil, nil, nil, fmt.Errorf("meters: %w (%s@%s)", errNotSupportedUserspace, dp.Type(), dp.Name())
	}
	return dp, m, args, nil
}

// meterFeaturesJSON is the JSON form of meter-features.
type meterFeaturesJSON struct {
	MaxMeters uint32   `json:"max_meters"`
	MaxBands  uint32   `json:"max_bands"`
	BandTypes []string `json:"band_types"`
}

// bandTypeName names a meter band type.
func bandTypeName(t uint32) string {
	if t == odp.MeterBandDrop {
		return "drop"
	}
	return "type" + strconv.FormatUint(uint64(t), 10)
}

func cmdMeterFeatures(e *env, args []string) error {
	dp, ms, _, err := openMeters(e, args, 1, 0, 0, "meter-features")
	if err != nil {
		return err
	}
	defer dp.Close()
	f, err := ms.MeterFeatures(e.ctx)
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
func parseMeterSpec(id uint32, args []string) (odp.MeterInfo, error) {
	m := odp.MeterInfo{ID: id, KBPS: true}
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
		var band odp.MeterBand
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
			band.Type = odp.MeterBandDrop
			m.Bands = append(m.Bands, band)
		}
	}
	if len(m.Bands) == 0 {
		return m, fmt.Errorf("meter %d: no band given (rate=R[,burst=B])", id)
	}
	return m, nil
}

func cmdAddMeter(e *env, args []string) error {
	dp, ms, args, err := openMeters(e, args, manyArgs, 2, -1, "add-meter [DP] ID [kbps|pktps] rate=R[,burst=B]...")
	if err != nil {
		return err
	}
	defer dp.Close()
	id, err := parseMeterID(args[0])
	if err != nil {
		return err
	}
	m, err := parseMeterSpec(id, args[1:])
	if err != nil {
		return err
	}
	if err := ms.SetMeter(e.ctx, m, e.c.Bool("clear")); err != nil {
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

func toMeterJSON(m *odp.MeterInfo) meterJSON {
	j := meterJSON{ID: m.ID, Packets: m.Packets, Bytes: m.Bytes, Used: m.Used, Bands: []meterBandJSON{}}
	for _, b := range m.Bands {
		j.Bands = append(j.Bands, meterBandJSON{Packets: b.Packets, Bytes: b.Bytes})
	}
	return j
}

// formatMeter writes a meter's statistics as show-meters prints them.
func formatMeter(b *strings.Builder, m *odp.MeterInfo, nowMS uint64) {
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
	dp, ms, args, err := openMeters(e, args, manyArgs, 0, -1, "show-meters [DP] [ID...]")
	if err != nil {
		return err
	}
	defer dp.Close()
	var ids []uint32
	scan := len(args) == 0
	if scan {
		n := uint32(scanMeterIDs)
		if f, err := ms.MeterFeatures(e.ctx); err != nil {
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
		m, err := ms.GetMeter(e.ctx, id)
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
	dp, ms, args, err := openMeters(e, args, manyArgs, 1, -1, "del-meter [DP] ID...")
	if err != nil {
		return err
	}
	defer dp.Close()
	now := monoclock.Millis()
	out := []meterJSON{}
	var b strings.Builder
	for _, a := range args {
		id, err := parseMeterID(a)
		if err != nil {
			return err
		}
		m, err := ms.DelMeter(e.ctx, id)
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
