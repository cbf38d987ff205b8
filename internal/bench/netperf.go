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

// NetperfResult is what a netperf omni test (TCP_RR, UDP_RR, …) printed
// with output selectors: -O (columns for people), -o (CSV) or -k
// (KEY=value lines). Latency holds netperf's figures, which are whole
// round trips in µs already.
//
// netperf's latency figures are not sockperf's: its timer counts whole
// µs, its percentiles come from a histogram with ten buckets per decade
// step of 1 µs (so 182 µs means "180 to 190") and take the sample at
// int(p·N), and its stddev divides by N. Samples is 0: netperf does not
// print how many transactions it timed.
type NetperfResult struct {
	Latency latency.Summary `json:"latency"`
	// Test is "TCP_RR", "UDP_RR", "TCP_CRR"… from the banner; "" when -P 0
	// left the banner out.
	Test string `json:"test,omitempty"`
	// Form is the output form read: "columns" (-O), "csv" (-o) or
	// "keyval" (-k).
	Form string `json:"form"`
	// TransactionRate is transactions per second (TRANSACTION_RATE), nil
	// when not selected.
	TransactionRate *float64 `json:"transaction_rate,omitempty"`
	// Fields are every selected output by netperf's selector name
	// ("MIN_LATENCY"), or by its column title where the name is not known
	// here, as printed.
	Fields map[string]string `json:"fields"`
}

// netperfTitles maps the column titles netperf prints (the four header
// lines of set_output_elt in nettest_omni.c, joined by spaces) to the
// selector names -k prints.
var netperfTitles = map[string]string{
	"Minimum Latency Microseconds":         "MIN_LATENCY",
	"Maximum Latency Microseconds":         "MAX_LATENCY",
	"50th Percentile Latency Microseconds": "P50_LATENCY",
	"90th Percentile Latency Microseconds": "P90_LATENCY",
	"99th Percentile Latency Microseconds": "P99_LATENCY",
	"Mean Latency Microseconds":            "MEAN_LATENCY",
	"Stddev Latency Microseconds":          "STDDEV_LATENCY",
	"Transaction Rate Tran/s":              "TRANSACTION_RATE",
	"Round Trip Latency usec/tran":         "RT_LATENCY",
	"Elapsed Time (sec)":                   "ELAPSED_TIME",
	"Throughput":                           "THROUGHPUT",
	"Throughput Units":                     "THROUGHPUT_UNITS",
	"Protocol":                             "PROTOCOL",
	"Direction":                            "DIRECTION",
	"Local CPU Util %":                     "LOCAL_CPU_UTIL",
	"Remote CPU Util %":                    "REMOTE_CPU_UTIL",
	"Request Size Bytes":                   "REQUEST_SIZE",
	"Response Size Bytes":                  "RESPONSE_SIZE",
	"Initial Burst Requests":               "BURST_SIZE",
	"Local Transport Retransmissions":      "LOCAL_TRANSPORT_RETRANS",
	"Local CPU Bind":                       "LOCAL_CPU_BIND",
	"Remote CPU Bind":                      "REMOTE_CPU_BIND",
}

var (
	npBannerRE = regexp.MustCompile(`^(?:MIGRATED )?(\w+) (REQUEST/RESPONSE|Connect/Request/Response|CONNECT/REQUEST/RESPONSE) TEST`)
	npKeyValRE = regexp.MustCompile(`^([A-Z][A-Z0-9_]*)=(.*)$`)
)

// netperfBanner maps the banner's test phrase to the test name.
var netperfBanner = map[string]string{"REQUEST/RESPONSE": "RR", "Connect/Request/Response": "CRR", "CONNECT/REQUEST/RESPONSE": "CRR"}

// ParseNetperf reads netperf's output. selectors are the output selectors
// the command gave (-o/-O/-k "min_latency,mean_latency,…"), in order; they
// are needed only when netperf printed values without titles (-P 0 with
// -o or -O) and may be nil otherwise.
func ParseNetperf(out []byte, selectors []string) (*NetperfResult, error) {
	lines, test, err := netperfLines(out)
	if err != nil {
		return nil, err
	}
	r := &NetperfResult{Test: test, Fields: map[string]string{}}
	switch {
	case npKeyValRE.MatchString(lines[0]):
		r.Form = "keyval"
		for _, l := range lines {
			if m := npKeyValRE.FindStringSubmatch(l); m != nil {
				r.Fields[m[1]] = strings.TrimSpace(m[2])
			}
		}
	case strings.Contains(lines[0], ","):
		r.Form = "csv"
		err = r.table(lines, selectors, func(s string) []string { return strings.Split(s, ",") })
	default:
		r.Form = "columns"
		err = r.columns(lines, selectors)
	}
	if err != nil {
		return nil, err
	}
	if err := r.fillLatency(); err != nil {
		return nil, err
	}
	return r, nil
}

// netperfLines returns the non-empty lines after the banner, and the test
// the banner names. An output that is all complaint is netperf's error.
func netperfLines(out []byte) ([]string, string, error) {
	var lines []string
	test := ""
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		l := strings.TrimRight(sc.Text(), " \t\r")
		if m := npBannerRE.FindStringSubmatch(l); m != nil {
			test = strings.ToUpper(m[1]) + "_" + netperfBanner[m[2]]
			continue
		}
		if strings.HasPrefix(l, "establish control") || strings.HasPrefix(l, "establish_control") || strings.HasPrefix(l, "netperf: ") {
			return nil, "", fmt.Errorf("netperf measured nothing: %s (is netserver running on the peer, at that port?)", strings.TrimSpace(l))
		}
		if strings.TrimSpace(l) != "" || len(lines) > 0 {
			lines = append(lines, l)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, "", fmt.Errorf("reading netperf output: %w", err)
	}
	for len(lines) > 0 && strings.TrimSpace(lines[len(lines)-1]) == "" {
		lines = lines[:len(lines)-1]
	}
	if len(lines) == 0 {
		return nil, "", errors.New("no results in netperf's output (did the test run, with -o, -O or -k selectors?)")
	}
	return lines, test, nil
}

// table reads a CSV form: a title line then a value line, or the value
// line alone (-P 0), named by selectors.
func (r *NetperfResult) table(lines, selectors []string, split func(string) []string) error {
	values := split(lines[len(lines)-1])
	var names []string
	switch {
	case len(lines) >= 2:
		for _, t := range split(lines[len(lines)-2]) {
			names = append(names, selectorOf(t))
		}
	case len(selectors) > 0:
		for _, s := range selectors {
			names = append(names, strings.ToUpper(strings.TrimSpace(s)))
		}
	default:
		return errors.New("netperf printed values without titles (-P 0): give the output selectors to read them by")
	}
	if len(names) != len(values) {
		return fmt.Errorf("netperf printed %d values under %d titles", len(values), len(names))
	}
	for i, n := range names {
		r.Fields[n] = strings.TrimSpace(values[i])
	}
	return nil
}

// columns reads the -O form: four title lines, then the values, each
// column starting where a title's first line starts (netperf pads every
// column to its widest line plus one space).
func (r *NetperfResult) columns(lines, selectors []string) error {
	if len(lines) < 5 {
		return r.table(lines, selectors, strings.Fields)
	}
	block := lines[len(lines)-5:]
	var starts []int
	for i, c := range block[0] {
		if c != ' ' && (i == 0 || block[0][i-1] == ' ') {
			starts = append(starts, i)
		}
	}
	if len(starts) == 0 || starts[0] != 0 {
		return fmt.Errorf("netperf's column titles do not start at the left: %q", block[0])
	}
	cell := func(s string, k int) string {
		lo, hi := starts[k], len(s)
		if k+1 < len(starts) {
			hi = min(starts[k+1], len(s))
		}
		if lo >= len(s) {
			return ""
		}
		return strings.TrimSpace(s[lo:hi])
	}
	for k := range starts {
		var title []string
		for _, h := range block[:4] {
			if t := cell(h, k); t != "" {
				title = append(title, t)
			}
		}
		v := cell(block[4], k)
		if v == "" {
			return fmt.Errorf("netperf printed no value under %q", strings.Join(title, " "))
		}
		r.Fields[selectorOf(strings.Join(title, " "))] = v
	}
	return nil
}

// selectorOf names a column title by its selector when known.
func selectorOf(title string) string {
	title = strings.Join(strings.Fields(title), " ")
	if s, ok := netperfTitles[title]; ok {
		return s
	}
	return title
}

// fillLatency copies the latency fields into Latency.
func (r *NetperfResult) fillLatency() error {
	get := func(name string) (*float64, error) {
		s, ok := r.Fields[name]
		if !ok {
			return nil, nil
		}
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || v < 0 || v > 1e12 {
			return nil, fmt.Errorf("netperf's %s is %q, not a number of µs", name, s)
		}
		return &v, nil
	}
	l := &r.Latency
	var err error
	for _, f := range []struct {
		name string
		dst  **float64
	}{
		{"MIN_LATENCY", &l.RTTUs.Min}, {"MAX_LATENCY", &l.RTTUs.Max}, {"MEAN_LATENCY", &l.RTTUs.Mean},
		{"STDDEV_LATENCY", &l.RTTUs.Stdev}, {"P50_LATENCY", &l.RTTUs.P50}, {"P90_LATENCY", &l.RTTUs.P90},
		{"P99_LATENCY", &l.RTTUs.P99}, {"TRANSACTION_RATE", &r.TransactionRate},
	} {
		if *f.dst, err = get(f.name); err != nil {
			return err
		}
	}
	if l.RTTUs.Min == nil && l.RTTUs.Mean == nil && l.RTTUs.P50 == nil && l.RTTUs.P99 == nil && l.RTTUs.Max == nil {
		return errors.New("netperf printed no latency (select min_latency,mean_latency,p99_latency,max_latency with -O, -o or -k)")
	}
	l.Notes = append(l.Notes, "netperf: whole-µs timer; percentiles from its histogram (10 buckets per decade), at index int(p·N); stddev over N; no sample count printed")
	return nil
}
