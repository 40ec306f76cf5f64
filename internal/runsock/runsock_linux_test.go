package runsock

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/ovsdp/ovsdp/testenv"
)

func TestLookupGroup(t *testing.T) {
	if a, err := LookupGroup(""); err != nil || a.HasGroup() {
		t.Errorf(`LookupGroup("") = %+v, %v; want RootOnly`, a, err)
	}
	g, err := user.LookupGroupId(fmt.Sprint(os.Getgid()))
	if err != nil {
		t.Fatal(err)
	}
	if a, err := LookupGroup(g.Name); err != nil || fmt.Sprint(a.GID) != g.Gid || a.Group != g.Name {
		t.Errorf("LookupGroup(%q) = %+v, %v", g.Name, a, err)
	}
	if a, err := LookupGroup("4242420"); err != nil || a.GID != 4242420 {
		t.Errorf(`LookupGroup("4242420") = %+v, %v; want a numeric gid`, a, err)
	}
	for _, bad := range []string{"no-such-group-x", "-1", "99999999999"} {
		if _, err := LookupGroup(bad); err == nil || !strings.Contains(err.Error(), "no such group") {
			t.Errorf("LookupGroup(%q): %v; want no such group", bad, err)
		}
	}
}

func TestDeniedMessage(t *testing.T) {
	for _, c := range []struct {
		uid   int
		group string
		want  string
	}{
		{0, "", "permission denied: netdev@x is owned by root; run as root"},
		{0, "ops", "permission denied: netdev@x is owned by root; run as root or join group ops"},
	} {
		if got := deniedMessage("netdev@x", c.uid, c.group); got != c.want {
			t.Errorf("deniedMessage(%d, %q) = %q, want %q", c.uid, c.group, got, c.want)
		}
	}
	err := DeniedError("x")
	if !errors.Is(err, os.ErrPermission) || !errors.Is(err, syscall.EACCES) {
		t.Errorf("DeniedError does not match os.ErrPermission and EACCES")
	}
}

func TestProcCreds(t *testing.T) {
	uid, groups, err := procCreds(os.Getpid())
	if err != nil || uid != os.Geteuid() {
		t.Fatalf("procCreds(self) = %d, %v, %v; want uid %d", uid, groups, err, os.Geteuid())
	}
	want, _ := os.Getgroups()
	if len(groups) != len(want) {
		t.Errorf("groups %v, want %v", groups, want)
	}
	if _, _, err := procCreds(1 << 30); err == nil {
		t.Errorf("procCreds of a PID that does not exist: no error")
	}
}

// PrepareDir fixes an existing directory's modes, shares it with a group,
// refuses a second group while the first is in use, and refuses a
// symbolic link or a directory of another user.
func TestPrepareDir(t *testing.T) {
	testenv.RequireRoot(t)
	top := t.TempDir()
	dir := filepath.Join(top, "run")
	if err := os.Mkdir(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o777)
	mode := func() (os.FileMode, int) {
		var st syscall.Stat_t
		if err := syscall.Stat(dir, &st); err != nil {
			t.Fatal(err)
		}
		return os.FileMode(st.Mode & 0o7777), int(st.Gid)
	}
	if err := PrepareDir(dir, RootOnly, ""); err != nil {
		t.Fatal(err)
	}
	if m, _ := mode(); m != 0o700 {
		t.Errorf("a 0777 directory became %v, want 0700", m)
	}
	g1 := Access{GID: 4242421, Group: "g1"}
	if err := PrepareDir(dir, g1, ""); err != nil {
		t.Fatal(err)
	}
	if m, g := mode(); m != 0o750 || g != g1.GID {
		t.Errorf("with a group: %v group %d, want 0750 group %d", m, g, g1.GID)
	}
	l, err := Listen(filepath.Join(dir, "a.sock"), g1)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	g2 := Access{GID: 4242422, Group: "g2"}
	if err := PrepareDir(dir, g2, ""); err == nil || !strings.Contains(err.Error(), "share one group") {
		t.Errorf("a second group while the first is in use: %v", err)
	}
	// Without a group, the directory keeps the group in use.
	if err := PrepareDir(dir, RootOnly, ""); err != nil {
		t.Fatal(err)
	}
	if m, g := mode(); m != 0o750 || g != g1.GID {
		t.Errorf("without a group while g1 is in use: %v group %d, want 0750 group %d", m, g, g1.GID)
	}
	l.Close()
	if err := PrepareDir(dir, g2, ""); err != nil {
		t.Errorf("the first group no longer in use: %v", err)
	}
	if _, err := Listen(filepath.Join(dir, "b.sock"), RootOnly); err != nil {
		t.Fatal(err)
	}
	if _, err := Listen(filepath.Join(dir, "b.sock"), RootOnly); !errors.Is(err, os.ErrExist) {
		t.Errorf("a second listener on a served socket: %v; want ErrExist", err)
	}

	link := filepath.Join(top, "link")
	os.Symlink(dir, link)
	if err := PrepareDir(link, RootOnly, ""); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("a symbolic link: %v", err)
	}
	other := filepath.Join(top, "other")
	os.Mkdir(other, 0o700)
	os.Chown(other, 65534, 65534)
	if err := PrepareDir(other, RootOnly, ""); err == nil || !strings.Contains(err.Error(), "is owned by nobody") {
		t.Errorf("a directory of another user: %v", err)
	}
}

// Check lets root in (the test runs as root).
func TestCheckSelf(t *testing.T) {
	dir := t.TempDir()
	l, err := Listen(filepath.Join(dir, "s.sock"), RootOnly)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		c, err := net.Dial("unix", filepath.Join(dir, "s.sock"))
		if err == nil {
			defer c.Close()
			var b [1]byte
			c.Read(b[:])
		}
	}()
	c, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := RootOnly.Check(c, "netdev@x"); err != nil {
		t.Errorf("the server's own user refused: %v", err)
	}
}
