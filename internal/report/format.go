package report

import (
	"math"
	"strconv"
	"strings"

	"github.com/linerate/linerate/internal/cpulist"
)

// Fixed formats: every number in the report goes through one of these, so
// that output is byte-for-byte deterministic and tests can parse it back.

// gbps formats a rate in Gbit/s with two decimals ("98.80"), the precision
// of doctor's JSON; "—" when unknown (zero, negative or not finite).
func gbps(v float64) string {
	if !known(v) {
		return "—"
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}

// pct formats a share as a percentage with one decimal ("87.8%").
func pct(part, whole float64) string {
	if !known(whole) || math.IsNaN(part) || math.IsInf(part, 0) {
		return "—"
	}
	return strconv.FormatFloat(100*part/whole, 'f', 1, 64) + "%"
}

// num formats v with prec decimals.
func num(v float64, prec int) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "—"
	}
	s := strconv.FormatFloat(v, 'f', prec, 64)
	if s == "-0" || strings.HasPrefix(s, "-0.") && strings.Trim(s[3:], "0") == "" {
		s = s[1:] // no negative zero in output
	}
	return s
}

// coord formats an SVG coordinate with one decimal: enough for a screen,
// and stable across platforms.
func coord(v float64) string { return num(v, 1) }

// known reports whether a rate is usable: positive and finite.
func known(v float64) bool { return v > 0 && !math.IsInf(v, 0) && !math.IsNaN(v) }

// cpus formats a CPU list the kernel's way ("0-5,7").
func cpus(c []int) string {
	if len(c) == 0 {
		return "—"
	}
	return cpulist.Format(c)
}

// orDash returns s, or "—" for an empty string.
func orDash(s string) string {
	if strings.TrimSpace(s) == "" {
		return "—"
	}
	return s
}

// idRanges formats run IDs as ranges ("1-9, 12").
func idRanges(ids []int64) string {
	if len(ids) == 0 {
		return "—"
	}
	var b strings.Builder
	for i := 0; i < len(ids); {
		j := i
		for j+1 < len(ids) && ids[j+1] == ids[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.FormatInt(ids[i], 10))
		if j > i {
			b.WriteString("-" + strconv.FormatInt(ids[j], 10))
		}
		i = j + 1
	}
	return b.String()
}

// plural returns "s" unless n is 1.
func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// clip shortens s to at most n characters, ending in "…" when cut, for
// labels that must fit a chart's space (the full text is in the tables).
func clip(s string, n int) string {
	r := []rune(s)
	if n < 2 || len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
