//go:build integration && linux && !genl_stub

package genl_test

import (
	"io"
	"os"
	"strings"
	"testing"

	"github.com/ovsdp/ovsdp/testenv"
)

// TestIntegrationExample runs the package example (Example, which has no
// Output line because it needs the module) against the kernel and checks
// what it printed.
func TestIntegrationExample(t *testing.T) {
	testenv.RequireRoot(t)
	testenv.RequireKernelModule(t, "openvswitch")
	out := captureStdout(t, Example)
	t.Logf("Example printed:\n%s", out)
	for _, want := range []string{
		"port 1: exampledp0 (internal)\n",
		`miss on port 1, userdata "": `,
		"eth_type(0x0806),arp(",
		`action on port 1, userdata "ipv4": `,
		"eth_type(0x0800),ipv4(src=10.0.0.1,dst=10.0.0.2,proto=17,tos=0,ttl=64,frag=no),udp(src=1,dst=2)\n",
		"flow in_port(1),eth(),eth_type(0x0800),ipv4(frag=no): 1 packet\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("Example's output lacks %q", want)
		}
	}
	if strings.Contains(out, "error:") {
		t.Errorf("Example failed")
	}
}

// captureStdout returns what fn writes to os.Stdout.
func captureStdout(t *testing.T, fn func()) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	old := os.Stdout
	os.Stdout = w
	done := make(chan string)
	go func() {
		b, _ := io.ReadAll(r)
		done <- string(b)
	}()
	func() {
		defer func() { os.Stdout = old }()
		fn()
	}()
	w.Close()
	return <-done
}
