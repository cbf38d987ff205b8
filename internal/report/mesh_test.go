package report

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/linerate/linerate/internal/mesh"
)

// meshDoc reads a mesh status document captured from the 8-host lab
// ('linerate mesh status --json').
func meshDoc(t *testing.T, name string) *mesh.Doc {
	t.Helper()
	b, err := os.ReadFile("testdata/mesh/" + name)
	if err != nil {
		t.Fatal(err)
	}
	var d mesh.Doc
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	return &d
}

// TestMeshReport: the mesh of the 8-host lab with 5% loss planted on
// h03's egress: both heatmaps have a cell per pair, h03's row outlined
// pair by pair and framed, its name marked; the suspect carries the
// evidence and what to run; the degraded pairs are listed; and a healthy
// mesh frames nothing and lists no pair.
func TestMeshReport(t *testing.T) {
	d := meshDoc(t, "h03-send-loss.json")
	m, err := BuildMesh(d, "", "test")
	if err != nil {
		t.Fatal(err)
	}
	page := modelHTML(t, m)
	count := func(re string) int { return matches(page, re) }
	for _, c := range []struct {
		what      string
		got, want int
	}{
		{"measured cells", count(`<rect class="fl-cell"[^>]*><title>h0\d → h0\d: `), 2 * 56},
		{"degraded outlines", count(`class="fl-slow"`), 2 * (7 + 1)}, // h03's row in each map, and the legends
		{"framed rows", count(`class="fl-frame"`), 2 * (1 + 1)},
		{"marked host labels", count(`class="tick fl-blamed"[^>]*>h03<`), 2},
		{"rows of pairs not ok", count(`<tr class="crit"><td>h03</td><td>h0\d</td><td>degraded</td>`), 7},
	} {
		if c.got != c.want {
			t.Errorf("%s: %d, want %d", c.what, c.got, c.want)
		}
	}
	for _, want := range []string{"suspected: host h03 (send side)", "h03 (send side)", "sends badly to 7 of 7 peers judged",
		"lab0 counted no drop", "linerate doctor   # on h03", "RTT p50, µs", "rows probe, columns are probed", "each pair every 1h0m0s"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}

	healthy, err := BuildMesh(meshDoc(t, "healthy.json"), "Rack 7", "")
	if err != nil {
		t.Fatal(err)
	}
	page = modelHTML(t, healthy)
	for _, want := range []string{"<h1>Rack 7</h1>", "Nothing suspected", "Pairs not ok: none; all 56 are ok"} {
		if !strings.Contains(page, want) {
			t.Errorf("the healthy page lacks %q", want)
		}
	}
	if strings.Contains(page, `class="fl-frame" x="1`) || strings.Contains(page, `class="fl-slow" x="1`) {
		t.Error("a healthy mesh frames or outlines something")
	}
	if _, err := BuildMesh(&mesh.Doc{Schema: "linerate.fleet/v1"}, "", ""); err == nil {
		t.Error("another document accepted")
	}
}

// TestMeshChromiumRender renders the lab's mesh reports (healthy, and with
// h03's loss) in headless Chromium, light and dark, and fails on any
// console message, exception or error log entry. REPORT_PNG_DIR=DIR
// keeps the screenshots for a person to look at.
func TestMeshChromiumRender(t *testing.T) {
	if testing.Short() {
		// CI: runs the suite without -short, so this runs there.
		t.Skip("starts a browser")
	}
	bin := chromium(t)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c, err := startChromium(ctx, bin, filepath.Join(dir, "profile"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	for _, name := range []string{"healthy", "h03-send-loss"} {
		m, err := BuildMesh(meshDoc(t, name+".json"), "", "test")
		if err != nil {
			t.Fatal(err)
		}
		page := filepath.Join(dir, name+".html")
		f, err := os.Create(page)
		if err != nil {
			t.Fatal(err)
		}
		if err := WriteHTML(f, m); err != nil {
			t.Fatal(err)
		}
		f.Close()
		for _, dark := range []bool{false, true} {
			s, err := c.shoot(ctx, "file://"+page, 1280, 0, dark, false)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range s.Problems {
				t.Errorf("%s dark=%v: %s", name, dark, p)
			}
			if len(s.PNG) < 10000 || s.Height < 1000 {
				t.Errorf("%s: screenshot %d bytes of a page %d px tall: the page did not render", name, len(s.PNG), s.Height)
			}
			if out := os.Getenv("REPORT_PNG_DIR"); out != "" {
				png := "mesh-" + name + map[bool]string{false: ".png", true: "-dark.png"}[dark]
				if err := os.WriteFile(filepath.Join(out, png), s.PNG, 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
}
