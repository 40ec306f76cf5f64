package vm

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Environment variables read by ConfigFromEnv.
const (
	// EnvCache names the kernel cache directory (default DefaultCache).
	EnvCache = "OVSDP_VM_CACHE"
	// EnvTimeout is the VM timeout, a Go duration ("20m") or seconds.
	EnvTimeout = "OVSDP_VM_TIMEOUT"
	// EnvMode is "auto" (default: VM only when the host lacks the
	// openvswitch module), "always" or "never".
	EnvMode = "OVSDP_VM"
	// EnvShare lists extra host directories (colon separated) to share
	// read-write with the guest at the same paths.
	EnvShare = "OVSDP_VM_SHARE"
	// EnvDebug, when non-empty, prints timing and the guest console.
	EnvDebug = "OVSDP_VM_DEBUG"
	// EnvGuest is set to "1" in the environment of programs run in the VM.
	EnvGuest = "OVSDP_VM_GUEST"
)

// DefaultCache is where scripts/vm/fetch-kernel.sh puts the kernel.
const DefaultCache = "/var/cache/ovsdp-vm"

// DefaultTimeout bounds one VM run.
const DefaultTimeout = 20 * time.Minute

// FetchScript is the script that fills the cache, named in error messages.
const FetchScript = "scripts/vm/fetch-kernel.sh"

// Config configures Run.
type Config struct {
	// Cache is the kernel cache directory written by FetchScript.
	Cache string
	// Timeout kills the VM when it runs longer.
	Timeout time.Duration
	// Mode is "auto", "always" or "never" (see EnvMode).
	Mode string
	// CPUs and MemoryMiB size the guest.
	CPUs      int
	MemoryMiB int
	// QEMU is the emulator binary; Busybox a statically linked busybox.
	QEMU    string
	Busybox string
	// Shares are extra host directories shared read-write.
	Shares []string
	// Stdout and Stderr receive the program's output; Log receives the
	// runner's diagnostics (default Stderr).
	Stdout, Stderr, Log io.Writer
	// Debug prints timing and the whole guest console after the run.
	Debug bool
}

// ConfigFromEnv returns the default configuration with the OVSDP_VM_*
// environment variables applied.
func ConfigFromEnv() (Config, error) {
	c := Config{
		Cache:     DefaultCache,
		Timeout:   DefaultTimeout,
		Mode:      "auto",
		CPUs:      2,
		MemoryMiB: 2048,
		QEMU:      "qemu-system-x86_64",
		Busybox:   "/bin/busybox",
		Stdout:    os.Stdout,
		Stderr:    os.Stderr,
		Log:       os.Stderr,
	}
	if v := os.Getenv(EnvCache); v != "" {
		c.Cache = v
	}
	if v := os.Getenv(EnvTimeout); v != "" {
		d, err := ParseTimeout(v)
		if err != nil {
			return c, fmt.Errorf("%s: %w", EnvTimeout, err)
		}
		c.Timeout = d
	}
	if v := os.Getenv(EnvMode); v != "" {
		switch v {
		case "auto", "always", "never":
			c.Mode = v
		default:
			return c, fmt.Errorf("%s=%q: want auto, always or never", EnvMode, v)
		}
	}
	if v := os.Getenv(EnvShare); v != "" {
		for _, p := range strings.Split(v, ":") {
			if p != "" {
				c.Shares = append(c.Shares, p)
			}
		}
	}
	c.Debug = os.Getenv(EnvDebug) != ""
	return c, nil
}

// ParseTimeout accepts a Go duration ("90s", "20m") or a number of seconds.
func ParseTimeout(s string) (time.Duration, error) {
	if n, err := strconv.Atoi(s); err == nil {
		if n <= 0 {
			return 0, fmt.Errorf("timeout %q must be positive", s)
		}
		return time.Duration(n) * time.Second, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("timeout %q: want a duration like 20m or a number of seconds", s)
	}
	if d <= 0 {
		return 0, fmt.Errorf("timeout %q must be positive", s)
	}
	return d, nil
}

// Kernel is a kernel prepared by FetchScript.
type Kernel struct {
	Dir        string // the package's cache directory
	Package    string // e.g. linux-image-6.1.0-57-amd64
	Release    string // e.g. 6.1.0-57-amd64
	Vmlinuz    string
	ModulesDir string // .../modules/<release>
}

// FindKernel locates the kernel in the cache directory, with an error that
// names FetchScript when it is missing or incomplete.
func FindKernel(cache string) (*Kernel, error) {
	missing := func(what string, err error) error {
		return fmt.Errorf("VM kernel cache %s: %s (%v); run %s as root to fetch Debian's kernel, QEMU and busybox-static (set %s to use another cache directory)",
			cache, what, err, FetchScript, EnvCache)
	}
	cur, err := os.ReadFile(filepath.Join(cache, "current"))
	if err != nil {
		return nil, missing("no kernel fetched", err)
	}
	pkg := strings.TrimSpace(string(cur))
	if pkg == "" || strings.ContainsAny(pkg, "/\x00") {
		return nil, missing("bad 'current' file", fmt.Errorf("content %q", pkg))
	}
	k := &Kernel{Dir: filepath.Join(cache, pkg), Package: pkg, Vmlinuz: filepath.Join(cache, pkg, "vmlinuz")}
	if _, err := os.Stat(filepath.Join(k.Dir, ".complete")); err != nil {
		return nil, missing("kernel "+pkg+" incomplete", err)
	}
	rel, err := os.ReadFile(filepath.Join(k.Dir, "release"))
	if err != nil {
		return nil, missing("kernel "+pkg+" has no release file", err)
	}
	k.Release = strings.TrimSpace(string(rel))
	k.ModulesDir = filepath.Join(k.Dir, "modules", k.Release)
	for _, p := range []string{k.Vmlinuz, k.ModulesDir} {
		if _, err := os.Stat(p); err != nil {
			return nil, missing("kernel "+pkg+" incomplete", err)
		}
	}
	return k, nil
}
