package odp

import "fmt"

// RoundTripKey runs one line through what "dpctl parse-keys" (masked
// false) or "dpctl parse-wc-keys" (masked true) do, as Open vSwitch's
// test-odp does: parse the text, encode the key (and mask) to netlink
// attributes, decode them, and format the result — exact keys with
// FormatKey(key, nil, true), masked keys with FormatKey(key, mask, false).
func RoundTripKey(line string, masked bool) (string, error) {
	var key, mask FlowKey
	var err error
	if masked {
		key, mask, err = ParseMaskedKey(line)
	} else {
		key, err = ParseKey(line)
	}
	if err != nil {
		return "", err
	}
	kb, err := MarshalKey(key)
	if err != nil {
		return "", err
	}
	if key, err = UnmarshalKey(kb); err != nil {
		return "", fmt.Errorf("decoding our own key: %w", err)
	}
	if !masked {
		return FormatKey(key, nil, true), nil
	}
	mb, err := MarshalKey(mask)
	if err != nil {
		return "", err
	}
	if mask, err = UnmarshalKey(mb); err != nil {
		return "", fmt.Errorf("decoding our own mask: %w", err)
	}
	return FormatKey(key, mask, false), nil
}
