package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/ovsdp/ovsdp/internal/buildinfo"
)

// TestVersion checks -V and --version print the build's version line
// and nothing else, and that "dpctl -V show" is not taken for a version
// request.
func TestVersion(t *testing.T) {
	want := "dpctl " + buildinfo.Get().String() + "\n"
	for _, flag := range []string{"--version", "-V"} {
		var out, errb bytes.Buffer
		app := newApp(strings.NewReader(""), &out, &errb)
		if err := app.Run(permuteFlags([]string{"dpctl", flag})); err != nil {
			t.Fatalf("dpctl %s: %v (stderr %q)", flag, err, errb.String())
		}
		if out.String() != want || errb.Len() != 0 {
			t.Errorf("dpctl %s: stdout %q, stderr %q; want stdout %q", flag, out.String(), errb.String(), want)
		}
	}
	var out, errb bytes.Buffer
	app := newApp(strings.NewReader(""), &out, &errb)
	if err := app.Run(permuteFlags([]string{"dpctl", "-V", "no-such-command"})); err == nil || !strings.Contains(err.Error(), "unknown command") {
		t.Errorf("dpctl -V no-such-command: %v, want the unknown-command error", err)
	}
}
