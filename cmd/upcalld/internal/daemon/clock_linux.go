package daemon

import "golang.org/x/sys/unix"

// monoMillis is CLOCK_MONOTONIC in milliseconds, the clock of the
// datapaths' flow "used" times.
func monoMillis() uint64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return 0
	}
	return uint64(ts.Sec)*1000 + uint64(ts.Nsec)/1e6
}
