package odp

import (
	"fmt"
	"net/netip"
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
	// noMask makes "/mask" forms an error (exact-match keys).
	noMask bool
	// portNumber, when set, resolves port names in in_port(NAME).
	portNumber func(string) (uint32, bool)
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

// isSpace reports whether c is a C isspace() blank.
func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

// hexVal returns the value of the hex digit c, or -1.
func hexVal(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// isHex reports whether c is a hex digit.
func isHex(c byte) bool { return hexVal(c) >= 0 }

// cnum scans an integer the way Open vSwitch's ovs_scan("%i") does:
// leading blanks, an optional sign, then "0x" hexadecimal, "0" octal or
// decimal. Unlike Open vSwitch, which silently truncates, a value that
// does not fit in bits bits is an error; a negative value wraps as in C
// ("-1" is all ones).
func (sc *scanner) cnum(bits int) (uint64, error) { return sc.scanInt(bits, 0, "") }

// scanInt is Open vSwitch's scan_int, for keys and actions alike: cnum
// in the given base (0 for C's rules; 16 also takes an optional "0x", as
// "%x" does; 10 or 8 only their digits). what, when not empty, names the
// value in errors.
func (sc *scanner) scanInt(bits, base int, what string) (uint64, error) {
	start := sc.pos
	for sc.pos < len(sc.s) && isSpace(sc.s[sc.pos]) {
		sc.pos++
	}
	neg := false
	if c := sc.peek(); c == '-' || c == '+' {
		neg = c == '-'
		sc.pos++
	}
	if (base == 0 || base == 16) && (strings.HasPrefix(sc.s[sc.pos:], "0x") || strings.HasPrefix(sc.s[sc.pos:], "0X")) {
		base = 16
		sc.pos += 2
	} else if base == 0 && sc.peek() == '0' {
		base = 8
	} else if base == 0 {
		base = 10
	}
	about := ""
	if what != "" {
		about = " for " + what
	}
	digits := sc.pos
	var v uint64
	overflow := false
	b := uint64(base)
	for sc.pos < len(sc.s) {
		d := hexVal(sc.s[sc.pos])
		if d < 0 || uint64(d) >= b {
			break
		}
		if v > (^uint64(0)-uint64(d))/b {
			overflow = true
		}
		v = v*b + uint64(d)
		sc.pos++
	}
	if sc.pos == digits {
		sc.pos = start
		return 0, sc.errorAt(start, "expected a number%s", about)
	}
	max := ^uint64(0) >> (64 - bits)
	if overflow || v > max {
		end := sc.pos
		sc.pos = start
		return 0, sc.errorAt(start, "number %q does not fit in %d bits%s", sc.s[start:end], bits, about)
	}
	if neg {
		v = -v & max
	}
	return v, nil
}

// maskSep consumes the "/" that introduces a mask. It fails when masks are
// not allowed (ParseKey) and reports false when there is no mask.
func (sc *scanner) maskSep() (bool, error) {
	if sc.peek() != '/' {
		return false, nil
	}
	if sc.noMask {
		return false, sc.errorf("a mask is not allowed here (use the masked key syntax)")
	}
	sc.pos++
	return true, nil
}

// maskedNum scans "N" or "N/M"; the mask is all ones without "/M".
func (sc *scanner) maskedNum(bits int) (v, m uint64, err error) {
	if v, err = sc.cnum(bits); err != nil {
		return
	}
	m = ^uint64(0) >> (64 - bits)
	var has bool
	if has, err = sc.maskSep(); err != nil || !has {
		return
	}
	m, err = sc.cnum(bits)
	return
}

// ipv4 scans a dotted quad the way Open vSwitch's IP_SCAN_FMT
// ("%hhu.%hhu.%hhu.%hhu") reads one, for keys and actions alike: four
// decimal numbers (leading zeros allowed, "010" is 10), dot-separated.
// Unlike Open vSwitch, which keeps the low 8 bits, an octet above 255 is an
// error.
func (sc *scanner) ipv4() ([4]byte, error) {
	var a [4]byte
	start := sc.pos
	for i := 0; i < 4; i++ {
		if i > 0 && !sc.accept(".") {
			return a, sc.errorf("expected '.' in IPv4 address")
		}
		ds := sc.pos
		v := 0
		for sc.pos < len(sc.s) && sc.s[sc.pos] >= '0' && sc.s[sc.pos] <= '9' {
			if v <= 255 {
				v = v*10 + int(sc.s[sc.pos]-'0')
			}
			sc.pos++
		}
		if sc.pos == ds {
			return a, sc.errorf("expected an IPv4 address")
		}
		if v > 255 {
			return a, sc.errorAt(start, "bad IPv4 address (octet %s > 255)", sc.s[ds:sc.pos])
		}
		a[i] = byte(v)
	}
	return a, nil
}

// ipv6 scans an IPv6 address in inet_pton syntax, as Open vSwitch's
// IPV6_SCAN_FMT ("%46[0123456789abcdefABCDEF:.]") then inet_pton do.
func (sc *scanner) ipv6() ([16]byte, error) {
	start := sc.pos
	for sc.pos < len(sc.s) && (isHex(sc.s[sc.pos]) || sc.s[sc.pos] == ':' || sc.s[sc.pos] == '.') {
		sc.pos++
	}
	tok := sc.s[start:sc.pos]
	a, err := netip.ParseAddr(tok)
	if tok == "" || err != nil || !a.Is6() || a.Zone() != "" {
		sc.pos = start
		return [16]byte{}, sc.errorAt(start, "expected an IPv6 address")
	}
	return a.As16(), nil
}

// ipv6Bracketed scans an IPv6 address with or without brackets
// ("[fe80::1]"), as Open vSwitch's ct nat ranges accept it, so that a
// port can follow.
func (sc *scanner) ipv6Bracketed() ([16]byte, error) {
	start := sc.pos
	if !sc.accept("[") {
		return sc.ipv6()
	}
	a, err := sc.ipv6()
	if err != nil {
		return a, err
	}
	if !sc.accept("]") {
		return a, sc.errorAt(start, "expected ']' after the IPv6 address")
	}
	return a, nil
}

// mac scans an Ethernet address xx:xx:xx:xx:xx:xx (one or two hex digits
// a byte), for keys and actions alike.
func (sc *scanner) mac() ([6]byte, error) {
	var a [6]byte
	start := sc.pos
	for i := 0; i < 6; i++ {
		if i > 0 && !sc.accept(":") {
			sc.pos = start
			return a, sc.errorAt(start, "expected an Ethernet address xx:xx:xx:xx:xx:xx")
		}
		ds := sc.pos
		v := 0
		for sc.pos < len(sc.s) && hexVal(sc.s[sc.pos]) >= 0 && sc.pos-ds < 2 {
			v = v*16 + hexVal(sc.s[sc.pos])
			sc.pos++
		}
		if sc.pos == ds {
			sc.pos = start
			return a, sc.errorAt(start, "expected an Ethernet address xx:xx:xx:xx:xx:xx")
		}
		a[i] = byte(v)
	}
	return a, nil
}

// intString scans a value into out, right-aligned, the way Open vSwitch's
// parse_int_string does, for keys (ct_label, geneve option data) and
// actions (ct's label, tnl_push's geneve options) alike: "0x" followed by
// any number of hex digits, blanks between them allowed (leading zeros
// ignored; too many digits is an error), or a decimal or octal number that
// must fit in out.
func (sc *scanner) intString(out []byte) error {
	start := sc.pos
	clear(out)
	if sc.accept("0x") || sc.accept("0X") {
		var nibbles []byte
		for sc.pos < len(sc.s) {
			sc.skipSpace()
			d := hexVal(sc.peek())
			if d < 0 {
				break
			}
			if d != 0 || len(nibbles) > 0 {
				if (len(nibbles)+2)/2 > len(out) {
					return sc.errorAt(start, "hex value longer than %d bytes", len(out))
				}
				nibbles = append(nibbles, byte(d))
			}
			sc.pos++
		}
		j := len(out) - 1
		for i := len(nibbles) - 1; i >= 0; i -= 2 {
			out[j] = nibbles[i]
			if i > 0 {
				out[j] |= nibbles[i-1] << 4
			}
			j--
		}
		return nil
	}
	bits := 64
	if len(out) < 8 {
		bits = 8 * len(out)
	}
	v, err := sc.cnum(bits)
	if err != nil {
		return err
	}
	for i := len(out) - 1; i >= 0 && v != 0; i-- {
		out[i] = byte(v)
		v >>= 8
	}
	return nil
}

// hexBytes scans bytes written as pairs of hex digits (no "0x") as Open
// vSwitch's ofpbuf_put_hex does, for keys and actions alike: blanks may
// stand between the bytes, and the bytes end at the first character that
// is neither a blank nor a hex digit. An odd digit at the end is an error
// about what. No bytes at all give nil.
func (sc *scanner) hexBytes(what string) ([]byte, error) {
	var out []byte
	for {
		sc.skipSpace()
		if !isHex(sc.peek()) {
			return out, nil
		}
		if sc.pos+1 >= len(sc.s) || !isHex(sc.s[sc.pos+1]) {
			return nil, sc.errorf("odd number of hex digits in %s", what)
		}
		out = append(out, byte(hexVal(sc.s[sc.pos])<<4|hexVal(sc.s[sc.pos+1])))
		sc.pos += 2
	}
}
