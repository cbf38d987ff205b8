package bench

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/linerate/linerate/internal/result"
)

// iperf2 prints CSV (-y C) in shapes that changed with its versions, all
// handled here:
//
//   - 2.1.8 and older, with or without -e: no header, 9 columns
//     time,src,sport,dst,dport,id,start-end,bytes,bits_per_second
//     (-e only adds milliseconds to the time);
//   - 2.1.9: the same 9 columns first, then enhanced ones without a header,
//     and a "+0000:" time-zone prefix on the time;
//   - 2.2.0 and later with -e: a header line naming the columns
//     (time,srcaddress,srcport,dstaddr,dstport,transferid,istart,iend,
//     bytes,speed,…), the interval split in two, and columns that depend
//     on the test (tcpretry, tcpcwnd, tcprtt for a TCP writer; histograms
//     for a reader; jitter for UDP) — so columns are found by name.
//
// transferid -1 marks a sum over the streams (-P); 2.1.8 prints none in
// CSV, so sums are also computed from the streams.

// iperf2Row is one CSV line.
type iperf2Row struct {
	src, dst       string
	sport, dport   int
	id             int // -1: a [SUM] line
	start, end     float64
	bytes          uint64
	bps            float64
	retry          uint64
	hasRetry       bool
	rttUs, cwndB   uint64
	hasRTT, hasCwd bool
}

// iperf2Columns maps column roles to indexes.
type iperf2Columns struct {
	src, sport, dst, dport, id, interval, istart, iend, bytes, speed int
	retry, cwnd, rtt                                                 int // -1 when absent
	width                                                            int // minimum fields a row needs
}

// legacyColumns is the headerless layout.
func legacyColumns() iperf2Columns {
	return iperf2Columns{src: 1, sport: 2, dst: 3, dport: 4, id: 5, interval: 6, istart: -1, iend: -1,
		bytes: 7, speed: 8, retry: -1, cwnd: -1, rtt: -1, width: 9}
}

// headerColumns reads a 2.2-style header line.
func headerColumns(fields []string) (iperf2Columns, error) {
	idx := map[string]int{}
	for i, f := range fields {
		idx[strings.TrimSpace(f)] = i
	}
	get := func(name string) int {
		if i, ok := idx[name]; ok {
			return i
		}
		return -1
	}
	c := iperf2Columns{src: get("srcaddress"), sport: get("srcport"), dst: get("dstaddr"), dport: get("dstport"),
		id: get("transferid"), interval: -1, istart: get("istart"), iend: get("iend"), bytes: get("bytes"),
		speed: get("speed"), retry: get("tcpretry"), cwnd: get("tcpcwnd"), rtt: get("tcprtt")}
	for _, need := range []int{c.src, c.sport, c.dst, c.dport, c.id, c.istart, c.iend, c.bytes, c.speed} {
		if need < 0 {
			return c, fmt.Errorf("iperf2 CSV header %q lacks a column linerate needs (srcaddress … speed)", strings.Join(fields, ","))
		}
		c.width = max(c.width, need+1)
	}
	return c, nil
}

// Iperf2Parser reads iperf2's CSV output line by line, so a driver can show
// intervals while the test runs. The zero value is ready to use.
type Iperf2Parser struct {
	cols    *iperf2Columns
	rows    []iperf2Row
	pending []iperf2Row // rows of the interval being filled
}

// Line parses one line. When it starts a new interval, the interval just
// completed is returned (ok true) for display; the final result comes from
// Result.
func (p *Iperf2Parser) Line(line string) (iv result.Interval, ok bool, err error) {
	line = strings.TrimSpace(line)
	if line == "" {
		return iv, false, nil
	}
	fields := strings.Split(line, ",")
	if strings.HasPrefix(line, "time,") {
		c, err := headerColumns(fields)
		if err != nil {
			return iv, false, err
		}
		p.cols = &c
		return iv, false, nil
	}
	if !startsWithDigitOrSign(line) {
		return iv, false, nil // a message iperf2 mixed into its output
	}
	if p.cols == nil {
		c := legacyColumns()
		p.cols = &c
	}
	row, err := p.cols.parse(fields)
	if err != nil {
		return iv, false, err
	}
	p.rows = append(p.rows, row)
	if len(p.pending) > 0 && (row.start != p.pending[0].start || row.end != p.pending[0].end) {
		iv, ok = intervalOf(p.pending, serverPort(p.rows)), true
		p.pending = p.pending[:0]
	}
	p.pending = append(p.pending, row)
	return iv, ok, nil
}

func startsWithDigitOrSign(s string) bool {
	c := s[0]
	return c >= '0' && c <= '9' || c == '+' || c == '-'
}

func (c *iperf2Columns) parse(f []string) (iperf2Row, error) {
	var r iperf2Row
	if len(f) < c.width {
		return r, fmt.Errorf("iperf2 CSV line has %d fields, want at least %d: %q", len(f), c.width, strings.Join(f, ","))
	}
	var errs []error
	num := func(i int) int64 {
		n, err := strconv.ParseInt(strings.TrimSpace(f[i]), 10, 64)
		errs = append(errs, err)
		return n
	}
	flt := func(s string) float64 {
		x, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err == nil && (math.IsNaN(x) || math.IsInf(x, 0)) {
			err = errors.New("not a finite number")
		}
		errs = append(errs, err)
		return x
	}
	r.src, r.dst = f[c.src], f[c.dst]
	r.sport, r.dport, r.id = int(num(c.sport)), int(num(c.dport)), int(num(c.id))
	if c.interval >= 0 {
		a, b, found := strings.Cut(f[c.interval], "-")
		if !found {
			return r, fmt.Errorf("iperf2 CSV interval %q is not START-END", f[c.interval])
		}
		r.start, r.end = flt(a), flt(b)
	} else {
		r.start, r.end = flt(f[c.istart]), flt(f[c.iend])
	}
	bytes, bps := num(c.bytes), flt(f[c.speed])
	if err := errors.Join(errs...); err != nil {
		return r, fmt.Errorf("iperf2 CSV line %q: %w", strings.Join(f, ","), err)
	}
	if bytes < 0 || bps < 0 || r.end < r.start {
		return r, fmt.Errorf("iperf2 CSV line %q: negative bytes, rate or interval", strings.Join(f, ","))
	}
	r.bytes, r.bps = uint64(bytes), bps
	// Unknown TCP facts print as -1 or 4294967295 (an unset uint32).
	r.retry, r.hasRetry = optional(f, c.retry)
	r.cwndB, r.hasCwd = optional(f, c.cwnd)
	r.rttUs, r.hasRTT = optional(f, c.rtt)
	return r, nil
}

func optional(f []string, i int) (uint64, bool) {
	if i < 0 || i >= len(f) {
		return 0, false
	}
	n, err := strconv.ParseInt(strings.TrimSpace(f[i]), 10, 64)
	if err != nil || n < 0 || n >= math.MaxUint32 {
		return 0, false
	}
	return uint64(n), true
}

// serverPort is the port every row has at one end: the server's.
func serverPort(rows []iperf2Row) int {
	count := map[int]int{}
	for _, r := range rows {
		count[r.sport]++
		if r.dport != r.sport {
			count[r.dport]++
		}
	}
	best, n := 0, 0
	for port, c := range count {
		if c > n || c == n && port < best {
			best, n = port, c
		}
	}
	return best
}

// intervalOf turns the rows of one interval into an engine interval.
func intervalOf(rows []iperf2Row, port int) result.Interval {
	iv := result.Interval{Start: rows[0].start, End: rows[0].end}
	var sum *iperf2Row
	for i, r := range rows {
		if r.id < 0 {
			sum = &rows[i]
			continue
		}
		s := result.StreamInterval{ID: r.id, Sender: rowSender(r, port), Bytes: r.bytes, BitsPerSecond: r.bps,
			Retransmits: r.retry, CwndBytes: r.cwndB, RTTus: uint32(r.rttUs)}
		iv.Streams = append(iv.Streams, s)
		iv.Sum.Bytes += r.bytes
		iv.Sum.BitsPerSecond += r.bps
		iv.Sum.Retransmits += r.retry
	}
	if sum != nil && len(iv.Streams) == 0 {
		iv.Sum = result.Sum{Bytes: sum.bytes, BitsPerSecond: sum.bps, Retransmits: sum.retry}
	}
	sort.SliceStable(iv.Streams, func(i, j int) bool { return iv.Streams[i].ID < iv.Streams[j].ID })
	return iv
}

// rowSender says which end sent a row's bytes: the client when the row
// goes to the server's port (-R and --full-duplex rows come from it).
func rowSender(r iperf2Row, serverPort int) string {
	if r.sport == serverPort && r.dport != serverPort {
		return "server"
	}
	return "client"
}

// Result returns the run the lines made. iperf2 reports one end's count
// (the client's), so sum_sent and sum_received are the same numbers.
func (p *Iperf2Parser) Result() (*result.Result, error) {
	if len(p.rows) == 0 {
		return nil, errors.New("iperf2 printed no results (it exits 0 even when it cannot connect: see its error output)")
	}
	port := serverPort(p.rows)
	groups := map[[2]float64][]iperf2Row{}
	var keys [][2]float64
	for _, r := range p.rows {
		k := [2]float64{r.start, r.end}
		if _, seen := groups[k]; !seen {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], r)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i][0] != keys[j][0] {
			return keys[i][0] < keys[j][0]
		}
		return keys[i][1] < keys[j][1]
	})
	total, hasTotal := totalKey(keys)
	run := &result.Result{Schema: result.Schema, Engine: "iperf2", Tool: &result.Tool{Name: "iperf2"}}
	for _, k := range keys {
		if hasTotal && k == total && len(keys) > 1 {
			continue
		}
		run.Intervals = append(run.Intervals, intervalOf(groups[k], port))
	}
	totalRows := groups[total]
	if !hasTotal {
		totalRows = sumRows(p.rows) // output cut before iperf2's summary line
	}
	t := intervalOf(totalRows, port)
	run.Start = iperf2Start(totalRows, port, run.Intervals)
	run.End = result.End{Seconds: t.End - t.Start,
		SumSent:     t.Sum,
		SumReceived: result.Received{Bytes: t.Sum.Bytes, BitsPerSecond: t.Sum.BitsPerSecond}}
	for _, s := range t.Streams {
		run.End.Streams = append(run.End.Streams, result.StreamEnd{ID: s.ID, Sender: s.Sender,
			SentBytes: s.Bytes, ReceivedBytes: s.Bytes, Retransmits: s.Retransmits})
	}
	run.Start.Notes = append(run.Start.Notes, "iperf2 reports the client's byte counts only: sum_received repeats them")
	return run, nil
}

// totalKey finds the summary interval: the one from 0 to the end of the
// test (with no -i it is the only one). ok is false when the output has
// none.
func totalKey(keys [][2]float64) (k [2]float64, ok bool) {
	var last float64
	for _, k := range keys {
		last = max(last, k[1])
	}
	for _, k := range keys {
		if k[0] == 0 && k[1] == last {
			return k, true
		}
	}
	return [2]float64{0, last}, false
}

// sumRows adds up the interval rows of each stream and direction into one
// row per stream spanning the test, for output that lacks iperf2's own
// summary.
func sumRows(rows []iperf2Row) []iperf2Row {
	type key struct {
		id       int
		src, dst string
	}
	var out []iperf2Row
	at := map[key]int{}
	for _, r := range rows {
		k := key{r.id, r.src, r.dst}
		i, seen := at[k]
		if !seen {
			at[k] = len(out)
			out = append(out, r)
			continue
		}
		s := &out[i]
		s.start, s.end = min(s.start, r.start), max(s.end, r.end)
		s.bytes += r.bytes
		s.retry += r.retry
	}
	for i := range out {
		if d := out[i].end - out[i].start; d > 0 {
			out[i].bps = float64(out[i].bytes) * 8 / d
		}
	}
	return out
}

func iperf2Start(rows []iperf2Row, port int, ivs []result.Interval) result.Start {
	st := result.Start{Port: port}
	senders := map[string]bool{}
	ids := map[int]bool{}
	var end float64
	for _, r := range rows {
		if r.id >= 0 {
			ids[r.id] = true
		}
		s := rowSender(r, port)
		senders[s] = true
		if s == "client" && st.Peer == "" {
			st.Peer = r.dst
		} else if s == "server" && st.Peer == "" {
			st.Peer = r.src
		}
		end = max(end, r.end)
	}
	st.DurationS, st.Streams = end, max(1, len(ids))
	switch {
	case senders["client"] && senders["server"]:
		st.Direction = result.Bidir
	case senders["server"]:
		st.Direction = result.Receive
	default:
		st.Direction = result.Send
	}
	if len(ivs) > 0 {
		st.IntervalS = ivs[0].End - ivs[0].Start
	}
	return st
}

// ParseIperf2CSV reads the whole CSV output of `iperf -c … -y C [-e]`.
func ParseIperf2CSV(r io.Reader) (*result.Result, error) {
	var p Iperf2Parser
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4096), 1<<20)
	for sc.Scan() {
		if _, _, err := p.Line(sc.Text()); err != nil {
			return nil, err
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading iperf2 output: %w", err)
	}
	return p.Result()
}
