package monoclock

import (
	"testing"
	"time"
)

// TestMillis checks that the clock is running, moves forward at the rate
// of the wall clock's monotonic reading, and never goes back.
func TestMillis(t *testing.T) {
	t0, w0 := Millis(), time.Now()
	time.Sleep(50 * time.Millisecond)
	t1, w1 := Millis(), time.Now()
	if t0 == 0 && t1 == 0 {
		t.Fatalf("Millis() = 0: the clock cannot be read")
	}
	d, wd := t1-t0, uint64(w1.Sub(w0)/time.Millisecond)
	if t1 < t0 || d+20 < wd || d > wd+20 {
		t.Fatalf("Millis() went from %d to %d (%d ms) while %d ms passed", t0, t1, d, wd)
	}
}
