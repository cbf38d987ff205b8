package bench

import (
	"bytes"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/linerate/linerate/internal/latency"
)

// logRow is one row of a sockperf log as the tests read it themselves.
type logRow struct{ tx, rtt float64 }

// logRows reads a captured --full-log file's rows by hand: every line of
// four comma-separated fields after the header.
func logRows(t *testing.T, b []byte) []logRow {
	t.Helper()
	var rows []logRow
	in := false
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Split(l, ",")
		switch {
		case strings.HasPrefix(l, "packet,"):
			in = true
		case in && len(f) == 4:
			tx, err1 := strconv.ParseFloat(strings.TrimSpace(f[1]), 64)
			rtt, err2 := strconv.ParseFloat(strings.TrimSpace(f[3]), 64)
			if err1 != nil || err2 != nil {
				t.Fatalf("row %q", l)
			}
			rows = append(rows, logRow{tx, rtt})
		}
	}
	return rows
}

// exactAt is the sample at sockperf's percentile index of the sorted xs.
func exactAt(xs []float64, ppm int64) float64 {
	i := latency.Index(ppm, int64(len(xs)))
	return xs[max(0, min(i, int64(len(xs)-1)))]
}

// TestParseSockperfLog reads sockperf 3.7's logs of every message
// (captured in the lab, testdata/README.md) in windows shorter and longer
// than what sockperf measured: the round trips kept are those sent in the
// window, counted into the interval they were sent in; the intervals are
// as many as the window holds and add up to the whole; percentiles are
// within the recorder's 0.4% of the exact samples, the ends exact.
func TestParseSockperfLog(t *testing.T) {
	for _, c := range []struct {
		file          string
		window, every time.Duration
		wantSeconds   float64 // 0: the window
		wantN         int
	}{
		{"sockperf-3.7-pp-tcp-mps1000-t4-full-log.csv", 3 * time.Second, time.Second, 0, 3},
		{"sockperf-3.7-pp-tcp-mps1000-t4-full-log.csv", 3 * time.Second, 500 * time.Millisecond, 0, 6},
		{"sockperf-3.7-pp-tcp-mps1000-t4-full-log.csv", 2500 * time.Millisecond, time.Second, 0, 3},
		// Longer than the 3.55 s sockperf measured: the window is what the
		// log holds, and no interval is made up past it.
		{"sockperf-3.7-pp-tcp-mps1000-t4-full-log.csv", 10 * time.Second, time.Second, 3.549, 4},
		{"sockperf-3.7-pp-udp-mps500-t2-full-log.csv", time.Second, 200 * time.Millisecond, 0, 5},
		{"sockperf-3.7-pp-udp-mps500-t2-full-log.csv", 5 * time.Second, time.Second, 1.548, 2},
	} {
		t.Run(c.file+"/"+c.window.String()+"/"+c.every.String(), func(t *testing.T) {
			b := readTestdata(t, c.file)
			lg, err := ParseSockperfLog(bytes.NewReader(b), c.window, c.every, 64)
			if err != nil {
				t.Fatal(err)
			}
			rows := logRows(t, b)
			var kept []float64
			per := map[int]int64{}
			for _, r := range rows {
				off := r.tx - rows[0].tx
				if off >= c.window.Seconds() {
					break
				}
				kept = append(kept, r.rtt)
				per[int(off/c.every.Seconds())]++
			}
			want := c.wantSeconds
			if want == 0 {
				want = c.window.Seconds()
			}
			if math.Abs(lg.Seconds-want) > 0.005 || len(lg.Intervals) != c.wantN {
				t.Fatalf("%.3f s in %d intervals, want %.3f s in %d", lg.Seconds, len(lg.Intervals), want, c.wantN)
			}
			if lg.Latency.Samples != int64(len(kept)) {
				t.Errorf("%d round trips, the log has %d in the window", lg.Latency.Samples, len(kept))
			}
			var sum int64
			for k, iv := range lg.Intervals {
				wantStart := float64(k) * c.every.Seconds()
				if math.Abs(iv.Start-wantStart) > 1e-9 || iv.End <= iv.Start || iv.End > lg.Seconds+1e-9 || iv.Latency == nil {
					t.Fatalf("interval %d: %g-%g %+v", k, iv.Start, iv.End, iv.Latency)
				}
				if iv.Latency.Samples != per[k] || iv.Sum.Bytes != uint64(per[k])*128 {
					t.Errorf("interval %d: %d round trips (%d bytes), the log has %d", k, iv.Latency.Samples, iv.Sum.Bytes, per[k])
				}
				sum += iv.Latency.Samples
			}
			if last := lg.Intervals[len(lg.Intervals)-1]; math.Abs(last.End-lg.Seconds) > 1e-9 || sum != lg.Latency.Samples {
				t.Errorf("the last interval ends at %g of %g; intervals hold %d of %d", last.End, lg.Seconds, sum, lg.Latency.Samples)
			}
			slices.Sort(kept)
			l := lg.Latency.RTTUs
			if *l.Min != kept[0] || math.Abs(*l.Max-kept[len(kept)-1]) > 1e-3 {
				t.Errorf("min %g max %g, want %g %g", *l.Min, *l.Max, kept[0], kept[len(kept)-1])
			}
			for _, p := range latency.Percentiles {
				v := p.Get(&l)
				if !latency.Enough(p.PPM, int64(len(kept))) {
					if v != nil {
						t.Errorf("%s = %g from %d samples", p.Name, *v, len(kept))
					}
					continue
				}
				if w := exactAt(kept, p.PPM); v == nil || math.Abs(*v-w) > 0.004*w+1e-3 {
					t.Errorf("%s = %v, the exact sample is %g", p.Name, v, w)
				}
			}
		})
	}
}

// TestParseSockperfLogRefuses: a log that is not one, or whose rows do
// not hold, is refused with the line that does not.
func TestParseSockperfLogRefuses(t *testing.T) {
	head := "------------------------------\n" + sockperfLogHeader + "\n"
	for _, c := range []struct{ name, in, want string }{
		{"empty", "", "no round trips"},
		{"no header", "0, 1.0, 1.1, 100000.0\n", "no round trips"},
		{"three fields", head + "0, 1.0, 1.1\n", "line 3"},
		{"not a number", head + "0, 1.0, x, 1.0\n", "field 3"},
		{"negative", head + "0, 1.0, 1.1, -4\n", "field 4"},
		{"received before sent", head + "0, 2.0, 1.0, 5.0\n", "received at"},
		{"an hour and more", head + "0, 1.0, 4000, 4e9\n", "a round trip of"},
		{"out of order", head + "0, 2.0, 2.0001, 100\n1, 1.5, 1.5001, 100\n", "not in the order sent"},
		{"across intervals backwards", head + "0, 1.0, 1.0001, 100\n1, 2.5, 2.5001, 100\n2, 1.2, 1.2001, 100\n", "not in the order sent"},
	} {
		if _, err := ParseSockperfLog(strings.NewReader(c.in), 3*time.Second, time.Second, 64); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	if _, err := ParseSockperfLog(strings.NewReader(head+"0, 1, 1.1, 1\n"), 0, time.Second, 64); err == nil {
		t.Error("a window of 0 accepted")
	}
}

func FuzzParseSockperfLog(f *testing.F) {
	seedFiles(f, "sockperf-3.7-pp-tcp-mps1000-t4-full-log")
	seedFiles(f, "sockperf-3.7-pp-udp-mps500-t2-full-log")
	f.Fuzz(func(t *testing.T, b []byte) {
		lg, err := ParseSockperfLog(bytes.NewReader(b), 2*time.Second, 700*time.Millisecond, 64)
		if err != nil {
			return
		}
		if len(lg.Intervals) < 1 || len(lg.Intervals) > 3 || lg.Seconds > 2 || lg.Seconds < 0 {
			t.Fatalf("%d intervals over %g s", len(lg.Intervals), lg.Seconds)
		}
		var sum int64
		prev := 0.0
		for _, iv := range lg.Intervals {
			if iv.Start != prev || iv.End < iv.Start {
				t.Fatalf("intervals not contiguous: %g-%g after %g", iv.Start, iv.End, prev)
			}
			prev = iv.End
			sum += iv.Latency.Samples
		}
		if sum != lg.Latency.Samples || lg.Latency.Samples < 1 {
			t.Fatalf("intervals hold %d of %d", sum, lg.Latency.Samples)
		}
	})
}
