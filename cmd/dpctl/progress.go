package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// progress reports the progress of add-flows, mod-flows and del-flows
// FILE on a terminal with schollz/progressbar: a bar over the file's
// bytes with the rate and the time left (a spinner with the rate when
// the size is unknown, as for standard input), the number of flows read,
// and a summary line at the end. Off a terminal it prints nothing.
type progress struct {
	w     io.Writer
	bar   *progressbar.ProgressBar
	start time.Time
	lines int
	// every is how many lines pass between two updates of the flow
	// count (the bar itself is throttled by time).
	every int
	// failed, when set, counts the lines that failed (for the summary).
	failed *int
}

// progressEvery is how often, in lines, the flow count is updated.
const progressEvery = 1000

func newProgress(w io.Writer, f *os.File) *progress {
	if f == nil || !isTerminal(w) {
		return &progress{}
	}
	var size int64 = -1
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
		size = st.Size()
	}
	return newProgressOn(w, size)
}

// newProgressOn makes a progress report on w for size bytes (-1:
// unknown), whether or not w is a terminal.
func newProgressOn(w io.Writer, size int64) *progress {
	bar := progressbar.NewOptions64(size,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription("0 flows"),
		progressbar.OptionShowBytes(true),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionSetElapsedTime(true),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionSetWidth(30),
		progressbar.OptionClearOnFinish(),
	)
	return &progress{w: w, bar: bar, start: time.Now(), every: progressEvery}
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	return term.IsTerminal(int(f.Fd()))
}

// add records a line of n bytes.
func (p *progress) add(n int) {
	p.lines++
	if p.bar == nil {
		return
	}
	if p.lines%p.every == 0 {
		p.bar.Describe(fmt.Sprintf("%d flows", p.lines))
	}
	_ = p.bar.Add(n)
}

// finish ends the bar and prints the summary line: lines, failures,
// time and rate.
func (p *progress) finish() {
	if p.bar == nil {
		return
	}
	failed := 0
	if p.failed != nil {
		failed = *p.failed
	}
	_ = p.bar.Finish()
	d := time.Since(p.start)
	rate := float64(p.lines) / max(d.Seconds(), 1e-9)
	fmt.Fprintf(p.w, "%d lines, %d failed, in %.1fs (%.0f lines/s)\n", p.lines, failed, d.Seconds(), rate)
}
