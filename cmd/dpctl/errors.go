package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/ovsdp/ovsdp/genl"
	"github.com/ovsdp/ovsdp/odp"
)

// errNotSupportedUserspace is returned by the commands of kernel-only
// generic netlink families (meters, conntrack limits) on netdev@
// datapaths.
var errNotSupportedUserspace = errors.New("not supported by the userspace datapath")

// reportError writes err to w as dpctl's error lines: "dpctl: MESSAGE",
// with the kernel's errors shown once and plainly (no "genl:" prefixes),
// and for a flow syntax error the input with a caret under the column.
// An exit error with an empty message (the command reported its
// failures already) prints nothing.
func reportError(w io.Writer, err error) {
	msg := errorMessage(err)
	if msg == "" {
		return
	}
	fmt.Fprintf(w, "dpctl: %s\n", msg)
	var se *odp.SyntaxError
	if errors.As(err, &se) && se.Input != "" && len(se.Input) <= 400 && se.Offset <= len(se.Input) {
		fmt.Fprintf(w, "  %s\n  %s^\n", se.Input, caretPad(se.Input[:se.Offset]))
	}
}

// caretPad returns blanks as wide as s, keeping its tabs.
func caretPad(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r == '\t' {
			b.WriteByte('\t')
		} else {
			b.WriteByte(' ')
		}
	}
	return b.String()
}

// errorMessage is err's text as dpctl prints it (without "dpctl: ").
func errorMessage(err error) string {
	if err == nil {
		return ""
	}
	var ec cli.ExitCoder
	if errors.As(err, &ec) && ec.Error() == "" {
		return ""
	}
	msg := err.Error()
	// The part that came from package genl ends the message (every
	// layer wraps with "context: %w"): replace it by its plain form.
	if g := findGenl(err); g != nil {
		gm := g.Error()
		if strings.HasSuffix(msg, gm) {
			msg = msg[:len(msg)-len(gm)] + kernelMessage(g)
		}
	}
	msg = strings.TrimPrefix(msg, "dpctl: ")
	return msg
}

// findGenl returns the outermost error in err's chain whose text is
// package genl's ("genl: ...").
func findGenl(err error) error {
	for depth := 0; err != nil && depth < 64; depth++ {
		if strings.HasPrefix(err.Error(), "genl: ") {
			return err
		}
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		case interface{ Unwrap() []error }:
			es := u.Unwrap()
			if len(es) == 0 {
				return nil
			}
			err = es[0]
		default:
			return nil
		}
	}
	return nil
}

// kernelMessage says what a genl error means for a dpctl user: the
// missing module and how to load it, the missing privilege, or the
// kernel's error with its extended-ack message.
func kernelMessage(err error) string {
	if errors.Is(err, genl.ErrModuleNotLoaded) {
		return genl.ErrModuleNotLoaded.Error()
	}
	if errors.Is(err, genl.ErrFamilyMissing) {
		return strings.TrimPrefix(strings.ReplaceAll(err.Error(), "genl: ", ""), "genl: ")
	}
	var ge *genl.Error
	if errors.As(err, &ge) && ge.Errno != 0 {
		var ee *explainedError
		if errors.As(err, &ee) {
			s := "the kernel rejects the flow (EINVAL): " + ee.why
			if ge.Message != "" {
				s += fmt.Sprintf(" (kernel says: %q)", ge.Message)
			}
			return s
		}
		s := ge.Errno.Error()
		if ge.Message != "" {
			s += fmt.Sprintf(" (kernel says: %q)", ge.Message)
		}
		if ge.Errno == syscall.EPERM || ge.Errno == syscall.EACCES {
			s += ": CAP_NET_ADMIN is needed (run as root)"
		}
		return s
	}
	return strings.ReplaceAll(err.Error(), "genl: ", "")
}

// notFoundDP names a datapath that does not exist.
func notFoundDP(d dpName, err error) error {
	if errors.Is(err, os.ErrNotExist) && !errors.Is(err, genl.ErrModuleNotLoaded) {
		return notExist("datapath %s does not exist", d)
	}
	return err
}

// isNotExist reports whether err means that something does not exist.
func isNotExist(err error) bool { return errors.Is(err, os.ErrNotExist) }

// notExistError is an error that matches os.ErrNotExist without
// repeating its text.
type notExistError struct{ msg string }

func (e notExistError) Error() string        { return e.msg }
func (e notExistError) Is(target error) bool { return target == os.ErrNotExist }

// notExist formats a notExistError.
func notExist(format string, args ...any) error {
	return notExistError{fmt.Sprintf(format, args...)}
}
