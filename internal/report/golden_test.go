package report

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden (and docs/img with the render test)")

// TestGolden renders every chart (as its standalone SVG) and every table
// (as Markdown) of the recorded datasets and compares each with its golden
// file; -update rewrites them. A golden file no chart or table produces any
// more is an error too, so that renamed charts do not leave stale files.
func TestGolden(t *testing.T) {
	for _, name := range []string{"seed000", "seed002"} {
		t.Run(name, func(t *testing.T) {
			m, err := Build(loadFixture(t, name))
			if err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join("testdata", "golden", name)
			got := goldenFiles(t, m)
			if *update {
				if err := os.RemoveAll(dir); err != nil {
					t.Fatal(err)
				}
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			var names []string
			for file, content := range got {
				names = append(names, file)
				path := filepath.Join(dir, file)
				if *update {
					if err := os.WriteFile(path, content, 0o644); err != nil {
						t.Fatal(err)
					}
					continue
				}
				want, err := os.ReadFile(path)
				if err != nil {
					t.Errorf("%s: %v (run with -update to create it)", file, err)
					continue
				}
				if !bytes.Equal(content, want) {
					t.Errorf("%s differs from its golden file:\n%s", file, firstDiff(string(want), string(content)))
				}
			}
			entries, err := os.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range entries {
				if !slices.Contains(names, e.Name()) {
					t.Errorf("%s: golden file without a chart or table (run with -update to remove it)", e.Name())
				}
			}
		})
	}
}

// goldenFiles renders the model's verdict, charts and tables, one file each.
func goldenFiles(t *testing.T, m *Model) map[string][]byte {
	t.Helper()
	out := map[string][]byte{"verdict.txt": []byte(m.Verdict + "\n")}
	for _, s := range m.sections {
		if s.Omitted != "" {
			out["omitted-"+s.ID+".txt"] = []byte(s.Omitted + "\n")
		}
		for i, bl := range s.Blocks {
			switch {
			case len(bl.Code) > 0:
				out["code-"+s.ID+"-"+itoa(i)+".txt"] = []byte(strings.Join(bl.Code, "\n") + "\n")
			case bl.Chart != nil:
				var b bytes.Buffer
				if err := m.r.writeSVG(&b, bl.Chart); err != nil {
					t.Fatal(err)
				}
				out["chart-"+bl.Chart.ID+".svg"] = b.Bytes()
			case bl.Table != nil:
				var b bytes.Buffer
				mdTable(&b, bl.Table)
				out["table-"+bl.Table.ID+".md"] = b.Bytes()
			}
		}
	}
	return out
}

// firstDiff shows the first line where two texts differ.
func firstDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < len(w) || i < len(g); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			return "line " + itoa(i+1) + ":\n  want: " + wl + "\n  got:  " + gl
		}
	}
	return "(same lines, different bytes)"
}

func itoa(i int) string { return strings.TrimSpace(num(float64(i), 0)) }
