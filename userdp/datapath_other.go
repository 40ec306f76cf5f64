//go:build !linux

package userdp

import (
	"fmt"
	"time"

	"github.com/ovsdp/ovsdp/odp"
)

// openNetdevPort: AF_PACKET ports exist on Linux only.
func openNetdevPort(name string) (Port, error) {
	return nil, fmt.Errorf("netdev ports need Linux: %w", odp.ErrUnsupported)
}

// openInternalPort: tap ports exist on Linux only.
func openInternalPort(name string) (Port, error) {
	return nil, fmt.Errorf("internal ports need Linux: %w", odp.ErrUnsupported)
}

var processStart = time.Now()

// monotonicMs approximates CLOCK_MONOTONIC with the process's clock.
func monotonicMs() uint64 { return uint64(time.Since(processStart) / time.Millisecond) }
