package bench

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/linerate/linerate/internal/latency"
)

// SockperfResult is what `sockperf ping-pong` reported for its first
// server. Latency holds round trips in µs whatever sockperf printed:
// sockperf prints half the round trip ("latency") unless --full-rtt is
// given, and the halves are doubled here (every statistic it prints scales
// with its samples, so doubling is exact), so that a sockperf result and
// a native one compare like with like.
type SockperfResult struct {
	Latency latency.Summary `json:"latency"`
	// FullRTT says sockperf printed round trips (--full-rtt, "avg-rtt");
	// false: it printed one-way halves ("avg-latency"), doubled in Latency.
	FullRTT bool `json:"full_rtt"`
	// Printed are the figures as sockperf printed them, in its unit (µs,
	// halves unless FullRTT): "avg", "std-dev" and the other statistics
	// of its "====>" line, "min", "max", and each percentile by its
	// label ("99.990"), including those Latency leaves null for too few
	// samples and those it has no field for (75, 99.999).
	Printed map[string]float64 `json:"printed"`
	// Duplicated counts messages received twice (dropped and out of order
	// are in Latency).
	Duplicated int64 `json:"duplicated"`
	// Valid* is sockperf's "[Valid Duration]": the window measured, warm-up
	// (400 ms) and cool-down excluded.
	ValidSeconds     float64 `json:"valid_s"`
	SentMessages     int64   `json:"sent_messages"`
	ReceivedMessages int64   `json:"received_messages"`
	// Protocol ("TCP", "UDP"), Address and Port of the server.
	Protocol string `json:"protocol,omitempty"`
	Address  string `json:"address,omitempty"`
	Port     int    `json:"port,omitempty"`
	Version  string `json:"version,omitempty"`
	// Warnings are what the parser had to skip (statistics of further
	// servers).
	Warnings []string `json:"warnings,omitempty"`
}

var (
	ansiRE        = regexp.MustCompile(`\x1b\[[0-9;]*m`)
	spVersionRE   = regexp.MustCompile(`== version #(\S+) ==`)
	spServerRE    = regexp.MustCompile(`^\[\s*\d+\]\s+IP\s*=\s*(\S+)\s+PORT\s*=\s*(\d+)\s*#\s*(\w+)`)
	spValidRE     = regexp.MustCompile(`\[Valid Duration\] RunTime=([0-9.]+) sec; SentMessages=(\d+); ReceivedMessages=(\d+)`)
	spAvgRE       = regexp.MustCompile(`====> avg-(latency|rtt)=([0-9.]+)(?: \((.*)\))?`)
	spStatRE      = regexp.MustCompile(`([\w.%-]+(?: ci)?)=(\[[^\]]*\]|[0-9.eE+-]+)`)
	spErrorsRE    = regexp.MustCompile(`# dropped messages = (\d+); # duplicated messages = (\d+); # out-of-order messages = (\d+)`)
	spTotalRE     = regexp.MustCompile(`Total (\d+) observations`)
	spPercentRE   = regexp.MustCompile(`---> percentile\s+([0-9.]+)\s*=\s*([0-9.]+)`)
	spMinMaxRE    = regexp.MustCompile(`---> <(MIN|MAX)> observation\s*=\s*([0-9.]+)`)
	spFailureText = []string{"ERROR:", "No messages were received from the server", "No valid observations found"}
)

// ParseSockperf reads the output of `sockperf ping-pong` (stdout and
// stderr together, as sockperf 3.x prints them, ANSI colours and all).
// A run that measured nothing — a refused connection, a server that never
// answered — is an error quoting sockperf's own words.
func ParseSockperf(out []byte) (*SockperfResult, error) {
	r := &SockperfResult{Printed: map[string]float64{}}
	var total int64 = -1
	var sawAvg, sawServer bool
	var sawPercent bool
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(ansiRE.ReplaceAllString(sc.Text(), ""))
		line = strings.TrimSpace(strings.TrimPrefix(line, "sockperf:"))
		if strings.HasPrefix(line, "========= Printing statistics for Server No:") {
			if sawServer {
				r.Warnings = append(r.Warnings, "sockperf tested more than one server: only the first one's statistics are read")
				break
			}
			sawServer = true
			continue
		}
		if err := sockperfFailure(line); err != nil {
			return nil, err
		}
		if err := r.parseLine(line, &total, &sawAvg, &sawPercent); err != nil {
			return nil, err
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading sockperf output: %w", err)
	}
	if !sawAvg || !sawPercent {
		return nil, errors.New("no latency statistics in sockperf's output (is this `sockperf ping-pong`, and did it finish?)")
	}
	if total < 0 {
		total = r.ReceivedMessages // excerpts without the "Total N observations" line
	}
	if total <= 0 {
		return nil, errors.New("sockperf's output gives no sample count (neither \"Total N observations\" nor ReceivedMessages)")
	}
	r.fillLatency(total)
	return r, nil
}

func sockperfFailure(line string) error {
	for _, f := range spFailureText {
		if i := strings.Index(line, f); i >= 0 {
			msg := strings.ReplaceAll(line[i:], "`", "'")
			return fmt.Errorf("sockperf measured nothing: %s (is `sockperf server` running on the peer, with the same --tcp/UDP choice and port?)", msg)
		}
	}
	return nil
}

// parseLine reads the one line it recognises, if any.
func (r *SockperfResult) parseLine(line string, total *int64, sawAvg, sawPercent *bool) error {
	num := func(s string) float64 { v, _ := strconv.ParseFloat(s, 64); return v } // the regexps admit only numbers
	cnt := func(s string) (int64, error) {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil || v < 0 {
			return 0, fmt.Errorf("sockperf count %q: out of range", s)
		}
		return v, nil
	}
	var err error
	switch {
	case spVersionRE.MatchString(line):
		r.Version = spVersionRE.FindStringSubmatch(line)[1]
	case spServerRE.MatchString(line):
		m := spServerRE.FindStringSubmatch(line)
		r.Address, r.Protocol = m[1], m[3]
		r.Port, _ = strconv.Atoi(m[2])
	case spValidRE.MatchString(line):
		m := spValidRE.FindStringSubmatch(line)
		r.ValidSeconds = num(m[1])
		if r.SentMessages, err = cnt(m[2]); err == nil {
			r.ReceivedMessages, err = cnt(m[3])
		}
	case spAvgRE.MatchString(line):
		m := spAvgRE.FindStringSubmatch(line)
		*sawAvg = true
		r.FullRTT = m[1] == "rtt"
		r.Printed["avg"] = num(m[2])
		for _, kv := range spStatRE.FindAllStringSubmatch(m[3], -1) {
			if !strings.HasPrefix(kv[2], "[") {
				r.Printed[kv[1]] = num(kv[2])
			}
		}
	case spErrorsRE.MatchString(line):
		m := spErrorsRE.FindStringSubmatch(line)
		if r.Latency.Dropped, err = cnt(m[1]); err == nil {
			if r.Duplicated, err = cnt(m[2]); err == nil {
				r.Latency.OutOfOrder, err = cnt(m[3])
			}
		}
	case spTotalRE.MatchString(line):
		*total, err = cnt(spTotalRE.FindStringSubmatch(line)[1])
	case spPercentRE.MatchString(line):
		m := spPercentRE.FindStringSubmatch(line)
		*sawPercent = true
		r.Printed[m[1]] = num(m[2])
	case spMinMaxRE.MatchString(line):
		m := spMinMaxRE.FindStringSubmatch(line)
		r.Printed[strings.ToLower(m[1])] = num(m[2])
	}
	return err
}

// sockperfLabel is the label sockperf prints for a percentile of ours.
var sockperfLabel = map[string]string{
	"p25": "25.000", "p50": "50.000", "p90": "90.000", "p99": "99.000", "p99.9": "99.900", "p99.99": "99.990",
}

// fillLatency turns the printed figures into round trips in µs, leaving
// null (with a note) the percentiles n samples cannot support.
func (r *SockperfResult) fillLatency(n int64) {
	scale := 2.0
	if r.FullRTT {
		scale = 1
	}
	get := func(key string) *float64 {
		v, ok := r.Printed[key]
		if !ok {
			return nil
		}
		v *= scale
		return &v
	}
	l := &r.Latency
	l.Samples = n
	l.RTTUs.Min, l.RTTUs.Max, l.RTTUs.Mean, l.RTTUs.Stdev = get("min"), get("max"), get("avg"), get("std-dev")
	for _, p := range latency.Percentiles {
		label := sockperfLabel[p.Name]
		_, printed := r.Printed[label]
		switch {
		case !latency.Enough(p.PPM, n):
			note := fmt.Sprintf("too few samples for %s: %d", p.Name, n)
			if printed {
				note += " (sockperf printed its top samples under that name anyway)"
			}
			l.Notes = append(l.Notes, note)
		case printed:
			p.Set(&l.RTTUs, get(label))
		}
	}
	if !r.FullRTT {
		l.Notes = append(l.Notes, "sockperf printed one-way halves of the round trip; the figures here are round trips (doubled)")
	}
}
