package archtest

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// A test that skips in CI is a test that was never run: CI runs as root on
// a 2-CPU Debian machine with every tool installed, so a skip there hides
// a failure. Every t.Skip, t.Skipf and t.SkipNow in the module must
// therefore either be preceded, in its function, by a CI guard (a call
// of os.Getenv("CI"), which the tests use to fail instead), or carry a
// comment, on its line or the three above it, that says why it may skip
// in CI ("// CI: …", e.g. a test that only runs with a flag that rewrites
// golden files).
var ciComment = regexp.MustCompile(`\bCI\b`)

func TestSkipsHaveCIGuard(t *testing.T) {
	root, _ := moduleRoot(t)
	var files, skips int
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		files++
		rel, _ := filepath.Rel(root, path)
		found, bad, err := unguardedSkips(path)
		if err != nil {
			return err
		}
		skips += found
		for _, b := range bad {
			t.Errorf("%s:%s: skips without a CI guard or a comment saying why it may skip in CI", rel, b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// The walk must have seen the module's tests, and among them the skips
	// of the root-only tests: else it checked nothing.
	if files < 50 || skips < 20 {
		t.Fatalf("walked %d test files with %d skips: the walk is broken", files, skips)
	}
}

// TestUnguardedSkipsFound runs the checker over made-up tests: a bare skip
// is reported; a skip after a CI guard, or under a comment naming CI, is
// not; a guard in another function does not count.
func TestUnguardedSkipsFound(t *testing.T) {
	src := `package x

import ("os"; "testing")

func TestBare(t *testing.T) {
	t.Skip("needs root")
}

func TestGuarded(t *testing.T) {
	if os.Getenv("CI") == "true" {
		t.Fatal("needs root")
	}
	t.Skip("needs root")
}

func TestCommented(t *testing.T) {
	// CI: runs only with -update.
	t.Skipf("run with %s", "-update")
}

func TestOtherFunction(t *testing.T) {
	helper()
	t.SkipNow()
}

func helper() { _ = os.Getenv("CI") }
`
	path := filepath.Join(t.TempDir(), "x_test.go")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	found, bad, err := unguardedSkips(path)
	if err != nil {
		t.Fatal(err)
	}
	if found != 4 || strings.Join(bad, ",") != "6,23" {
		t.Fatalf("found %d skips, unguarded at lines %v; want 4, [6 23]", found, bad)
	}
}

// unguardedSkips parses one test file and returns how many skips it has
// and the lines of those without a guard or a CI comment.
func unguardedSkips(path string) (found int, bad []string, err error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
	if err != nil {
		return 0, nil, fmt.Errorf("parsing %s: %w", path, err)
	}
	commented := map[int]bool{}
	for _, g := range f.Comments {
		for _, c := range g.List {
			if ciComment.MatchString(c.Text) {
				commented[fset.Position(c.Pos()).Line] = true
			}
		}
	}
	for _, decl := range f.Decls {
		fn, ok := decl.(*ast.FuncDecl)
		if !ok || fn.Body == nil {
			continue
		}
		var guard token.Pos // the first os.Getenv("CI") in the function
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			if isGetenvCI(call) && (guard == token.NoPos || call.Pos() < guard) {
				guard = call.Pos()
			}
			return true
		})
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || !isSkip(call) {
				return true
			}
			found++
			line := fset.Position(call.Pos()).Line
			if guard != token.NoPos && guard < call.Pos() {
				return true
			}
			for l := line - 3; l <= line; l++ {
				if commented[l] {
					return true
				}
			}
			bad = append(bad, fmt.Sprint(line))
			return true
		})
	}
	return found, bad, nil
}

func isSkip(call *ast.CallExpr) bool {
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	switch sel.Sel.Name {
	case "Skip", "Skipf", "SkipNow":
		return true
	}
	return false
}

func isGetenvCI(call *ast.CallExpr) bool {
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != "Getenv" || len(call.Args) != 1 {
		return false
	}
	lit, ok := call.Args[0].(*ast.BasicLit)
	return ok && lit.Value == `"CI"`
}
