package kernelct

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// The settings and counters of the kernel's conntrack that are sysctls
// under /proc/sys/net/netfilter (nf_conntrack_count, nf_conntrack_max).

// readSysctl reads a number of connections from the sysctl name.
func (t *Tracker) readSysctl(ctx context.Context, name, what string) (uint32, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	path := filepath.Join(t.sysctlDir, name)
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("kernelct: %s: %w", what, err)
	}
	s := strings.TrimSpace(string(b))
	v, err := strconv.ParseUint(s, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("kernelct: %s holds %q, not a number of connections", path, s)
	}
	return uint32(v), nil
}

// maxPath is nf_conntrack_max's path.
func (t *Tracker) maxPath() string {
	return filepath.Join(t.sysctlDir, "nf_conntrack_max")
}

// SetMaxConns implements odp.Conntracker: it writes nf_conntrack_max,
// which only the initial network namespace may change (elsewhere the
// file is read-only and the error says so).
func (t *Tracker) SetMaxConns(ctx context.Context, n uint32) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if n > 1<<31-1 {
		// The sysctl is an int: the kernel refuses larger values.
		return fmt.Errorf("kernelct: %d connections: the kernel's maximum is an int (at most %d): %w", n, 1<<31-1, syscall.EINVAL)
	}
	err := os.WriteFile(t.maxPath(), []byte(strconv.FormatUint(uint64(n), 10)+"\n"), 0)
	if err != nil {
		if os.IsPermission(err) {
			return fmt.Errorf("kernelct: setting the maximum number of connections (only the initial network namespace may): %w", err)
		}
		return fmt.Errorf("kernelct: setting the maximum number of connections: %w", err)
	}
	return nil
}
