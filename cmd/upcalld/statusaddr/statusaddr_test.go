package statusaddr

import (
	"path/filepath"
	"testing"
)

func TestPath(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("OVSDP_RUNDIR", dir)
	if got, want := Path("system", "br0"), filepath.Join(dir, "upcalld-system-br0.status"); got != want {
		t.Errorf("Path = %q, want %q", got, want)
	}
}
