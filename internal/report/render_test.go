package report

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// chromium finds a headless-capable Chromium. Without one the render test
// skips, except under CI=true, where it fails: CI must render.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("no chromium in PATH (apt-get install -y chromium); CI=true requires the render test")
	}
	t.Skip("no chromium in PATH (apt-get install -y chromium)")
	return ""
}

// TestChromiumRender renders the home lab's report in headless Chromium,
// light, dark and as printed, and fails on any console message, exception or error
// log entry. With -update it writes docs/img/report-seed000.png and
// docs/img/report-seed000-dark.png (the top of the page, as the README
// shows it); TestLabRunReport writes docs/img/report.png.
func TestChromiumRender(t *testing.T) {
	if testing.Short() {
		// CI: runs the suite without -short, so this runs there.
		t.Skip("starts a browser")
	}
	bin := chromium(t)
	dir := t.TempDir()
	page := filepath.Join(dir, "report.html")
	writeReport(t, loadFixture(t, "seed000"), page)
	probe := filepath.Join(dir, "probe.html")
	if err := os.WriteFile(probe, []byte(`<!DOCTYPE html><title>p</title><script>console.error("probe")</script>`), 0o644); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c, err := startChromium(ctx, bin, filepath.Join(dir, "profile"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()

	// The detector must see a console error, or its silence proves nothing.
	if s, err := c.shoot(ctx, "file://"+probe, 400, 300, false, false); err != nil {
		t.Fatal(err)
	} else if len(s.Problems) == 0 {
		t.Fatal("probe page's console.error was not seen: the console check is blind")
	}

	for _, mode := range []struct {
		name        string
		dark, print bool
		png         string
	}{{"light", false, false, "report.png"}, {"dark", true, false, "report-dark.png"}, {"print from dark mode", true, true, "report-print.png"}} {
		s, err := c.shoot(ctx, "file://"+page, 1280, 0, mode.dark, mode.print)
		if err != nil {
			t.Fatalf("%s: %v", mode.name, err)
		}
		for _, p := range s.Problems {
			t.Errorf("%s: %s", mode.name, p)
		}
		if len(s.PNG) < 10000 || s.Height < 2000 {
			t.Errorf("%s: screenshot %d bytes of a page %d px tall: the page did not render", mode.name, len(s.PNG), s.Height)
		}
		full := filepath.Join(dir, mode.png)
		if err := os.WriteFile(full, s.PNG, 0o644); err != nil {
			t.Fatal(err)
		}
		if out := os.Getenv("REPORT_PNG_DIR"); out != "" {
			// For a person to look at the whole page: REPORT_PNG_DIR=/tmp/x go test -run Chromium
			if err := os.WriteFile(filepath.Join(out, mode.png), s.PNG, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if *update && !mode.print {
			top, err := c.shoot(ctx, "file://"+page, 1280, docsPNGHeight, mode.dark, false)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join("..", "..", "docs", "img", strings.Replace(mode.png, "report", "report-seed000", 1)), top.PNG, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// docsPNGHeight is how much of the page docs/img shows: the verdict, the
// hosts and the ceiling waterfall.
const docsPNGHeight = 4000

// writeReport builds a dataset's report and writes it as HTML to path.
func writeReport(t testing.TB, ds Dataset, path string) {
	t.Helper()
	m, err := Build(ds)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := WriteHTML(f, m); err != nil {
		t.Fatal(err)
	}
}
