package odp

import (
	"fmt"
	"strconv"
	"strings"
)

// SyntaxError reports text that could not be parsed: the input, the byte
// offset where parsing stopped, and what was expected there.
type SyntaxError struct {
	Input  string
	Offset int
	Msg    string
}

// Column is the 1-based column of the error in the input.
func (e *SyntaxError) Column() int { return e.Offset + 1 }

// Error implements error. It shows the column and a short excerpt of the
// input at that place.
func (e *SyntaxError) Error() string {
	near := e.Input
	if e.Offset <= len(near) {
		near = near[e.Offset:]
	}
	if len(near) > 24 {
		near = near[:24] + "..."
	}
	if near == "" {
		return fmt.Sprintf("column %d (end of input): %s", e.Column(), e.Msg)
	}
	return fmt.Sprintf("column %d, at %q: %s", e.Column(), near, e.Msg)
}

// scanner is a cursor over flow or action text. Parsers consume from it
// and report errors at the current position with errorf.
type scanner struct {
	s   string
	pos int
	// depth counts nested encap()/clone()-like constructs, to bound recursion.
	depth int
}

func newScanner(s string) *scanner { return &scanner{s: s} }

// errorf returns a SyntaxError at the current position.
func (sc *scanner) errorf(format string, args ...any) error {
	return &SyntaxError{Input: sc.s, Offset: sc.pos, Msg: fmt.Sprintf(format, args...)}
}

// errorAt returns a SyntaxError at an explicit offset.
func (sc *scanner) errorAt(off int, format string, args ...any) error {
	return &SyntaxError{Input: sc.s, Offset: off, Msg: fmt.Sprintf(format, args...)}
}

// rest is the unconsumed input.
func (sc *scanner) rest() string { return sc.s[sc.pos:] }

// eof reports whether all input is consumed.
func (sc *scanner) eof() bool { return sc.pos >= len(sc.s) }

// peek returns the next byte, or 0 at the end.
func (sc *scanner) peek() byte {
	if sc.pos < len(sc.s) {
		return sc.s[sc.pos]
	}
	return 0
}

// skipSpace skips blanks (spaces, tabs, newlines).
func (sc *scanner) skipSpace() {
	for sc.pos < len(sc.s) {
		switch sc.s[sc.pos] {
		case ' ', '\t', '\n', '\r':
			sc.pos++
		default:
			return
		}
	}
}

// accept consumes lit if the input continues with it.
func (sc *scanner) accept(lit string) bool {
	if strings.HasPrefix(sc.s[sc.pos:], lit) {
		sc.pos += len(lit)
		return true
	}
	return false
}

// expect consumes lit or fails with an error naming it.
func (sc *scanner) expect(lit string) error {
	if sc.accept(lit) {
		return nil
	}
	return sc.errorf("expected %q", lit)
}

// ident consumes a name made of letters, digits and '_' (possibly empty).
func (sc *scanner) ident() string {
	start := sc.pos
	for sc.pos < len(sc.s) {
		c := sc.s[sc.pos]
		if c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' {
			sc.pos++
			continue
		}
		break
	}
	return sc.s[start:sc.pos]
}

// token consumes up to (not including) the first byte in stop, and
// returns it. Parentheses are not balanced.
func (sc *scanner) token(stop string) string {
	start := sc.pos
	for sc.pos < len(sc.s) && strings.IndexByte(stop, sc.s[sc.pos]) < 0 {
		sc.pos++
	}
	return sc.s[start:sc.pos]
}

// uint parses an unsigned integer (decimal, or hex with 0x) that fits in
// bits bits.
func (sc *scanner) uint(bits int) (uint64, error) {
	start := sc.pos
	tok := sc.token(",)/ ")
	if tok == "" {
		return 0, sc.errorAt(start, "expected a number")
	}
	v, err := strconv.ParseUint(tok, 0, bits)
	if err != nil {
		return 0, sc.errorAt(start, "bad %d-bit number %q", bits, tok)
	}
	return v, nil
}
