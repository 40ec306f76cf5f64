//go:build !linux

package runsock

import (
	"errors"
	"fmt"
	"net"
	"os"
)

// ownerOf: unknown off Linux.
func ownerOf(string) (int, string) { return 0, "" }

// PrepareDir needs Linux.
func PrepareDir(dir string, a Access, except string) error {
	return fmt.Errorf("run directory %s: needs Linux: %w", dir, errors.ErrUnsupported)
}

// Listen needs Linux.
func Listen(path string, a Access) (*net.UnixListener, error) {
	return nil, fmt.Errorf("%s: needs Linux: %w", path, errors.ErrUnsupported)
}

// CreateFile needs Linux.
func CreateFile(path string, a Access) (*os.File, error) {
	return nil, fmt.Errorf("%s: needs Linux: %w", path, errors.ErrUnsupported)
}

// Check refuses every peer off Linux (no SO_PEERCRED).
func (a Access) Check(c net.Conn, what string) error {
	return &deniedError{"permission denied: " + what + ": peer credentials need Linux"}
}
