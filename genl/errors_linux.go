package genl

import (
	"errors"
	"fmt"
	"os"

	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// Error is a failed kernel command. It keeps the kernel's extended
// acknowledgement (Message, Offset) and matches os.ErrNotExist (ENOENT,
// ENODEV), os.ErrExist (EEXIST) and os.ErrPermission (EPERM, EACCES) with
// errors.Is, as well as the underlying unix.Errno.
type Error struct {
	// Op is the command, e.g. "ovs_flow new".
	Op string
	// Errno is the kernel's error number (0 if the failure was not an
	// error reply, e.g. a socket error).
	Errno unix.Errno
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
	if e.Errno == unix.EPERM || e.Errno == unix.EACCES {
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
		return e.Errno == unix.ENOENT || e.Errno == unix.ENODEV
	case os.ErrExist:
		return e.Errno == unix.EEXIST
	case os.ErrPermission:
		return e.Errno == unix.EPERM || e.Errno == unix.EACCES
	}
	return false
}

// wrapErr turns an error from the netlink layer into an *Error.
func wrapErr(op string, err error) error {
	if err == nil {
		return nil
	}
	var ge *Error
	if errors.As(err, &ge) {
		return err
	}
	e := &Error{Op: op, Err: err}
	var oe *netlink.OpError
	if errors.As(err, &oe) {
		e.Message, e.Offset = oe.Message, oe.Offset
	}
	var errno unix.Errno
	if errors.As(err, &errno) {
		e.Errno = errno
	}
	return e
}
