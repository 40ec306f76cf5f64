//go:build !linux

package kernelct

import (
	"context"
	"fmt"

	"github.com/ovsdp/ovsdp/odp"
)

// DefaultSysctlDir is where Linux keeps the kernel's conntrack settings.
const DefaultSysctlDir = "/proc/sys/net/netfilter"

// Tracker is the kernel's conntrack table; only Linux has one.
type Tracker struct{}

var _ odp.Conntracker = (*Tracker)(nil)

// errNoKernel is every method's error off Linux.
var errNoKernel = fmt.Errorf("kernelct: the kernel's conntrack table needs Linux: %w", odp.ErrUnsupported)

// Open fails: the kernel's conntrack table needs Linux.
func Open() (*Tracker, error) { return nil, errNoKernel }

// Close does nothing.
func (*Tracker) Close() error { return nil }

// DumpConntrack fails off Linux.
func (*Tracker) DumpConntrack(context.Context, odp.CTFilter, func(*odp.CTEntry) error) error {
	return errNoKernel
}

// FlushConntrack fails off Linux.
func (*Tracker) FlushConntrack(context.Context, odp.CTFilter) error { return errNoKernel }

// ConntrackStats fails off Linux.
func (*Tracker) ConntrackStats(context.Context) (odp.CTStats, error) {
	return odp.CTStats{}, errNoKernel
}

// ConntrackCount fails off Linux.
func (*Tracker) ConntrackCount(context.Context) (uint32, error) { return 0, errNoKernel }

// MaxConns fails off Linux.
func (*Tracker) MaxConns(context.Context) (uint32, error) { return 0, errNoKernel }

// SetMaxConns fails off Linux.
func (*Tracker) SetMaxConns(context.Context, uint32) error { return errNoKernel }
