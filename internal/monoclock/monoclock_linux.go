package monoclock

import "golang.org/x/sys/unix"

// Millis returns CLOCK_MONOTONIC in milliseconds, or 0 if the clock
// cannot be read.
func Millis() uint64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return 0
	}
	return uint64(ts.Sec)*1000 + uint64(ts.Nsec)/1e6
}
