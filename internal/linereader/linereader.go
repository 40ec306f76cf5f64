// Package linereader reads newline-terminated lines of bounded length
// from a stream: a longer line is read to its end and discarded, so that
// the next line is read in step, and reported with its length. It serves
// the control socket's requests (userdp/ctl) and dpctl's flow files.
package linereader

import (
	"bufio"
	"errors"
	"io"
)

// Reader reads lines of at most Max bytes (without the newline).
type Reader struct {
	r   *bufio.Reader
	max int
	buf []byte
	// BeforeRead, when set, is called before each read from the
	// underlying stream (a connection sets its read deadline there); its
	// error ends Next.
	BeforeRead func() error
}

// New returns a Reader of lines of at most max bytes from r.
func New(r io.Reader, max int) *Reader {
	return &Reader{r: bufio.NewReaderSize(r, 64*1024), max: max}
}

// Next returns the next line without its newline (nor the carriage
// return of a CRLF ending), valid until the next call, and n, the bytes it took from the stream (newline included).
// The last line may lack its newline. A line longer than max bytes is
// read to its end and discarded: line is then nil and long is true. At
// the end of the stream Next returns io.EOF; other errors are the
// stream's (or BeforeRead's).
func (l *Reader) Next() (line []byte, n int, long bool, err error) {
	l.buf = l.buf[:0]
	for {
		if l.BeforeRead != nil {
			if err := l.BeforeRead(); err != nil {
				return nil, n, false, err
			}
		}
		frag, err := l.r.ReadSlice('\n')
		n += len(frag)
		if !long && len(l.buf)+len(frag) <= l.max+1 {
			l.buf = append(l.buf, frag...)
		} else {
			long, l.buf = true, l.buf[:0]
		}
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && n > 0:
			// A last line without its newline; EOF comes next.
		case err != nil:
			return nil, n, false, err
		}
		if long {
			return nil, n, true, nil
		}
		b := l.buf
		if len(b) > 0 && b[len(b)-1] == '\n' {
			b = b[:len(b)-1]
		}
		if len(b) > 0 && b[len(b)-1] == '\r' {
			b = b[:len(b)-1]
		}
		if len(b) > l.max {
			// max+1 bytes that ended without a newline.
			return nil, n, true, nil
		}
		return b, n, false, nil
	}
}
