//go:build !linux

package monoclock

import "time"

var processStart = time.Now()

// Millis approximates CLOCK_MONOTONIC in milliseconds with the
// process's monotonic clock, counted from the package's initialisation.
func Millis() uint64 { return uint64(time.Since(processStart) / time.Millisecond) }
