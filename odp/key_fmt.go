package odp

import (
	"encoding/binary"
	"strconv"
	"strings"
)

// This file holds the field formatters shared by the key attributes. They
// follow lib/odp-util.c's format_* helpers: a field whose mask is zero is
// left out unless verbose, a partial mask is shown as "/MASK", a full mask
// (or no mask at all: an exact match) is not shown.

// cx formats v like C's "%#x": "0" for zero, else "0x..." in lowercase.
func cx(v uint64) string {
	if v == 0 {
		return "0"
	}
	return "0x" + strconv.FormatUint(v, 16)
}

// fw writes comma-separated "name=value" fields. masked says whether a
// mask was given (false: exact match, every mask counts as all ones).
type fw struct {
	f       *textBuf
	verbose bool
	masked  bool
	n       int
}

func newFW(f *textBuf, mask KeyAttr, ok, verbose bool) fw {
	return fw{f: f, verbose: verbose, masked: ok && mask != nil}
}

// sep writes the separator before a field.
func (w *fw) sep() {
	if w.n > 0 {
		w.f.WriteByte(',')
	}
	w.n++
}

// show reports whether a field with mask-is-zero empty is printed.
func (w *fw) show(empty bool) bool { return w.verbose || !(w.masked && empty) }

func (w *fw) str(s string) { w.f.WriteString(s) }

// uint formats an integer field; hex selects "%#x" over "%u". full is
// the all-ones mask of the field.
func (w *fw) uint(name string, k, m, full uint64, hex bool) {
	if !w.show(m == 0) {
		return
	}
	w.sep()
	w.str(name)
	w.f.WriteByte('=')
	if hex {
		w.str(cx(k))
	} else {
		w.str(strconv.FormatUint(k, 10))
	}
	if w.masked && m != full {
		w.f.WriteByte('/')
		w.str(cx(m))
	}
}

func (w *fw) u8u(name string, k, m uint8)   { w.uint(name, uint64(k), uint64(m), 0xff, false) }
func (w *fw) u8x(name string, k, m uint8)   { w.uint(name, uint64(k), uint64(m), 0xff, true) }
func (w *fw) be16(name string, k, m uint16) { w.uint(name, uint64(k), uint64(m), 0xffff, false) }
func (w *fw) be16x(name string, k, m uint16) {
	w.uint(name, uint64(k), uint64(m), 0xffff, true)
}

// be64 is format_be64: "0x%x" even for zero.
func (w *fw) be64(name string, k, m uint64) {
	if !w.show(m == 0) {
		return
	}
	w.sep()
	w.str(name)
	w.str("=0x")
	w.str(strconv.FormatUint(k, 16))
	if w.masked && m != ^uint64(0) {
		w.f.WriteByte('/')
		w.str(cx(m))
	}
}

func (w *fw) ipv4(name string, k, m [4]byte) {
	if !w.show(m == [4]byte{}) {
		return
	}
	w.sep()
	w.str(name)
	w.f.WriteByte('=')
	writeIPv4(w.f, k)
	if w.masked && m != [4]byte{255, 255, 255, 255} {
		w.f.WriteByte('/')
		writeIPv4(w.f, m)
	}
}

func (w *fw) ipv6(name string, k, m [16]byte) {
	if !w.show(m == [16]byte{}) {
		return
	}
	w.sep()
	w.str(name)
	w.f.WriteByte('=')
	writeIPv6(w.f, k)
	if w.masked && !allOnes(m[:]) {
		w.f.WriteByte('/')
		writeIPv6(w.f, m)
	}
}

func (w *fw) eth(name string, k, m [6]byte) {
	if !w.show(m == [6]byte{}) {
		return
	}
	w.sep()
	w.str(name)
	w.f.WriteByte('=')
	writeMAC(w.f, k)
	if w.masked && !allOnes(m[:]) {
		w.f.WriteByte('/')
		writeMAC(w.f, m)
	}
}

// label is format_ipv6_label: 20 significant bits, "%#x".
func (w *fw) label(name string, k, m uint32) {
	if !w.show(m == 0) {
		return
	}
	w.sep()
	w.str(name)
	w.f.WriteByte('=')
	w.str(cx(uint64(k)))
	if w.masked && m&0xfffff != 0xfffff {
		w.f.WriteByte('/')
		w.str(cx(uint64(m)))
	}
}

// frag is format_frag: an enumeration, printed whenever its mask is not
// zero (verbose or not); a partial mask is reported as an error in the
// text, as Open vSwitch does.
func (w *fw) frag(name string, k, m uint8) {
	if w.masked && m == 0 {
		return
	}
	w.sep()
	if w.masked && m != 0xff {
		w.str("error: partial mask not supported for frag (" + cx(uint64(m)) + ")")
		return
	}
	w.str(name)
	w.f.WriteByte('=')
	w.str(fragName(k))
}

// Fragment types (enum ovs_frag_type).
const (
	FragNone  = 0
	FragFirst = 1
	FragLater = 2
)

func fragName(k uint8) string {
	switch k {
	case FragNone:
		return "no"
	case FragFirst:
		return "first"
	case FragLater:
		return "later"
	}
	return "<error>"
}

func writeIPv4(f *textBuf, a [4]byte) {
	for i, b := range a {
		if i > 0 {
			f.WriteByte('.')
		}
		f.WriteString(strconv.Itoa(int(b)))
	}
}

func writeMAC(f *textBuf, a [6]byte) {
	const digits = "0123456789abcdef"
	for i, b := range a {
		if i > 0 {
			f.WriteByte(':')
		}
		f.WriteByte(digits[b>>4])
		f.WriteByte(digits[b&15])
	}
}

// writeIPv6 formats an IPv6 address as glibc's inet_ntop does (which
// differs from net/netip for IPv4-compatible addresses such as ::1.2.3.4).
func writeIPv6(f *textBuf, a [16]byte) {
	var w [8]uint16
	for i := range w {
		w[i] = binary.BigEndian.Uint16(a[2*i:])
	}
	// Longest run of zero words (at least 2), the first one on ties.
	best, bestLen := -1, 0
	for i := 0; i < 8; {
		if w[i] != 0 {
			i++
			continue
		}
		j := i
		for j < 8 && w[j] == 0 {
			j++
		}
		if j-i > bestLen {
			best, bestLen = i, j-i
		}
		i = j
	}
	if bestLen < 2 {
		best = -1
	}
	for i := 0; i < 8; i++ {
		if best >= 0 && i >= best && i < best+bestLen {
			if i == best {
				f.WriteByte(':')
			}
			continue
		}
		if i > 0 {
			f.WriteByte(':')
		}
		if i == 6 && best == 0 && (bestLen == 6 || bestLen == 5 && w[5] == 0xffff) {
			writeIPv4(f, [4]byte{a[12], a[13], a[14], a[15]})
			return
		}
		f.WriteString(strconv.FormatUint(uint64(w[i]), 16))
	}
	if best >= 0 && best+bestLen == 8 {
		f.WriteByte(':')
	}
}

// writeCHex is Open vSwitch's ds_put_hex: the bytes as one big-endian
// number, "0x" and no leading zeros, "0" when all zero.
func writeCHex(f *textBuf, b []byte) {
	printed := false
	const digits = "0123456789abcdef"
	for _, c := range b {
		if c == 0 && !printed {
			continue
		}
		if !printed {
			f.WriteString("0x")
			if c>>4 != 0 {
				f.WriteByte(digits[c>>4])
			}
			f.WriteByte(digits[c&15])
			printed = true
			continue
		}
		f.WriteByte(digits[c>>4])
		f.WriteByte(digits[c&15])
	}
	if !printed {
		f.WriteByte('0')
	}
}

// formatFlags is Open vSwitch's format_flags: names joined by del,
// lowest bit first, unknown bits as one hex number at the end, "0" when
// no bit is set.
func formatFlags(f *textBuf, names func(uint32) string, flags uint32, del byte) {
	if flags == 0 {
		f.WriteByte('0')
		return
	}
	var bad uint32
	first := true
	for flags != 0 {
		bit := flags & -flags
		flags &^= bit
		n := names(bit)
		if n == "" {
			bad |= bit
			continue
		}
		if !first {
			f.WriteByte(del)
		}
		first = false
		f.WriteString(n)
	}
	if bad != 0 {
		if !first {
			f.WriteByte(del)
		}
		f.WriteString("0x" + strconv.FormatUint(uint64(bad), 16))
	}
}

// formatFlagsMasked is format_flags_masked: "+name-name" for the bits in
// mask, or formatFlags when mask is max.
func formatFlagsMasked(f *textBuf, names func(uint32) string, flags, mask, max uint32) {
	if mask == max {
		formatFlags(f, names, flags, '|')
		return
	}
	if mask == 0 {
		f.WriteString("0/0")
		return
	}
	for mask != 0 {
		bit := mask & -mask
		mask &^= bit
		if flags&bit != 0 {
			f.WriteByte('+')
		} else {
			f.WriteByte('-')
		}
		if n := names(bit); n != "" {
			f.WriteString(n)
		} else {
			f.WriteString("[Unknown]")
		}
	}
}

// parseFlags is Open vSwitch's parse_flags up to the closing ')':
// "N/M" numbers (masked only), "+a-b" masked names, or "a|b|N" (exact:
// the mask is all ones). allowed restricts the bits.
func parseFlags(sc *scanner, names func(uint32) string, allowed uint32, what string) (flags, mask uint32, err error) {
	start := sc.pos
	if !sc.noMask {
		save := sc.pos
		if v, e := sc.cnum(32); e == nil && sc.peek() == '/' {
			sc.pos++
			m, e := sc.cnum(32)
			if e != nil {
				return 0, 0, e
			}
			if uint32(v)&^allowed != 0 || uint32(m)&^allowed != 0 {
				return 0, 0, sc.errorAt(start, "unknown %s bits", what)
			}
			return uint32(v), uint32(m), nil
		}
		sc.pos = save
		if c := sc.peek(); c == '+' || c == '-' {
			for sc.peek() != ')' {
				c := sc.peek()
				if c != '+' && c != '-' {
					return 0, 0, sc.errorf("%s flag must be preceded by '+' (set) or '-' (not set)", what)
				}
				sc.pos++
				at := sc.pos
				bit := matchFlag(sc, names, "+-)")
				if bit == 0 {
					return 0, 0, sc.errorf("unknown %s flag", what)
				}
				if mask&bit != 0 {
					return 0, 0, sc.errorAt(at, "each %s flag can be given only once", what)
				}
				if bit&allowed == 0 {
					return 0, 0, sc.errorAt(at, "%s flag not allowed here", what)
				}
				if c == '+' {
					flags |= bit
				}
				mask |= bit
			}
			return flags, mask, nil
		}
	}
	for sc.peek() != ')' {
		if sc.eof() {
			return 0, 0, sc.errorf("expected ')' after %s flags", what)
		}
		if c := sc.peek(); c >= '0' && c <= '9' {
			v, e := sc.cnum(32)
			if e != nil {
				return 0, 0, e
			}
			if uint32(v)&^allowed != 0 {
				return 0, 0, sc.errorAt(start, "unknown %s bits", what)
			}
			flags |= uint32(v)
		} else {
			bit := matchFlag(sc, names, "|)")
			if bit == 0 || bit&allowed == 0 {
				return 0, 0, sc.errorf("unknown %s flag", what)
			}
			flags |= bit
		}
		if !sc.accept("|") && sc.peek() != ')' {
			return 0, 0, sc.errorf("expected '|' or ')' in %s flags", what)
		}
	}
	return flags, ^uint32(0), nil
}

// matchFlag consumes a flag name followed by one of the bytes in follow
// (not consumed) and returns its bit, or 0.
func matchFlag(sc *scanner, names func(uint32) string, follow string) uint32 {
	for bit := uint32(1); bit != 0; bit <<= 1 {
		n := names(bit)
		if n == "" || !strings.HasPrefix(sc.rest(), n) {
			continue
		}
		if next := sc.pos + len(n); next < len(sc.s) && strings.IndexByte(follow, sc.s[next]) >= 0 {
			sc.pos = next
			return bit
		}
	}
	return 0
}

// fieldSpec is one "name=" field of an attribute's text form.
type fieldSpec struct {
	name  string
	parse func(sc *scanner) error
}

// parseFields parses "name=value,name=value" up to (not including) the
// closing ')', as Open vSwitch's SCAN_BEGIN/SCAN_FIELD/SCAN_FINISH do: any
// order, repeats allowed (the last wins), an empty list allowed.
func parseFields(sc *scanner, what string, fields []fieldSpec) error {
	for {
		if sc.peek() == ')' {
			return nil
		}
		start := sc.pos
		matched := false
		for _, fs := range fields {
			if strings.HasPrefix(sc.rest(), fs.name) && strings.HasPrefix(sc.s[sc.pos+len(fs.name):], "=") {
				sc.pos += len(fs.name) + 1
				if err := fs.parse(sc); err != nil {
					return err
				}
				matched = true
				break
			}
		}
		if !matched {
			names := make([]string, len(fields))
			for i, fs := range fields {
				names[i] = fs.name + "="
			}
			return sc.errorAt(start, "unknown field in %s(); expected one of %s", what, strings.Join(names, " "))
		}
		if !sc.accept(",") {
			if sc.peek() != ')' {
				return sc.errorf("expected ',' or ')' in %s()", what)
			}
			return nil
		}
	}
}

// Field parsers: each stores the value in k and the mask (all ones when
// the text gives none) in m.

func pU8(k, m *uint8) func(*scanner) error {
	return func(sc *scanner) error {
		v, mm, err := sc.maskedNum(8)
		*k, *m = uint8(v), uint8(mm)
		return err
	}
}

func pU16(k, m *uint16) func(*scanner) error {
	return func(sc *scanner) error {
		v, mm, err := sc.maskedNum(16)
		*k, *m = uint16(v), uint16(mm)
		return err
	}
}

func pU32(k, m *uint32) func(*scanner) error {
	return func(sc *scanner) error {
		v, mm, err := sc.maskedNum(32)
		*k, *m = uint32(v), uint32(mm)
		return err
	}
}

func pU64(k, m *uint64) func(*scanner) error {
	return func(sc *scanner) error {
		v, mm, err := sc.maskedNum(64)
		*k, *m = v, mm
		return err
	}
}

func pIPv4(k, m *[4]byte) func(*scanner) error {
	return func(sc *scanner) error {
		v, err := sc.ipv4()
		if err != nil {
			return err
		}
		*k, *m = v, [4]byte{255, 255, 255, 255}
		if has, err := sc.maskSep(); err != nil || !has {
			return err
		}
		*m, err = sc.ipv4()
		return err
	}
}

func pIPv6(k, m *[16]byte) func(*scanner) error {
	return func(sc *scanner) error {
		v, err := sc.ipv6()
		if err != nil {
			return err
		}
		*k = v
		for i := range m {
			m[i] = 0xff
		}
		if has, err := sc.maskSep(); err != nil || !has {
			return err
		}
		*m, err = sc.ipv6()
		return err
	}
}

func pMAC(k, m *[6]byte) func(*scanner) error {
	return func(sc *scanner) error {
		v, err := sc.mac()
		if err != nil {
			return err
		}
		*k, *m = v, [6]byte{255, 255, 255, 255, 255, 255}
		if has, err := sc.maskSep(); err != nil || !has {
			return err
		}
		*m, err = sc.mac()
		return err
	}
}

// pFrag parses no|first|later (always an exact mask).
func pFrag(k, m *uint8) func(*scanner) error {
	return func(sc *scanner) error {
		start := sc.pos
		for sc.pos < len(sc.s) && sc.s[sc.pos] >= 'a' && sc.s[sc.pos] <= 'z' {
			sc.pos++
		}
		switch strings.ToLower(sc.s[start:sc.pos]) {
		case "no":
			*k = FragNone
		case "first":
			*k = FragFirst
		case "later":
			*k = FragLater
		default:
			return sc.errorAt(start, "expected frag=no, first or later")
		}
		*m = 0xff
		return nil
	}
}
