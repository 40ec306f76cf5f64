//go:build !linux

package userdp

import (
	"fmt"

	"github.com/ovsdp/ovsdp/odp"
)

// openNetdevPort: AF_PACKET and AF_XDP ports exist on Linux only.
func openNetdevPort(name, mode string) (Port, string, string, error) {
	return nil, "", "", fmt.Errorf("netdev ports need Linux: %w", odp.ErrUnsupported)
}

// openInternalPort: tap ports exist on Linux only.
func openInternalPort(name string) (Port, error) {
	return nil, fmt.Errorf("internal ports need Linux: %w", odp.ErrUnsupported)
}

// openTunnel: tunnel ports use Linux's raw sockets.
func openTunnel(name string, c tunnelConfig) (Port, error) {
	return nil, fmt.Errorf("tunnel ports need Linux: %w", odp.ErrUnsupported)
}
