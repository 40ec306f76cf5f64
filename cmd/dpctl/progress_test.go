package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestProgress checks the flow files' progress report: a bar with the
// flow count, rate and time left, and the summary line at the end.
func TestProgress(t *testing.T) {
	var b bytes.Buffer
	p := newProgressOn(&b, 3000*40)
	p.every = 100
	for i := 0; i < 3000; i++ {
		p.add(40)
	}
	failed := 2
	p.failed = &failed
	p.finish()
	out := b.String()
	for _, want := range []string{"flows", "B/s", "s:", "%", "3000 lines, 2 failed, in "} {
		if !strings.Contains(out, want) {
			t.Errorf("progress output lacks %q:\n%q", want, out)
		}
	}
	if !strings.HasSuffix(out, " lines/s)\n") {
		t.Errorf("no summary line at the end: %q", out)
	}
	// Off a terminal (a buffer given to newProgress), nothing at all.
	var quiet bytes.Buffer
	q := newProgress(&quiet, nil)
	q.add(10)
	q.finish()
	if quiet.Len() != 0 {
		t.Errorf("progress off a terminal printed %q", quiet.String())
	}
}
