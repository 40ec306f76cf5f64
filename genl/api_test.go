package genl

import (
	"go/ast"
	"go/build"
	"go/doc"
	"go/parser"
	"go/printer"
	"go/token"
	"slices"
	"sort"
	"strings"
	"testing"
)

// apiDecl is one exported declaration of the package: its signature and
// its doc comment.
type apiDecl struct {
	sig, doc string
}

// exportedAPI reads the package's non-test files that build on goos and
// returns its exported declarations by name ("func Open", "method
// (*Datapath) PutFlow", "type DatapathSpec", "field DatapathSpec.Name",
// "const Terse", ...), and which functions and methods return a
// *Datapath.
func exportedAPI(t *testing.T, goos string) (api map[string]apiDecl, datapathMakers []string) {
	t.Helper()
	ctx := build.Default
	ctx.GOOS, ctx.GOARCH, ctx.CgoEnabled = goos, "amd64", false
	bp, err := ctx.ImportDir(".", 0)
	if err != nil {
		t.Fatalf("GOOS=%s: %v", goos, err)
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, name := range bp.GoFiles {
		f, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
		if err != nil {
			t.Fatalf("GOOS=%s: %v", goos, err)
		}
		files = append(files, f)
	}
	p, err := doc.NewFromFiles(fset, files, "github.com/ovsdp/ovsdp/genl")
	if err != nil {
		t.Fatalf("GOOS=%s: %v", goos, err)
	}
	print := func(n any) string {
		var b strings.Builder
		if err := printer.Fprint(&b, fset, n); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	api = map[string]apiDecl{}
	addFunc := func(key string, f *doc.Func) {
		d := *f.Decl
		d.Body, d.Doc = nil, nil
		api[key] = apiDecl{print(&d), f.Doc}
		if d.Type.Results != nil {
			for _, r := range d.Type.Results.List {
				if print(r.Type) == "*Datapath" {
					datapathMakers = append(datapathMakers, f.Name)
				}
			}
		}
	}
	addValues := func(kind string, vs []*doc.Value) {
		for _, v := range vs {
			for _, spec := range v.Decl.Specs {
				vs := spec.(*ast.ValueSpec)
				d := v.Doc + vs.Doc.Text() + vs.Comment.Text()
				for _, n := range vs.Names {
					if ast.IsExported(n.Name) {
						api[kind+" "+n.Name] = apiDecl{kind, d}
					}
				}
			}
		}
	}
	addValues("const", p.Consts)
	addValues("var", p.Vars)
	for _, f := range p.Funcs {
		addFunc("func "+f.Name, f)
	}
	for _, typ := range p.Types {
		addValues("const", typ.Consts)
		addValues("var", typ.Vars)
		sig := "type " + typ.Name
		if ts, ok := typ.Decl.Specs[0].(*ast.TypeSpec); ok {
			if st, ok := ts.Type.(*ast.StructType); ok {
				sig += " struct"
				for _, f := range st.Fields.List {
					for _, n := range f.Names {
						if ast.IsExported(n.Name) {
							api["field "+typ.Name+"."+n.Name] = apiDecl{print(f.Type), f.Doc.Text() + f.Comment.Text()}
						}
					}
				}
			} else {
				sig += " " + print(ts.Type)
			}
		}
		api["type "+typ.Name] = apiDecl{sig, typ.Doc}
		for _, f := range typ.Funcs {
			addFunc("func "+f.Name, f)
		}
		for _, m := range typ.Methods {
			addFunc("method ("+m.Recv+") "+m.Name, m)
		}
	}
	sort.Strings(datapathMakers)
	return api, datapathMakers
}

// methods returns the exported method names of typ in api.
func methods(api map[string]apiDecl, typ string) []string {
	var ms []string
	for k := range api {
		for _, recv := range []string{typ, "*" + typ} {
			if name, ok := strings.CutPrefix(k, "method ("+recv+") "); ok {
				ms = append(ms, name)
			}
		}
	}
	sort.Strings(ms)
	return ms
}

// TestAPIOneForEveryOS checks that the exported API, signatures and doc
// comments, is one for every operating system (it is written once, in
// files without build tags, over an unexported client), and that every
// exported name is documented.
func TestAPIOneForEveryOS(t *testing.T) {
	linux, _ := exportedAPI(t, "linux")
	for k, d := range linux {
		if strings.TrimSpace(d.doc) == "" && !strings.HasPrefix(k, "const ") && !strings.HasPrefix(k, "field ") {
			t.Errorf("%s has no doc comment", k)
		}
	}
	for _, goos := range []string{"darwin", "freebsd", "windows"} {
		other, _ := exportedAPI(t, goos)
		for k, d := range linux {
			o, ok := other[k]
			switch {
			case !ok:
				t.Errorf("GOOS=%s lacks %s", goos, k)
			case o.sig != d.sig:
				t.Errorf("GOOS=%s: %s is\n\t%s\nnot as on Linux\n\t%s", goos, k, o.sig, d.sig)
			case o.doc != d.doc:
				t.Errorf("GOOS=%s: the doc comment of %s is\n\t%q\nnot as on Linux\n\t%q", goos, k, o.doc, d.doc)
			}
		}
		for k := range other {
			if _, ok := linux[k]; !ok {
				t.Errorf("GOOS=%s has %s, which Linux lacks", goos, k)
			}
		}
	}
}

// TestAPIOneWayEach checks that there is one way to create a kernel
// datapath (Create) and one to open one (Open), and that Client and
// Datapath do not both have a command: Client has what is not one
// datapath's, Datapath everything that is.
func TestAPIOneWayEach(t *testing.T) {
	api, makers := exportedAPI(t, "linux")
	if want := []string{"Create", "Open"}; !slices.Equal(makers, want) {
		t.Errorf("functions and methods that return a *Datapath: %v, want only %v", makers, want)
	}
	client, dp := methods(api, "Client"), methods(api, "Datapath")
	for _, m := range client {
		if m != "Close" && slices.Contains(dp, m) {
			t.Errorf("both Client and Datapath have %s", m)
		}
	}
	t.Logf("Client: %d methods %v; Datapath: %d methods %v", len(client), client, len(dp), dp)
}
