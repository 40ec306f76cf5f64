package vm

import (
	"bytes"
	"io"
)

// markerFilter copies a stream to w until it sees marker, which it removes;
// whatever follows the marker is dropped. It holds back at most
// len(marker)-1 bytes that might be the start of the marker.
type markerFilter struct {
	w       io.Writer
	marker  []byte
	pending []byte
	seen    bool
	onSeen  func()
}

func newMarkerFilter(w io.Writer, marker string, onSeen func()) *markerFilter {
	return &markerFilter{w: w, marker: []byte(marker), onSeen: onSeen}
}

// Write implements io.Writer.
func (f *markerFilter) Write(p []byte) (int, error) {
	if f.seen {
		return len(p), nil
	}
	f.pending = append(f.pending, p...)
	if i := bytes.Index(f.pending, f.marker); i >= 0 {
		f.seen = true
		_, err := f.w.Write(f.pending[:i])
		f.pending = nil
		if f.onSeen != nil {
			f.onSeen()
		}
		return len(p), err
	}
	keep := len(f.marker) - 1
	if keep > len(f.pending) {
		keep = len(f.pending)
	}
	// Hold back only a suffix that is a prefix of the marker.
	for keep > 0 && !bytes.HasPrefix(f.marker, f.pending[len(f.pending)-keep:]) {
		keep--
	}
	n := len(f.pending) - keep
	if n > 0 {
		if _, err := f.w.Write(f.pending[:n]); err != nil {
			return len(p), err
		}
		f.pending = append(f.pending[:0], f.pending[n:]...)
	}
	return len(p), nil
}

// Flush writes what was held back (at the end of the stream, when the
// marker never came).
func (f *markerFilter) Flush() error {
	if f.seen || len(f.pending) == 0 {
		return nil
	}
	_, err := f.w.Write(f.pending)
	f.pending = nil
	return err
}

// Seen reports whether the marker was seen.
func (f *markerFilter) Seen() bool { return f.seen }
