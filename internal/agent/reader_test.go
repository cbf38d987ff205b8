package agent

import (
	"strings"
	"testing"
	"time"

	"github.com/linerate/linerate/internal/engine"
)

// sealedPair returns both ends of an authenticated in-memory connection.
func sealedPair(t *testing.T) (cli, srv *conn) {
	t.Helper()
	cli, srv = pipe(t)
	errc := make(chan error, 1)
	go func() { errc <- agentHandshake(srv, testToken, &nonceLog{}) }()
	if _, _, err := clientHandshake(cli, testToken); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	return cli, srv
}

func sampleMsg(i int) intervalMsg {
	return intervalMsg{Type: msgInterval, Sample: engine.Sample{Index: i, Streams: []engine.StreamSample{{ID: 1}}}}
}

// TestReaderStopsWhenClientDoes: an agent that keeps sending samples
// after the client stopped taking them (an error, a stop) no longer pins
// the client's reader goroutine on a full channel: close ends it. On a
// relaying agent each such goroutine was one relay's leak.
func TestReaderStopsWhenClientDoes(t *testing.T) {
	cli, srv := sealedPair(t)
	p := engine.Params{Streams: 1, Duration: time.Hour, Interval: 100 * time.Millisecond}
	rd := newReader(cli, p)
	go func() {
		for i := 0; i < 200; i++ {
			if srv.send(sampleMsg(i), 5*time.Second) != nil {
				return
			}
		}
	}()
	// The 64-slot channel fills: the reader now waits to hand over more.
	deadline := time.Now().Add(10 * time.Second)
	for len(rd.ivc) < cap(rd.ivc) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if len(rd.ivc) != cap(rd.ivc) {
		t.Fatalf("the reader took %d samples, want its channel full (%d)", len(rd.ivc), cap(rd.ivc))
	}
	rd.close()
	select {
	case <-rd.done:
	case <-time.After(10 * time.Second):
		t.Fatal("the reader goroutine is still blocked after close")
	}
}

// TestReaderBoundsSamples: more samples than the test can have fail the
// test instead of being taken forever.
func TestReaderBoundsSamples(t *testing.T) {
	cli, srv := sealedPair(t)
	p := engine.Params{Streams: 1, Duration: time.Second, Interval: 100 * time.Millisecond}
	rd := newReader(cli, p)
	defer rd.close()
	most := expectedSamples(p)
	if most != 12 {
		t.Fatalf("a 1 s test at 100 ms can have %d samples, want 12", most)
	}
	go func() {
		for i := 0; i < most+5; i++ {
			if srv.send(sampleMsg(i), 5*time.Second) != nil {
				return
			}
		}
	}()
	taken := 0
	for {
		select {
		case <-rd.ivc:
			taken++
			continue
		case err := <-rd.errc:
			taken += len(rd.ivc) // handed over before the error
			if taken != most || err == nil || !strings.Contains(err.Error(), "more than the 12 interval samples") {
				t.Errorf("after %d samples: %v", taken, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no error after %d samples", taken)
		}
		return
	}
}

// TestToolSessionBoundsSamples: a tool session keeps at most the samples
// its length allows; an agent that sends more ends the session with an
// error instead of growing the client's memory until the deadline.
func TestToolSessionBoundsSamples(t *testing.T) {
	cli, srv := sealedPair(t)
	ts := &ToolSession{ctrl: cli, done: make(chan struct{})}
	const most = 5
	go ts.read(time.Minute, most)
	go func() {
		for i := 0; i < 50; i++ {
			if srv.send(toolSample{Type: msgInterval, Index: i}, 5*time.Second) != nil {
				return
			}
		}
	}()
	select {
	case <-ts.done:
	case <-time.After(10 * time.Second):
		t.Fatal("the session read on")
	}
	if n := len(ts.Samples()); n != most {
		t.Errorf("kept %d samples, want %d", n, most)
	}
	if ts.err == nil || !strings.Contains(ts.err.Error(), "more than the 5 samples") {
		t.Errorf("err = %v", ts.err)
	}
	if got := toolSamples(10*time.Second, time.Second); got != 12 {
		t.Errorf("toolSamples(10s, 1s) = %d, want 12", got)
	}
	if got := toolSamples(100*time.Hour, 0); got != maxIntervals+2 {
		t.Errorf("toolSamples(100h, 0) = %d, want the cap %d", got, maxIntervals+2)
	}
}
