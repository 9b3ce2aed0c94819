package graft

import (
	"bufio"
	"bytes"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os/exec"
	"path"
	"slices"
	"strings"
	"testing"
)

// The import rules of graft's layout (README, "Layout"): imports run one
// way, from the edge to the core. TestLayout reads `go list -deps` and
// fails when a package breaks one.

const module = "github.com/graftland/graft"

// pkg is what TestLayout needs of `go list -json`.
type pkg struct {
	ImportPath string
	Name       string
	Deps       []string
	Imports    []string
}

func listPackages(t *testing.T) map[string]pkg {
	t.Helper()
	out, err := exec.Command("go", "list", "-json", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	pkgs := map[string]pkg{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p pkg
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		pkgs[strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/")] = p
	}
	return pkgs
}

// graftDeps is every package of this module that p links, by its path in
// the module.
func graftDeps(p pkg) []string {
	var deps []string
	for _, d := range p.Deps {
		if rest, ok := strings.CutPrefix(d, module+"/"); ok {
			deps = append(deps, rest)
		}
	}
	return deps
}

func TestLayout(t *testing.T) {
	pkgs := listPackages(t)
	for _, must := range []string{"launch", "spec", "plan", "apply", "runtime", "runtime/local", "runtime/remote", "runtime/floating", "runner", "runnerapi", "host", "host/server", "hostapi"} {
		if _, ok := pkgs[must]; !ok {
			t.Fatalf("no package %s: the layout moved; update this test and the README", must)
		}
	}
	// The placements: every package under runtime/ but its conformance
	// kit. A new one is found here, not listed.
	var placements []string
	for rel := range pkgs {
		if strings.HasPrefix(rel, "runtime/") && rel != "runtime/runtimetest" {
			placements = append(placements, rel)
		}
	}
	// What runs processes, serves or dials: none of it belongs in the
	// packages that read specs and plans.
	running := append([]string{"internal/proc", "internal/output", "internal/ready", "runner", "host", "host/remotes", "host/server", "elect", "elect/etcd"}, placements...)

	for rel, p := range pkgs {
		deps := graftDeps(p)
		switch {
		case rel == "spec":
			for _, d := range deps {
				if !strings.HasPrefix(d, "internal/") && d != "launch" && d != "instance" {
					t.Errorf("spec imports %s: spec imports no graft package but launch and instance (the plugin environment's names)", d)
				}
			}
		case rel == "launch":
			if len(deps) > 0 {
				t.Errorf("launch imports %v: the process description imports nothing of graft", deps)
			}
		case rel == "plan" || rel == "apply" || rel == "runtime":
			for _, d := range deps {
				if slices.Contains(running, d) {
					t.Errorf("%s imports %s: %s imports nothing that runs processes", rel, d, rel)
				}
			}
		case slices.Contains(placements, rel):
			for _, d := range deps {
				if slices.Contains(placements, d) {
					t.Errorf("%s imports %s: no placement imports another", rel, d)
				}
			}
		}
		// The etcd client is linked by what opens elections on etcd (the
		// host, through elect/etcd) only: a program that elects through a
		// directory with elect or runtime/floating does without it.
		if rel == "elect" || rel == "runtime/floating" || rel == "spec" {
			for _, d := range p.Deps {
				if strings.HasPrefix(d, "go.etcd.io/") {
					t.Errorf("%s links %s: only elect/etcd and what chooses it import the etcd client", rel, d)
					break
				}
			}
		}
		if rel == "runtime/remote" && slices.Contains(deps, "runner") {
			t.Errorf("runtime/remote links the runner daemon: it may import runnerapi only")
		}
		if rel == "runnerapi" {
			for _, d := range deps {
				if d == "runtime" || strings.HasPrefix(d, "runtime/") || d == "spec" {
					t.Errorf("runnerapi imports %s: the runner's wire types are their own, converted at the edges (runner, runtime/remote)", d)
				}
			}
		}
		if rel == "hostapi" {
			for _, d := range deps {
				if d == "plan" || d == "apply" || d == "runtime" || strings.HasPrefix(d, "runtime/") {
					t.Errorf("hostapi imports %s: the host's wire types are its own, converted at the host's edge (host/server) and the CLI's", d)
				}
			}
		}
		if (rel == "host" || strings.HasPrefix(rel, "host/")) && rel != "host/server" && slices.Contains(p.Imports, "net/http") {
			t.Errorf("%s imports net/http: the host's HTTP is host/server's alone, which calls the host's domain methods", rel)
		}
		if rel == "runner" && slices.Contains(p.Imports, module+"/spec") {
			t.Errorf("runner imports spec: it runs a start's launch.Spec as it comes, and plugins.yaml is none of its business")
		}
		if rel == "instance" && len(deps) > 0 {
			t.Errorf("instance imports %v: it is for plugin authors and imports nothing of graft", deps)
		}
		if rel == "runnerapi" || rel == "hostapi" {
			for _, d := range deps {
				if slices.Contains(running, d) {
					t.Errorf("%s imports %s: an API's types and client link nothing that runs", rel, d)
				}
			}
		}
	}
}

// TestNoStandardName: no package of graft has the name of a package of
// the standard library, which it would shadow in every file that imports
// both, but runtime: the layout the project was specified with names it,
// as Kubernetes has k8s.io/apimachinery/pkg/runtime, and the few files
// that need both import the standard library's as goruntime.
func TestNoStandardName(t *testing.T) {
	out, err := exec.Command("go", "list", "std").Output()
	if err != nil {
		t.Fatalf("go list std: %v", err)
	}
	std := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		p := sc.Text()
		if strings.Contains(p, "internal") || strings.HasPrefix(p, "vendor/") {
			continue
		}
		std[path.Base(p)] = p
	}
	for rel, p := range listPackages(t) {
		if p.Name == "main" {
			continue
		}
		if s, ok := std[p.Name]; ok && !(p.Name == "runtime" && rel == "runtime") {
			t.Errorf("package %s (%s) has the name of the standard library's %s", p.Name, rel, s)
		}
	}
}

// TestHostAssertsNoPlacement: the host reaches placements only through
// runtime.Placement and runtime.Handle. A type assertion in the host
// to a type of a placement package, or to one of the host's own types,
// would make it depend on how one placement works; assertions to
// interfaces of package runtime (runtime.Reporter) and to other
// packages' types (http.Flusher) are fine.
func TestHostAssertsNoPlacement(t *testing.T) {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, "host", func(fi fs.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pkgs {
		for _, f := range p.Files {
			// The packages of placements, by the name the file imports them as.
			banned := map[string]bool{}
			for _, imp := range f.Imports {
				ip := strings.Trim(imp.Path.Value, `"`)
				if rel, ok := strings.CutPrefix(ip, module+"/runtime/"); ok && rel != "runtimetest" {
					local := path.Base(ip)
					if imp.Name != nil {
						local = imp.Name.Name
					}
					banned[local] = true
				}
			}
			ast.Inspect(f, func(n ast.Node) bool {
				ta, ok := n.(*ast.TypeAssertExpr)
				if !ok || ta.Type == nil {
					return true
				}
				typ := ta.Type
				if star, ok := typ.(*ast.StarExpr); ok {
					typ = star.X
				}
				switch x := typ.(type) {
				case *ast.Ident: // one of the host's own types
					t.Errorf("%s: a type assertion to the host's own %s", fset.Position(ta.Pos()), x.Name)
				case *ast.SelectorExpr:
					if pkg, ok := x.X.(*ast.Ident); ok && banned[pkg.Name] {
						t.Errorf("%s: a type assertion to %s.%s, a placement's type", fset.Position(ta.Pos()), pkg.Name, x.Sel.Name)
					}
				}
				return true
			})
		}
	}
}

// TestStandardRuntimeAlias: a file that needs both the standard library's
// runtime and graft's imports the standard library's as goruntime, so that
// "runtime." always means graft's.
func TestStandardRuntimeAlias(t *testing.T) {
	out, err := exec.Command("git", "ls-files", "*.go").Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	fset := token.NewFileSet()
	for _, name := range strings.Fields(string(out)) {
		f, err := parser.ParseFile(fset, name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		var std *ast.ImportSpec
		graft := false
		for _, imp := range f.Imports {
			switch strings.Trim(imp.Path.Value, `"`) {
			case "runtime":
				std = imp
			case module + "/runtime":
				graft = true
			}
		}
		if graft && std != nil && (std.Name == nil || std.Name.Name != "goruntime") {
			t.Errorf("%s imports graft's runtime and the standard library's: import the standard library's as goruntime", name)
		}
	}
}
