package main

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/ovsdp/ovsdp/odp"
)

// Commands for meters and conntrack zone limits, on both datapaths
// (meters.go; the limits are the kernel's ovs_ct_limit family or the
// userspace tracker's, odp.CTLimiter), which ovs-dpctl does not expose
// (the conntrack-limit ones have the names, arguments and output of
// ovs-appctl dpctl/ct-*-limits).
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

// ctLimiter is dp's conntrack zone limits (the kernel's ovs_ct_limit
// family, or a userspace datapath's tracker over its control socket).
func ctLimiter(dp odp.Datapath) (odp.CTLimiter, error) {
	l, ok := dp.(odp.CTLimiter)
	if !ok {
		return nil, fmt.Errorf("conntrack limits: %w (%s@%s)", errNotSupportedUserspace, dp.Type(), dp.Name())
	}
	return l, nil
}

// manyArgs is the maxArgs of optDP for commands with a variable number
// of arguments: the DP is taken from the first argument only when it
// names a datapath.
const manyArgs = math.MaxInt

// parseZoneLimit parses "zone=N,limit=L" (either order) as
// ct_dpif_parse_zone_limit_tuple does.
func parseZoneLimit(s string) (odp.CTZoneLimit, error) {
	var zl odp.CTZoneLimit
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
	var limits []odp.CTZoneLimit
	if v, ok := strings.CutPrefix(args[0], "default="); ok {
		n, err := strconv.ParseUint(v, 10, 32)
		if err != nil {
			return fmt.Errorf("ct-set-limits: invalid default limit %q", v)
		}
		limits = append(limits, odp.CTZoneLimit{Zone: odp.CTDefaultZone, Limit: uint32(n)})
		args = args[1:]
	}
	for _, a := range args {
		zl, err := parseZoneLimit(a)
		if err != nil {
			return fmt.Errorf("ct-set-limits: %w", err)
		}
		limits = append(limits, zl)
	}
	kd, err := ctLimiter(dp)
	if err != nil {
		return err
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
		zones = append(zones, odp.CTDefaultZone)
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
	kd, err := ctLimiter(dp)
	if err != nil {
		return err
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
		query = append([]int32{odp.CTDefaultZone}, zs...)
	}
	kd, err := ctLimiter(dp)
	if err != nil {
		return err
	}
	ls, err := kd.ZoneLimits(e.ctx, query...)
	if err != nil {
		return fmt.Errorf("failed to get conntrack limit: %w", err)
	}
	j := zoneLimitsJSON{Zones: []zoneLimitJSON{}}
	for _, l := range ls {
		if l.Zone == odp.CTDefaultZone {
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
