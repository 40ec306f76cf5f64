package odp

import "context"

// MeterBandDrop is the drop band type (OVS_METER_BAND_TYPE_DROP), the
// only band type the kernel and the userspace datapath implement.
const MeterBandDrop = 1

// MeterInfo is a meter of a datapath (the kernel's ovs_meter family): a
// rate limiter that the meter action (Meter) applies to packets, with its
// statistics.
type MeterInfo struct {
	// ID is the meter's number.
	ID uint32
	// KBPS selects kilobits per second for the bands' rates and bursts;
	// otherwise packets per second.
	KBPS bool
	// Bands are the meter's bands (the kernel allows one).
	Bands []MeterBand
	// Packets and Bytes count the packets the meter saw (from GetMeter
	// and DelMeter).
	Packets, Bytes uint64
	// Used is when the meter last saw a packet (CLOCK_MONOTONIC ms).
	Used uint64
}

// MeterBand is one band of a meter.
type MeterBand struct {
	// Type is MeterBandDrop.
	Type uint32
	// Rate and Burst are in the meter's units (kbps and kilobits, or
	// packets per second and packets). A packet passes while the band's
	// bucket, which holds Burst and refills at Rate, holds its cost.
	Rate, Burst uint32
	// Packets and Bytes count the packets that exceeded the band (from
	// GetMeter and DelMeter).
	Packets, Bytes uint64
}

// MeterFeatures are what a datapath's meters support.
type MeterFeatures struct {
	// MaxMeters bounds how many meters exist at once; MaxBands how many
	// bands a meter has.
	MaxMeters, MaxBands uint32
	// BandTypes lists the supported band types.
	BandTypes []uint32
}

// Meters is implemented by a Datapath that has meters (the kernel's
// ovs_meter family, and the userspace datapath), with the kernel's
// semantics and errors: SetMeter adds or replaces a meter (EINVAL for no
// band, more bands than MeterFeatures.MaxBands, or a zero rate; with
// clearStats the statistics of a replaced meter are not kept), GetMeter
// fails with ENOENT for a meter that does not exist, and DelMeter of one
// returns a MeterInfo without statistics.
type Meters interface {
	MeterFeatures(ctx context.Context) (MeterFeatures, error)
	SetMeter(ctx context.Context, m MeterInfo, clearStats bool) error
	GetMeter(ctx context.Context, id uint32) (*MeterInfo, error)
	DelMeter(ctx context.Context, id uint32) (*MeterInfo, error)
}
