package testenv

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// NamePrefix starts the name of every namespace and link testenv creates.
const NamePrefix = "ovsdp-"

// netnsDir is where named network namespaces are bind-mounted.
const netnsDir = "/var/run/netns"

var nameSeq atomic.Uint64

// NewName returns a fresh name for a link or namespace owned by this
// process: ovsdp-<pid>-<n> in base 36, at most 15 bytes (IFNAMSIZ-1).
func NewName() string {
	n := nameSeq.Add(1)
	return fmt.Sprintf("%s%s-%s", NamePrefix, strconv.FormatInt(int64(os.Getpid()), 36), strconv.FormatUint(n, 36))
}

// ownerPID returns the pid encoded in a name made by NewName.
func ownerPID(name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, NamePrefix)
	if !ok {
		return 0, false
	}
	p, seq, ok := strings.Cut(rest, "-")
	if !ok || p == "" || seq == "" || strings.Contains(seq, "-") {
		return 0, false
	}
	if _, err := strconv.ParseUint(seq, 36, 64); err != nil {
		return 0, false
	}
	pid, err := strconv.ParseInt(p, 36, 32)
	if err != nil || pid <= 0 {
		return 0, false
	}
	return int(pid), true
}

// stale reports whether name was made by NewName in a process that no
// longer exists.
func stale(name string) bool {
	pid, ok := ownerPID(name)
	if !ok {
		return false
	}
	_, err := os.Stat(fmt.Sprintf("/proc/%d", pid))
	return errors.Is(err, os.ErrNotExist)
}

var sweepOnce sync.Once

// sweepOnceQuietly runs SweepStale the first time testenv creates
// anything in this process.
func sweepOnceQuietly() {
	sweepOnce.Do(func() { SweepStale() })
}

// SweepStale deletes network namespaces (in /var/run/netns) and links (in
// the calling process's namespace) named by NewName in processes that no
// longer exist, which crashed test runs leave behind. Objects of live
// processes, and names of any other form, are never touched. It returns
// what it deleted.
func SweepStale() ([]string, error) {
	var removed []string
	var errs []error
	if ents, err := os.ReadDir(netnsDir); err == nil {
		for _, e := range ents {
			if !stale(e.Name()) {
				continue
			}
			if err := netns.DeleteNamed(e.Name()); err != nil {
				// A file that is not a mount any more: just remove it.
				if rerr := os.Remove(filepath.Join(netnsDir, e.Name())); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
					errs = append(errs, fmt.Errorf("deleting stale namespace %s: %w", e.Name(), err))
					continue
				}
			}
			removed = append(removed, "netns "+e.Name())
		}
	}
	links, err := netlink.LinkList()
	if err != nil {
		errs = append(errs, fmt.Errorf("listing links: %w", err))
	}
	for _, l := range links {
		name := l.Attrs().Name
		if !stale(name) {
			continue
		}
		if err := netlink.LinkDel(l); err != nil && !isNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting stale link %s: %w", name, err))
			continue
		}
		removed = append(removed, "link "+name)
	}
	return removed, errors.Join(errs...)
}
