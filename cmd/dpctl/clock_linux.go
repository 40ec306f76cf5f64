package main

import "golang.org/x/sys/unix"

// monotonicMS is the current CLOCK_MONOTONIC time in milliseconds, the
// clock of a flow's "used" time.
func monotonicMS() uint64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return 0
	}
	return uint64(ts.Sec)*1000 + uint64(ts.Nsec)/1e6
}
