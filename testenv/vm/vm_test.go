package vm

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestShellQuoteThroughShell(t *testing.T) {
	for _, s := range []string{"", "plain", "with space", "it's", `"dq"`, "$HOME", "`x`", "a\nb", "back\\slash", "*?[", "-n", "é"} {
		out, err := exec.Command("/bin/sh", "-c", "printf '%s' "+shellQuote(s)).Output()
		if err != nil {
			t.Fatalf("sh with %q: %v", s, err)
		}
		if string(out) != s {
			t.Errorf("shellQuote(%q) round trip gave %q", s, out)
		}
	}
}

func TestInnerScriptRunsExactly(t *testing.T) {
	dir := t.TempDir()
	spec := Spec{
		Argv: []string{"/bin/sh", "-c", `printf '%s|' "$PWD" "$#" "$1" "$FOO" "$WEIRD" "${HOME-unset}"`, "zero", "arg with 'quote'"},
		Env:  []string{"FOO=bar baz", "WEIRD=a'b\"c$d\ne", "=bad", "NOEQUALS"},
		Dir:  dir,
	}
	out, err := exec.Command("/bin/sh", "-c", innerScript(spec)).CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s\nscript:\n%s", err, out, innerScript(spec))
	}
	want := dir + "|1|arg with 'quote'|bar baz|a'b\"c$d\ne|unset|"
	if string(out) != want {
		t.Fatalf("got  %q\nwant %q", out, want)
	}
	spec.Dir = filepath.Join(dir, "missing")
	out, err = exec.Command("/bin/sh", "-c", innerScript(spec)).CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 125 || !strings.Contains(string(out), "cannot cd") {
		t.Fatalf("missing directory: err %v, output %q", err, out)
	}
}

func TestPlanShares(t *testing.T) {
	got, err := planShares([]string{"/tmp/go-build1/b001", "/work/main/testenv", "/work/main", "/root/.cache/go-build", "", "/work/main/", "/tmp/go-build1/b001/sub"})
	if err != nil {
		t.Fatal(err)
	}
	want := []Share{{"rw0", "/work/main"}, {"rw1", "/tmp/go-build1/b001"}, {"rw2", "/root/.cache/go-build"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for _, bad := range []string{"relative/dir", "/", "/a\nb"} {
		if _, err := planShares([]string{bad}); err == nil {
			t.Errorf("planShares(%q) accepted", bad)
		}
	}
	// /work/mainline is not inside /work/main.
	got, _ = planShares([]string{"/work/main", "/work/mainline"})
	if len(got) != 2 {
		t.Errorf("prefix without a slash merged: %v", got)
	}
}

func TestStage2ScriptOrder(t *testing.T) {
	s := stage2Script(Spec{Shares: []Share{{"rw0", "/tmp/go-build1/b001"}, {"rw1", "/work/main"}}, Marker: "<<M>>"})
	idx := func(sub string) int {
		i := strings.Index(s, sub)
		if i < 0 {
			t.Fatalf("stage2 lacks %q:\n%s", sub, s)
		}
		return i
	}
	if !(idx("/host/tmp || fatal") < idx("rw0 /host/tmp/go-build1/b001") &&
		idx("mount -t 9p -o "+ninePOptions+",ro,cache=loose host /host") < idx("/host/tmp || fatal") &&
		idx("rw1 /host/work/main") < idx("chroot /host") &&
		idx("chroot /host") < idx("> /ovsdp/status") &&
		idx("> /ovsdp/status") < idx("poweroff -f")) {
		t.Fatalf("stage2 steps out of order:\n%s", s)
	}
	if err := exec.Command("/bin/sh", "-n", "-c", s).Run(); err != nil {
		t.Fatalf("stage2 is not valid shell: %v\n%s", err, s)
	}
	if err := exec.Command("/bin/sh", "-n", "-c", initScript).Run(); err != nil {
		t.Fatalf("init is not valid shell: %v", err)
	}
}

func TestMarkerFilterEverySplit(t *testing.T) {
	marker := "<<OVSDP-VM-EOF-abc>>"
	body := "hello <<OVSDP-VM-E partial <<<< world\n"
	stream := body + marker + "junk after"
	for split := 0; split <= len(stream); split++ {
		for _, step := range []int{1, 3, 7, len(stream)} {
			var out bytes.Buffer
			seen := 0
			f := newMarkerFilter(&out, marker, func() { seen++ })
			rest := []byte(stream)
			f.Write(rest[:split])
			rest = rest[split:]
			for len(rest) > 0 {
				n := min(step, len(rest))
				f.Write(rest[:n])
				rest = rest[n:]
			}
			f.Flush()
			if out.String() != body || seen != 1 || !f.Seen() {
				t.Fatalf("split %d step %d: got %q seen %d", split, step, out.String(), seen)
			}
		}
	}
	// Without the marker everything comes out, including a dangling prefix.
	var out bytes.Buffer
	f := newMarkerFilter(&out, marker, nil)
	f.Write([]byte("abc<<OVSDP-VM"))
	f.Flush()
	if out.String() != "abc<<OVSDP-VM" || f.Seen() {
		t.Fatalf("got %q seen %v", out.String(), f.Seen())
	}
}

func TestCPIOWithBusybox(t *testing.T) {
	bb := "/bin/busybox"
	if _, err := os.Stat(bb); err != nil {
		t.Fatalf("busybox needed to check the archive (%v): run %s", err, FetchScript)
	}
	var buf bytes.Buffer
	c := newCPIOWriter(&buf)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(c.Dir("d", 0o755))
	must(c.File("d/f", 0o644, []byte("12345")))
	must(c.File("odd", 0o600, bytes.Repeat([]byte{7}, 1001)))
	must(c.Symlink("d/l", "f"))
	if err := c.File("d/f", 0o644, nil); err == nil {
		t.Errorf("duplicate entry accepted")
	}
	if err := c.File("", 0o644, nil); err == nil {
		t.Errorf("empty name accepted")
	}
	c.err = nil
	must(c.Close())
	dir := t.TempDir()
	cmd := exec.Command(bb, "cpio", "-i", "-d")
	cmd.Dir = dir
	cmd.Stdin = bytes.NewReader(buf.Bytes())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("busybox cpio -i: %v\n%s", err, out)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "d/f")); err != nil || string(b) != "12345" {
		t.Errorf("d/f = %q, %v", b, err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "odd")); err != nil || len(b) != 1001 {
		t.Errorf("odd: %d bytes, %v", len(b), err)
	}
	if l, err := os.Readlink(filepath.Join(dir, "d/l")); err != nil || l != "f" {
		t.Errorf("d/l -> %q, %v", l, err)
	}
}

func TestParseTimeout(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"90": 90 * time.Second, "+90": 90 * time.Second, "20m": 20 * time.Minute, "1h30m": 90 * time.Minute,
		".5s": 500 * time.Millisecond, "1\u00b5s": time.Microsecond,
		// The largest values that fit.
		"9223372036":               9223372036 * time.Second,
		"2562047h47m16.854775807s": MaxTimeout,
		"9223372036854775807ns":    MaxTimeout,
	} {
		if got, err := ParseTimeout(in); err != nil || got != want {
			t.Errorf("ParseTimeout(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for bad, why := range map[string]string{
		"": "want a duration", "0": "positive", "-5": "positive", "soon": "want a duration", "-1m": "positive",
		"5x": "unknown unit", "-0": "positive", "+-5": "want a duration", "1.s.": "want a duration",
		// Too large for time.Duration: they used to wrap around to a
		// negative timeout (issue 21; FuzzParseTimeout's seeds in
		// testdata/fuzz).
		"9227000000":            "maximum is 9223372036 seconds",
		"10000000000":           "maximum is 9223372036 seconds",
		"9223372037":            "maximum is 9223372036 seconds",
		"99999999999999999999":  "maximum is 9223372036 seconds",
		"-99999999999999999999": "positive",
		"9223372036854775808ns": "maximum is 2562047h47m16.854775807s",
		"2562048h":              "maximum is 2562047h47m16.854775807s",
		"2562047h47m17s":        "maximum is 2562047h47m16.854775807s",
		"-2562048h":             "positive",
	} {
		got, err := ParseTimeout(bad)
		if err == nil {
			t.Errorf("ParseTimeout(%q) accepted: %v", bad, got)
			continue
		}
		if !strings.Contains(err.Error(), why) || !strings.Contains(err.Error(), strconv.Quote(bad)) {
			t.Errorf("ParseTimeout(%q) error %q: want the value and %q", bad, err, why)
		}
	}
}

func TestFindKernelMissingNamesScript(t *testing.T) {
	dir := t.TempDir()
	_, err := FindKernel(dir)
	if err == nil || !strings.Contains(err.Error(), FetchScript) {
		t.Fatalf("error %v does not name %s", err, FetchScript)
	}
	os.WriteFile(filepath.Join(dir, "current"), []byte("linux-image-x\n"), 0o644)
	os.MkdirAll(filepath.Join(dir, "linux-image-x"), 0o755)
	if _, err := FindKernel(dir); err == nil || !strings.Contains(err.Error(), "incomplete") {
		t.Fatalf("incomplete cache: %v", err)
	}
	os.WriteFile(filepath.Join(dir, "current"), []byte("../etc\n"), 0o644)
	if _, err := FindKernel(dir); err == nil {
		t.Fatalf("path in 'current' accepted")
	}
}

func TestLoadOrderFromDepends(t *testing.T) {
	tr := &ModuleTree{Dir: "/x", byName: map[string]string{}, builtin: map[string]bool{"ipv6": true}, deps: map[string][]string{}}
	add := func(name string, deps ...string) {
		tr.byName[name] = "/x/" + name + ".ko"
		tr.deps[name] = deps
	}
	add("openvswitch", "nf_conntrack", "nsh", "nf_nat", "ipv6")
	add("nf_conntrack", "nf_defrag_ipv4", "nf_defrag_ipv6", "libcrc32c")
	add("nf_nat", "nf_conntrack", "libcrc32c")
	add("nf_defrag_ipv4")
	add("nf_defrag_ipv6")
	add("libcrc32c")
	add("nsh")
	add("crc32c_generic")
	add("vport_vxlan", "openvswitch", "vxlan")
	add("vxlan")
	mods, err := tr.LoadOrder([]string{"crc32c_generic", "openvswitch"}, []string{"vport-vxlan", "not_there"})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range mods {
		names = append(names, m.Name)
	}
	want := []string{"crc32c_generic", "nf_defrag_ipv4", "nf_defrag_ipv6", "libcrc32c", "nf_conntrack", "nsh", "nf_nat", "openvswitch", "vxlan", "vport_vxlan"}
	if !reflect.DeepEqual(names, want) {
		t.Fatalf("order %v\nwant  %v", names, want)
	}
	if _, err := tr.LoadOrder([]string{"missing"}, nil); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("missing required module: %v", err)
	}
	add("a", "b")
	add("b", "a")
	if _, err := tr.LoadOrder([]string{"a"}, nil); err == nil || !strings.Contains(err.Error(), "cycle") {
		t.Errorf("cycle: %v", err)
	}
	add("c", "gone")
	if _, err := tr.LoadOrder([]string{"c"}, nil); err == nil || !strings.Contains(err.Error(), "needed by c") {
		t.Errorf("missing dependency: %v", err)
	}
}

// TestRealKernelModules resolves the guest's module list against the
// fetched Debian kernel, reading dependencies from each .ko's .modinfo.
func TestRealKernelModules(t *testing.T) {
	k, err := FindKernel(DefaultCache)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := OpenModuleTree(k.ModulesDir)
	if err != nil {
		t.Fatal(err)
	}
	mods, err := tr.LoadOrder(RequiredModules, OptionalModules)
	if err != nil {
		t.Fatal(err)
	}
	pos := map[string]int{}
	for i, m := range mods {
		pos[m.Name] = i
	}
	// The order DESIGN.md verified by hand must hold.
	chain := []string{"crc32c_generic", "libcrc32c", "nf_conntrack", "nf_nat", "openvswitch"}
	for i := 1; i < len(chain); i++ {
		a, oka := pos[chain[i-1]]
		b, okb := pos[chain[i]]
		if !oka || !okb || a > b {
			t.Errorf("%s (%d,%v) must load before %s (%d,%v)", chain[i-1], a, oka, chain[i], b, okb)
		}
	}
	for _, m := range []string{"nsh", "nf_conncount", "nf_defrag_ipv4", "nf_defrag_ipv6", "9p", "9pnet_virtio", "virtio_console", "veth", "tun", "vport_vxlan", "vport_geneve", "vport_gre"} {
		if _, ok := pos[m]; !ok {
			t.Errorf("module %s not in the load order", m)
		}
	}
	if pos["nsh"] > pos["openvswitch"] || pos["nf_conncount"] > pos["openvswitch"] || pos["openvswitch"] > pos["vport_vxlan"] {
		t.Errorf("dependencies after their users: %v", pos)
	}
	// The image builds and is a gzip stream.
	var buf bytes.Buffer
	if err := writeInitramfs(&buf, "/bin/busybox", mods); err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(&buf)
	if err != nil {
		t.Fatal(err)
	}
	n, err := io.Copy(io.Discard, zr)
	if err != nil || n < 1<<20 {
		t.Fatalf("initramfs: %d bytes, %v", n, err)
	}
	t.Logf("%d modules, %d bytes uncompressed", len(mods), n)
}

func TestTestFlag(t *testing.T) {
	args := []string{"-test.v=true", "-test.run=^TestIntegration", "-test.timeout=10m0s", "--test.bench", "BenchX", "--", "-test.run=after"}
	if v, ok := testFlag(args, "run"); !ok || v != "^TestIntegration" {
		t.Errorf("run = %q, %v", v, ok)
	}
	if v, ok := testFlag(args, "bench"); !ok || v != "BenchX" {
		t.Errorf("bench = %q, %v", v, ok)
	}
	if _, ok := testFlag(args, "fuzz"); ok {
		t.Errorf("fuzz found")
	}
}

// TestSelectsNothing asks this very test binary.
func TestSelectsNothing(t *testing.T) {
	bin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(bin, ".test") {
		t.Fatalf("test binary %s does not end in .test", bin)
	}
	env := os.Environ()
	if !SelectsNothing([]string{bin, "-test.run=^TestNoSuchThing$"}, env, "") {
		t.Errorf("a pattern matching nothing was not recognised")
	}
	// A pattern naming a subtest selects its top-level test.
	if SelectsNothing([]string{bin, "-test.run=^TestTestFlag$/^sub$"}, env, "") {
		t.Error("a subtest pattern of an existing test selects nothing")
	}
	if SelectsNothing([]string{bin, "-test.run=^TestTestFlag$"}, env, "") {
		t.Errorf("a pattern matching a test was taken for nothing")
	}
	// A pattern for subtests selects its top-level test.
	if SelectsNothing([]string{bin, "-test.run=^TestTestFlag$/^sub"}, env, "") {
		t.Errorf("a pattern selecting subtests of a test was taken for nothing")
	}
	if !SelectsNothing([]string{bin, "-test.run=^TestNoSuchThing$/x"}, env, "") {
		t.Errorf("a subtest pattern under no test was not recognised")
	}
	if SelectsNothing([]string{bin, "-test.run=^TestNoSuchThing$", "-test.bench=."}, env, "") {
		t.Errorf("benchmarks selected by -test.bench were ignored")
	}
	// Subtest patterns: their first element names the top-level test.
	if SelectsNothing([]string{bin, "-test.run=^TestTestFlag$/^sub$"}, env, "") {
		t.Errorf("a subtest pattern of an existing test was taken for nothing")
	}
	if SelectsNothing([]string{bin, "-test.run=^$", "-test.bench=^BenchmarkNoSuch$|^TestTestFlag$/x"}, env, "") {
		t.Errorf("a subtest pattern in -test.bench was taken for nothing")
	}
	if !SelectsNothing([]string{bin, "-test.run=^TestNoSuchThing$/^sub$"}, env, "") {
		t.Errorf("a subtest pattern of no test was not recognised")
	}
	if got := topLevel(`^A$/[/]x/y`); got != "^A$" {
		t.Errorf("topLevel: %q", got)
	}
	if got := topLevel(`^(A/B)$/c`); got != "^(A/B)$" {
		t.Errorf("topLevel: %q", got)
	}
	if SelectsNothing([]string{bin}, env, "") || SelectsNothing([]string{"/bin/true", "-test.run=x"}, env, "") {
		t.Errorf("no -test.run, or not a test binary, must go to the VM")
	}
}
