// Package scripts holds the tests of the shell scripts in this directory.
package scripts

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// fakeGo stands in for the go command in TestFuzzScriptResults: it logs its
// arguments and prints what go test -fuzz prints in each case the script
// must tell apart, chosen by the target's name.
const fakeGo = `#!/usr/bin/env bash
set -u
echo "$*" >>"$FAKE_ARGS"
name= pkg=
while [ $# -gt 0 ]; do
	case $1 in
	-fuzz) name=${2#^}; name=${name%$}; shift ;;
	-run|-fuzztime|-parallel) shift ;;
	*) pkg=$1 ;;
	esac
	shift
done
n=$(( $(cat "$FAKE_STATE/$name" 2>/dev/null || echo 0) + 1 ))
echo $n >"$FAKE_STATE/$name"
stats() {
	echo "fuzz: elapsed: 0s, gathering baseline coverage: 0/2 completed"
	echo "fuzz: elapsed: 3s, execs: 1000 (333/sec), new interesting: 3 (total: 5)"
	echo "fuzz: elapsed: 5s, execs: $1 (117/sec), new interesting: $2 (total: 6)"
}
pass() { stats "$@"; echo PASS; printf 'ok  \tm/%s\t5.01s\n' "${pkg#./}"; exit 0; }
engine() {
	stats 2000 4
	echo "--- FAIL: $name (5.01s)"
	echo "    context deadline exceeded"
	echo FAIL; echo "exit status 1"; printf 'FAIL\tm/p\t5.02s\n'; exit 1
}
written() {
	mkdir -p "$pkg/testdata/fuzz/$name" && echo 'go test fuzz v1' >"$pkg/testdata/fuzz/$name/$1"
	echo "    Failing input written to testdata/fuzz/$name/$1"
	echo "    To re-run:"; echo "    go test -run=$name/$1"; echo FAIL; exit 1
}
case $name in
FuzzOK) pass 1234 4 ;;
FuzzRace) [ "$n" = 1 ] && engine; pass 5678 7 ;;
FuzzRaceTwice) engine ;;
FuzzCrash)
	stats 999 1
	echo "--- FAIL: $name (1.20s)"; echo "    --- FAIL: $name (0.00s)"
	echo "        a_test.go:9: boom"; echo "    "
	written 0123abcd ;;
FuzzOwnDeadline)
	# The target itself reports a deadline, on a seed: not the engine.
	echo "--- FAIL: $name (0.00s)"; echo "    a_test.go:12: context deadline exceeded"
	echo FAIL; exit 1 ;;
FuzzDeadlineWritten)
	# The engine's message, but a failing input was written: a finding.
	stats 10 0
	echo "--- FAIL: $name (5.01s)"; echo "    context deadline exceeded"
	written beef ;;
FuzzSeed)
	echo "--- FAIL: $name (0.00s)"; echo "    --- FAIL: $name/seed#0 (0.00s)"
	echo "        a_test.go:9: boom"; echo FAIL; exit 1 ;;
FuzzBuild)
	echo "# m/p"; echo "p/a_test.go:3:1: syntax error"; printf 'FAIL\tm/p [build failed]\n'; exit 1 ;;
FuzzNotBuilt)
	echo "testing: warning: no fuzz tests to fuzz"; echo PASS; exit 0 ;;
FuzzHang)
	# Go's output when an input hangs: progress stops, then PASS.
	echo "fuzz: elapsed: 3s, execs: 70 (23/sec), new interesting: 1 (total: 3)"
	for t in 6s 9s 30s 57s 1m0s 1m2s; do echo "fuzz: elapsed: $t, execs: 80 (3/sec), new interesting: 2 (total: 4)"; done
	echo PASS; exit 0 ;;
FuzzSlowMinimize)
	# Minimizing a new input: 27 s without new executions, under FUZZ_STALL.
	echo "fuzz: elapsed: 3s, execs: 70 (23/sec), new interesting: 1 (total: 3)"
	for t in 6s 9s 30s; do echo "fuzz: elapsed: $t, execs: 80 (3/sec), new interesting: 1 (total: 3)"; done
	pass 9000 2 ;;
esac
echo "fake go: unexpected target $name" >&2
exit 3
`

// fuzzTree makes a copy of the module's layout that scripts/fuzz.sh can
// run in: the script itself and a package p whose test file declares the
// given fuzz targets with body.
func fuzzTree(t *testing.T, header, body string, targets ...string) string {
	t.Helper()
	root := t.TempDir()
	script, err := os.ReadFile("fuzz.sh")
	if err != nil {
		t.Fatal(err)
	}
	src := header
	for _, name := range targets {
		src += strings.ReplaceAll(body, "NAME", name)
	}
	for path, content := range map[string]string{"scripts/fuzz.sh": string(script), "p/a_test.go": src} {
		path = filepath.Join(root, path)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// runFuzzScript runs scripts/fuzz.sh in root with args and extra
// environment, and returns its output and exit status.
func runFuzzScript(t *testing.T, root string, env []string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command("bash", append([]string{filepath.Join(root, "scripts/fuzz.sh")}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err == nil {
		return string(out), 0
	}
	ee, ok := err.(*exec.ExitError)
	if !ok {
		t.Fatalf("running fuzz.sh: %v", err)
	}
	return string(out), ee.ExitCode()
}

// summaryRows returns the summary table's rows by target: the fields
// PACKAGE TARGET RESULT EXECS NEW TIME.
func summaryRows(t *testing.T, out string) map[string][]string {
	t.Helper()
	_, table, ok := strings.Cut(out, "\nPACKAGE ")
	if !ok {
		t.Fatalf("no summary table in:\n%s", out)
	}
	rows := map[string][]string{}
	for _, line := range strings.Split(table, "\n")[1:] {
		f := strings.Fields(line)
		if len(f) != 6 || !strings.HasPrefix(f[1], "Fuzz") {
			break
		}
		rows[f[1]] = f
	}
	return rows
}

// TestFuzzScriptResults: every target runs even when some fail; each gets
// the right result (only the engine's bare deadline, with no failing input
// written, is retried, once; a run whose executions stop for FUZZ_STALL
// seconds fails); the summary has the last execs and new
// interesting figures; FUZZ_PARALLEL reaches go test; the exit status is 1.
func TestFuzzScriptResults(t *testing.T) {
	targets := []string{"FuzzBuild", "FuzzCrash", "FuzzDeadlineWritten", "FuzzHang", "FuzzNotBuilt", "FuzzOK", "FuzzOwnDeadline", "FuzzRace", "FuzzRaceTwice", "FuzzSeed", "FuzzSlowMinimize"}
	root := fuzzTree(t, "package p\n", "\nfunc NAME(f *testing.F) {}\n", targets...)
	bin := filepath.Join(root, "fakego")
	if err := os.WriteFile(bin, []byte(fakeGo), 0o755); err != nil {
		t.Fatal(err)
	}
	state, args, logs := t.TempDir(), filepath.Join(root, "args"), filepath.Join(root, "logs")
	env := []string{"GO=" + bin, "FAKE_STATE=" + state, "FAKE_ARGS=" + args, "FUZZ_LOGDIR=" + logs, "FUZZ_PARALLEL=1", "FUZZ_TARGETS=", "FUZZ_MINIMIZETIME=", "FUZZ_STALL="}
	out, code := runFuzzScript(t, root, env, "5s")
	if code != 1 {
		t.Errorf("exit status %d, want 1", code)
	}
	want := map[string][]string{ // result, execs, new
		"FuzzOK":              {"ok", "1234", "4"},
		"FuzzRace":            {"engine-timeout-retried", "5678", "7"},
		"FuzzRaceTwice":       {"FAIL", "2000", "4"},
		"FuzzCrash":           {"FAIL", "999", "1"},
		"FuzzOwnDeadline":     {"FAIL", "-", "-"},
		"FuzzDeadlineWritten": {"FAIL", "10", "0"},
		"FuzzSeed":            {"FAIL", "-", "-"},
		"FuzzBuild":           {"FAIL", "-", "-"},
		"FuzzNotBuilt":        {"FAIL", "-", "-"},
		"FuzzHang":            {"FAIL", "80", "2"},
		"FuzzSlowMinimize":    {"ok", "9000", "2"},
	}
	rows := summaryRows(t, out)
	for name, w := range want {
		r := rows[name]
		if r == nil || r[0] != "./p" || r[2] != w[0] || r[3] != w[1] || r[4] != w[2] || !regexp.MustCompile(`^[0-9]+s$`).MatchString(r[5]) {
			t.Errorf("%s: row %q, want ./p %s %s %s and a time", name, r, w[0], w[1], w[2])
		}
	}
	if len(rows) != len(want) {
		t.Errorf("%d rows, want %d", len(rows), len(want))
	}
	for _, s := range []string{
		"11 targets: 2 ok, 1 engine-timeout-retried, 8 FAIL",
		"./p FuzzHang: stalled: no new executions for 56s (from 6s to 62s of the run)",
		"./p FuzzCrash: failing input ./p/testdata/fuzz/FuzzCrash/0123abcd, see " + logs + "/p.FuzzCrash.log",
		"./p FuzzDeadlineWritten: failing input ./p/testdata/fuzz/FuzzDeadlineWritten/beef",
		"./p FuzzRaceTwice: engine deadline, then the rerun failed too: see " + logs + "/p.FuzzRaceTwice.retry.log",
		"./p FuzzNotBuilt: target not built",
	} {
		if !strings.Contains(out, s) {
			t.Errorf("output lacks %q:\n%s", s, out)
		}
	}
	// Each target ran, with -parallel 1; only the two engine deadlines twice.
	b, err := os.ReadFile(args)
	if err != nil {
		t.Fatal(err)
	}
	runs := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		m := regexp.MustCompile(`^test -run \^\$ -fuzz \^(Fuzz\w+)\$ -fuzztime 5s -fuzzminimizetime 10s -parallel 1 \./p$`).FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("go invoked as %q", line)
		}
		runs[m[1]]++
	}
	for _, name := range targets {
		if w := map[string]int{"FuzzRace": 2, "FuzzRaceTwice": 2}[name]; runs[name] != max(w, 1) {
			t.Errorf("%s ran %d times", name, runs[name])
		}
	}
	// Per-target logs and the summary are kept.
	for _, f := range []string{"p.FuzzOK.log", "p.FuzzRace.log", "p.FuzzRace.retry.log", "summary.txt"} {
		if _, err := os.Stat(filepath.Join(logs, f)); err != nil {
			t.Errorf("log: %v", err)
		}
	}

	// A selection that passes exits 0, without -parallel by default.
	os.Remove(args)
	env = append(env, "FUZZ_TARGETS=FuzzOK", "FUZZ_PARALLEL=", "FUZZ_MINIMIZETIME=3s")
	out, code = runFuzzScript(t, root, env)
	if code != 0 || !strings.Contains(out, "1 targets: 1 ok, 0 engine-timeout-retried, 0 FAIL") {
		t.Errorf("FuzzOK alone: exit %d:\n%s", code, out)
	}
	if b, _ := os.ReadFile(args); string(b) != "test -run ^$ -fuzz ^FuzzOK$ -fuzztime 10s -fuzzminimizetime 3s ./p\n" {
		t.Errorf("FuzzOK alone: go invoked as %q", b)
	}
	// Usage errors.
	for _, tc := range []struct {
		env  []string
		args []string
	}{{[]string{"FUZZ_PARALLEL=two"}, nil}, {[]string{"FUZZ_STALL=0"}, nil}, {nil, []string{"1s", "2s"}}, {nil, []string{"-h"}}} {
		if out, code := runFuzzScript(t, root, append(env, tc.env...), tc.args...); code != 2 {
			t.Errorf("%v %v: exit %d, want 2:\n%s", tc.env, tc.args, code, out)
		}
	}
	if out, code := runFuzzScript(t, root, append(env, "FUZZ_TARGETS=nothing"), "1s"); code != 1 || !strings.Contains(out, "no fuzz targets found") {
		t.Errorf("no match: exit %d:\n%s", code, out)
	}
}

// TestFuzzScriptRealGo runs the script with the real go command on three
// small targets: one that passes, one whose failing input the fuzzer finds
// (and writes to testdata/fuzz), one whose seed fails. It checks that the
// script reads go's real output: the results, and executions from the
// engine's progress lines.
func TestFuzzScriptRealGo(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is not on PATH: %v", err)
	}
	header := "package p\n\nimport \"testing\"\n"
	root := fuzzTree(t, header, `
func NAME(f *testing.F) {
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		if "NAME" == "FuzzFinds" && len(b) > 0 || "NAME" == "FuzzSeedFails" {
			t.Fatalf("input %q", b)
		}
	})
}
`, "FuzzPasses", "FuzzFinds", "FuzzSeedFails")
	if err := os.WriteFile(filepath.Join(root, "go.mod"), []byte("module example.com/m\n\ngo 1.26\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	logs := filepath.Join(root, "logs")
	out, code := runFuzzScript(t, root, []string{"GO=" + gobin, "FUZZ_LOGDIR=" + logs, "FUZZ_PARALLEL=1", "FUZZ_TARGETS=", "FUZZ_MINIMIZETIME=", "FUZZ_STALL="}, "2s")
	if code != 1 {
		t.Errorf("exit status %d, want 1", code)
	}
	rows := summaryRows(t, out)
	for name, result := range map[string]string{"FuzzPasses": "ok", "FuzzFinds": "FAIL", "FuzzSeedFails": "FAIL"} {
		r := rows[name]
		if r != nil && name == "FuzzPasses" && r[2] == "engine-timeout-retried" {
			// The real engine hit its own end-of-run deadline race
			// (go.dev/issue/75804, about 1 run in 50 at a short
			// -fuzztime), the script told it apart and the rerun
			// passed: that is the script's other passing result
			// (TestFuzzScriptResults pins each case exactly).
			continue
		}
		if r == nil || r[2] != result {
			t.Errorf("%s: row %q, want %s\n%s", name, r, result, out)
		}
	}
	if r := rows["FuzzPasses"]; r != nil && (r[3] == "-" || r[3] == "0") {
		t.Errorf("FuzzPasses: no executions counted: %q", r)
	}
	ents, _ := os.ReadDir(filepath.Join(root, "p/testdata/fuzz/FuzzFinds"))
	if len(ents) != 1 || !strings.Contains(out, "./p FuzzFinds: failing input ./p/testdata/fuzz/FuzzFinds/"+ents[0].Name()) {
		t.Errorf("FuzzFinds: written %v, output:\n%s", ents, out)
	}
}
