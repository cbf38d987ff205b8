package report

import (
	"fmt"
	"math"
	"strconv"

	"github.com/linerate/linerate/internal/latency"
	"github.com/linerate/linerate/internal/result"
)

// latencySection reports the ping-pong runs (bench --latency, native or
// sockperf) as a percentile table and chart, and the UDP runs (bench
// --udp) as iperf3 -u's figures.
func (b *builder) latencySection() (*section, error) {
	const id, title = "latency", "Latency and packet rate"
	var lat, udp []*Run
	for i := range b.ds.Runs {
		r := &b.ds.Runs[i]
		if r.Result.End.Latency != nil {
			lat = append(lat, r)
		}
		if r.Result.End.UDP != nil {
			udp = append(udp, r)
		}
	}
	if len(lat) == 0 && len(udp) == 0 {
		return omitted(id, title, "Latency: no ping-pong or UDP run in the data (linerate bench PEER --latency, or --udp -b RATE)."), nil
	}
	s := &section{ID: id, Title: title}
	if len(lat) > 0 {
		s.addText("Round trips of one message at a time, timed on the client from the write to the end of the read: what a request/response application waits for, twice the one-way latency. Warm-up and cool-down are not counted; percentiles are taken as sockperf takes them (the value at position ⌊0.5 + p·N⌋ − 1 of the N sorted samples). Where each end ran decides the figures more than anything: the placement is in the table.")
		s.addTable(latencyTable(lat))
		c, err := b.latencyChart("latency-percentiles", lat)
		if err != nil {
			return nil, err
		}
		s.addChart(c)
		over, err := b.latencyTimeChart("latency-over-time", lat)
		if err != nil {
			return nil, err
		}
		if over != nil {
			s.addChart(over)
		}
		for _, r := range lat {
			l := r.Result.End.Latency
			if l.GCTouched > 0 || l.Stalled || len(r.Result.End.Errors) > 0 {
				s.addText("Run %s: %s", runName(r), latencyNotes(r))
			}
		}
	}
	if len(udp) > 0 {
		s.addHeading("UDP at a target rate")
		s.addText("Datagrams sent at a target rate, counted at the receiver: loss, reordering and jitter (RFC 3550, as iperf3 computes it), and packets per second, where small packets find a host's per-packet limit long before its bit rate.")
		s.addTable(udpTable(udp))
	}
	return s, nil
}

// runName is how the tables and legends name a run: "203 (latcamp)",
// or "203" without a label.
func runName(r *Run) string {
	id := strconv.FormatInt(r.Result.RunID, 10)
	if r.Label != "" {
		// The ID first: runs of one label must not share a name (four
		// legend entries "latcamp tcp" told nothing apart).
		return id + " (" + r.Label + ")"
	}
	return id
}

// placementText is "client CPU 0 → server CPU 1".
func placementText(p result.Placement) string {
	return fmt.Sprintf("%s → %s", cpus(p.Client), cpus(p.Server))
}

// latencyTable lists each run's distribution in the order of the table of
// the ConnectX-5 RoCE baseline report (min, typical, average, p99, p99.9) with the rest beside it.
func latencyTable(runs []*Run) *table {
	t := &table{ID: "latency-table", Caption: "Round-trip time, µs",
		Head: []string{"Run", "Engine", "Protocol, size", "CPUs client → server", "Samples", "Min", "Typical (p50)", "Average", "p90", "p99", "p99.9", "p99.99", "Max", "Stdev", "Dropped"},
		Num:  []bool{false, false, false, false, true, true, true, true, true, true, true, true, true, true, true}}
	for _, r := range runs {
		l := r.Result.End.Latency
		u := l.RTTUs
		t.Rows = append(t.Rows, []string{runName(r), r.Result.Engine, fmt.Sprintf("%s, %d B", l.Protocol, l.Size), placementText(r.Result.Start.Placement),
			strconv.FormatInt(l.Samples, 10), usText(u.Min), usText(u.P50), usText(u.Mean), usText(u.P90), usText(u.P99), usText(u.P999), usText(u.P9999),
			usText(u.Max), usText(u.Stdev), strconv.FormatInt(l.Dropped, 10)})
	}
	return t
}

func usText(v *float64) string {
	if v == nil {
		return "–"
	}
	switch {
	case *v >= 1000:
		return strconv.FormatFloat(*v, 'f', 0, 64)
	case *v >= 100:
		return strconv.FormatFloat(*v, 'f', 1, 64)
	}
	return strconv.FormatFloat(*v, 'f', 2, 64)
}

// latencyNotes says what may have disturbed a run.
func latencyNotes(r *Run) string {
	l := r.Result.End.Latency
	out := ""
	if l.GCTouched > 0 {
		out += fmt.Sprintf("%d garbage collections overlapped %d samples. ", l.GCCycles, l.GCTouched)
	}
	for _, e := range r.Result.End.Errors {
		out += e + ". "
	}
	return out
}

// udpTable lists the UDP runs as iperf3 -u reports them.
func udpTable(runs []*Run) *table {
	t := &table{ID: "udp-table", Caption: "UDP at a target rate",
		Head: []string{"Run", "CPUs client → server", "Datagram", "Target", "Sent", "Packets/s", "Lost", "Jitter (ms)", "Out of order"},
		Num:  []bool{false, false, true, true, true, true, true, true, true}}
	for _, r := range runs {
		u := r.Result.End.UDP
		target := "unlimited"
		if u.TargetBitsPerSecond > 0 {
			target = bitsText(u.TargetBitsPerSecond)
		}
		t.Rows = append(t.Rows, []string{runName(r), placementText(r.Result.Start.Placement), fmt.Sprintf("%d B", u.Length), target,
			bitsText(u.BitsPerSecond), strconv.FormatFloat(u.PacketsPerSecond, 'f', 0, 64),
			fmt.Sprintf("%d (%.2g%%)", u.LostPackets, u.LostPercent), strconv.FormatFloat(u.JitterMS, 'f', 3, 64), strconv.FormatUint(u.OutOfOrder, 10)})
	}
	return t
}

func bitsText(v float64) string {
	switch {
	case v >= 1e9:
		return strconv.FormatFloat(v/1e9, 'f', 2, 64) + " Gbit/s"
	case v >= 1e6:
		return strconv.FormatFloat(v/1e6, 'f', 1, 64) + " Mbit/s"
	}
	return strconv.FormatFloat(v/1e3, 'f', 1, 64) + " kbit/s"
}

// latencyLevels are the chart's x positions: min, each percentile, max.
func latencyLevels(u latency.RTT) (names []string, vals []*float64) {
	names, vals = []string{"min"}, []*float64{u.Min}
	for _, p := range latency.Percentiles {
		names, vals = append(names, p.Name), append(vals, p.Get(&u))
	}
	return append(names, "max"), append(vals, u.Max)
}

// logMicrosFrame starts a latency chart: a frame whose y axis is round
// trips in µs on a logarithmic scale, whole powers of ten from below lo
// to above hi, drawn with its grid.
func logMicrosFrame(lo, hi float64) (*frame, *scene) {
	d0, d1 := math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
	if d1 == d0 {
		d1++
	}
	f := &frame{left: marginL, right: chartW - marginR, top: 36, bottom: chartH - marginB}
	f.y = scale{d0: d0, d1: d1, p0: f.bottom, p1: f.top}
	s := &scene{}
	for e := d0; e <= d1; e++ {
		y := f.y.at(e)
		s.line("grid", f.left, y, f.right, y)
		s.text("tick", f.left-labelGap, y+4, "end", strconv.FormatFloat(math.Pow(10, e), 'f', -1, 64))
	}
	s.line("axis", f.left, f.top, f.left, f.bottom)
	s.vtext("axis-title", 16, (f.top+f.bottom)/2, "round trip, µs (log)")
	return f, s
}

// latencyChart draws each run's round trip at each percentile level, on
// a logarithmic µs axis (a tail is often a hundred times the median),
// the levels evenly spaced as the "nines" they are.
func (b *builder) latencyChart(id string, runs []*Run) (*chart, error) {
	lo, hi := math.Inf(1), 0.0
	for _, r := range runs {
		_, vals := latencyLevels(r.Result.End.Latency.RTTUs)
		for _, v := range vals {
			if v != nil && *v > 0 {
				lo, hi = math.Min(lo, *v), math.Max(hi, *v)
			}
		}
	}
	if hi == 0 {
		return nil, nil
	}
	f, s := logMicrosFrame(lo, hi)
	names, _ := latencyLevels(latency.RTT{})
	slot := (f.right - f.left) / float64(len(names))
	xOf := func(i int) float64 { return f.left + slot*(float64(i)+0.5) }
	for i, n := range names {
		s.line("axis", xOf(i), f.bottom, xOf(i), f.bottom+tickLen)
		s.text("tick", xOf(i), f.bottom+tickLen+14, "middle", n)
	}
	f.drawXBase(s, "percentile")
	var leg []series
	for ri, r := range runs {
		class := seriesClass(ri)
		l := r.Result.End.Latency
		label := fmt.Sprintf("%s %s %s", runName(r), r.Result.Engine, l.Protocol)
		leg = append(leg, series{label: label, class: class})
		_, vals := latencyLevels(l.RTTUs)
		var xs, ys []float64
		var titles []string
		for i, v := range vals {
			if v == nil || *v <= 0 {
				continue
			}
			xs, ys = append(xs, xOf(i)), append(ys, f.y.at(math.Log10(*v)))
			titles = append(titles, fmt.Sprintf("%s: %s %s µs", label, names[i], usText(v)))
		}
		s.path("ln "+class, polyline(xs, ys), "")
		for i := range xs {
			s.circle("dot "+class, xs[i], ys[i], 4, titles[i])
		}
	}
	legend(s, f.left, 16, leg)
	return b.r.render(id, "Round trip at each percentile",
		"Each run's round-trip time at min, p25, p50, p90, p99, p99.9, p99.99 and max, on a logarithmic scale; a missing dot is a percentile the run had too few samples for.",
		chartW, chartH, s)
}

// latencyTimeChart draws each native run's p50 (solid) and p99 (thin) per
// measured interval over time, on a logarithmic µs axis: where a tail
// came from, a burst in one second or the whole run. Runs whose intervals
// carry no percentiles (sockperf, netperf, stored before they did) are
// left out; nil when none has them.
func (b *builder) latencyTimeChart(id string, runs []*Run) (*chart, error) {
	lo, hi, xMax := math.Inf(1), 0.0, 0.0
	var drawn []*Run
	for _, r := range runs {
		has := false
		for _, iv := range r.Result.Intervals {
			if iv.Omitted || iv.Latency == nil {
				continue
			}
			for _, v := range []*float64{iv.Latency.RTTUs.P50, iv.Latency.RTTUs.P99} {
				if v != nil && *v > 0 {
					lo, hi, has = math.Min(lo, *v), math.Max(hi, *v), true
				}
			}
			xMax = math.Max(xMax, iv.End)
		}
		if has {
			drawn = append(drawn, r)
		}
	}
	if len(drawn) == 0 || xMax == 0 {
		return nil, nil
	}
	f, s := logMicrosFrame(lo, hi)
	_, xHi, xTicks := niceTicks(0, xMax, 8)
	f.x = scale{d0: 0, d1: xHi, p0: f.left, p1: f.right}
	f.drawXNumeric(s, xTicks, "time since the end of the warm-up (s)")
	var leg []series
	for ri, r := range drawn {
		class := seriesClass(ri)
		leg = append(leg, series{label: fmt.Sprintf("%s %s", runName(r), r.Result.End.Latency.Protocol), class: class})
		for _, lvl := range []struct {
			name, style string
			get         func(latency.RTT) *float64
		}{{"p50", "", func(u latency.RTT) *float64 { return u.P50 }}, {"p99", " thin", func(u latency.RTT) *float64 { return u.P99 }}} {
			var xs, ys []float64
			for _, iv := range r.Result.Intervals {
				if iv.Omitted || iv.Latency == nil {
					continue
				}
				if v := lvl.get(iv.Latency.RTTUs); v != nil && *v > 0 {
					xs, ys = append(xs, f.x.at((iv.Start+iv.End)/2)), append(ys, f.y.at(math.Log10(*v)))
				}
			}
			s.path("ln "+class+lvl.style, polyline(xs, ys), fmt.Sprintf("run %s: %s per interval", runName(r), lvl.name))
		}
	}
	legend(s, f.left, 16, leg)
	s.text("legend muted", f.right, 16, "end", "thick: p50, thin: p99")
	return b.r.render(id, "Round trip per interval",
		"Each native run's p50 (thick line) and p99 (thin line) round trip in every measured interval, on a logarithmic scale: a tail from one burst shows as one peak, a steady one as a line.",
		chartW, chartH, s)
}
