package daemon

import (
	"testing"
	"time"
)

// The revalidator lag counts from the start until the first pass, then
// from the end of the last pass; the interval gauge is the configured one.
func TestRevalidatorLagMetric(t *testing.T) {
	h := newHarness(t, 1, Config{RevalidateInterval: 3 * time.Second})
	if got := h.counter("upcalld_revalidation_interval_seconds"); got != 3 {
		t.Errorf("upcalld_revalidation_interval_seconds = %v, want 3", got)
	}
	time.Sleep(60 * time.Millisecond)
	before := h.counter("upcalld_revalidator_lag_seconds")
	if before < 0.05 {
		t.Errorf("lag before the first pass = %v s, want at least the 60 ms since the start", before)
	}
	h.revalidate()
	after := h.counter("upcalld_revalidator_lag_seconds")
	if after >= before || after < 0 {
		t.Errorf("lag after a pass = %v s, want less than %v s and not negative", after, before)
	}
	now := time.Now()
	if got := h.d.revalidatorLag(now.Add(10 * time.Second)); got < 10*time.Second || got > 11*time.Second {
		t.Errorf("lag 10 s after the pass = %v", got)
	}
}
