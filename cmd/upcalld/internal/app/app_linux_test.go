package app

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ovsdp/ovsdp/cmd/upcalld/internal/daemon"
	"github.com/ovsdp/ovsdp/cmd/upcalld/internal/dpopen"
	"github.com/ovsdp/ovsdp/testenv"
	"github.com/ovsdp/ovsdp/userdp/ctl"
)

func TestBadFlags(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.rules")
	os.WriteFile(bad, []byte("priority=1,actions=drop\nin_port=-1,actions=drop\n"), 0o644)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{}, "--datapath is required"},
		{[]string{"--datapath", "bogus@x"}, `unknown type "bogus"`},
		{[]string{"--datapath", "netdev@x", "--rules", bad}, "bad.rules:2:"},
		{[]string{"--datapath", "netdev@x", "--rules", filepath.Join(dir, "none")}, "no such file"},
		{[]string{"--datapath", "netdev@x", "--flow-limit", "0"}, "--flow-limit 0"},
		{[]string{"--datapath", "netdev@x", "--idle", "-1s"}, "--idle"},
		{[]string{"--datapath", "netdev@x", "--log-level", "loud"}, "--log-level"},
		{[]string{"--datapath", "netdev@x", "extra"}, `unexpected argument "extra"`},
		{[]string{"--datapath", "netdev@x", "--group", "no-such-group-x"}, `--group: group "no-such-group-x": no such group`},
		{[]string{"--datapath", "netdev@x", "--port", "veth0,vlan=4096"}, "--port: port veth0: vlan=4096: want a VLAN ID 0-4095"},
		{[]string{"--datapath", "netdev@x", "--port", "veth0,vlan=10,trunks=20"}, "--port: port veth0: trunks= on an access port"},
		{[]string{"--datapath", "netdev@x", "--port", "vlan=10"}, `--port: port option "vlan=10" comes before any interface name`},
		{[]string{"--datapath", "netdev@x", "--mirror", "veth0"}, `--mirror: mirror "veth0": want SELECT:OUTPUT_PORT`},
		{[]string{"--datapath", "netdev@x", "--mirror", "in=a,vlan=5000:m"}, `--mirror: mirror "in=a,vlan=5000:m": vlan="5000"`},
		{[]string{"--datapath", "netdev@x", "--packet-in-rate", "0"}, "--packet-in-rate 0: must be positive"},
		{[]string{"--datapath", "netdev@x", "--packet-in-burst", "0"}, "--packet-in-burst 0: must be positive"},
	} {
		var out, errb bytes.Buffer
		if code := Main(append([]string{"upcalld"}, c.args...), &out, &errb); code == 0 || !strings.Contains(errb.String(), c.want) {
			t.Errorf("%v: exit %d, stderr %q; want failure mentioning %q", c.args, code, errb.String(), c.want)
		}
	}
}

// The binary on a netdev datapath: status answers, SIGHUP with a bad file
// keeps the rules, and a delete through the control socket (dpctl del-dp)
// makes it exit and remove its sockets.
func TestBinaryLifecycle(t *testing.T) {
	testenv.RequireRoot(t)
	dir := t.TempDir()
	bin := filepath.Join(dir, "upcalld")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/ovsdp/ovsdp/cmd/upcalld").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	rundir := filepath.Join(dir, "run")
	t.Setenv("OVSDP_RUNDIR", rundir)
	rules := filepath.Join(dir, "r.rules")
	os.WriteFile(rules, []byte("priority=0,actions=normal\n"), 0o644)
	// A name of this process and test (NewName's pid and sequence
	// number, without its common prefix), at most 15 bytes: two test
	// runs at once do not take the same tap device.
	id := strings.ReplaceAll(strings.TrimPrefix(testenv.NewName(), testenv.NamePrefix), "-", "")
	name := "upbin" + id[max(0, len(id)-10):]
	cmd := exec.Command(bin, "--datapath", "netdev@"+name, "--rules", rules, "--handlers", "1", "--metrics", "127.0.0.1:0")
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		cmd.Process.Kill()
		if t.Failed() {
			t.Logf("upcalld output:\n%s", logs.String())
		}
	}()
	spec := dpopen.Spec{Type: "netdev", Name: name}
	var st daemon.Status
	deadline := time.Now().Add(10 * time.Second)
	for {
		var err error
		st, err = daemon.QueryStatus(context.Background(), spec.String(), dpopen.StatusSocket(spec))
		if err == nil && st.Handlers == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no status within 10s: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	var out bytes.Buffer
	if code := Main([]string{"upcalld", "status", "--datapath", "netdev@" + name}, &out, &out); code != 0 || !strings.Contains(out.String(), "handlers: 1") {
		t.Errorf("upcalld status: exit %d:\n%s", code, out.String())
	}
	os.WriteFile(rules, []byte("priority=0,actions=bogus\n"), 0o644)
	cmd.Process.Signal(syscall.SIGHUP)
	time.Sleep(300 * time.Millisecond)
	if !strings.Contains(logs.String(), "keeping the previous rules") {
		t.Errorf("SIGHUP with a bad file: no error logged")
	}
	st2, err := daemon.QueryStatus(context.Background(), spec.String(), dpopen.StatusSocket(spec))
	if err != nil || st2.PolicyGen != st.PolicyGen {
		t.Errorf("after a bad reload: generation %d, want %d (%v)", st2.PolicyGen, st.PolicyGen, err)
	}
	c, err := ctl.Dial(name)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(context.Background()); err != nil {
		t.Fatal(err)
	}
	c.Close()
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("exit after delete: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("upcalld did not exit within 10s of the delete")
	}
	for _, p := range []string{ctl.SocketPath(name), dpopen.StatusSocket(spec)} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s left behind (%v)", p, err)
		}
	}
}
