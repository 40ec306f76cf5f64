//go:build !genl_stub

package genl

import (
	"errors"

	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

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
