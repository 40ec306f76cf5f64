package userdp

import (
	"fmt"
	"syscall"
)

// ParseNetdevMode returns the backend that "ring", "mmsg" or "xdp" names
// (the port option mode=); "" is DefaultNetdevMode.
func ParseNetdevMode(s string) (NetdevMode, error) {
	if s == "" {
		return DefaultNetdevMode, nil
	}
	for m, n := range netdevModeNames {
		if n == s {
			return NetdevMode(m), nil
		}
	}
	return 0, fmt.Errorf("mode=%s: want ring, mmsg or xdp: %w", s, syscall.EINVAL)
}

// openNetdevPort opens a port on an existing interface with the backend
// that mode names ("" for the default). When AF_XDP cannot be had (the
// kernel, the driver or another XDP program on the interface), it falls
// back to the TPACKET ring: fallback then says why. It returns the name of
// the backend it opened.
func openNetdevPort(name, mode string) (p Port, used, fallback string, err error) {
	m, err := ParseNetdevMode(mode)
	if err != nil {
		return nil, "", "", err
	}
	np, err := OpenNetdev(name, NetdevOptions{Mode: m})
	if err != nil && m == NetdevXDP {
		fallback = fmt.Sprintf("AF_XDP unavailable (%v); using the TPACKET ring", err)
		np, err = OpenNetdev(name, NetdevOptions{Mode: NetdevRing})
	}
	if err != nil {
		return nil, "", "", err
	}
	return np, np.Mode().String(), fallback, nil
}

// openInternalPort creates a tap device.
func openInternalPort(name string) (Port, error) {
	p, err := OpenTap(name)
	if err != nil {
		return nil, err
	}
	return p, nil
}
