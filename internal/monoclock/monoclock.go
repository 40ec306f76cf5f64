// Package monoclock reads the clock of the datapaths' flow "used" times:
// CLOCK_MONOTONIC in milliseconds, the clock the kernel's datapath stamps
// flows with (jiffies converted to ms since boot, as ovs_flow_used_time).
// On Linux it is the system's CLOCK_MONOTONIC; elsewhere, where there is
// no kernel datapath to agree with, it is the process's monotonic clock
// counted from the package's initialisation.
package monoclock
