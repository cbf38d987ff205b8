package archtest

import (
	"go/build"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The rules, by package path relative to the module. Imports count
// transitively, and only those of the packages' own (non-test) files: a
// test may bring up a lab to run the engine for real.
var (
	// mustNotImport lists, for a package, packages it must not depend on.
	mustNotImport = map[string][]string{
		// The data path knows sockets, threads and host facts; never how a
		// test is set up, shown, stored or tuned.
		"internal/engine": {"internal/lab", "internal/tune", "internal/doctor", "internal/report",
			"internal/agent", "internal/bench", "internal/store"},
		// The agent is reachable from the network: it gets what it serves
		// (tool servers, doctor reports, the tune journal's name) injected,
		// and imports none of the packages that change or store things.
		"internal/agent": {"internal/lab", "internal/tune", "internal/report", "internal/bench",
			"internal/store", "internal/doctor"},
		// The report shows documents: it reads runs and campaigns through
		// their owners (result, explain), never through the package that
		// makes them, and runs nothing.
		"internal/report": {"internal/bench", "internal/agent", "internal/engine", "internal/lab"},
		// The analysis reads documents only: it makes no run, stores
		// nothing and reaches no network.
		"internal/explain": {"internal/bench", "internal/agent", "internal/engine", "internal/lab",
			"internal/store", "internal/tune", "internal/report", "internal/doctor"},
	}
	// importsOnly lists, for the packages at the bottom, every package of
	// ours they may depend on.
	importsOnly = map[string][]string{
		"internal/cpulist": {},
		"internal/limits":  {},
		"internal/hostfs":  {"internal/cpulist"},
		"internal/latency": {},
		"internal/result":  {"internal/telemetry", "internal/hostfs", "internal/cpulist", "internal/latency"},
	}
)

func TestImportRules(t *testing.T) {
	root, module := moduleRoot(t)
	graph := loadGraph(t, root, module)
	if len(graph) < 10 {
		t.Fatalf("found %d packages under %s: the walk is broken", len(graph), root)
	}
	for _, v := range check(graph, mustNotImport, importsOnly) {
		t.Error(v)
	}
}

// TestCheckFindsViolations runs the checker on a made-up graph: a rule
// broken through an intermediate package, a bottom package importing
// upwards, and an import of a command are all reported.
func TestCheckFindsViolations(t *testing.T) {
	graph := map[string][]string{
		"internal/engine":   {"internal/helper"},
		"internal/helper":   {"internal/lab"},
		"internal/lab":      nil,
		"internal/cpulist":  {"internal/hostfs"},
		"internal/hostfs":   nil,
		"internal/x":        {"cmd/linerate", "internal/testutil"},
		"cmd/linerate":      nil,
		"internal/testutil": nil,
	}
	got := check(graph, map[string][]string{"internal/engine": {"internal/lab"}}, map[string][]string{"internal/cpulist": {}})
	want := []string{
		"internal/cpulist imports internal/hostfs (via internal/cpulist → internal/hostfs); it may import only []",
		"internal/engine imports internal/lab (via internal/engine → internal/helper → internal/lab)",
		"internal/x imports cmd/linerate: nothing imports a command",
		"internal/x imports internal/testutil: test helpers are for tests",
	}
	if !slices.Equal(got, want) {
		t.Errorf("violations:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if got := check(graph, map[string][]string{"internal/gone": nil}, nil); !slices.Contains(got, "rule for internal/gone: no such package (renamed? update the rule)") {
		t.Errorf("a rule for a package that does not exist must fail: %v", got)
	}
}

// check returns every broken rule, sorted.
func check(graph map[string][]string, mustNot, only map[string][]string) []string {
	var out []string
	for pkg, imps := range graph {
		for _, imp := range imps {
			if strings.HasPrefix(imp, "cmd/") {
				out = append(out, pkg+" imports "+imp+": nothing imports a command")
			}
			if imp == "internal/testutil" {
				out = append(out, pkg+" imports "+imp+": test helpers are for tests")
			}
		}
	}
	for pkg, banned := range mustNot {
		if _, ok := graph[pkg]; !ok {
			out = append(out, "rule for "+pkg+": no such package (renamed? update the rule)")
			continue
		}
		for dep, path := range reach(graph, pkg) {
			if slices.Contains(banned, dep) {
				out = append(out, pkg+" imports "+dep+" (via "+strings.Join(path, " → ")+")")
			}
		}
	}
	for pkg, allowed := range only {
		if _, ok := graph[pkg]; !ok {
			out = append(out, "rule for "+pkg+": no such package (renamed? update the rule)")
			continue
		}
		for dep, path := range reach(graph, pkg) {
			if !slices.Contains(allowed, dep) {
				out = append(out, pkg+" imports "+dep+" (via "+strings.Join(path, " → ")+"); it may import only ["+strings.Join(allowed, " ")+"]")
			}
		}
	}
	slices.Sort(out)
	return out
}

// reach returns every package pkg depends on, with one import path to it.
func reach(graph map[string][]string, pkg string) map[string][]string {
	paths := map[string][]string{}
	queue := [][]string{{pkg}}
	for len(queue) > 0 {
		path := queue[0]
		queue = queue[1:]
		for _, imp := range graph[path[len(path)-1]] {
			if _, seen := paths[imp]; seen || imp == pkg {
				continue
			}
			p := append(slices.Clone(path), imp)
			paths[imp] = p
			queue = append(queue, p)
		}
	}
	return paths
}

// moduleRoot finds go.mod above the test's directory and the module path.
func moduleRoot(t *testing.T) (string, string) {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil {
			for _, line := range strings.Split(string(b), "\n") {
				if m, ok := strings.CutPrefix(line, "module "); ok {
					return dir, strings.TrimSpace(m)
				}
			}
			t.Fatalf("%s/go.mod names no module", dir)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
}

// loadGraph reads the imports of every package of the module, as paths
// relative to it; imports from outside the module are left out.
func loadGraph(t *testing.T, root, module string) map[string][]string {
	t.Helper()
	graph := map[string][]string{}
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		if name := d.Name(); path != root && (name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
			return filepath.SkipDir
		}
		pkg, err := build.ImportDir(path, 0)
		if err != nil {
			if _, ok := err.(*build.NoGoError); ok {
				return nil
			}
			return err
		}
		rel, _ := filepath.Rel(root, path)
		var imps []string
		for _, imp := range pkg.Imports {
			if r, ok := strings.CutPrefix(imp, module+"/"); ok {
				imps = append(imps, r)
			}
		}
		graph[filepath.ToSlash(rel)] = imps
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return graph
}
