package app

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/ovsdp/ovsdp/testenv"
	"github.com/ovsdp/ovsdp/userdp/ctl"
)

// contribDir is the repository's contrib/ directory.
const contribDir = "../../../../contrib"

// TestContribMetricsExist checks that every metric the Prometheus alert
// rules and the Grafana dashboard in contrib/ name is served on /metrics
// by a real upcalld (this package's Main on a netdev datapath), and that
// the rules cover what an operator must be told about.
func TestContribMetricsExist(t *testing.T) {
	served, body := scrapeDaemon(t)

	rules := readAlertRules(t, filepath.Join(contribDir, "prometheus", "upcalld-alerts.yml"))
	used := map[string][]string{} // metric -> where
	for _, r := range rules {
		names, err := metricNames(r.Expr)
		if err != nil {
			t.Errorf("alert %s: expr %q: %v", r.Alert, r.Expr, err)
		}
		if len(names) == 0 {
			t.Errorf("alert %s: expr %q names no metric", r.Alert, r.Expr)
		}
		for _, n := range names {
			used[n] = append(used[n], "alert "+r.Alert)
		}
		if r.Labels["severity"] == "" || r.Annotations["summary"] == "" || r.Annotations["description"] == "" {
			t.Errorf("alert %s: want a severity label, a summary and a description", r.Alert)
		}
	}
	for _, need := range []string{
		"upcalld_upcalls_lost_total", "upcalld_upcalls_shed_total", "upcalld_flow_limit_hits_total",
		"upcalld_handler_latency_seconds_bucket", "upcalld_revalidator_lag_seconds",
	} {
		if used[need] == nil {
			t.Errorf("no alert rule uses %s", need)
		}
	}

	exprs := dashboardExprs(t, filepath.Join(contribDir, "grafana", "upcalld.json"))
	if len(exprs) < 10 {
		t.Errorf("dashboard has %d queries, want its panels' (at least 10)", len(exprs))
	}
	dashUsed := map[string]bool{}
	for _, e := range exprs {
		names, err := metricNames(e.expr)
		if err != nil {
			t.Errorf("dashboard %s: %q: %v", e.where, e.expr, err)
		}
		for _, n := range names {
			used[n] = append(used[n], "dashboard "+e.where)
			dashUsed[n] = true
		}
	}
	for n, where := range used {
		if !served[n] {
			t.Errorf("%s (used by %s) is not on a running upcalld's /metrics", n, strings.Join(slices.Compact(where), ", "))
		}
	}
	// Every upcalld metric is on the dashboard.
	for n := range served {
		base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(n, "_bucket"), "_sum"), "_count")
		if strings.HasPrefix(n, "upcalld_") && !dashUsed[n] && !dashUsed[base+"_bucket"] && !dashUsed[base+"_count"] {
			t.Errorf("%s is served but not on the dashboard", n)
		}
	}
	if t.Failed() {
		t.Logf("/metrics:\n%s", body)
	}
}

// scrapeDaemon runs upcalld on a fresh netdev datapath with --metrics,
// returns the metric names (histograms as their _bucket, _sum and
// _count series) of its /metrics and the page, and stops it through the
// control socket as dpctl del-dp does.
func scrapeDaemon(t *testing.T) (map[string]bool, string) {
	t.Helper()
	t.Setenv("OVSDP_RUNDIR", filepath.Join(t.TempDir(), "run"))
	name := "upm" + strings.ReplaceAll(testenv.NewName(), "-", "")[:6]
	addr := freeLoopbackAddr(t)
	logs := &syncBuffer{}
	done := make(chan int, 1)
	go func() {
		done <- Main([]string{"upcalld", "--datapath", "netdev@" + name, "--handlers", "1", "--metrics", addr}, logs, logs)
	}()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		c, err := ctl.Dial(name)
		if err != nil {
			t.Errorf("dial the daemon's control socket: %v\n%s", err, logs.String())
			return
		}
		defer c.Close()
		if err := c.Delete(context.Background()); err != nil {
			t.Errorf("delete: %v", err)
		}
		select {
		case code := <-done:
			if code != 0 {
				t.Errorf("upcalld exited with %d:\n%s", code, logs.String())
			}
		case <-time.After(10 * time.Second):
			t.Errorf("upcalld did not exit within 10 s of the delete")
		}
	}
	t.Cleanup(stop)
	var body []byte
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get("http://" + addr + "/metrics")
		if err == nil {
			body, err = io.ReadAll(resp.Body)
			resp.Body.Close()
			if err == nil && resp.StatusCode == http.StatusOK {
				break
			}
			err = fmt.Errorf("status %s", resp.Status)
		}
		select {
		case code := <-done:
			t.Fatalf("upcalld exited with %d before serving /metrics:\n%s", code, logs.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no /metrics on %s within 10 s: %v\n%s", addr, err, logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	names := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(body))
	for sc.Scan() {
		l := sc.Text()
		if l == "" || l[0] == '#' {
			continue
		}
		if i := strings.IndexAny(l, "{ "); i > 0 {
			names[l[:i]] = true
		}
	}
	if !names["upcalld_flows"] || !names["go_goroutines"] {
		t.Fatalf("/metrics lacks upcalld_flows or go_goroutines:\n%s", body)
	}
	stop()
	return names, string(body)
}

func freeLoopbackAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// syncBuffer is a bytes.Buffer safe for the daemon's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// alertRule is one rule of a Prometheus rules file.
type alertRule struct {
	Alert       string            `yaml:"alert"`
	Expr        string            `yaml:"expr"`
	For         string            `yaml:"for"`
	Labels      map[string]string `yaml:"labels"`
	Annotations map[string]string `yaml:"annotations"`
}

func readAlertRules(t *testing.T, path string) []alertRule {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Groups []struct {
			Name  string      `yaml:"name"`
			Rules []alertRule `yaml:"rules"`
		} `yaml:"groups"`
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var out []alertRule
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" || r.Expr == "" {
				t.Errorf("%s: group %s: a rule without alert or expr: %+v", path, g.Name, r)
			}
			if r.For != "" {
				if _, err := time.ParseDuration(r.For); err != nil {
					t.Errorf("%s: alert %s: for %q: %v", path, r.Alert, r.For, err)
				}
			}
			out = append(out, r)
		}
	}
	if len(out) == 0 {
		t.Fatalf("%s: no rules", path)
	}
	return out
}

type dashExpr struct{ where, expr string }

// dashboardExprs returns the PromQL of every panel target and template
// variable of a Grafana dashboard.
func dashboardExprs(t *testing.T, path string) []dashExpr {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Type    string `json:"type"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Name  string `json:"name"`
				Type  string `json:"type"`
				Query any    `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var out []dashExpr
	for _, p := range d.Panels {
		if p.Type != "row" && len(p.Targets) == 0 {
			t.Errorf("%s: panel %q has no queries", path, p.Title)
		}
		for _, tg := range p.Targets {
			if tg.Expr == "" {
				t.Errorf("%s: panel %q has an empty query", path, p.Title)
			}
			out = append(out, dashExpr{"panel " + p.Title, tg.Expr})
		}
	}
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		q, _ := v.Query.(map[string]any)
		s, _ := q["query"].(string)
		// label_values(SELECTOR, LABEL): the selector is PromQL.
		inner, ok := strings.CutPrefix(s, "label_values(")
		i := strings.LastIndexByte(inner, ',')
		if !ok || i < 0 {
			t.Errorf("%s: variable %s: query %q is not label_values(SELECTOR, LABEL)", path, v.Name, s)
			continue
		}
		out = append(out, dashExpr{"variable " + v.Name, inner[:i]})
	}
	return out
}

// promqlWords are PromQL's keywords and aggregation operators: names
// that are not metrics.
var promqlWords = map[string]bool{
	"and": true, "or": true, "unless": true, "bool": true, "offset": true, "by": true, "without": true,
	"on": true, "ignoring": true, "group_left": true, "group_right": true, "inf": true, "nan": true,
	"sum": true, "min": true, "max": true, "avg": true, "group": true, "stddev": true, "stdvar": true,
	"count": true, "count_values": true, "bottomk": true, "topk": true, "quantile": true,
	"limitk": true, "limit_ratio": true, "atan2": true,
}

// metricNames returns the metric names a PromQL expression selects:
// identifiers that are not a function call, a keyword or an aggregation
// operator, outside label matchers ({...}), ranges ([...]), label lists
// (by (...), on (...), ...) and strings. It is a lexer, not a parser,
// and errors on what it cannot read (an unterminated string, an
// unbalanced bracket, a stray character).
func metricNames(expr string) ([]string, error) {
	var out []string
	s := expr
	i := 0
	// skipTo skips from s[i] (an opening bracket) past its close,
	// honouring quoted strings.
	skipTo := func(close byte) error {
		start := i
		for i++; i < len(s); i++ {
			switch c := s[i]; {
			case c == close:
				i++
				return nil
			case c == '"' || c == '\'' || c == '`':
				if err := skipString(s, &i); err != nil {
					return err
				}
				i--
			}
		}
		return fmt.Errorf("unclosed %q at column %d", s[start], start+1)
	}
	for i < len(s) {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '(' || c == ')' || c == ',' || strings.IndexByte("+-*/%^=!<>", c) >= 0:
			i++
		case c == '"' || c == '\'' || c == '`':
			if err := skipString(s, &i); err != nil {
				return nil, err
			}
		case c == '{':
			if err := skipTo('}'); err != nil {
				return nil, err
			}
		case c == '[':
			if err := skipTo(']'); err != nil {
				return nil, err
			}
		case c >= '0' && c <= '9' || c == '.':
			for i < len(s) && (isIdent(s[i]) || s[i] >= '0' && s[i] <= '9' || s[i] == '.') {
				i++
			}
		case isIdent(c):
			j := i
			for i < len(s) && (isIdent(s[i]) || s[i] >= '0' && s[i] <= '9') {
				i++
			}
			word := s[j:i]
			k := i
			for k < len(s) && s[k] == ' ' {
				k++
			}
			call := k < len(s) && s[k] == '('
			switch {
			case word == "by" || word == "without" || word == "on" || word == "ignoring" || word == "group_left" || word == "group_right":
				if call {
					i = k
					if err := skipTo(')'); err != nil {
						return nil, err
					}
				}
			case call || promqlWords[strings.ToLower(word)]:
			default:
				out = append(out, word)
			}
		default:
			return nil, fmt.Errorf("unexpected %q at column %d", c, i+1)
		}
	}
	return out, nil
}

func isIdent(c byte) bool {
	return c == '_' || c == ':' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// skipString moves *i past the string literal that starts at s[*i].
func skipString(s string, i *int) error {
	q := s[*i]
	start := *i
	for j := *i + 1; j < len(s); j++ {
		switch s[j] {
		case '\\':
			if q != '`' {
				j++
			}
		case q:
			*i = j + 1
			return nil
		}
	}
	return fmt.Errorf("unterminated string at column %d", start+1)
}

func TestMetricNames(t *testing.T) {
	for _, c := range []struct {
		expr string
		want []string
	}{
		{`rate(upcalld_upcalls_shed_total[5m]) > 0`, []string{"upcalld_upcalls_shed_total"}},
		{`histogram_quantile(0.99, sum by (job, le) (rate(a_bucket{x="}",y=~"$v"}[$__rate_interval])))`, []string{"a_bucket"}},
		{`upcalld_revalidator_lag_seconds > 4 * upcalld_revalidation_interval_seconds + 2`, []string{"upcalld_revalidator_lag_seconds", "upcalld_revalidation_interval_seconds"}},
		{`absent(upcalld_build_info{job="upcalld"})`, []string{"upcalld_build_info"}},
		{`a / on (instance) group_left (version) b offset 5m`, []string{"a", "b"}},
		{`sum without (kind) (x) or vector(0) unless y`, []string{"x", "y"}},
		{`1e3 * z`, []string{"z"}},
	} {
		got, err := metricNames(c.expr)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("metricNames(%q) = %q, %v; want %q", c.expr, got, err, c.want)
		}
	}
	for _, bad := range []string{`rate(x[5m)`, `x{a="b}`, `x # y`} {
		if got, err := metricNames(bad); err == nil {
			t.Errorf("metricNames(%q) = %q, want an error", bad, got)
		}
	}
}
