package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/linerate/linerate/internal/doctor"
	"github.com/linerate/linerate/internal/explain"
)

// renderHTML builds and writes a dataset's report.
func renderHTML(t testing.TB, ds Dataset) []byte {
	t.Helper()
	m, err := Build(ds)
	if err != nil {
		t.Fatal(err)
	}
	return []byte(modelHTML(t, m))
}

// modelHTML writes a built report as HTML.
func modelHTML(t testing.TB, m *Model) string {
	t.Helper()
	var b strings.Builder
	if err := WriteHTML(&b, m); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// matches counts the matches of the regular expression re in page.
func matches(page, re string) int { return len(regexp.MustCompile(re).FindAllString(page, -1)) }

// htmlTable is a rendered table read back: its header and cell texts.
type htmlTable struct {
	head []string
	rows [][]string
}

// col is the index of the column whose header is h.
func (t htmlTable) col(tb testing.TB, h string) int {
	for i, x := range t.head {
		if x == h {
			return i
		}
	}
	tb.Fatalf("no column %q in %q", h, t.head)
	return -1
}

// parseTables reads every <table id=…> of a page back into text.
func parseTables(t testing.TB, page []byte) map[string]htmlTable {
	t.Helper()
	doc, err := html.Parse(bytes.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]htmlTable{}
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && n.Data == "table" {
			var tab htmlTable
			eachElement(n, func(c *html.Node) {
				switch c.Data {
				case "th":
					tab.head = append(tab.head, textOf(c))
				case "tr":
					var row []string
					for td := c.FirstChild; td != nil; td = td.NextSibling {
						if td.Type == html.ElementNode && td.Data == "td" {
							row = append(row, textOf(td))
						}
					}
					if len(row) > 0 {
						tab.rows = append(tab.rows, row)
					}
				}
			})
			out[attr(n, "id")] = tab
			return
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	return out
}

func eachElement(n *html.Node, f func(*html.Node)) {
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if c.Type == html.ElementNode {
			f(c)
			eachElement(c, f)
		}
	}
}

func textOf(n *html.Node) string {
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return strings.TrimSpace(b.String())
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

// rawFixture reads a recorded dataset as untyped JSON: the numbers the
// report is checked against come from the JSON itself, not from the Go
// types the report reads it into.
func rawFixture(t testing.TB, name string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name+".dataset.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// at walks a JSON value by keys and indices: at(v, "hosts", 0, "nics").
func at(t testing.TB, v any, path ...any) any {
	t.Helper()
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				t.Fatalf("at %v: not an object", path)
			}
			v = m[k]
		case int:
			a, ok := v.([]any)
			if !ok || k >= len(a) {
				t.Fatalf("at %v: not an array of more than %d", path, k)
			}
			v = a[k]
		}
	}
	return v
}

func list(t testing.TB, v any, path ...any) []any {
	t.Helper()
	a, _ := at(t, v, path...).([]any)
	return a
}

// f2 formats a JSON number as the report does (two decimals); null is "—".
func f2(v any) string {
	f, ok := v.(float64)
	if !ok {
		return "—"
	}
	return strconv.FormatFloat(f, 'f', 2, 64)
}

// TestNumbersMatchData parses the rendered tables back and checks every
// number taken from the doctor JSON, the bench JSON, the campaigns and
// perftest against the recorded JSON it came from.
func TestNumbersMatchData(t *testing.T) {
	t.Run("seed000", func(t *testing.T) {
		raw := rawFixture(t, "seed000")
		tabs := parseTables(t, renderHTML(t, loadFixture(t, "seed000")))
		checkDoctorTables(t, raw, tabs)
		checkCampaigns(t, raw, tabs)
		runs := tabs["runs"]
		gcol, idcol := runs.col(t, "Gbit/s"), runs.col(t, "Run")
		for i, r := range list(t, raw, "runs") {
			id := strconv.FormatFloat(at(t, r, "result", "run_id").(float64), 'f', 0, 64)
			bps := at(t, r, "result", "end", "sum_received", "bits_per_second").(float64)
			if runs.rows[i][idcol] != id || runs.rows[i][gcol] != f2(bps/1e9) {
				t.Errorf("runs row %d: %s at %s Gbit/s, JSON run %s at %s", i, runs.rows[i][idcol], runs.rows[i][gcol], id, f2(bps/1e9))
			}
		}
	})
	t.Run("seed002", func(t *testing.T) {
		raw := rawFixture(t, "seed002")
		page := renderHTML(t, loadFixture(t, "seed002"))
		tabs := parseTables(t, page)
		checkDoctorTables(t, raw, tabs)
		bw, lat := tabs["rdma-bandwidth"], tabs["rdma-latency"]
		var bi, li int
		for _, r := range list(t, raw, "perftest") {
			if l := at(t, r, "latency"); l != nil {
				row := lat.rows[li]
				li++
				for h, k := range map[string]string{"Min": "t_min_us", "Typical": "t_typical_us", "Average": "t_avg_us", "P99": "p99_us", "P99.9": "p99_9_us", "Max": "t_max_us"} {
					if got, want := row[lat.col(t, h)], f2(at(t, l, k)); got != want {
						t.Errorf("%s %s: %s, JSON %s", row[0], h, got, want)
					}
				}
				continue
			}
			row := bw.rows[bi]
			bi++
			if row[bw.col(t, "Peak (Gbit/s)")] != f2(at(t, r, "peak_gbps")) || row[bw.col(t, "Average (Gbit/s)")] != f2(at(t, r, "average_gbps")) {
				t.Errorf("%s: peak %s average %s, JSON %v %v", row[0], row[4], row[5], at(t, r, "peak_gbps"), at(t, r, "average_gbps"))
			}
		}
		// The RoCE baseline report wrote 62.5; the arithmetic done right is 63.02.
		if !bytes.Contains(page, []byte("8.0 GT/s × 8 lanes × 128/130 = 63.02 Gbit/s raw")) {
			t.Error("the PCIe arithmetic for 8.0 GT/s x8 is not 63.02 Gbit/s raw")
		}
	})
}

// checkDoctorTables compares the NIC, PCIe, topology and ceiling tables
// with the doctor reports in the JSON.
func checkDoctorTables(t *testing.T, raw map[string]any, tabs map[string]htmlTable) {
	t.Helper()
	nics, pcie := tabs["nics"], tabs["pcie"]
	ni, pi := 0, 0
	for _, h := range list(t, raw, "hosts") {
		host := at(t, h, "host", "hostname").(string)
		for _, n := range list(t, h, "nics") {
			row := nics.rows[ni]
			ni++
			if row[0] != host || row[1] != at(t, n, "interface") {
				t.Fatalf("nics row %d is %s %s, JSON %s %v", ni, row[0], row[1], host, at(t, n, "interface"))
			}
			if got, want := row[nics.col(t, "Link rate (Gbit/s)")], f2(at(t, n, "limits", "line_rate_gbps")); got != want {
				t.Errorf("%s %s link rate %s, JSON %s", host, row[1], got, want)
			}
			if got, want := row[nics.col(t, "MTU")], strconv.FormatFloat(at(t, n, "mtu").(float64), 'f', 0, 64); got != want {
				t.Errorf("%s %s MTU %s, JSON %s", host, row[1], got, want)
			}
			if at(t, n, "pcie") == nil {
				continue
			}
			prow := pcie.rows[pi]
			pi++
			if got, want := prow[pcie.col(t, "Raw (Gbit/s)")], f2(at(t, n, "pcie", "raw_gbps")); got != want {
				t.Errorf("%s %s PCIe raw %s, JSON %s", host, row[1], got, want)
			}
			if got, want := prow[pcie.col(t, "Effective (Gbit/s)")], f2(at(t, n, "pcie", "effective_gbps")); got != want {
				t.Errorf("%s %s PCIe effective %s, JSON %s", host, row[1], got, want)
			}
		}
	}
	if ni != len(nics.rows) || pi != len(pcie.rows) {
		t.Errorf("tables have %d NIC and %d PCIe rows, JSON %d and %d", len(nics.rows), len(pcie.rows), ni, pi)
	}
	stages := tabs["ceiling-stages"]
	first := list(t, raw, "hosts", 0, "nics")[0]
	if got, want := stages.rows[0][1], f2(at(t, first, "limits", "line_rate_gbps")); got != want {
		t.Errorf("ceiling line rate %s, doctor %s", got, want)
	}
	if got, want := stages.rows[1][1], f2(at(t, first, "limits", "pcie_gbps")); got != want {
		t.Errorf("ceiling PCIe %s, doctor %s", got, want)
	}
}

// checkCampaigns compares the per-point tables with the campaign JSON.
func checkCampaigns(t *testing.T, raw map[string]any, tabs map[string]htmlTable) {
	t.Helper()
	for ci, c := range list(t, raw, "campaigns") {
		tab := tabs[fmt.Sprintf("points-c%d", ci+1)]
		for pi, p := range list(t, c, "points") {
			row := tab.rows[pi]
			if got, want := row[tab.col(t, "Median (Gbit/s)")], f2(at(t, p, "median_gbps")); got != want {
				t.Errorf("campaign %d point %d median %s, JSON %s", ci+1, pi+1, got, want)
			}
			if got, want := row[tab.col(t, "Min–max (Gbit/s)")], f2(at(t, p, "min_gbps"))+"–"+f2(at(t, p, "max_gbps")); got != want {
				t.Errorf("campaign %d point %d range %s, JSON %s", ci+1, pi+1, got, want)
			}
			if ci95 := list(t, p, "ci95_gbps"); len(ci95) == 2 {
				if got, want := row[tab.col(t, "95% CI (Gbit/s)")], f2(ci95[0])+"–"+f2(ci95[1]); got != want {
					t.Errorf("campaign %d point %d CI %s, JSON %s", ci+1, pi+1, got, want)
				}
			}
		}
	}
}

// TestVerdictNumbers checks the verdict's "achieved X of Y" against the
// best campaign median and the doctor ceiling.
func TestVerdictNumbers(t *testing.T) {
	re := regexp.MustCompile(`^Achieved ([0-9.]+) of ([0-9.]+) Gbit/s`)
	for name, want := range map[string][2]func(map[string]any) string{
		"seed000": {
			func(raw map[string]any) string { return f2(maxOf(t, raw, "campaigns", "points", "median_gbps")) },
			func(raw map[string]any) string {
				return f2(at(t, raw, "hosts", 0, "nics", 0, "limits", "tcp_goodput_gbps"))
			},
		},
		"seed002": {
			func(raw map[string]any) string { return f2(maxOf(t, raw, "perftest", "", "average_gbps")) },
			func(raw map[string]any) string { return f2(at(t, raw, "hosts", 0, "nics", 0, "limits", "pcie_gbps")) },
		},
	} {
		m, err := Build(loadFixture(t, name))
		if err != nil {
			t.Fatal(err)
		}
		got := re.FindStringSubmatch(m.Verdict)
		raw := rawFixture(t, name)
		if got == nil || got[1] != want[0](raw) || got[2] != want[1](raw) {
			t.Errorf("%s verdict %q, want achieved %s of %s", name, m.Verdict, want[0](raw), want[1](raw))
		}
	}
}

// maxOf is the largest key over outer[].inner[] (or outer[] when inner is "").
func maxOf(t testing.TB, raw map[string]any, outer, inner, key string) float64 {
	best := math.Inf(-1)
	for _, o := range list(t, raw, outer) {
		items := []any{o}
		if inner != "" {
			items = list(t, o, inner)
		}
		for _, it := range items {
			if v, ok := at(t, it, key).(float64); ok && v > best {
				best = v
			}
		}
	}
	return best
}

// TestSelfContained checks that no src or href leaves the page and that
// the page has no script, stylesheet link, frame or CSS url().
func TestSelfContained(t *testing.T) {
	for _, name := range []string{"seed000", "seed002"} {
		checkSelfContained(t, name, renderHTML(t, loadFixture(t, name)))
	}
}

// checkSelfContained fails on anything in page that would load from
// outside it: a script, stylesheet link, frame, image, a src or href not
// within the page, a CSS url() or @import, any http(s) address.
func checkSelfContained(t *testing.T, name string, page []byte) {
	t.Helper()
	doc, err := html.Parse(bytes.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	eachElement(doc, func(n *html.Node) {
		switch n.Data {
		case "script", "link", "iframe", "object", "embed", "img":
			t.Errorf("%s: <%s> in the page", name, n.Data)
		}
		for _, a := range n.Attr {
			k := strings.ToLower(a.Key)
			if (k == "src" || k == "href" || strings.HasSuffix(k, ":href") || k == "action") && !strings.HasPrefix(a.Val, "#") {
				t.Errorf("%s: <%s %s=%q> points outside the page", name, n.Data, a.Key, a.Val)
			}
		}
	})
	if re := regexp.MustCompile(`(?i)url\(|@import|https?://`); re.Match(page) {
		t.Errorf("%s: page mentions %q", name, re.Find(page))
	}
}

// TestOmittedSections checks that a dataset with only a doctor report
// leaves out the sections it has no data for, each with a one-line note.
func TestOmittedSections(t *testing.T) {
	ds := loadFixture(t, "seed002")
	ds = Dataset{Hosts: ds.Hosts}
	page := string(renderHTML(t, ds))
	for _, id := range []string{"results", "variance", "tuning", "commands"} {
		if strings.Contains(page, `<section id="`+id+`"`) {
			t.Errorf("section %s shown without data", id)
		}
		if !regexp.MustCompile(`<p class="omitted" id="` + id + `">[^<\n]+</p>`).MatchString(page) {
			t.Errorf("section %s: no one-line note", id)
		}
	}
	for _, id := range []string{"hosts", "ceiling", "findings", "environment"} {
		if !strings.Contains(page, `<section id="`+id+`"`) {
			t.Errorf("section %s missing", id)
		}
	}
	m, err := Build(ds)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(m.Verdict, "Nothing was measured; the ceiling is 57.21 Gbit/s, set by PCIe") {
		t.Errorf("verdict %q", m.Verdict)
	}
}

func TestBuildErrors(t *testing.T) {
	seed := loadFixture(t, "seed000")
	dup := Dataset{Runs: []Run{seed.Runs[0], seed.Runs[0]}}
	missing := Dataset{Runs: seed.Runs[:1], Campaigns: seed.Campaigns[:1]}
	for name, ds := range map[string]Dataset{"empty": {}, "duplicate run": dup, "campaign names a missing run": missing} {
		if _, err := Build(ds); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if err := WriteHTML(&bytes.Buffer{}, nil); err == nil {
		t.Error("WriteHTML(nil): no error")
	}
}

// TestMarkdown checks that the Markdown carries the same tables and links
// each chart to an SVG file written next to it.
func TestMarkdown(t *testing.T) {
	m, err := Build(loadFixture(t, "seed000"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "lab.md")
	if err := WriteMarkdown(path, m); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	links := regexp.MustCompile(`!\[[^\]]*\]\(([^)]+)\)`).FindAllSubmatch(md, -1)
	charts := 0
	for _, s := range m.sections {
		for _, bl := range s.Blocks {
			if bl.Chart != nil {
				charts++
			}
			if bl.Table != nil {
				var b bytes.Buffer
				mdTable(&b, bl.Table)
				if !bytes.Contains(md, b.Bytes()) {
					t.Errorf("table %s missing from the Markdown", bl.Table.ID)
				}
			}
		}
	}
	if len(links) != charts || charts == 0 {
		t.Fatalf("%d chart links for %d charts", len(links), charts)
	}
	for _, l := range links {
		svg, err := os.ReadFile(filepath.Join(dir, string(l[1])))
		if err != nil {
			t.Errorf("linked chart: %v", err)
			continue
		}
		if !bytes.HasPrefix(svg, []byte(`<svg xmlns="http://www.w3.org/2000/svg"`)) || !bytes.Contains(svg, []byte("<style>")) {
			t.Errorf("%s is not a standalone SVG with its styles", l[1])
		}
	}
	if !strings.HasPrefix(string(md), "# 100 GbE lab") {
		t.Errorf("Markdown starts %q", string(md[:40]))
	}
}

// TestDeterministic renders twice and compares: no map order, time or
// float formatting may leak into the output.
func TestDeterministic(t *testing.T) {
	ds := loadFixture(t, "seed000")
	a, b := renderHTML(t, ds), renderHTML(t, ds)
	if !bytes.Equal(a, b) {
		t.Fatalf("two renders differ: %s", firstDiff(string(a), string(b)))
	}
}

// The doctor type is what the hosts section reads; keep the fixture's
// schema honest.
func TestFixtureSchemas(t *testing.T) {
	for _, name := range []string{"seed000", "seed002"} {
		for _, h := range loadFixture(t, name).Hosts {
			if h.Schema != doctor.Schema {
				t.Errorf("%s: host %s schema %q", name, h.Host.Hostname, h.Schema)
			}
		}
	}
}

// TestVerdictBranches checks the verdict for the other shapes of data:
// variance below the ceiling, nothing measured, no ceiling known.
func TestVerdictBranches(t *testing.T) {
	seed := loadFixture(t, "seed000")
	baseline := Dataset{Hosts: seed.Hosts, Runs: seed.Runs[:9], Campaigns: seed.Campaigns[:1]}
	noHosts := Dataset{Runs: seed.Runs[:9]}
	for name, tc := range map[string]struct {
		ds   Dataset
		want string
	}{
		"buckets below the ceiling": {baseline, "the limiting factor is placement, not the line rate ceiling: the runs fall into 3 buckets from 64.53 to 98.68 Gbit/s"},
		"no doctor report":          {noHosts, "Achieved 98.68 Gbit/s (run 3); no ceiling is known"},
	} {
		m, err := Build(tc.ds)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(m.Verdict, tc.want) {
			t.Errorf("%s: verdict %q, want it to contain %q", name, m.Verdict, tc.want)
		}
	}
}

// TestTuneMedianRounding: the tuning figures of the verdict and of the
// tuning section are rounded as bench rounds a campaign's median (to 3
// decimals, then shown with 2), so that the same runs never show as 5.01
// in one place and 5.00 in another.
func TestTuneMedianRounding(t *testing.T) {
	run := func(id int64, gbit float64, tune string) Run {
		r := Run{TuneID: tune}
		r.Result.RunID = id
		r.Result.Start.Client.Hostname, r.Result.Start.Server.Hostname = "a", "b"
		r.Result.End.Seconds = 5
		r.Result.End.SumReceived.BitsPerSecond = gbit * 1e9
		return r
	}
	ds := Dataset{
		Runs: []Run{run(1, 4.9, ""), run(2, 5.0050727, ""), run(3, 5.1, ""), run(4, 9, "j1"), run(5, 9.2, "j1"), run(6, 9.4, "j1")},
		Campaigns: []Campaign{{Summary: explain.Summary{Schema: CampaignSchema, Points: []Point{{Streams: 1, Placement: "auto", RunIDs: []int64{1, 2, 3},
			MedianGbps: 5.005, MinGbps: 4.9, MaxGbps: 5.1}}, Explanation: []string{}}}},
		Tunes: []TuneJournal{{ID: "j1", Host: "b", Changes: []TuneChange{{Kind: "sysctl", Target: "net.ipv4.tcp_rmem", Before: "1", After: "2"}}}},
	}
	m, err := Build(ds)
	if err != nil {
		t.Fatal(err)
	}
	if want := "took the median from " + gbps(5.005) + " to 9.20 Gbit/s"; !strings.Contains(m.Verdict, want) {
		t.Errorf("verdict %q lacks %q (the campaign table shows %s)", m.Verdict, want, gbps(5.005))
	}
	page := renderHTML(t, ds)
	if want := "Median throughput went from " + gbps(5.005) + " to"; !strings.Contains(string(page), want) {
		t.Errorf("the tuning section lacks %q", want)
	}
}
