package agent

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/linerate/linerate/internal/engine"
	"github.com/linerate/linerate/internal/result"
)

// goodRequest is a request every agent accepts.
func goodRequest() requestMsg {
	return requestMsg{Type: msgRequest, testWire: testWire{Params: engine.Params{Streams: 1, Direction: result.Send}, DurationMS: 1000, IntervalMS: 1000}}
}

// TestRequestBounds: every bound of a request, one field at a time.
func TestRequestBounds(t *testing.T) {
	tests := []struct {
		name string
		mod  func(*requestMsg)
		want string // "" accepted
	}{
		{"good", func(*requestMsg) {}, ""},
		{"streams 0", func(r *requestMsg) { r.Streams = 0 }, "streams 0"},
		{"streams over the cap", func(r *requestMsg) { r.Streams = engine.MaxFlows + 1 }, "streams 4097: must be 1 to 4096"},
		{"streams at the cap", func(r *requestMsg) { r.Streams = engine.MaxFlows }, ""},
		{"own threads over the cap", func(r *requestMsg) { r.Streams, r.Threads = engine.MaxStreams+1, engine.MaxStreams+1 }, "threads 129: must be 0"},
		{"own threads at the cap", func(r *requestMsg) { r.Streams, r.Threads = engine.MaxStreams, engine.MaxStreams }, ""},
		{"bidir over the flows", func(r *requestMsg) { r.Streams, r.Direction = engine.MaxFlows/2+1, result.Bidir }, "4098 connections: at most 4096"},
		{"more threads than flows", func(r *requestMsg) { r.Streams, r.Threads = 2, 3 }, "3 threads for 2 flows"},
		{"negative threads", func(r *requestMsg) { r.Threads = -1 }, "threads -1"},
		{"mode", func(r *requestMsg) { r.Mode = "ping" }, `test mode "ping"`},
		{"rr", func(r *requestMsg) { r.Mode, r.Size, r.Depth, r.Streams, r.Threads = result.RR, 1, 8, 1000, 2 }, ""},
		{"rr without a size", func(r *requestMsg) { r.Mode = result.RR }, "transaction size 0"},
		{"rr size over", func(r *requestMsg) { r.Mode, r.Size = result.RR, engine.MaxSize+1 }, "size 1048577"},
		{"rr depth over", func(r *requestMsg) { r.Mode, r.Size, r.Depth = result.RR, 1, engine.MaxDepth+1 }, "depth 65"},
		{"negative depth", func(r *requestMsg) { r.Mode, r.Size, r.Depth = result.RR, 1, -1 }, "depth -1"},
		{"crr depth", func(r *requestMsg) { r.Mode, r.Size, r.Depth = result.CRR, 1, 2 }, "1 with crr"},
		{"stream with a size", func(r *requestMsg) { r.Size = 10 }, "for transaction tests"},
		{"rr with zero copy", func(r *requestMsg) { r.Mode, r.Size, r.ZeroCopy = result.RR, 1, result.Sendfile }, "are for streams"},
		{"skip rx copy", func(r *requestMsg) { r.SkipRxCopy = "dma" }, `receive method "dma"`},
		{"skip rx copy known", func(r *requestMsg) { r.SkipRxCopy = result.ZerocopyReceive }, ""},
		{"msg_zerocopy on shared threads", func(r *requestMsg) { r.Streams, r.Threads, r.ZeroCopy = 4, 2, result.MsgZeroCopy }, "needs a thread per stream"},
		{"negative streams", func(r *requestMsg) { r.Streams = -1 }, "streams -1"},
		{"duration short", func(r *requestMsg) { r.DurationMS = 99 }, "duration 99 ms"},
		{"duration over the agent's", func(r *requestMsg) { r.DurationMS = 2001 }, "over this agent's limit of 2s"},
		{"duration overflowing", func(r *requestMsg) { r.DurationMS = math.MaxInt64 }, "over this agent's limit"},
		{"negative omit", func(r *requestMsg) { r.OmitMS = -1 }, "omit -1 ms"},
		{"omit overflowing a Duration", func(r *requestMsg) { r.OmitMS = 9_300_000_000_000 }, "omit 9300000000000 ms"},
		{"omit at the limit", func(r *requestMsg) { r.OmitMS = 2000 }, ""},
		{"interval short", func(r *requestMsg) { r.IntervalMS = 99 }, "interval 99 ms"},
		{"interval long", func(r *requestMsg) { r.IntervalMS = 60001 }, "interval 60001 ms"},
		{"interval zero", func(r *requestMsg) { r.IntervalMS = 0 }, "interval 0 ms"},
		{"too many reports", func(r *requestMsg) { r.DurationMS, r.IntervalMS = 2000, 100 }, ""},
		{"window negative", func(r *requestMsg) { r.Window = -1 }, "window -1"},
		{"window at the cap", func(r *requestMsg) { r.Window = engine.MaxWindow }, ""},
		{"direction", func(r *requestMsg) { r.Direction = "sideways" }, `direction "sideways"`},
		{"zero copy", func(r *requestMsg) { r.ZeroCopy = "splice" }, `zero-copy method "splice"`},
		{"congestion", func(r *requestMsg) { r.Congestion = "../../x" }, "not a kernel module name"},
		{"congestion long", func(r *requestMsg) { r.Congestion = strings.Repeat("a", 16) }, "longer than 15 bytes"},
		{"server CPU huge", func(r *requestMsg) { r.ServerCPUs = []int{1 << 40} }, "server CPU 1099511627776: out of range"},
		{"server CPU negative", func(r *requestMsg) { r.ServerCPUs = []int{-1} }, "server CPU -1: out of range"},
		{"server CPUs many", func(r *requestMsg) { r.ServerCPUs = make([]int, engine.MaxFlows+1) }, "at most one per connection"},
	}
	for _, tt := range tests {
		r := goodRequest()
		tt.mod(&r)
		err := r.validate(2 * time.Second)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: refused: %v", tt.name, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s: %v, want %q", tt.name, err, tt.want)
		}
	}
	// 36000 reports at most: an hour at 100 ms passes, a minute more not.
	r := goodRequest()
	r.DurationMS, r.IntervalMS = 3_600_000, 100
	if err := r.validate(2 * time.Hour); err != nil {
		t.Errorf("an hour at 100 ms: %v", err)
	}
	r.DurationMS += 60_000
	if err := r.validate(2 * time.Hour); err == nil || !strings.Contains(err.Error(), "over 36000 reports") {
		t.Errorf("61 minutes at 100 ms: %v", err)
	}
}

// TestAgentEnforcesRequestBounds: the agent itself refuses a request over
// its bounds, whatever the client checked: a hand-made request frame.
func TestAgentEnforcesRequestBounds(t *testing.T) {
	addr, logs := agent(t, &Server{})
	for _, tt := range []struct {
		mod  func(*requestMsg)
		want string
	}{
		{func(r *requestMsg) { r.Streams = engine.MaxFlows + 1 }, "streams 4097"},
		// Threads left to the agent, which shares them above 16 streams:
		// msg_zerocopy needs one each, and the refusal comes first.
		{func(r *requestMsg) {
			r.Streams, r.ZeroCopy = max(engine.OwnThreadsUpTo, runtime.NumCPU())+1, result.MsgZeroCopy
		}, "needs a thread per stream"},
		{func(r *requestMsg) { r.ServerCPUs = []int{1 << 40} }, "out of range"},
	} {
		r := goodRequest()
		tt.mod(&r)
		c, _ := authenticated(t, addr)
		if err := c.send(r, time.Second); err != nil {
			t.Fatal(err)
		}
		var m bareMsg
		err := c.expect(msgAccept, &m, 5*time.Second)
		var pe *PeerError
		if !errors.As(err, &pe) || !strings.Contains(pe.Reason, tt.want) {
			t.Errorf("a request over the bounds: %v, want a refusal naming %q", err, tt.want)
		}
		waitLog(t, logs, "refused test", tt.want)
	}
}

// authenticated dials the agent at addr and completes the handshake.
func authenticated(t *testing.T, addr string) (*conn, sessionKeys) {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	c := newConn(nc)
	_, keys, err := clientHandshake(c, testToken)
	if err != nil {
		t.Fatal(err)
	}
	return c, keys
}

// TestTamperedFrame: a frame altered on the wire after the handshake ends
// the session; both ends say so in one line.
func TestTamperedFrame(t *testing.T) {
	addr, logs := agent(t, &Server{})
	// A proxy that flips one byte of the client's third frame (the first
	// after hello and auth: the request).
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		in, err := ln.Accept()
		if err != nil {
			return
		}
		defer in.Close()
		out, err := net.Dial("tcp", addr)
		if err != nil {
			return
		}
		defer out.Close()
		go io.Copy(in, out)
		for i := 0; ; i++ {
			var hdr [4]byte
			if _, err := io.ReadFull(in, hdr[:]); err != nil {
				return
			}
			body := make([]byte, binary.BigEndian.Uint32(hdr[:]))
			if _, err := io.ReadFull(in, body); err != nil {
				return
			}
			if i == 2 {
				body[bytes.IndexByte(body, '1')] = '2' // "streams":1 → 2
			}
			out.Write(append(hdr[:], body...))
		}
	}()
	_, err = Run(context.Background(), Config{Peer: ln.Addr().String(), Token: testToken, Test: Test{Params: engine.Params{Duration: 500 * time.Millisecond}}})
	if err == nil {
		t.Fatal("a test ran although its request was altered on the way")
	}
	waitLog(t, logs, "refused test", "failed its MAC check")
	n := strings.Count(logs.String(), "MAC check")
	if n != 1 {
		t.Errorf("%d log lines about the MAC, want 1:\n%s", n, logs.String())
	}
	// The agent serves the next client.
	if _, err := Run(context.Background(), Config{Peer: addr, Token: testToken, Test: Test{Params: engine.Params{Duration: 200 * time.Millisecond, Interval: 100 * time.Millisecond}}}); err != nil {
		t.Errorf("the next client: %v", err)
	}
}

// TestDataPreamble: a data connection needs the session's proof for its
// test and index, and gets each index once.
func TestDataPreamble(t *testing.T) {
	key, other := bytes.Repeat([]byte{7}, keySize), bytes.Repeat([]byte{8}, keySize)
	id := bytes.Repeat([]byte{9}, testIDSize)
	good := preamble(key, id, 3)
	if len(good) != dataPreambleLen {
		t.Fatalf("preamble of %d bytes, want %d", len(good), dataPreambleLen)
	}
	h, err := parsePreamble(good)
	if err != nil || h.index != 3 || !h.proves(key, id) {
		t.Fatalf("a good preamble: %+v %v", h, err)
	}
	if h.proves(other, id) || h.proves(key, bytes.Repeat([]byte{1}, testIDSize)) {
		t.Error("a preamble proves a test or session it was not made for")
	}
	moved := bytes.Clone(good)
	moved[len(dataMagic)+testIDSize+3] = 4 // another index, same tag
	if h, _ := parsePreamble(moved); h.proves(key, id) {
		t.Error("a preamble's proof holds for another stream index")
	}
	old := bytes.Clone(good)
	copy(old, "LRDATA01")
	if _, err := parsePreamble(old); !errors.Is(err, errBadMessage) {
		t.Errorf("an old client's preamble: %v", err)
	}
	// Each index is taken once.
	ss := &session{p: engine.Params{Streams: 2, Direction: result.Send}}
	ss.srv = &Server{}
	ss.expectData(id)
	c1, c2 := net.Pipe()
	defer c1.Close()
	defer c2.Close()
	if err := ss.offer(1, c1); err != nil {
		t.Fatal(err)
	}
	if err := ss.offer(1, c2); err == nil || !strings.Contains(err.Error(), "already connected") {
		t.Errorf("a second connection for index 1: %v", err)
	}
	if err := ss.offer(2, c2); err == nil {
		t.Error("index 2 of a two-connection test accepted")
	}
	if err := ss.offer(math.MaxUint32, c2); err == nil {
		t.Error("index 2^32-1 accepted")
	}
}

// TestDataConnectionReplayed: a preamble seen on the wire and sent again
// on a new connection is refused; the test runs with the real one.
func TestDataConnectionStolen(t *testing.T) {
	addr, logs := agent(t, &Server{})
	c, keys := authenticated(t, addr)
	r := goodRequest()
	r.DurationMS, r.IntervalMS = 300, 100
	if err := c.send(r, time.Second); err != nil {
		t.Fatal(err)
	}
	acc, err := expect(c, msgAccept, 5*time.Second, func(m *acceptMsg) error { return m.check(1) })
	if err != nil {
		t.Fatal(err)
	}
	// A stranger who saw the test ID but has no key.
	stranger := dialFrom(t, "127.0.0.2", addr)
	defer stranger.Close()
	stranger.Write(preamble(bytes.Repeat([]byte{1}, keySize), acc.TestID, 0))
	waitLog(t, logs, "refused connection", "wrong proof")
	// The client's own connection, then a replay of its preamble.
	p := preamble(keys.data, acc.TestID, 0)
	d1, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer d1.Close()
	d1.Write(p)
	if _, err := expect(c, msgReady, 5*time.Second, (*readyMsg).check); err != nil {
		t.Fatalf("ready: %v", err)
	}
	replay := dialFrom(t, "127.0.0.3", addr)
	defer replay.Close()
	replay.Write(p)
	waitLog(t, logs, "refused connection", "data connection")
}

// TestNICCounterBounds: what an end or tool_end may carry of the agent's
// NIC counters, one bound at a time.
func TestNICCounterBounds(t *testing.T) {
	good := func() *result.NICDelta {
		return &result.NICDelta{Interface: "lab0", Driver: "veth", Deltas: map[string]uint64{"qdisc_drops": 12},
			Sources: map[string]map[string]uint64{"qdisc_drops": {"qdisc.drops": 12}}}
	}
	many := func(n int) map[string]uint64 {
		m := map[string]uint64{}
		for i := range n {
			m[strings.Repeat("c", 1+i%7)+string(rune('a'+i%26))+strings.Repeat("x", i/26)] = 1
		}
		return m
	}
	tests := []struct {
		name string
		mod  func(*result.NICDelta)
		want string
	}{
		{"good", func(*result.NICDelta) {}, ""},
		{"not read", func(d *result.NICDelta) { *d = result.NICDelta{Interface: "lab0", NotRead: "ENODEV"} }, ""},
		{"long interface", func(d *result.NICDelta) { d.Interface = strings.Repeat("i", maxNICName+1) }, "interface or driver named in 129"},
		{"long reason", func(d *result.NICDelta) { d.NotRead = strings.Repeat("r", maxErrorText+1) }, "for a reason of 4097 bytes"},
		{"many causes", func(d *result.NICDelta) { d.Deltas = many(maxNICCauses + 1) }, "NIC counters of 33 causes"},
		{"long cause", func(d *result.NICDelta) { d.Deltas[strings.Repeat("c", maxNICName+1)] = 1 }, "cause of 129 bytes"},
		{"many counters", func(d *result.NICDelta) { d.Sources["qdisc_drops"] = many(maxNICSources + 1) }, "with 65 counters"},
		{"long counter", func(d *result.NICDelta) { d.Sources["qdisc_drops"][strings.Repeat("n", maxNICName+1)] = 1 }, "counter named in 129 bytes"},
	}
	for _, tt := range tests {
		d := good()
		tt.mod(d)
		for _, err := range []error{
			endMsg{Type: msgEnd, Streams: make([]engine.StreamTotal, 1), NICCounters: d}.check(1),
			toolEndMsg{Type: msgToolEnd, NICCounters: d}.check(),
		} {
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("%s: refused: %v", tt.name, err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want) || !errors.Is(err, errBadMessage)):
				t.Errorf("%s: %v, want %q", tt.name, err, tt.want)
			}
		}
	}
}
