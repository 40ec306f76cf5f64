package userdp

import (
	"context"
	"fmt"
	"syscall"

	"github.com/ovsdp/ovsdp/conntrack"
	"github.com/ovsdp/ovsdp/odp"
)

// The tracker's per-zone connection limits, as the kernel's ovs_ct_limit
// family keeps them (odp.CTLimiter): a default for every zone without a
// limit of its own, 0 meaning unlimited; a commit past its zone's limit
// drops the packet.

var _ odp.CTLimiter = (*Datapath)(nil)

// validZone reports whether z is a zone or odp.CTDefaultZone.
func validZone(z int32) bool {
	return z == odp.CTDefaultZone || z >= 0 && z <= 0xffff
}

// SetZoneLimits implements odp.CTLimiter. A zone outside 0-65535 (and
// not odp.CTDefaultZone) is refused with EINVAL, as the kernel refuses
// it, and no limit is changed.
func (dp *Datapath) SetZoneLimits(ctx context.Context, limits []odp.CTZoneLimit) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	for i, l := range limits {
		if !validZone(l.Zone) {
			return fmt.Errorf("userdp: set conntrack limit %d: zone %d is not 0-65535 or the default (%d): %w", i, l.Zone, odp.CTDefaultZone, syscall.EINVAL)
		}
	}
	t := dp.Conntrack()
	for _, l := range limits {
		if err := t.SetZoneLimit(int(l.Zone), l.Limit); err != nil {
			return fmt.Errorf("userdp: set conntrack limit of zone %d: %w", l.Zone, err)
		}
	}
	return nil
}

// ZoneLimits implements odp.CTLimiter. As the kernel's, a zone outside
// 0-65535 in the query is left out of the answer, not an error.
func (dp *Datapath) ZoneLimits(ctx context.Context, zones ...int32) ([]odp.CTZoneLimit, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	t := dp.Conntrack()
	if len(zones) == 0 {
		zones = []int32{odp.CTDefaultZone}
		for _, z := range t.LimitedZones() {
			zones = append(zones, int32(z))
		}
	}
	out := make([]odp.CTZoneLimit, 0, len(zones))
	for _, z := range zones {
		if !validZone(z) {
			continue
		}
		limit, count, err := t.ZoneLimit(int(z))
		if err != nil {
			return nil, fmt.Errorf("userdp: conntrack limit of zone %d: %w", z, err)
		}
		out = append(out, odp.CTZoneLimit{Zone: z, Limit: limit, Count: uint32(count)})
	}
	return out, nil
}

// DelZoneLimits implements odp.CTLimiter; a zone outside 0-65535 is
// refused with EINVAL before any limit is deleted.
func (dp *Datapath) DelZoneLimits(ctx context.Context, zones ...int32) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	for _, z := range zones {
		if !validZone(z) {
			return fmt.Errorf("userdp: delete conntrack limit: zone %d is not 0-65535 or the default (%d): %w", z, odp.CTDefaultZone, syscall.EINVAL)
		}
	}
	t := dp.Conntrack()
	for _, z := range zones {
		if err := t.DeleteZoneLimit(int(z)); err != nil {
			return fmt.Errorf("userdp: delete conntrack limit of zone %d: %w", z, err)
		}
	}
	return nil
}

// conntrack.DefaultZone and odp.CTDefaultZone are the same number.
var _ = [1]struct{}{}[conntrack.DefaultZone-int(odp.CTDefaultZone)]
