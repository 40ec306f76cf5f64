package testenv

import (
	"fmt"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

var (
	netnsDirOnce sync.Once
	netnsDirErr  error
)

// prepareNetnsDir makes /var/run/netns a shared mount point before the
// first namespace is bind-mounted in it, as iproute2's `ip netns add`
// does. Without it, a later `ip netns add` (from a test or another
// process) bind-mounts the directory over itself and hides the namespace
// mounts already made in it: they can then be neither unmounted nor
// removed ("not mounted", "device or resource busy").
func prepareNetnsDir() error {
	netnsDirOnce.Do(func() {
		if err := os.MkdirAll(netnsDir, 0o755); err != nil {
			netnsDirErr = fmt.Errorf("testenv: creating %s: %w", netnsDir, err)
			return
		}
		for try := 0; try < 2; try++ {
			err := unix.Mount("", netnsDir, "none", unix.MS_SHARED|unix.MS_REC, "")
			if err == nil {
				return
			}
			if err != unix.EINVAL || try > 0 {
				netnsDirErr = fmt.Errorf("testenv: making %s a shared mount: %w", netnsDir, err)
				return
			}
			// Not a mount point yet: bind it onto itself, then retry.
			if err := unix.Mount(netnsDir, netnsDir, "none", unix.MS_BIND|unix.MS_REC, ""); err != nil {
				netnsDirErr = fmt.Errorf("testenv: bind-mounting %s onto itself: %w", netnsDir, err)
				return
			}
		}
	})
	return netnsDirErr
}
