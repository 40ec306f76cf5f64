package genl

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"syscall"
)

var (
	// ErrModuleNotLoaded is returned (wrapped) when the kernel has no
	// Open vSwitch generic netlink families. It matches os.ErrNotExist
	// through the wrapped netlink error as well.
	ErrModuleNotLoaded = errors.New("the openvswitch kernel module is not loaded (try: modprobe openvswitch)")

	// ErrNotSupported is returned (wrapped, naming the operating system)
	// by everything that would open a socket, on operating systems other
	// than Linux: the kernel datapath is Linux's generic netlink.
	ErrNotSupported = errors.New("genl: the kernel datapath is Linux only")

	// ErrDumpInterrupted is returned (wrapped) after a dump during which
	// the kernel's table changed (NLM_F_DUMP_INTR): entries may have been
	// missed or seen twice.
	ErrDumpInterrupted = errors.New("genl: dump interrupted by a concurrent change (NLM_F_DUMP_INTR)")

	// ErrFamilyMissing is returned (wrapped) by meter and conntrack-limit
	// commands when the kernel lacks that family.
	ErrFamilyMissing = errors.New("genl: the kernel does not have this generic netlink family")
)

// errUnsupportedOS is what the stand-in client of other operating
// systems returns (client_others.go).
var errUnsupportedOS = fmt.Errorf("%w: not supported on %s/%s", ErrNotSupported, runtime.GOOS, runtime.GOARCH)

// Error is a failed kernel command. It keeps the kernel's extended
// acknowledgement (Message, Offset) and matches os.ErrNotExist (ENOENT,
// ENODEV), os.ErrExist (EEXIST) and os.ErrPermission (EPERM, EACCES) with
// errors.Is, as well as the underlying syscall.Errno.
type Error struct {
	// Op is the command, e.g. "ovs_flow new".
	Op string
	// Errno is the kernel's error number (0 if the failure was not an
	// error reply, e.g. a socket error).
	Errno syscall.Errno
	// Message and Offset are the kernel's extended acknowledgement, when
	// it sent one.
	Message string
	Offset  int
	// Err is the underlying error (a *netlink.OpError for kernel replies).
	Err error
}

// Error implements error.
func (e *Error) Error() string {
	s := "genl: " + e.Op + ": "
	if e.Errno != 0 {
		s += e.Errno.Error()
	} else {
		s += e.Err.Error()
	}
	if e.Message != "" {
		s += fmt.Sprintf(" (kernel says: %q", e.Message)
		if e.Offset != 0 {
			s += fmt.Sprintf(" at offset %d", e.Offset)
		}
		s += ")"
	}
	if e.Errno == syscall.EPERM || e.Errno == syscall.EACCES {
		s += " (CAP_NET_ADMIN is needed)"
	}
	return s
}

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// Is maps kernel error numbers to the os package's errors.
func (e *Error) Is(target error) bool {
	switch target {
	case os.ErrNotExist:
		return e.Errno == syscall.ENOENT || e.Errno == syscall.ENODEV
	case os.ErrExist:
		return e.Errno == syscall.EEXIST
	case os.ErrPermission:
		return e.Errno == syscall.EPERM || e.Errno == syscall.EACCES
	}
	return false
}
