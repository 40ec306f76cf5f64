package userdp

import (
	"golang.org/x/sys/unix"
)

// openNetdevPort opens a port on an existing interface (AF_PACKET).
func openNetdevPort(name string) (Port, error) {
	p, err := OpenNetdev(name, NetdevOptions{})
	if err != nil {
		return nil, err
	}
	return p, nil
}

// openInternalPort creates a tap device.
func openInternalPort(name string) (Port, error) {
	p, err := OpenTap(name)
	if err != nil {
		return nil, err
	}
	return p, nil
}

// monotonicMs returns CLOCK_MONOTONIC in milliseconds, the clock of the
// kernel's flow "used" times.
func monotonicMs() uint64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return 0
	}
	return uint64(ts.Sec)*1000 + uint64(ts.Nsec)/1e6
}
