package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// architecture reads docs/architecture.md.
func architecture(t *testing.T, root string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// section returns the text of the section that starts with heading, up to
// the next heading of its level or above.
func section(t *testing.T, doc, heading string) string {
	t.Helper()
	i := strings.Index(doc, "\n"+heading+"\n")
	if i < 0 {
		t.Fatalf("docs/architecture.md has no %q", heading)
	}
	rest := doc[i+len(heading)+2:]
	level := strings.Fields(heading)[0] // "##" or "###"
	for _, l := range []string{"\n# ", "\n## ", "\n### "} {
		if len(strings.TrimSpace(l)) > len(level) {
			continue
		}
		if j := strings.Index(rest, l); j >= 0 {
			rest = rest[:j]
		}
	}
	return rest
}

// TestArchitecturePackages: the package list in docs/architecture.md
// ("Packages") names every package of the module, and nothing else.
func TestArchitecturePackages(t *testing.T) {
	root, module := moduleRoot(t)
	sec := section(t, architecture(t, root), "## Packages")
	start := strings.Index(sec, "```\n")
	end := strings.Index(sec[start+4:], "```")
	if start < 0 || end < 0 {
		t.Fatal(`the "Packages" section has no code block listing the packages`)
	}
	var listed []string
	for _, line := range strings.Split(sec[start+4:start+4+end], "\n") {
		if f := strings.Fields(line); len(f) > 1 {
			listed = append(listed, strings.TrimSuffix(f[0], "/"))
		}
	}
	var pkgs []string
	for p := range loadGraph(t, root, module) {
		pkgs = append(pkgs, p)
	}
	for _, p := range pkgs {
		if !slices.Contains(listed, p) {
			t.Errorf("package %s is not in docs/architecture.md's package list: add its line with its role", p)
		}
	}
	for _, p := range listed {
		if !slices.Contains(pkgs, p) {
			t.Errorf("docs/architecture.md lists %s, which is no package of the module (renamed or removed?)", p)
		}
	}
	if len(listed) < 10 {
		t.Errorf("only %d packages listed: the list's format is not what this test reads", len(listed))
	}
}

// doctorIDs are the finding IDs doctor's rules raise: the ID of every
// Finding literal in internal/doctor's own files.
func doctorIDs(t *testing.T, root string) []string {
	t.Helper()
	fset := token.NewFileSet()
	files, err := filepath.Glob(filepath.Join(root, "internal", "doctor", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			cl, ok := n.(*ast.CompositeLit)
			if !ok || !isFinding(cl) {
				return true
			}
			for _, e := range cl.Elts {
				kv, ok := e.(*ast.KeyValueExpr)
				if !ok {
					continue
				}
				if k, ok := kv.Key.(*ast.Ident); !ok || k.Name != "ID" {
					continue
				}
				lit, ok := kv.Value.(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					t.Errorf("%s: a Finding's ID is not a string literal: this test cannot read it", fset.Position(kv.Pos()))
					continue
				}
				id, _ := strconv.Unquote(lit.Value)
				if !slices.Contains(ids, id) {
					ids = append(ids, id)
				}
			}
			return true
		})
	}
	slices.Sort(ids)
	return ids
}

// isFinding reports whether cl is a Finding literal: of that type, or of
// an elided type (in a []Finding) with a Severity beside its ID.
func isFinding(cl *ast.CompositeLit) bool {
	if typ, ok := cl.Type.(*ast.Ident); ok {
		return typ.Name == "Finding"
	}
	if cl.Type != nil {
		return false
	}
	for _, e := range cl.Elts {
		if kv, ok := e.(*ast.KeyValueExpr); ok {
			if k, ok := kv.Key.(*ast.Ident); ok && k.Name == "Severity" {
				return true
			}
		}
	}
	return false
}

// TestArchitectureFindingIDs: the table of finding IDs in
// docs/architecture.md ("Finding IDs") has a row for every ID doctor's
// rules raise, and none other.
func TestArchitectureFindingIDs(t *testing.T) {
	root, _ := moduleRoot(t)
	ids := doctorIDs(t, root)
	if len(ids) < 20 {
		t.Fatalf("found %d finding IDs in internal/doctor: the walk is broken", len(ids))
	}
	row := regexp.MustCompile("(?m)^\\| `([a-z0-9_]+\\.[a-z0-9_.]+)`")
	var table []string
	for _, m := range row.FindAllStringSubmatch(section(t, architecture(t, root), "### Finding IDs"), -1) {
		table = append(table, m[1])
	}
	for _, id := range ids {
		if !slices.Contains(table, id) {
			t.Errorf("finding %s has no row in docs/architecture.md's Finding IDs table: add its default severity and when it is raised", id)
		}
	}
	for _, id := range table {
		if !slices.Contains(ids, id) {
			t.Errorf("docs/architecture.md's Finding IDs table has %s, which no rule of internal/doctor raises", id)
		}
	}
}
