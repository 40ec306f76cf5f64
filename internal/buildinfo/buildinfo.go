// Package buildinfo tells what build of ovsdp is running: the module
// version, the VCS commit it was built from, and the Go toolchain.
//
// The values come from the Go linker's build information
// (runtime/debug.ReadBuildInfo), which `go build` fills in a git checkout
// (vcs.revision, vcs.modified) and `go install MODULE@VERSION` fills with
// the module's version. Version and Commit can also be set at link time
// (-ldflags "-X github.com/ovsdp/ovsdp/internal/buildinfo.version=..."),
// which the Makefile does; a value set that way wins.
package buildinfo

import (
	"runtime"
	"runtime/debug"
	"strings"
)

// Set with -ldflags -X by the Makefile; empty means "read the build info".
var (
	version string
	commit  string
)

// Info is what a binary knows about its own build.
type Info struct {
	// Version is the module version ("v0.3.0", or "(devel)" for a build
	// from a work tree without -ldflags).
	Version string
	// Commit is the VCS revision, with a "-dirty" suffix when the work tree
	// had uncommitted changes; empty when unknown.
	Commit string
	// GoVersion is the toolchain that built the binary.
	GoVersion string
}

// Get returns the running binary's build information.
func Get() Info {
	in := Info{Version: version, Commit: commit, GoVersion: runtime.Version()}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		if in.Version == "" {
			in.Version = "(unknown)"
		}
		return in
	}
	if in.Version == "" {
		in.Version = bi.Main.Version
	}
	if in.Version == "" {
		in.Version = "(devel)"
	}
	if in.Commit == "" {
		var rev string
		var dirty bool
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
		if rev != "" && dirty {
			rev += "-dirty"
		}
		in.Commit = rev
	}
	return in
}

// String formats the information on one line, for example
// "v0.3.0 (commit 1d04bf8, go1.26.8)".
func (in Info) String() string {
	var b strings.Builder
	b.WriteString(in.Version)
	b.WriteString(" (")
	if in.Commit != "" {
		c := in.Commit
		if i := strings.IndexByte(c, '-'); i > 12 || (i < 0 && len(c) > 12) {
			// Keep a short hash, as git does, and the -dirty mark.
			suffix := ""
			if i >= 0 {
				suffix = c[i:]
			}
			c = c[:12] + suffix
		}
		b.WriteString("commit ")
		b.WriteString(c)
		b.WriteString(", ")
	}
	b.WriteString(in.GoVersion)
	b.WriteString(")")
	return b.String()
}
