package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
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
}

// Step is one line of steps.txt: a step of bench.sh and how it ended.
type Step struct {
	Name, Status, Detail string
}

func newResults() *Results {
	return &Results{
		Bench: map[string]map[string][]map[string]float64{},
		Text:  map[string]string{},
		Steps: map[string]Step{},
	}
}

// benchLine matches a result line of `go test -bench`: the name with an
// optional -GOMAXPROCS suffix, the iteration count, then value/unit pairs.
var benchLine = regexp.MustCompile(`^(Benchmark\S+?)(?:-\d+)?\s+(\d+)((?:\s+[-+0-9.eE]+(?:[-+0-9.eE]*)\s+\S+)+)\s*$`)

// ParseBenchLine parses one `go test -bench` result line. ok is false for
// any other line.
func ParseBenchLine(line string) (name string, metrics map[string]float64, ok bool) {
	m := benchLine.FindStringSubmatch(strings.TrimRight(line, "\r\n"))
	if m == nil {
		return "", nil, false
	}
	fields := strings.Fields(m[3])
	if len(fields)%2 != 0 {
		return "", nil, false
	}
	metrics = map[string]float64{}
	for i := 0; i < len(fields); i += 2 {
		v, err := strconv.ParseFloat(fields[i], 64)
		if err != nil {
			return "", nil, false
		}
		metrics[fields[i+1]] = v
	}
	n, err := strconv.ParseFloat(m[2], 64)
	if err != nil {
		return "", nil, false
	}
	metrics["iterations"] = n
	return m[1], metrics, true
}

// shortPkg turns an import path into the name used in the report.
func shortPkg(p string) string {
	p = strings.TrimPrefix(p, modulePrefix)
	if p == strings.TrimSuffix(modulePrefix, "/") {
		return "."
	}
	return p
}

// addText parses the text output of one package and records its results.
// With followPkg, "pkg:" lines (as `go test` prints them) switch the
// package; otherwise the given name stays (it may carry a variant such as
// "cmd/dpctl@100k").
func (r *Results) addText(pkg, text string, followPkg bool) {
	r.Text[pkg] += text
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if followPkg && strings.HasPrefix(line, "pkg: ") {
			// A plain-text run of several packages names each one.
			pkg = shortPkg(strings.TrimSpace(strings.TrimPrefix(line, "pkg: ")))
			continue
		}
		name, ms, ok := ParseBenchLine(line)
		if !ok {
			continue
		}
		if r.Bench[pkg] == nil {
			r.Bench[pkg] = map[string][]map[string]float64{}
		}
		r.Bench[pkg][name] = append(r.Bench[pkg][name], ms)
	}
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
		r.addText(p, texts[p].String(), false)
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
			r.addText(pkgFromFile(n), string(data), false)
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

// Metric returns the median over the runs of a benchmark's metric.
func (r *Results) Metric(pkg, name, unit string) (float64, bool) {
	var vs []float64
	for _, run := range r.Bench[pkg][name] {
		if v, ok := run[unit]; ok {
			vs = append(vs, v)
		}
	}
	if len(vs) == 0 {
		return 0, false
	}
	return median(vs), true
}

// median of a non-empty slice (which it sorts).
func median(vs []float64) float64 {
	sort.Float64s(vs)
	n := len(vs)
	if n%2 == 1 {
		return vs[n/2]
	}
	return (vs[n/2-1] + vs[n/2]) / 2
}

// Names returns the benchmark names of a package that match re, sorted.
func (r *Results) Names(pkg string, re *regexp.Regexp) []string {
	var out []string
	for n := range r.Bench[pkg] {
		if re.MatchString(n) {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}
