package odp

import "fmt"

// RoundTripActions runs one line of action text through the whole codec,
// as "dpctl parse-actions" and Open vSwitch's "test-odp parse-actions" do:
// parse, encode to netlink attributes, decode those, and format. Lines
// that are blank or start with '#' are returned unchanged.
func RoundTripActions(line string) (string, error) {
	if isCommentLine(line) {
		return line, nil
	}
	as, err := ParseActions(line)
	if err != nil {
		return "", fmt.Errorf("odp: parse actions: %w", err)
	}
	b, err := MarshalActions(as)
	if err != nil {
		return "", err
	}
	back, err := UnmarshalActions(b)
	if err != nil {
		return "", err
	}
	return FormatActions(back), nil
}

// isCommentLine reports whether a round-trip input line is echoed
// unchanged: blank, or starting with '#'.
func isCommentLine(line string) bool {
	for i := 0; i < len(line); i++ {
		switch line[i] {
		case ' ', '\t', '\r', '\n':
			continue
		case '#':
			return true
		default:
			return false
		}
	}
	return true
}
