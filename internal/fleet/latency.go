package fleet

import (
	"fmt"
	"slices"
)

// A latency run (Options.Latency) judges each test by its typical
// latency. Its tries carry the inverse of that latency as their figure
// (try.gbps), so that the rules of bandwidth (the slow limit from the
// best, re-tests, controls scaling the limit, blame) hold unchanged: a
// test above SlowFactor times the best latency is one whose inverse is
// below the best inverse over SlowFactor. What the document and the text
// show is the latency itself, in microseconds.

// bestTry is the try with the highest figure: the most Gbit/s, or the
// lowest latency.
func (o *outcome) bestTry() try {
	var b try
	for i, t := range o.tries {
		if i == 0 || t.gbps > b.gbps {
			b = t
		}
	}
	return b
}

// figure is what a direction shows of its best try: Gbit/s, or a latency
// run's typical latency in µs.
func (r *run) figure(o *outcome) float64 {
	if r.opts.Latency {
		return o.bestTry().us
	}
	return o.best()
}

// figText writes a figure with its unit.
func (r *run) figText(x float64) string {
	if r.opts.Latency {
		return usText(x) + " µs"
	}
	return gbpsText(x) + " Gbit/s"
}

// atText says how a host's tests went: "at 9.42 Gbit/s", "with 2.97 µs
// latency".
func (r *run) atText(x float64) string {
	if r.opts.Latency {
		return "with " + usText(x) + " µs latency"
	}
	return "at " + gbpsText(x) + " Gbit/s"
}

// usText writes microseconds with two decimals.
func usText(us float64) string { return fmt.Sprintf("%.2f", us) }

// latencyFigures fills a latency run's summary: the best and the median
// typical latency of the first tries, and the latency above which a test
// is slow.
func (r *run) latencyFigures(res *Result) {
	var us []float64
	for _, o := range r.res {
		if o.err == nil && len(o.tries) > 0 {
			us = append(us, o.tries[0].us)
		}
	}
	if len(us) == 0 {
		return
	}
	res.Metric, res.SlowFactor = MetricLatency, r.opts.SlowFactor
	res.ThresholdPct = round3(100 / r.opts.SlowFactor)
	best := slices.Min(us)
	res.BestUs, res.MedianUs = ptr(round3(best)), ptr(round3(median(us)))
	res.SlowAboveUs = ptr(round3(best * r.opts.SlowFactor))
}

// latencyOf is a direction's best typical latency; p99Of that try's 99th
// percentile (nil when the tool gave none).
func latencyOf(o *outcome) *float64 {
	if o == nil || o.err != nil || len(o.tries) == 0 {
		return nil
	}
	return ptr(round3(o.bestTry().us))
}

func p99Of(o *outcome) *float64 {
	if o == nil || o.err != nil || len(o.tries) == 0 || o.bestTry().p99 <= 0 {
		return nil
	}
	return ptr(round3(o.bestTry().p99))
}

// latencyTries turns a direction's tries into latencies: the figures
// (inverse latencies) go, the microseconds come.
func latencyTries(d *Direction, o *outcome, limit float64) {
	scaled := d.TriesSlowBelow != nil
	d.TriesGbps, d.TriesSlowBelow = []float64{}, nil
	if o == nil {
		return
	}
	for _, t := range o.tries {
		d.TriesUs = append(d.TriesUs, round3(t.us))
		d.TriesP99Us = append(d.TriesP99Us, round3(t.p99))
		if scaled {
			d.TriesSlowAboveUs = append(d.TriesSlowAboveUs, round3(1/t.limit(limit)))
		}
	}
}

// latencyRetest turns a re-test's figures into latencies, as
// latencyTries does.
func latencyRetest(rt *Retest, o *outcome, limit float64) {
	scaled := rt.SlowBelowGbps != nil
	rt.FirstGbps, rt.RetestsGbps, rt.SlowBelowGbps = 0, []float64{}, nil
	rt.FirstUs = ptr(round3(o.tries[0].us))
	for i, t := range o.tries {
		if t.role == kindControl {
			continue
		}
		if i > 0 {
			rt.RetestsUs = append(rt.RetestsUs, round3(t.us))
		}
		if scaled {
			rt.SlowAboveUs = append(rt.SlowAboveUs, round3(1/t.limit(limit)))
		}
	}
}
