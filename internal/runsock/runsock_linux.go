package runsock

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Modes of the run directory and of the sockets, without and with a
// group.
const (
	dirMode        = 0o700
	dirModeGroup   = 0o750
	sockMode       = 0o600
	sockModeGroup  = 0o660
	fileMode       = 0o600
	fileModeGroup  = 0o640
	groupDirAccess = 0o050
)

// ownerOf returns the uid owning path and the group that may use it ("" for
// none), from the file if it can be stat'ed, else from its directory.
func ownerOf(path string) (int, string) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err == nil {
		if st.Mode&0o060 != 0 && st.Gid != 0 {
			return int(st.Uid), groupName(int(st.Gid))
		}
		return int(st.Uid), ""
	}
	if err := unix.Stat(filepath.Dir(path), &st); err == nil {
		if st.Mode&groupDirAccess != 0 && st.Gid != 0 {
			return int(st.Uid), groupName(int(st.Gid))
		}
		return int(st.Uid), ""
	}
	return 0, ""
}

// PrepareDir creates the run directory dir (and its parents, 0755) if
// needed and sets its permissions: 0700, or 0750 with group a.GID. It
// refuses a directory that is a symbolic link or that another user owns
// (someone could then replace the sockets). A directory already given
// to another group by a datapath that still has files in it keeps that
// group (its sockets are 0600, so this grants nothing); asking for a
// different group then fails: all the grouped datapaths of one run
// directory share its group (use another OVSDP_RUNDIR otherwise).
// except is a file of dir to disregard when deciding whether a group is
// in use (the socket about to be replaced), or "".
func PrepareDir(dir string, a Access, except string) error {
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", filepath.Dir(dir), err)
	}
	if err := os.Mkdir(dir, dirMode); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	var st unix.Stat_t
	if err := unix.Lstat(dir, &st); err != nil {
		return fmt.Errorf("run directory %s: %w", dir, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return fmt.Errorf("run directory %s is not a directory (a symbolic link?): refusing to use it", dir)
	}
	if int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("run directory %s is owned by %s, not by %s that runs this process: refusing to use it",
			dir, userName(int(st.Uid)), userName(os.Geteuid()))
	}
	cur := int(st.Gid)
	plain := cur == 0 || cur == os.Getegid()
	gid, mode := -1, os.FileMode(dirMode)
	switch {
	case a.HasGroup() && cur == a.GID:
		mode = dirModeGroup
	case a.HasGroup() && (plain || !groupInUse(dir, cur, except)):
		gid, mode = a.GID, dirModeGroup
	case a.HasGroup():
		return fmt.Errorf("run directory %s belongs to group %s, which another datapath's --group set and still uses: the datapaths of one run directory share one group (want %s; set OVSDP_RUNDIR for another directory)",
			dir, groupName(cur), a.Group)
	case plain:
	case groupInUse(dir, cur, except):
		mode = dirModeGroup
	default:
		gid = os.Getegid()
	}
	if gid >= 0 && gid != cur {
		if err := os.Lchown(dir, -1, gid); err != nil {
			return fmt.Errorf("run directory %s: giving it to group %s: %w", dir, groupName(gid), err)
		}
	}
	if os.FileMode(st.Mode&0o7777) != mode {
		if err := os.Chmod(dir, mode); err != nil {
			return fmt.Errorf("run directory %s: %w", dir, err)
		}
	}
	return nil
}

// groupInUse reports whether a file of dir other than except belongs to
// gid.
func groupInUse(dir string, gid int, except string) bool {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return true
	}
	for _, e := range ents {
		p := filepath.Join(dir, e.Name())
		if p == except {
			continue
		}
		var st unix.Stat_t
		if unix.Lstat(p, &st) == nil && int(st.Gid) == gid {
			return true
		}
	}
	return false
}

// Listen creates the Unix socket path for a: its directory as
// PrepareDir makes it, a stale socket (no server answers) replaced, and
// the socket chmod'ed 0600 (0660, group a.GID) before it is returned. It
// fails, matching os.ErrExist, when a server answers on path.
func Listen(path string, a Access) (*net.UnixListener, error) {
	if err := PrepareDir(filepath.Dir(path), a, path); err != nil {
		return nil, err
	}
	if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
		c.Close()
		return nil, fmt.Errorf("%s: another process answers on it: %w", path, os.ErrExist)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("removing the stale socket %s: %w", path, err)
	}
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("listening on %s: %w", path, err)
	}
	mode := os.FileMode(sockMode)
	if a.HasGroup() {
		mode = sockModeGroup
		if err := os.Lchown(path, -1, a.GID); err != nil {
			l.Close()
			return nil, fmt.Errorf("%s: giving it to group %s: %w", path, a.Group, err)
		}
	}
	if err := os.Chmod(path, mode); err != nil {
		l.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return l, nil
}

// CreateFile opens path (in a directory PrepareDir made) for appending,
// creating it, mode 0600 (0640 and group a.GID), whatever the umask. It
// refuses to follow a symbolic link.
func CreateFile(path string, a Access) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND|unix.O_NOFOLLOW, fileMode)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", path, err)
	}
	mode := os.FileMode(fileMode)
	if a.HasGroup() {
		mode = fileModeGroup
		if err := f.Chown(-1, a.GID); err != nil {
			f.Close()
			return nil, fmt.Errorf("%s: giving it to group %s: %w", path, a.Group, err)
		}
	}
	if err := f.Chmod(mode); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}

// Check returns nil when the peer of c (a Unix socket connection) may
// use a socket serving what under a, else an error, matching
// os.ErrPermission, that words the refusal for the client. The peer's
// uid and effective gid come from SO_PEERCRED (as of its connect); its
// supplementary groups from /proc/PID/status, whose effective uid must
// match, so that a recycled PID is never trusted. A peer whose PID is
// not visible here (another PID namespace) is judged on uid and gid
// alone.
func (a Access) Check(c net.Conn, what string) error {
	cred, err := PeerCred(c)
	if err != nil {
		return &deniedError{fmt.Sprintf("permission denied: %s: the peer's credentials cannot be read: %v", what, err)}
	}
	if a.allows(cred) {
		return nil
	}
	group := ""
	if a.HasGroup() {
		group = a.Group
	}
	return &deniedError{deniedMessage(what, os.Geteuid(), group) + " (uid " + strconv.Itoa(int(cred.Uid)) + " refused)"}
}

// allows applies the rule of Check to cred.
func (a Access) allows(cred *unix.Ucred) bool {
	if cred.Uid == 0 || int(cred.Uid) == os.Geteuid() {
		return true
	}
	if !a.HasGroup() {
		return false
	}
	if int(cred.Gid) == a.GID {
		return true
	}
	if cred.Pid <= 0 {
		return false
	}
	uid, groups, err := procCreds(int(cred.Pid))
	if err != nil || uid != int(cred.Uid) {
		return false
	}
	for _, g := range groups {
		if g == a.GID {
			return true
		}
	}
	return false
}

// PeerCred returns the SO_PEERCRED credentials of a Unix socket
// connection.
func PeerCred(c net.Conn) (*unix.Ucred, error) {
	sc, ok := c.(interface {
		SyscallConn() (syscall.RawConn, error)
	})
	if !ok {
		return nil, fmt.Errorf("not a socket connection (%T)", c)
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil, err
	}
	var (
		cred *unix.Ucred
		cerr error
	)
	if err := rc.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return nil, err
	}
	if cerr != nil {
		return nil, fmt.Errorf("SO_PEERCRED: %w", cerr)
	}
	return cred, nil
}

// procCreds reads the effective uid and the supplementary groups of a
// process from /proc/PID/status.
func procCreds(pid int) (uid int, groups []int, err error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return -1, nil, err
	}
	uid = -1
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		f := strings.Fields(v)
		switch k {
		case "Uid":
			if len(f) < 2 {
				return -1, nil, fmt.Errorf("/proc/%d/status: bad Uid line", pid)
			}
			if uid, err = strconv.Atoi(f[1]); err != nil {
				return -1, nil, fmt.Errorf("/proc/%d/status: bad Uid line: %w", pid, err)
			}
		case "Groups":
			for _, s := range f {
				g, err := strconv.Atoi(s)
				if err != nil {
					return -1, nil, fmt.Errorf("/proc/%d/status: bad Groups line: %w", pid, err)
				}
				groups = append(groups, g)
			}
		}
	}
	if uid < 0 {
		return -1, nil, fmt.Errorf("/proc/%d/status: no Uid line", pid)
	}
	return uid, groups, nil
}
