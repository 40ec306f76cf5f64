package vm

import (
	"context"
	"os/exec"
	"strings"
	"time"
)

// testFlag returns the value of a Go test binary flag (-test.NAME=V or
// -test.NAME V, one or two dashes) in args, and whether it was there.
func testFlag(args []string, name string) (string, bool) {
	val, found := "", false
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			break
		}
		a = strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-")
		if v, ok := strings.CutPrefix(a, "test."+name+"="); ok {
			val, found = v, true
		} else if a == "test."+name && i+1 < len(args) {
			val, found = args[i+1], true
			i++
		}
	}
	return val, found
}

// SelectsNothing reports whether argv is a Go test binary invocation whose
// -test.run and -test.bench patterns match no test, benchmark, fuzz target
// or example in the binary, asked with -test.list on the host. Such a run
// does nothing that needs the kernel, so the runner can run it directly
// instead of booting a VM (go test -exec with -run '^TestIntegration' over
// ./... would otherwise boot one for every package). Any doubt (not a test
// binary, -test.list failing) answers false.
func SelectsNothing(argv, env []string, dir string) bool {
	if len(argv) == 0 || !strings.HasSuffix(argv[0], ".test") {
		return false
	}
	args := argv[1:]
	run, ok := testFlag(args, "run")
	if !ok || run == "" {
		return false // every test runs
	}
	patterns := []string{run}
	if bench, ok := testFlag(args, "bench"); ok && bench != "" {
		patterns = append(patterns, bench)
	}
	if fz, ok := testFlag(args, "fuzz"); ok && fz != "" {
		return false
	}
	for _, p := range patterns {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		cmd := exec.CommandContext(ctx, argv[0], "-test.list="+topLevel(p))
		cmd.Dir, cmd.Env = dir, env
		out, err := cmd.Output()
		cancel()
		if err != nil || strings.TrimSpace(string(out)) != "" {
			return false
		}
	}
	return true
}

// topLevel is the part of a -test.run pattern that top-level names are
// matched against (what -test.list matches): the pattern before its first
// slash outside brackets and parentheses, as the testing package splits
// it. Without this, a pattern naming a subtest
// ("^TestIntegrationX$/^case$") lists nothing and the run went to the
// host.
func topLevel(p string) string {
	depth := 0
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '\\':
			i++
		case '[', '(':
			depth++
		case ']', ')':
			if depth > 0 {
				depth--
			}
		case '/':
			if depth == 0 {
				return p[:i]
			}
		}
	}
	return p
}
