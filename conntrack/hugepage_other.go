//go:build !linux

package conntrack

import "unsafe"

// adviseHuge does nothing where there are no transparent huge pages
// (see hugepage_linux.go).
func adviseHuge(p unsafe.Pointer, n uintptr) (uintptr, error) { return 0, nil }
