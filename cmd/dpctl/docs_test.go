package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGeneratedDocs checks that docs/ holds the man page and completion
// scripts of the current command definitions (regenerate them with the
// commands in cmd/dpctl/README.md, or go test -update).
func TestGeneratedDocs(t *testing.T) {
	for _, g := range []struct {
		file string
		args []string
	}{
		{"dpctl.8", []string{"gen-man"}},
		{"dpctl.bash", []string{"completion", "bash"}},
		{"_dpctl", []string{"completion", "zsh"}},
	} {
		var out, errb bytes.Buffer
		app := newApp(strings.NewReader(""), &out, &errb)
		if err := app.Run(append([]string{"dpctl"}, g.args...)); err != nil {
			t.Fatalf("dpctl %v: %v", g.args, err)
		}
		path := filepath.Join("..", "..", "docs", g.file)
		if *update {
			if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(want, out.Bytes()) {
			t.Errorf("%s is out of date: run go run ./cmd/dpctl %s > docs/%s", path, strings.Join(g.args, " "), g.file)
		}
		if !strings.Contains(out.String(), "ct-set-limits") || !strings.Contains(out.String(), "dump-flows") {
			t.Errorf("%s lacks commands", g.file)
		}
	}
}
