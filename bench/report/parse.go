package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"golang.org/x/perf/benchfmt"
)

// modulePrefix is stripped from package paths to give short names such as
// "flowkeys" or "cmd/dpctl".
const modulePrefix = "github.com/ovsdp/ovsdp/"

// Results holds every benchmark measurement read from the raw outputs,
// keyed by short package name and benchmark name (without the
// -GOMAXPROCS suffix); each run (-count) is one map of unit to value.
type Results struct {
	Bench map[string]map[string][]map[string]float64
	// Text is every package's whole output, for log lines.
	Text map[string]string
	// Steps records how each step of bench.sh ended, by step name.
	Steps map[string]Step
	// Machine is the machine description, in the order written.
	Machine [][2]string
	// Outcome records benchmarks that go test reported as failed or
	// skipped ("FAIL", "SKIP"), by package and name.
	Outcome map[string]map[string]string
	// Malformed lists the lines that looked like results but were not.
	Malformed []Malformed
}

// Step is one line of steps.txt: a step of bench.sh and how it ended.
type Step struct {
	Name, Status, Detail string
}

func newResults() *Results {
	return &Results{
		Bench:   map[string]map[string][]map[string]float64{},
		Text:    map[string]string{},
		Steps:   map[string]Step{},
		Outcome: map[string]map[string]string{},
	}
}

// shortPkg turns an import path into the name used in the report.
func shortPkg(p string) string {
	p = strings.TrimPrefix(p, modulePrefix)
	if p == strings.TrimSuffix(modulePrefix, "/") {
		return "."
	}
	return p
}

// outcomeLine matches what go test prints for a benchmark that failed
// or was skipped: "--- FAIL: NAME" or "--- SKIP: NAME", on a line of its
// own (go test -json, a test binary run directly) or after the
// benchmark's name (the name is printed before the benchmark runs).
var outcomeLine = regexp.MustCompile(`^(?:Benchmark\S*\s+)?--- (FAIL|SKIP): (Benchmark\S*)`)

// gomaxprocs is the -GOMAXPROCS suffix go test adds to a benchmark's name
// (when GOMAXPROCS > 1).
var gomaxprocs = regexp.MustCompile(`-\d+$`)

// addText parses the benchmark output of one package (golang.org/x/perf's
// benchfmt reads the result lines) and records its results under pkg (a
// text file's name may carry a variant, such as "cmd/dpctl@100k"; its
// "pkg:" lines do not change it). source names where the text came from,
// for messages. A failed or skipped benchmark is recorded in Outcome; a
// line that starts like a result but is not one (a benchmark that
// panicked mid-line, a value that is not a finite number) is recorded in
// Malformed with its place and text, and the benchmark it names has no
// result from it. Only a failure to read the text at all is an error.
func (r *Results) addText(pkg, text, source string) error {
	r.Text[pkg] += text
	lines := strings.Split(text, "\n")
	outcome := map[int]bool{} // lines (from 1) that are outcomes
	for i, l := range lines {
		if m := outcomeLine.FindStringSubmatch(l); m != nil {
			if r.Outcome[pkg] == nil {
				r.Outcome[pkg] = map[string]string{}
			}
			r.Outcome[pkg][gomaxprocs.ReplaceAllString(m[2], "")] = m[1]
			outcome[i+1] = true
		}
	}
	rd := benchfmt.NewReader(strings.NewReader(text), source)
	for rd.Scan() {
		switch rec := rd.Result().(type) {
		case *benchfmt.Result:
			_, line := rec.Pos()
			r.addResult(pkg, source, line, rec, lines)
		case *benchfmt.SyntaxError:
			if outcome[rec.Line] {
				continue // recorded above
			}
			text := lineAt(lines, rec.Line)
			name, _, _ := strings.Cut(text, " ")
			name, _, _ = strings.Cut(name, "\t")
			if r.rejoin(pkg, source, name, rec.Line, lines) {
				continue
			}
			r.malformed(pkg, gomaxprocs.ReplaceAllString(name, ""), source, rec.Line, rec.Msg, lines)
		}
	}
	if err := rd.Err(); err != nil {
		return fmt.Errorf("reading benchmark output: %w", err)
	}
	return nil
}

// addResult records one result read at line of source.
func (r *Results) addResult(pkg, source string, line int, rec *benchfmt.Result, lines []string) {
	name := "Benchmark" + gomaxprocs.ReplaceAllString(string(rec.Name.Full()), "")
	run, err := runOf(rec)
	if err != nil {
		r.malformed(pkg, name, source, line, err.Error(), lines)
		return
	}
	if r.Bench[pkg] == nil {
		r.Bench[pkg] = map[string][]map[string]float64{}
	}
	r.Bench[pkg][name] = append(r.Bench[pkg][name], run)
}

// resultTail matches the second half of a result line that a
// benchmark's own output cut in two: a test binary run without -test.v
// prints the benchmark's name, then whatever the benchmark writes to
// stdout, then the iteration count and the measurements on a new line.
var resultTail = regexp.MustCompile(`^\s+\d+\s+\S`)

// rejoin reads the result of the benchmark name, whose line at n was
// cut by the benchmark's output (no iteration count follows the name), from the first following line that is
// the rest of a result (before the next benchmark's line), and reports
// whether it found one.
func (r *Results) rejoin(pkg, source, name string, n int, lines []string) bool {
	rest := strings.TrimLeft(strings.TrimPrefix(lineAt(lines, n), name), " \t")
	if rest != "" && rest[0] >= '0' && rest[0] <= '9' {
		return false // a whole result line, malformed in itself
	}
	for j := n + 1; j <= len(lines); j++ {
		l := lineAt(lines, j)
		if strings.HasPrefix(l, "Benchmark") {
			return false
		}
		if !resultTail.MatchString(l) {
			continue
		}
		rd := benchfmt.NewReader(strings.NewReader(name+l+"\n"), source)
		if rd.Scan() {
			if rec, ok := rd.Result().(*benchfmt.Result); ok {
				r.addResult(pkg, source, j, rec, lines)
				return true
			}
		}
		return false
	}
	return false
}

// runOf is one result line's measurements by unit, as go test printed
// them (benchfmt converts "ns/op" to "sec/op"; the original unit and
// value are kept), with the iteration count as "iterations". A value that
// is not a finite number, or a unit given twice, is an error.
func runOf(rec *benchfmt.Result) (map[string]float64, error) {
	run := make(map[string]float64, len(rec.Values)+1)
	for _, v := range rec.Values {
		unit, val := v.Unit, v.Value
		if v.OrigUnit != "" {
			unit, val = v.OrigUnit, v.OrigValue
		}
		if math.IsNaN(val) || math.IsInf(val, 0) {
			return nil, fmt.Errorf("%s is %v, not a finite number", unit, val)
		}
		if _, dup := run[unit]; dup {
			return nil, fmt.Errorf("unit %s given twice", unit)
		}
		run[unit] = val
	}
	run["iterations"] = float64(rec.Iters)
	return run, nil
}

// Malformed is a line of benchmark output that looked like a result but
// was not one.
type Malformed struct {
	// Pkg and Name are the package and the benchmark the line names.
	Pkg, Name string
	// Where is "SOURCE line N" (N counts lines of the package's output).
	Where string
	// Why says what is wrong; Line is the line itself (shortened).
	Why, Line string
}

func (r *Results) malformed(pkg, name, source string, line int, why string, lines []string) {
	r.Malformed = append(r.Malformed, Malformed{Pkg: pkg, Name: name, Where: fmt.Sprintf("%s line %d", source, line),
		Why: why, Line: shorten(strings.TrimSpace(lineAt(lines, line)), 120)})
}

// lineAt is line n (from 1) of lines, "" when out of range.
func lineAt(lines []string, n int) string {
	if n < 1 || n > len(lines) {
		return ""
	}
	return strings.TrimRight(lines[n-1], "\r")
}

// testEvent is the part of a `go test -json` event that matters here.
type testEvent struct {
	Action  string
	Package string
	Output  string
}

// ReadJSON reads `go test -json` output. Output events are joined per
// package before parsing, because one benchmark's result line is split
// over several events.
func (r *Results) ReadJSON(rd io.Reader, source string) error {
	dec := json.NewDecoder(rd)
	var order []string
	texts := map[string]*strings.Builder{}
	for {
		var ev testEvent
		err := dec.Decode(&ev)
		if err == io.EOF {
			break
		}
		if err != nil {
			// go test -json interleaves non-JSON lines (build errors) only
			// on stderr; anything else is a broken file.
			return fmt.Errorf("%s: offset %d: %w", source, dec.InputOffset(), err)
		}
		if ev.Action != "output" {
			continue
		}
		p := shortPkg(ev.Package)
		b := texts[p]
		if b == nil {
			b = &strings.Builder{}
			texts[p] = b
			order = append(order, p)
		}
		b.WriteString(ev.Output)
	}
	for _, p := range order {
		if err := r.addText(p, texts[p].String(), fmt.Sprintf("%s (package %s)", source, p)); err != nil {
			return fmt.Errorf("%s: package %s: %w", source, p, err)
		}
	}
	return nil
}

// ReadSteps reads steps.txt: one "NAME<TAB>STATUS<TAB>DETAIL" per line.
func (r *Results) ReadSteps(rd io.Reader) error {
	sc := bufio.NewScanner(rd)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.SplitN(line, "\t", 3)
		if len(f) < 2 {
			return fmt.Errorf("steps.txt:%d: want NAME<TAB>STATUS[<TAB>DETAIL], got %q", n, line)
		}
		s := Step{Name: f[0], Status: f[1]}
		if len(f) == 3 {
			s.Detail = f[2]
		}
		r.Steps[s.Name] = s
	}
	return sc.Err()
}

// ReadMachine reads machine.txt: "key: value" lines.
func (r *Results) ReadMachine(rd io.Reader) error {
	sc := bufio.NewScanner(rd)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.TrimSpace(line) == "" {
			continue
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			return fmt.Errorf("machine.txt:%d: want KEY: VALUE, got %q", n, line)
		}
		r.Machine = append(r.Machine, [2]string{strings.TrimSpace(k), strings.TrimSpace(v)})
	}
	return sc.Err()
}

// Load reads a raw-results directory written by scripts/bench.sh:
// *.json (go test -json), *.txt (plain benchmark output; the file's stem
// names the package, '_' standing for '/'), steps.txt and machine.txt.
func Load(dir string) (*Results, error) {
	r := newResults()
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("reading results: %w", err)
	}
	names := make([]string, 0, len(ents))
	for _, e := range ents {
		if !e.IsDir() {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	for _, n := range names {
		path := filepath.Join(dir, n)
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("reading results: %w", err)
		}
		switch {
		case n == "steps.txt":
			err = r.ReadSteps(bytes.NewReader(data))
		case n == "machine.txt":
			err = r.ReadMachine(bytes.NewReader(data))
		case strings.HasSuffix(n, ".json"):
			err = r.ReadJSON(bytes.NewReader(data), path)
		case strings.HasSuffix(n, ".txt"):
			if err = r.addText(pkgFromFile(n), string(data), n); err != nil {
				err = fmt.Errorf("%s: %w", path, err)
			}
		}
		if err != nil {
			return nil, err
		}
	}
	return r, nil
}

// pkgFromFile maps a text output's file name to a package name:
// "cmd_dpctl@10k.txt" → "cmd/dpctl@10k" (what follows '@' is a variant).
func pkgFromFile(n string) string {
	return strings.ReplaceAll(strings.TrimSuffix(n, ".txt"), "_", "/")
}

// Runs returns every run of a benchmark.
func (r *Results) Runs(pkg, name string) []map[string]float64 {
	return r.Bench[pkg][name]
}

// Est is the median over the runs of a benchmark's metric, with its
// confidence interval (see summarize).
func (r *Results) Est(pkg, name, unit string) (Estimate, bool) {
	var vs []float64
	for _, run := range r.Bench[pkg][name] {
		if v, ok := run[unit]; ok {
			vs = append(vs, v)
		}
	}
	return summarize(vs)
}

// RatioEst is the median of num/den over the runs of one benchmark that
// report both (each run's own ratio: the two figures of a run were
// measured together, so run-to-run noise common to both cancels), with
// its confidence interval. Runs with a zero denominator are left out.
func (r *Results) RatioEst(pkg, name, num, den string) (Estimate, bool) {
	var vs []float64
	for _, run := range r.Bench[pkg][name] {
		n, ok1 := run[num]
		d, ok2 := run[den]
		if ok1 && ok2 && d != 0 {
			vs = append(vs, n/d)
		}
	}
	return summarize(vs)
}
