package buildinfo

import (
	"runtime"
	"strings"
	"testing"
)

func TestGet(t *testing.T) {
	in := Get()
	if in.GoVersion != runtime.Version() {
		t.Errorf("GoVersion = %q, want %q", in.GoVersion, runtime.Version())
	}
	if in.Version == "" {
		t.Error("Version is empty")
	}
}

func TestLinkerValuesWin(t *testing.T) {
	oldV, oldC := version, commit
	t.Cleanup(func() { version, commit = oldV, oldC })
	version, commit = "v1.2.3", "0123456789abcdef0123-dirty"
	in := Get()
	if in.Version != "v1.2.3" || in.Commit != "0123456789abcdef0123-dirty" {
		t.Fatalf("Get() = %+v, want the linker's values", in)
	}
	s := in.String()
	if !strings.HasPrefix(s, "v1.2.3 (commit 0123456789ab-dirty, go") {
		t.Errorf("String() = %q", s)
	}
}
