package bench

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/linerate/linerate/internal/result"
)

// mibPerGbit converts perftest's MB/sec (2^20 bytes per second: perftest's
// MB is a MiB) to Gbit/s: 1 Gbit/s = 10^9 / 8 / 2^20 ≈ 119.2 MB/sec.
const mibPerGbit = 1e9 / 8 / (1 << 20)

// ParsePerftest reads a perftest tool's output: its stdout (the results
// table, with or without --report_gbits), or the --out_json file, quoted
// (perftest since PR #239, January 2024) or with the bare keys and values
// of earlier versions.
func ParsePerftest(out []byte) (*result.Perftest, error) {
	if t := bytes.TrimSpace(out); len(t) > 0 && t[0] == '{' {
		return parsePerftestJSON(t)
	}
	return parsePerftestText(out)
}

// perftestColumn is a results-table column: the name pattern that finds
// it in the header line and where its value goes.
type perftestColumn struct {
	re  *regexp.Regexp
	set func(r *result.Perftest, v float64, unit string)
}

func ptr(v float64) *float64 { return &v }

func perftestColumns() []perftestColumn {
	bw := func(dst func(*result.Perftest) **float64) func(*result.Perftest, float64, string) {
		return func(r *result.Perftest, v float64, unit string) {
			if !strings.HasPrefix(unit, "Gb") {
				v /= mibPerGbit // MB/sec or MiB/sec
			}
			*dst(r) = ptr(v)
		}
	}
	lat := func(dst func(*result.Perftest) **float64) func(*result.Perftest, float64, string) {
		return func(r *result.Perftest, v float64, _ string) { *dst(r) = ptr(v) }
	}
	return []perftestColumn{
		{regexp.MustCompile(`#bytes`), func(r *result.Perftest, v float64, _ string) { r.MsgBytes = int64(v) }},
		{regexp.MustCompile(`#iterations`), func(r *result.Perftest, v float64, _ string) { r.Iterations = int64(v) }},
		{regexp.MustCompile(`BW peak\[([^\]]*)\]`), bw(func(r *result.Perftest) **float64 { return &r.BWPeakGbps })},
		{regexp.MustCompile(`BW average\[([^\]]*)\]`), bw(func(r *result.Perftest) **float64 { return &r.BWAverageGbps })},
		{regexp.MustCompile(`MsgRate\[[^\]]*\]`), lat(func(r *result.Perftest) **float64 { return &r.MsgRateMpps })},
		{regexp.MustCompile(`t_min\[`), lat(func(r *result.Perftest) **float64 { return &r.TMinUs })},
		{regexp.MustCompile(`t_max\[`), lat(func(r *result.Perftest) **float64 { return &r.TMaxUs })},
		{regexp.MustCompile(`t_typical\[`), lat(func(r *result.Perftest) **float64 { return &r.TTypicalUs })},
		{regexp.MustCompile(`t_avg\[`), lat(func(r *result.Perftest) **float64 { return &r.TAvgUs })},
		{regexp.MustCompile(`t_stdev\[`), lat(func(r *result.Perftest) **float64 { return &r.TStdevUs })},
		{regexp.MustCompile(`(^|\s)99%( percentile)?\[`), lat(func(r *result.Perftest) **float64 { return &r.P99Us })},
		{regexp.MustCompile(`99\.9%( percentile)?\[`), lat(func(r *result.Perftest) **float64 { return &r.P999Us })},
	}
}

// placed is a header column found at a position.
type placed struct {
	at   int
	col  perftestColumn
	unit string
}

// parsePerftestText finds the results header ("#bytes #iterations …")
// and the first row of numbers under it; -a prints one row per size, of
// which the last (the largest message) is kept.
func parsePerftestText(out []byte) (*result.Perftest, error) {
	lines := strings.Split(string(out), "\n")
	r := &result.Perftest{}
	r.Test, r.Device, r.LinkType = perftestHeaderFacts(lines)
	for i, line := range lines {
		if !strings.Contains(line, "#bytes") {
			continue
		}
		cols := headerOrder(line)
		var row []string
		for _, next := range lines[i+1:] {
			f := strings.Fields(next)
			if len(f) >= len(cols) && isNumber(f[0]) {
				row = f // keep going: -a prints a row per message size
			} else if len(row) > 0 {
				break
			}
		}
		if row == nil {
			return nil, fmt.Errorf("perftest output has a results header but no results under it (did the test fail? %s)", lastLine(lines))
		}
		for j, c := range cols {
			v, err := strconv.ParseFloat(row[j], 64)
			if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("perftest results row %q: column %d is not a number", strings.Join(row, " "), j+1)
			}
			c.col.set(r, v, c.unit)
		}
		return r, nil
	}
	return nil, fmt.Errorf("no perftest results table in the output (%s)", lastLine(lines))
}

// headerOrder returns the columns a header line names, in order.
func headerOrder(header string) []placed {
	var cols []placed
	for _, c := range perftestColumns() {
		m := c.re.FindStringSubmatchIndex(header)
		if m == nil {
			continue
		}
		unit := ""
		if len(m) >= 4 && m[2] >= 0 {
			unit = header[m[2]:m[3]]
		}
		cols = append(cols, placed{at: m[0], col: c, unit: unit})
	}
	sort.Slice(cols, func(i, j int) bool { return cols[i].at < cols[j].at })
	return cols
}

func isNumber(s string) bool {
	_, err := strconv.ParseFloat(s, 64)
	return err == nil
}

// perftestHeaderFacts reads the banner perftest prints before a test:
// the test's title line and "Device : X", "Link type : Y".
func perftestHeaderFacts(lines []string) (test, device, link string) {
	for i, l := range lines {
		t := strings.TrimSpace(l)
		if strings.HasSuffix(t, " Test") && test == "" && i+1 < len(lines) && strings.Contains(lines[i+1], ":") {
			test = t
		}
		if v, ok := bannerValue(l, "Device"); ok && device == "" {
			device = v
		}
		if v, ok := bannerValue(l, "Link type"); ok && link == "" {
			link = v
		}
	}
	return test, device, link
}

// bannerValue finds "Key : value" in a banner line, which may hold two
// such pairs separated by tabs.
func bannerValue(line, key string) (string, bool) {
	for _, part := range strings.Split(line, "\t") {
		k, v, ok := strings.Cut(part, ":")
		if ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v), true
		}
	}
	return "", false
}

func lastLine(lines []string) string {
	for i := len(lines) - 1; i >= 0; i-- {
		if t := strings.TrimSpace(lines[i]); t != "" {
			if len(t) > 200 {
				t = t[:200]
			}
			return "last line: " + t
		}
	}
	return "it printed nothing"
}

// parsePerftestJSON reads --out_json. Keys are as perftest writes them:
// results.BW_peak, BW_average (in the unit the run reported: Gb/s with
// --report_gbits, else MB/s — test_info does not say which, so the
// caller's --report_gbits decides; linerate always passes it), MsgRate,
// t_min … percentile_99.9.
func parsePerftestJSON(b []byte) (*result.Perftest, error) {
	fixed, err := quoteBareJSON(b)
	if err != nil {
		return nil, fmt.Errorf("perftest --out_json: %w", err)
	}
	var doc struct {
		TestInfo map[string]any `json:"test_info"`
		Results  map[string]any `json:"results"`
	}
	if err := json.Unmarshal(fixed, &doc); err != nil {
		return nil, fmt.Errorf("perftest --out_json is not JSON even with bare keys quoted: %w", err)
	}
	if doc.Results == nil {
		return nil, errors.New("perftest --out_json has no \"results\" object")
	}
	r := &result.Perftest{Test: str(doc.TestInfo["test"]), Device: str(doc.TestInfo["Device"]), LinkType: str(doc.TestInfo["Link_type"])}
	num := func(k string) *float64 {
		if v, ok := doc.Results[k].(float64); ok {
			return ptr(v)
		}
		return nil
	}
	if v := num("MsgSize"); v != nil {
		r.MsgBytes = int64(*v)
	}
	if v := num("n_iterations"); v != nil {
		r.Iterations = int64(*v)
	}
	r.BWPeakGbps, r.BWAverageGbps, r.MsgRateMpps = num("BW_peak"), num("BW_average"), num("MsgRate")
	r.TMinUs, r.TMaxUs, r.TTypicalUs, r.TAvgUs = num("t_min"), num("t_max"), num("t_typical"), num("t_avg")
	r.TStdevUs, r.P99Us, r.P999Us = num("t_stdev"), num("percentile_99"), num("percentile_99.9")
	if r.BWAverageGbps == nil && r.TTypicalUs == nil && r.TAvgUs == nil {
		return nil, errors.New("perftest --out_json results hold neither a bandwidth nor a latency")
	}
	return r, nil
}

func str(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	}
	return ""
}
