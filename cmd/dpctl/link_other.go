//go:build !linux

package main

import (
	"errors"
	"fmt"
)

// deleteLink is del-if -d's device deletion, which needs Linux's
// rtnetlink.
func deleteLink(name string) error {
	return fmt.Errorf("deleting device %s needs Linux: %w", name, errors.ErrUnsupported)
}
