package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/linerate/linerate/internal/engine"
	"github.com/linerate/linerate/internal/result"
	"github.com/linerate/linerate/internal/telemetry"
)

// The tests of this file pin every bound of the agent's messages at its
// edge: the largest accepted value, and the first refused one. They are
// what mutation testing (scripts/mutation.sh) needs to tell "<" from "<=".

// TestRequestEdges: each bound of a request at its edge, with an agent
// allowing two hours so that the report count can be reached.
func TestRequestEdges(t *testing.T) {
	const maxDur = 2 * time.Hour
	tests := []struct {
		name string
		mod  func(*requestMsg)
		want string // "" accepted
	}{
		{"shortest duration", func(r *requestMsg) { r.DurationMS = 100 }, ""},
		{"longest duration", func(r *requestMsg) { r.DurationMS, r.IntervalMS = maxDur.Milliseconds(), 1000 }, ""},
		{"duration a millisecond over", func(r *requestMsg) { r.DurationMS, r.IntervalMS = maxDur.Milliseconds()+1, 1000 }, "duration 2h0m0.001s is over this agent's limit of 2h0m0s"},
		{"omit zero", func(r *requestMsg) { r.OmitMS = 0 }, ""},
		{"longest omit", func(r *requestMsg) { r.OmitMS = maxDur.Milliseconds() }, ""},
		{"omit a millisecond over", func(r *requestMsg) { r.OmitMS = maxDur.Milliseconds() + 1 }, "omit 7200001 ms: must be 0 to 2h0m0s"},
		{"shortest interval", func(r *requestMsg) { r.IntervalMS = 100 }, ""},
		{"longest interval", func(r *requestMsg) { r.IntervalMS = 60000 }, ""},
		{"most reports", func(r *requestMsg) { r.OmitMS, r.DurationMS, r.IntervalMS = 1000, 3_599_000, 100 }, ""},
		{"one report too many", func(r *requestMsg) { r.OmitMS, r.DurationMS, r.IntervalMS = 1000, 3_599_100, 100 },
			"1h0m0.1s at 100ms intervals makes over 36000 reports: use a longer interval"},
		{"largest window", func(r *requestMsg) { r.Window = engine.MaxWindow }, ""},
		{"window a byte over", func(r *requestMsg) { r.Window = engine.MaxWindow + 1 }, "window 2147483648: must be 0 to 2147483647 bytes"},
		{"one CPU a connection", func(r *requestMsg) { r.ServerCPUs = make([]int, 2*engine.MaxStreams) }, ""},
		{"a CPU more than connections", func(r *requestMsg) { r.ServerCPUs = make([]int, 2*engine.MaxStreams+1) },
			"257 server CPUs: at most one per connection (256)"},
		{"CPU 0", func(r *requestMsg) { r.ServerCPUs = []int{0} }, ""},
		{"highest CPU", func(r *requestMsg) { r.ServerCPUs = []int{maxCPUs - 1} }, ""},
		{"CPU past the highest", func(r *requestMsg) { r.ServerCPUs = []int{maxCPUs} }, "server CPU 65536: out of range"},
		{"receive", func(r *requestMsg) { r.Direction = result.Receive }, ""},
		{"bidir", func(r *requestMsg) { r.Direction = result.Bidir }, ""},
	}
	for _, tt := range tests {
		r := goodRequest()
		tt.mod(&r)
		err := r.validate(maxDur)
		checkErr(t, tt.name, err, tt.want)
	}
}

// checkErr wants err nil when want is "", else an error containing want.
func checkErr(t *testing.T, name string, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Errorf("%s: refused: %v", name, err)
	case want != "" && err == nil:
		t.Errorf("%s: accepted, want %q", name, want)
	case want != "" && !strings.Contains(err.Error(), want):
		t.Errorf("%s: %v, want %q", name, err, want)
	}
}

func TestMsText(t *testing.T) {
	edge := int64(math.MaxInt64 / time.Millisecond) // the largest that fits a Duration
	tests := []struct {
		ms   int64
		want string
	}{
		{0, "0s"},
		{-1, "-1 ms"},
		{1500, "1.5s"},
		{edge, (time.Duration(edge) * time.Millisecond).String()},
		{edge + 1, "9223372036855 ms"},
	}
	for _, tt := range tests {
		if got := msText(tt.ms); got != tt.want {
			t.Errorf("msText(%d) = %q, want %q", tt.ms, got, tt.want)
		}
	}
}

// TestMessageEdges: the agent's and the client's checks of each other's
// messages, at each bound.
func TestMessageEdges(t *testing.T) {
	id := make([]byte, testIDSize)
	long := func(n int) string { return strings.Repeat("x", n) }
	tests := []struct {
		name  string
		check func() error
		want  string // "" accepted
	}{
		{"accept: lowest CPU (-1, unpinned)", acceptMsg{Port: 1, TestID: id, Placement: []int{-1}}.check1, ""},
		{"accept: CPU below -1", acceptMsg{Port: 1, TestID: id, Placement: []int{-2}}.check1, "on CPU -2"},
		{"accept: highest CPU", acceptMsg{Port: 65535, TestID: id, Placement: []int{maxCPUs - 1}}.check1, ""},
		{"accept: CPU past the highest", acceptMsg{Port: 1, TestID: id, Placement: []int{maxCPUs}}.check1, "on CPU 65536"},
		{"accept: port 0", acceptMsg{Port: 0, TestID: id, Placement: []int{0}}.check1, "port 0"},
		{"accept: port 65536", acceptMsg{Port: 65536, TestID: id, Placement: []int{0}}.check1, "port 65536"},
		{"accept: longest note, most CPUs loaded", acceptMsg{Port: 1, TestID: id, Placement: []int{0}, Why: long(maxErrorText), Load: cpuMap[float64](maxCPUMap)}.check1, ""},
		{"accept: note too long", acceptMsg{Port: 1, TestID: id, Placement: []int{0}, Why: long(maxErrorText + 1)}.check1, "placement note of 4097 bytes"},
		{"accept: a loaded CPU too many", acceptMsg{Port: 1, TestID: id, Placement: []int{0}, Load: cpuMap[float64](maxCPUMap + 1)}.check1, "accept's load of 8193 CPUs"},
		{"accept: highest CPU fully loaded", acceptMsg{Port: 1, TestID: id, Placement: []int{0}, Load: map[string]float64{"65535": 100, "0": 0}}.check1, ""},
		{"accept: loaded CPU past the highest", acceptMsg{Port: 1, TestID: id, Placement: []int{0}, Load: map[string]float64{"65536": 1}}.check1, "CPU \"65536\""},
		{"accept: loaded CPU -1", acceptMsg{Port: 1, TestID: id, Placement: []int{0}, Load: map[string]float64{"-1": 1}}.check1, "CPU \"-1\""},
		{"accept: load over 100%", acceptMsg{Port: 1, TestID: id, Placement: []int{0}, Load: map[string]float64{"0": 100.001}}.check1, "at 100.001%"},
		{"accept: negative load", acceptMsg{Port: 1, TestID: id, Placement: []int{0}, Load: map[string]float64{"0": -0.001}}.check1, "at -0.001%"},

		{"ready: zero buffers, two caps", readyMsg{Window: result.SockBufs{CappedBy: []string{long(64), "b"}}}.check, ""},
		{"ready: three caps", readyMsg{Window: result.SockBufs{CappedBy: []string{"a", "b", "c"}}}.check, "ready's buffers"},
		{"ready: a cap name of 65 bytes", readyMsg{Window: result.SockBufs{CappedBy: []string{long(65)}}}.check, "a sysctl of 65 bytes"},
		{"ready: negative send buffer", readyMsg{Window: result.SockBufs{Sndbuf: -1}}.check, "ready's buffers"},
		{"ready: negative receive buffer", readyMsg{Window: result.SockBufs{Rcvbuf: -1}}.check, "ready's buffers"},

		{"interval: first", intervalOf(0, 1, 0).check1, ""},
		{"interval: last", intervalOf(maxIntervals, 1, maxCPUMap).check1, ""},
		{"interval: past the last", intervalOf(maxIntervals+1, 1, 0).check1, "interval index 36001"},
		{"interval: negative", intervalOf(-1, 1, 0).check1, "interval index -1"},
		{"interval: a CPU too many", intervalOf(0, 1, maxCPUMap+1).check1, "interval of 8193 CPUs"},
		{"interval: streams missing", intervalOf(0, 0, 0).check1, "interval of 0 streams, the test has 1"},

		{"end: an error a stream, longest", endOf(1, []string{long(maxErrorText)}, 0).check1, ""},
		{"end: an error too long", endOf(1, []string{long(maxErrorText + 1)}, 0).check1, "an error of 4097 bytes"},
		{"end: more errors than streams", endOf(1, []string{"a", "b"}, 0).check1, "2 errors for 1 streams"},
		{"end: negative CPU", endOf(1, nil, -0.001).check1, "-0.001 CPU seconds"},

		{"tool: largest spec, longest run", toolMsg{Server: json.RawMessage(long(maxToolSpec)), DurationMS: 3_600_000, IntervalMS: 60000}.checkHour, ""},
		{"tool: shortest run", toolMsg{Server: json.RawMessage("{}"), DurationMS: 100, IntervalMS: 100}.checkHour, ""},
		{"tool: spec a byte over", toolMsg{Server: json.RawMessage(long(maxToolSpec + 1)), DurationMS: 1000, IntervalMS: 1000}.checkHour, "of 4097 bytes"},
		{"tool: run a millisecond over", toolMsg{Server: json.RawMessage("{}"), DurationMS: 3_600_001, IntervalMS: 1000}.checkHour, "duration 3600001 ms"},
		{"tool: interval too long", toolMsg{Server: json.RawMessage("{}"), DurationMS: 1000, IntervalMS: 60001}.checkHour, "interval 60001 ms"},

		{"tool_started: most arguments, longest", toolStartedMsg{Argv: repeat(long(maxToolArg), maxToolArgs), Auth: bytes.Repeat([]byte("a"), maxToolAuth)}.check, ""},
		{"tool_started: an argument too many", toolStartedMsg{Argv: repeat("a", maxToolArgs+1)}.check, "with 65 arguments"},
		{"tool_started: an argument too long", toolStartedMsg{Argv: []string{long(maxToolArg + 1)}}.check, "an argument of 4097 bytes"},
		{"tool_started: credentials too long", toolStartedMsg{Argv: []string{"a"}, Auth: bytes.Repeat([]byte("a"), maxToolAuth+1)}.check, "16385 bytes of credentials"},

		{"tool_end: longest", toolEndMsg{Output: long(maxToolOutput), Error: long(maxErrorText)}.check, ""},
		{"tool_end: output too long", toolEndMsg{Output: long(maxToolOutput + 1)}.check, "65537 bytes of output"},
		{"tool_end: error too long", toolEndMsg{Error: long(maxErrorText + 1)}.check, "4097 of error"},
		{"tool_end: negative CPU", toolEndMsg{CPUSeconds: -1}.check, "-1 CPU seconds"},

		{"tool interval: first, most CPUs", toolSample{Index: 0, CPU: cpuMap[telemetry.CPUSample](maxCPUMap)}.check, ""},
		{"tool interval: negative", toolSample{Index: -1}.check, "tool interval -1"},
		{"tool interval: a CPU too many", toolSample{CPU: cpuMap[telemetry.CPUSample](maxCPUMap + 1)}.check, "of 8193 CPUs"},
	}
	for _, tt := range tests {
		checkErr(t, tt.name, tt.check(), tt.want)
	}
}

// check1 and friends bind the size of the test (one connection) or the
// agent's limit (an hour), so that the table above reads as a list.
func (m acceptMsg) check1() error   { return m.check(1) }
func (m intervalMsg) check1() error { return m.check(1) }
func (m endMsg) check1() error      { return m.check(1) }
func (m toolMsg) checkHour() error  { return m.check(time.Hour) }

func intervalOf(index, streams, cpus int) intervalMsg {
	m := intervalMsg{}
	m.Index = index
	m.Streams = make([]engine.StreamSample, streams)
	m.CPU = cpuMap[result.CPUSample](cpus)
	return m
}

func endOf(streams int, errs []string, cpu float64) endMsg {
	return endMsg{Streams: make([]engine.StreamTotal, streams), Errors: errs, CPUSeconds: cpu}
}

// cpuMap is a sample of n CPUs.
func cpuMap[V any](n int) map[string]V {
	m := make(map[string]V, n)
	for i := range n {
		m[strconv.Itoa(i)] = *new(V)
	}
	return m
}

func repeat(s string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return out
}

// TestPeerReasonBound: a peer's refusal is shown up to maxReason bytes;
// beyond, cut with an ellipsis.
func TestPeerReasonBound(t *testing.T) {
	for _, n := range []int{maxReason, maxReason + 1} {
		body, _ := json.Marshal(errorMsg{Type: msgError, Reason: strings.Repeat("r", n)})
		err := decodeAs(msgError, body, msgAccept, &acceptMsg{})
		var pe *PeerError
		if !errors.As(err, &pe) {
			t.Fatalf("reason of %d bytes: %v", n, err)
		}
		want := strings.Repeat("r", min(n, maxReason))
		if n > maxReason {
			want += "…"
		}
		if pe.Reason != want {
			t.Errorf("reason of %d bytes shown as %d bytes, want %d", n, len(pe.Reason), len(want))
		}
	}
}

// TestWriteFrameEdges: the writer sends up to the largest frame any
// reader takes (a doctor report) and refuses an empty or larger body.
func TestWriteFrameEdges(t *testing.T) {
	var buf bytes.Buffer
	if err := writeFrame(&buf, make([]byte, maxDoctorFrame)); err != nil || buf.Len() != 4+maxDoctorFrame {
		t.Errorf("a frame of the largest size: %v, %d bytes written", err, buf.Len())
	}
	for _, n := range []int{0, maxDoctorFrame + 1} {
		buf.Reset()
		if err := writeFrame(&buf, make([]byte, n)); !errors.Is(err, errFrameTooLarge) || buf.Len() != 0 {
			t.Errorf("a body of %d bytes: %v, %d bytes written", n, err, buf.Len())
		}
	}
}

// TestTokenFileEdges: a token file of exactly maxTokenFile bytes (a good
// token and white space) is read; one byte more is refused.
func TestTokenFileEdges(t *testing.T) {
	tok, err := GenerateToken()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, n := range []int{maxTokenFile, maxTokenFile + 1} {
		p := filepath.Join(dir, "token")
		b := append(append([]byte{}, tok...), bytes.Repeat([]byte("\n"), n-len(tok))...)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := ReadTokenFile(p)
		if n == maxTokenFile && (err != nil || !bytes.Equal(got, tok)) {
			t.Errorf("a token file of %d bytes: %v", n, err)
		}
		if n > maxTokenFile && (err == nil || !strings.Contains(err.Error(), "larger than 4096 bytes")) {
			t.Errorf("a token file of %d bytes: %v, want refused as too large", n, err)
		}
	}
}

// TestGateLeave: a connection that leaves is the one taken out of its
// source's list, once.
func TestGateLeave(t *testing.T) {
	ln := listen(t)
	g := newGate(100, 10)
	var ps []*pending
	for range 3 {
		_, s := tcpPair(t, ln, "127.0.0.2")
		ps = append(ps, g.admit(s))
	}
	g.leave(ps[1])
	src := netip.MustParseAddr("127.0.0.2")
	if l := g.bySrc[src]; len(l) != 2 || l[0] != ps[0] || l[1] != ps[2] || g.n != 2 {
		t.Fatalf("after the second left: %d pending, list %v; want the first and third", g.n, l)
	}
	g.leave(ps[1]) // again: nothing
	g.leave(ps[0])
	g.leave(ps[2])
	if _, ok := g.bySrc[src]; ok || g.n != 0 {
		t.Errorf("all left: %d pending, sources %v", g.n, g.bySrc)
	}
}

// TestGateTotalOneEach: at the total with one silent connection per
// source, room is still made.
func TestGateTotalOneEach(t *testing.T) {
	ln := listen(t)
	g := newGate(2, 10)
	for _, src := range []string{"127.0.0.2", "127.0.0.3"} {
		_, s := tcpPair(t, ln, src)
		if g.admit(s) == nil {
			t.Fatal("refused under the total")
		}
	}
	_, s := tcpPair(t, ln, "127.0.0.4")
	if g.admit(s) == nil || g.n != 2 {
		t.Errorf("at the total with two silent connections: refused or %d pending", g.n)
	}
}

// TestNotRandomEdges: each sign of a made-up token at its threshold, on
// 32 hex characters (128 bits, n/2 = 16). The tokens are built by hand:
// the comment of each says what it holds.
func TestNotRandomEdges(t *testing.T) {
	rev := func(s string) string {
		b := []byte(s)
		slices.Reverse(b)
		return string(b)
	}
	// 14 steps up in the run 0-f, one in "01", one in "34"; no other step
	// of ±1, no repeat.
	up16 := "0123456789abcdef01" + "34" + "9e2c7a0f5b8d"
	// The same with "345": 17 steps up.
	up17 := "0123456789abcdef01" + "345" + "e2c7a0f5b8d"
	// Four copies of a block with no step of ±1 and no repeat: at period 8
	// every one of the 24 comparisons matches; changing 2 characters of
	// the last block leaves 22 (22 × 10 ≥ 24 × 9), changing 3 leaves 21.
	block := "1e5a9c3f"
	block12 := "1e5a9c3f7b2d"
	tests := []struct {
		name, tok, want string // want "" accepted
	}{
		{"16 repeats", "00112233445566778899aabbccddeeff", "repeated characters"},
		{"15 repeats", "00112233445566778899aabbccddeef0", ""},
		{"16 steps up", up16, ""},
		{"17 steps up", up17, "sequential characters"},
		{"16 steps down", rev(up16), ""},
		{"17 steps down", rev(up17), "sequential characters"},
		{"period 8, 22 of 24 match", block + block + block + "2e5a0c3f", "a pattern of 8 characters repeated"},
		{"period 8, 21 of 24 match", block + block + block + "2e5a0c3b", ""},
		// Period 12: the first 12 comparisons match, and of the last 8
		// (block12's first 8 against "1e5a0c3b") 6: 18 of 20, exactly 90%.
		{"period 12, 18 of 20 match", block12 + block12 + "1e5a0c3b", "a pattern of 12 characters repeated"},
		{"7 distinct characters", "0123456" + "0123456" + "0123456" + "0123456" + "0123", "7 distinct characters"},
		// The eight even hex digits in a random order, no two neighbours
		// equal or a step of ±1 apart, no period above 60%.
		{"8 distinct characters", "a206ecaea864628eae82c4a4ec02ae28", ""},
		{"31 hex characters", "0e5a9c3f1d7b2e8a4c6f0b9d3a5e7c1", "31 characters of hex hold at most 124 bits"},
	}
	for _, tt := range tests {
		if len(tt.tok) != 32 && tt.name != "31 hex characters" {
			t.Fatalf("%s: the token has %d characters, want 32", tt.name, len(tt.tok))
		}
		_, err := CheckToken([]byte(tt.tok))
		checkErr(t, tt.name, err, tt.want)
	}
}

// TestTokenAlphabetEdges: base64's padding at its bound (two '=' at most),
// each of its four symbols, a character outside both alphabets, and a
// pattern as long as half the token (the longest period looked for).
func TestTokenAlphabetEdges(t *testing.T) {
	body := "Zq8xW3vR7tKp2mYc9LhN4s" // 22 base64 characters: 132 bits
	tests := []struct {
		name, tok, want string // want "" accepted
	}{
		{"two '=' of padding", body + "==", ""},
		{"three '=' of padding", body + "===", "not hex or base64"},
		{"'+' and '/'", body[:20] + "+/", ""},
		{"'-' and '_'", body[:20] + "-_", ""},
		{"a '.'", body[:21] + ".", "not hex or base64"},
		{"period 16 of 32", "9e2c7a0f5b8d4136" + "9e2c7a0f5b8d4136", "a pattern of 16 characters repeated"},
	}
	for _, tt := range tests {
		_, err := CheckToken([]byte(tt.tok))
		checkErr(t, tt.name, err, tt.want)
	}
	if a, bits := tokenAlphabet([]byte(body + "==")); a != "base64" || bits != 6 {
		t.Errorf("padded base64: %q, %d bits a character", a, bits)
	}
}

// TestWriteNewTokenWriteFails: a token that could not be written whole
// (here the file-size limit stops it after 10 bytes, as a full disk
// would) is an error and leaves no file, even though the sync and the
// close that follow succeed. SIGXFSZ is ignored by Go's runtime, so the
// write returns EFBIG.
func TestWriteNewTokenWriteFails(t *testing.T) {
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "token")
	lim := old
	lim.Cur = 10
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &lim); err != nil {
		t.Fatal(err)
	}
	err := WriteNewToken(path)
	if rerr := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &old); rerr != nil {
		t.Fatal(rerr)
	}
	if err == nil || !strings.Contains(err.Error(), "writing the token to "+path) {
		t.Errorf("WriteNewToken past the file-size limit: %v", err)
	}
	if _, serr := os.Stat(path); !os.IsNotExist(serr) {
		t.Errorf("a cut token file was left: %v", serr)
	}
}
