// Package runsock creates the Unix sockets of ovsdp's run directory
// (/run/ovsdp: the control sockets of netdev@ datapaths, upcalld's status
// sockets) with explicit permissions, checks the credentials of every
// peer that connects, and words the client's error when it may not.
//
// Who may use a socket: root, the user the serving process runs as, and,
// when the socket has a group (upcalld --group G), the members of G. Three
// things enforce it, none of them the umask:
//
//   - the run directory is mode 0700 (0750 and group G when a datapath
//     has a group), set with chmod and chown after it is created;
//   - each socket is chmod'ed 0600 (0660 and chown'ed to group G) right
//     after listen; until then the directory keeps everyone else out;
//   - every accepted connection's SO_PEERCRED is checked (Access.Check):
//     uid 0 or the server's uid, else the peer's effective gid or one of
//     its supplementary groups (read from /proc/PID/status) must be G.
//     Anyone else gets one error line and the connection is closed.
package runsock

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"strconv"
	"syscall"
)

// Access says who, besides root and the serving process's own user, may
// use a socket: the members of one group, or nobody.
type Access struct {
	// GID is the group whose members may connect, or -1 for none.
	GID int
	// Group is the group's name, for messages ("" when GID is -1).
	Group string
}

// RootOnly is the Access of a socket without a group.
var RootOnly = Access{GID: -1}

// HasGroup reports whether a group may use the socket.
func (a Access) HasGroup() bool { return a.GID >= 0 }

// LookupGroup resolves a --group argument: a group name, or a numeric
// gid (which needs no entry in /etc/group). An empty s gives RootOnly.
func LookupGroup(s string) (Access, error) {
	if s == "" {
		return RootOnly, nil
	}
	if g, err := user.LookupGroup(s); err == nil {
		gid, err := strconv.Atoi(g.Gid)
		if err != nil || gid < 0 {
			return RootOnly, fmt.Errorf("group %q: bad gid %q", s, g.Gid)
		}
		return Access{GID: gid, Group: g.Name}, nil
	}
	gid, err := strconv.ParseUint(s, 10, 31)
	if err != nil {
		return RootOnly, fmt.Errorf("group %q: no such group (neither a name in the group database nor a numeric gid)", s)
	}
	a := Access{GID: int(gid), Group: s}
	if g, err := user.LookupGroupId(s); err == nil {
		a.Group = g.Name
	}
	return a, nil
}

// userName returns the name of uid, or "uid N".
func userName(uid int) string {
	if uid == 0 {
		return "root"
	}
	if u, err := user.LookupId(strconv.Itoa(uid)); err == nil {
		return u.Username
	}
	return "uid " + strconv.Itoa(uid)
}

// groupName returns the name of gid, or its number.
func groupName(gid int) string {
	if g, err := user.LookupGroupId(strconv.Itoa(gid)); err == nil {
		return g.Name
	}
	return strconv.Itoa(gid)
}

// deniedError is a permission refusal worded for the client. It matches
// os.ErrPermission and syscall.EACCES.
type deniedError struct{ msg string }

func (e *deniedError) Error() string { return e.msg }

// Is makes errors.Is match os.ErrPermission and EACCES.
func (e *deniedError) Is(target error) bool {
	return target == os.ErrPermission || target == syscall.EACCES
}

// deniedMessage words a refusal: "permission denied: WHAT is owned by
// OWNER; run as root or join group G".
func deniedMessage(what string, ownerUID int, group string) string {
	owner := userName(ownerUID)
	run := "run as root"
	if ownerUID != 0 {
		run = "run as root or as " + owner
	}
	if group != "" {
		run += " or join group " + group
	}
	return fmt.Sprintf("permission denied: %s is owned by %s; %s", what, owner, run)
}

// Denied returns the error of a client that may not connect to the
// socket at path (connect gave EACCES or EPERM), which serves what (for
// example "netdev@br0"). The owner and the group come from the socket
// file when the caller may stat it, else from its directory.
func Denied(what, path string) error {
	uid, group := ownerOf(path)
	return &deniedError{deniedMessage(what, uid, group)}
}

// DeniedError returns an error with text msg (a refusal a server sent)
// that matches os.ErrPermission and EACCES.
func DeniedError(msg string) error { return &deniedError{msg} }

// IsDenied reports whether a dial error means that the caller lacks the
// permission (the socket or its directory).
func IsDenied(err error) bool {
	return errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EPERM)
}
