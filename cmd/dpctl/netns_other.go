//go:build !linux

package main

import (
	"errors"
	"fmt"
)

// enterNetns is --netns, which needs Linux's network namespaces.
func enterNetns(name string, _ []string) error {
	return fmt.Errorf("--netns %s: network namespaces need Linux: %w", name, errors.ErrUnsupported)
}
