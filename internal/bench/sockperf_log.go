package bench

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/linerate/linerate/internal/latency"
	"github.com/linerate/linerate/internal/result"
)

// SockperfLog is the measured window of a `sockperf ping-pong
// --full-log` file: the round trips sent in the first Window seconds
// after sockperf's warm-up, as a whole and per interval. sockperf prints
// only a summary of its whole window; its log of every message is what
// gives per-interval figures, and a window of exactly -t seconds.
type SockperfLog struct {
	// Latency is every round trip sent in the window.
	Latency latency.Summary
	// Seconds is how long the window is: the one asked for, or less when
	// the log ends sooner (sockperf stopped early).
	Seconds float64
	// Intervals are the window's intervals, each with the round trips
	// sent in it: as many as the window holds, the last one ending with it.
	Intervals []result.Interval
}

// sockperfLogHeader is the line above the log's rows (sockperf 3.x).
const sockperfLogHeader = "packet, txTime(sec), rxTime(sec), rtt(usec)"

// maxSockperfLine bounds a line of the log: a row is some 45 bytes.
const maxSockperfLine = 4 << 10

// maxSockperfRTT bounds a round trip (µs) the log may give: an hour.
const maxSockperfRTT = 3600e6

// ParseSockperfLog reads sockperf's --full-log file (its statistics, then
// a row per round trip: "packet, txTime(sec), rxTime(sec), rtt(usec)",
// in the order sent) and keeps the round trips sent in the first window
// of time after the first one, in intervals of every. size is the
// message's bytes (an interval's bytes are its round trips' two
// messages each, as the native engine counts them). Rows past the window
// are not read; memory is two histograms whatever the log's length.
func ParseSockperfLog(r io.Reader, window, every time.Duration, size int) (*SockperfLog, error) {
	if window <= 0 || every <= 0 {
		return nil, fmt.Errorf("sockperf log: window %s in intervals of %s: both must be positive", window, every)
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 256), maxSockperfLine)
	line, inRows := 0, false
	var (
		all, cur latency.Recorder
		t0, last float64 // seconds on sockperf's clock: the first send, the latest send or receipt
		k        int     // the current interval
		rows     int64
		past     bool // a row was sent after the window
	)
	lg := &SockperfLog{Intervals: []result.Interval{}}
	win, step := window.Seconds(), every.Seconds()
	n := int((window + every - 1) / every) // as many intervals as the window holds
	closeTo := func(upTo int, end float64) {
		for ; k < upTo; k++ {
			lg.Intervals = append(lg.Intervals, sockperfInterval(k, every, end, &cur, size))
			cur.Reset()
		}
	}
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		switch {
		case !inRows:
			inRows = text == sockperfLogHeader
			continue
		case strings.HasPrefix(text, "---"):
			inRows = false
			continue
		case text == "":
			continue
		}
		tx, rx, rtt, err := sockperfRow(text)
		if err != nil {
			return nil, fmt.Errorf("sockperf log line %d: %w", line, err)
		}
		if rows == 0 {
			t0 = tx
		}
		rows++
		off := tx - t0
		if off < 0 {
			return nil, fmt.Errorf("sockperf log line %d: sent %.6f s before the first row: not in the order sent", line, -off)
		}
		if off >= win {
			past = true
			break
		}
		i := min(int(off/step), n-1)
		if i < k {
			return nil, fmt.Errorf("sockperf log line %d: not in the order sent", line)
		}
		closeTo(i, win)
		d := time.Duration(math.Round(rtt * 1e3))
		cur.Record(d)
		all.Record(d)
		last = max(last, off, rx-t0)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading sockperf's log: %w", err)
	}
	if rows == 0 {
		return nil, errors.New("sockperf's log has no round trips (no \"" + sockperfLogHeader + "\" rows)")
	}
	lg.Seconds = win
	if !past {
		lg.Seconds = min(last, win)
		// The interval being filled is made whatever the rounding.
		n = max(k+1, int(math.Ceil(lg.Seconds/step-1e-9)))
	}
	closeTo(n, lg.Seconds)
	lg.Latency = all.Summary()
	return lg, nil
}

// sockperfRow reads one row: "12, 2.404170960, 2.404274493, 103.533".
func sockperfRow(text string) (tx, rx, rtt float64, err error) {
	f := strings.Split(text, ",")
	if len(f) != 4 {
		return 0, 0, 0, fmt.Errorf("%q: want 4 fields (packet, txTime, rxTime, rtt)", trimQuote(text))
	}
	var v [4]float64
	for i, s := range f {
		if v[i], err = strconv.ParseFloat(strings.TrimSpace(s), 64); err != nil || math.IsNaN(v[i]) || math.IsInf(v[i], 0) || v[i] < 0 {
			return 0, 0, 0, fmt.Errorf("%q: field %d is not a number ≥ 0", trimQuote(text), i+1)
		}
	}
	if v[3] > maxSockperfRTT || v[2] < v[1] {
		return 0, 0, 0, fmt.Errorf("%q: a round trip of %g µs, received at %g s after its send at %g s", trimQuote(text), v[3], v[2], v[1])
	}
	return v[1], v[2], v[3], nil
}

// trimQuote bounds a quoted row in an error.
func trimQuote(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

// sockperfInterval is interval k of every, ending at end at the latest:
// the round trips sent in it (rec), their two messages' bytes and their
// distribution.
func sockperfInterval(k int, every time.Duration, end float64, rec *latency.Recorder, size int) result.Interval {
	from := time.Duration(k) * every
	iv := result.Interval{Start: from.Seconds(), End: min((from + every).Seconds(), end), Streams: []result.StreamInterval{}}
	n := rec.Count()
	iv.Sum.Bytes = uint64(n) * uint64(2*size)
	if d := iv.End - iv.Start; d > 0 {
		iv.Sum.BitsPerSecond = float64(iv.Sum.Bytes) * 8 / d
	}
	s := rec.Summary()
	iv.Latency = &result.IntervalLatency{Samples: s.Samples, RTTUs: s.RTTUs}
	return iv
}
