package monoclock

import (
	"testing"

	"golang.org/x/sys/unix"
)

// Millis agrees with CLOCK_MONOTONIC read by a system call, to the
// millisecond, bracketed by two such reads.
func TestMillisIsClockMonotonic(t *testing.T) {
	read := func() uint64 {
		var ts unix.Timespec
		if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
			t.Fatal(err)
		}
		return uint64(ts.Nano()) / 1e6
	}
	for range 100 {
		lo := read()
		m := Millis()
		hi := read()
		if m < lo || m > hi {
			t.Fatalf("Millis() = %d, CLOCK_MONOTONIC read %d before and %d after", m, lo, hi)
		}
	}
}

// Millis makes no system call and allocates nothing.
func TestMillisAllocatesNothing(t *testing.T) {
	if n := testing.AllocsPerRun(1000, func() { _ = Millis() }); n != 0 {
		t.Errorf("Millis allocates %v times", n)
	}
}

// BenchmarkMillis is the cost of one reading; BenchmarkClockGettime,
// the system call Millis made before, for comparison.
func BenchmarkMillis(b *testing.B) {
	for range b.N {
		_ = Millis()
	}
}

func BenchmarkClockGettime(b *testing.B) {
	var ts unix.Timespec
	for range b.N {
		unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	}
}
