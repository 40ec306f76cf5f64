package doccheck

import (
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// The packages a Go user starts with: each must have runnable examples,
// and its package documentation must describe each of them by name in an
// "Examples" section (go doc prints the package comment but not the
// examples, so that section is how go doc users find them).
var publicPackages = []string{"odp", "flowkeys", "userdp", "genl"}

var exampleName = regexp.MustCompile(`\bExample[A-Za-z0-9_]*\b`)

func TestPackagesDescribeTheirExamples(t *testing.T) {
	for _, pkg := range publicPackages {
		dir := filepath.Join("..", "..", pkg)
		docText, examples := parsePackage(t, dir)
		if len(examples) == 0 {
			t.Errorf("%s: no runnable examples (func Example... in a _test.go file)", pkg)
			continue
		}
		if !strings.Contains(docText, "\n# Examples\n") {
			t.Errorf("%s: the package comment has no \"# Examples\" section", pkg)
		}
		named := map[string]bool{}
		for _, n := range exampleName.FindAllString(docText, -1) {
			if n != "Examples" { // the heading
				named[n] = true
			}
		}
		for n := range examples {
			if !named[n] {
				t.Errorf("%s: the package comment does not describe %s", pkg, n)
			}
		}
		for n := range named {
			if !examples[n] {
				t.Errorf("%s: the package comment names %s, which does not exist", pkg, n)
			}
		}
	}
}

// parsePackage returns the package comment of the Go package in dir and
// the names of the examples in its test files (external and internal).
func parsePackage(t *testing.T, dir string) (string, map[string]bool) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var docs []string
	var testFiles []*ast.File
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(name, "_test.go") {
			testFiles = append(testFiles, f)
		} else if f.Doc != nil {
			docs = append(docs, f.Doc.Text())
		}
	}
	if len(docs) != 1 {
		t.Errorf("%s: %d files have a package comment, want exactly one", dir, len(docs))
	}
	sort.Strings(docs)
	examples := map[string]bool{}
	for _, ex := range doc.Examples(testFiles...) {
		examples["Example"+ex.Name] = true // Name is "", "FormatKey", "ParseActions_error"
	}
	return "\n" + strings.Join(docs, "\n"), examples
}
