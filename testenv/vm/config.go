package vm

import (
	"errors"
	"fmt"
	"io"
	"math"
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

// MaxTimeout is the largest timeout ParseTimeout accepts: the largest
// time.Duration (about 292 years). Anything larger would wrap around to a
// negative duration.
const MaxTimeout = time.Duration(math.MaxInt64)

// maxTimeoutSeconds is MaxTimeout in whole seconds (9223372036).
const maxTimeoutSeconds = int64(MaxTimeout / time.Second)

// ParseTimeout accepts a Go duration ("90s", "20m") or a whole number of
// seconds ("90"). It refuses a timeout that is not positive and one larger
// than MaxTimeout (maxTimeoutSeconds seconds), with an error that says
// which and gives the limit.
func ParseTimeout(s string) (time.Duration, error) {
	if isSeconds(s) {
		// ParseInt clamps an out-of-range value to the int64 limit of
		// its sign, which the checks below then refuse.
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			return 0, fmt.Errorf("timeout %q: %w", s, err)
		}
		if n <= 0 {
			return 0, fmt.Errorf("timeout %q must be positive", s)
		}
		if n > maxTimeoutSeconds {
			return 0, fmt.Errorf("timeout %q seconds is too large: the maximum is %d seconds (%v)", s, maxTimeoutSeconds, MaxTimeout)
		}
		return time.Duration(n) * time.Second, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		if neg, ok := durationSyntax(s); ok {
			// Well-formed, so time.ParseDuration failed on the size.
			if neg {
				return 0, fmt.Errorf("timeout %q must be positive", s)
			}
			return 0, fmt.Errorf("timeout %q is too large: the maximum is %v (%d seconds)", s, MaxTimeout, maxTimeoutSeconds)
		}
		return 0, fmt.Errorf("timeout %q: want a duration like 20m or a whole number of seconds: %w", s, err)
	}
	if d <= 0 {
		return 0, fmt.Errorf("timeout %q must be positive", s)
	}
	return d, nil
}

// isSeconds reports whether s is an optionally signed run of decimal
// digits, the number-of-seconds form of a timeout.
func isSeconds(s string) bool {
	if s != "" && (s[0] == '+' || s[0] == '-') {
		s = s[1:]
	}
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// durationUnits are the units time.ParseDuration knows.
var durationUnits = map[string]bool{"ns": true, "us": true, "\u00b5s": true, "\u03bcs": true, "ms": true, "s": true, "m": true, "h": true}

// durationSyntax reports whether s has the syntax time.ParseDuration
// accepts, [-+]?([0-9]*(\.[0-9]*)?UNIT)+ with a digit in every number and
// a known unit, and whether it is negative. time.ParseDuration refuses
// such a string only when its value does not fit in a time.Duration.
func durationSyntax(s string) (neg, ok bool) {
	if s != "" && (s[0] == '+' || s[0] == '-') {
		neg = s[0] == '-'
		s = s[1:]
	}
	if s == "0" {
		return neg, true // the one number without a unit
	}
	if s == "" {
		return neg, false
	}
	for s != "" {
		digits := 0
		i := 0
		for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
			digits++
		}
		if i < len(s) && s[i] == '.' {
			for i++; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
				digits++
			}
		}
		if digits == 0 {
			return neg, false
		}
		j := i
		for ; j < len(s) && s[j] != '.' && (s[j] < '0' || s[j] > '9'); j++ {
		}
		if !durationUnits[s[i:j]] {
			return neg, false
		}
		s = s[j:]
	}
	return neg, true
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
