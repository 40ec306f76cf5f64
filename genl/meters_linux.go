package genl

import (
	"context"

	"github.com/ovsdp/ovsdp/odp"
)

// The meter methods of Datapath implement odp.Meters over the ovs_meter
// family (Client's MeterFeatures, SetMeter, GetMeter and DelMeter), with
// odp's types, so that code written for odp.Meters drives the kernel's
// meters and the userspace datapath's alike.

var _ odp.Meters = (*Datapath)(nil)

// MeterFeatures implements odp.Meters.
func (d *Datapath) MeterFeatures(context.Context) (odp.MeterFeatures, error) {
	f, err := d.c.MeterFeatures(d.index)
	if err != nil {
		return odp.MeterFeatures{}, err
	}
	return odp.MeterFeatures{MaxMeters: f.MaxMeters, MaxBands: f.MaxBands, BandTypes: f.BandTypes}, nil
}

// SetMeter implements odp.Meters.
func (d *Datapath) SetMeter(_ context.Context, m odp.MeterInfo, clearStats bool) error {
	gm := Meter{ID: m.ID, KBPS: m.KBPS}
	for _, b := range m.Bands {
		gm.Bands = append(gm.Bands, MeterBand{Type: b.Type, Rate: b.Rate, Burst: b.Burst})
	}
	return d.c.SetMeter(d.index, gm, clearStats)
}

// GetMeter implements odp.Meters.
func (d *Datapath) GetMeter(_ context.Context, id uint32) (*odp.MeterInfo, error) {
	return toMeterInfo(d.c.GetMeter(d.index, id))
}

// DelMeter implements odp.Meters.
func (d *Datapath) DelMeter(_ context.Context, id uint32) (*odp.MeterInfo, error) {
	return toMeterInfo(d.c.DelMeter(d.index, id))
}

func toMeterInfo(gm *Meter, err error) (*odp.MeterInfo, error) {
	if err != nil {
		return nil, err
	}
	m := &odp.MeterInfo{ID: gm.ID, KBPS: gm.KBPS, Packets: gm.Packets, Bytes: gm.Bytes, Used: gm.Used}
	for _, b := range gm.Bands {
		m.Bands = append(m.Bands, odp.MeterBand{Type: b.Type, Rate: b.Rate, Burst: b.Burst, Packets: b.Packets, Bytes: b.Bytes})
	}
	return m, nil
}
