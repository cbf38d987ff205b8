package agent

import (
	"context"
	"errors"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/linerate/linerate/internal/engine"
	"github.com/linerate/linerate/internal/result"
)

// TestMaxClients: an agent with MaxClients 2 runs two clients' tests at
// once, a stream test and an rr test, each with its own result (the
// stream's bytes and the rr's transactions, each end's totals its own),
// each told that it shared the agent and its server CPU time its own
// threads'; a third client meanwhile is told busy, and names both.
func TestMaxClients(t *testing.T) {
	addr, _ := agent(t, &Server{MaxClients: 2})
	tests := []engine.Params{
		{Streams: 2, Duration: 2 * time.Second, Interval: 500 * time.Millisecond},
		{Streams: 4, Threads: 2, Mode: result.RR, Size: 1, Duration: 2 * time.Second, Interval: 500 * time.Millisecond},
	}
	var wg sync.WaitGroup
	started := make(chan struct{}, len(tests))
	res := make([]*result.Result, len(tests))
	errs := make([]error, len(tests))
	for i, p := range tests {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res[i], errs[i] = Run(context.Background(), Config{Peer: addr, Token: testToken, Test: Test{Params: p},
				Progress: func(e result.Event) {
					if e.Event == "start" {
						started <- struct{}{}
					}
				}})
		}()
	}
	for range tests {
		select {
		case <-started:
		case <-time.After(10 * time.Second):
			wg.Wait()
			t.Fatalf("the two tests did not both start: %v", errs)
		}
	}
	_, err := Run(context.Background(), Config{Peer: addr, Token: testToken, Test: Test{Params: engine.Params{Duration: 500 * time.Millisecond}}})
	var pe *PeerError
	if !errors.As(err, &pe) || !pe.Busy || !strings.Contains(pe.Reason, "2 tests are running") {
		t.Errorf("a third client while two tests run: %v; want busy, naming both", err)
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("test %d: %v", i, err)
		}
	}
	st, rr := res[0], res[1]
	if st.End.Transactions != nil || st.End.SumReceived.Bytes == 0 || len(st.End.Streams) != 2 {
		t.Errorf("the stream test's end: %d bytes, %d streams, transactions %+v", st.End.SumReceived.Bytes, len(st.End.Streams), st.End.Transactions)
	}
	for _, s := range st.End.Streams {
		if s.ReceivedBytes > s.SentBytes || s.ReceivedBytes == 0 {
			t.Errorf("stream %d: the agent received %d bytes, the client sent %d: another test's bytes counted", s.ID, s.ReceivedBytes, s.SentBytes)
		}
	}
	if tr := rr.End.Transactions; tr == nil || tr.Count == 0 || tr.Flows != 4 || tr.ServerCount == 0 || tr.ServerCount > tr.Count+uint64(tr.Flows)*2 && tr.ServerCount > tr.Count*11/10 {
		t.Errorf("the rr test's transactions: %+v", rr.End.Transactions)
	}
	for i, r := range res {
		if !slices.Contains(r.End.Foreign.Notes, SharedNote) {
			t.Errorf("test %d does not say it shared the agent: %q", i, r.End.Foreign.Notes)
		}
		// Thread clocks: at most the test's threads busy all the time.
		if c := r.End.CPU; c.ServerSeconds <= 0 || c.ServerSeconds > r.End.Seconds*float64(r.Start.Streams)+0.5 || c.ServerUserSeconds != 0 {
			t.Errorf("test %d: server CPU %+v over %.2f s", i, c, r.End.Seconds)
		}
	}
	// Alone again: the process's clock, no note.
	one, err := Run(context.Background(), Config{Peer: addr, Token: testToken, Test: Test{Params: engine.Params{Duration: 500 * time.Millisecond, Interval: 250 * time.Millisecond}}})
	if err != nil || slices.Contains(one.End.Foreign.Notes, SharedNote) || one.End.CPU.ServerUserSeconds+one.End.CPU.ServerSystemSeconds == 0 {
		t.Errorf("a test alone after them: %v, notes %q, CPU %+v", err, one.End.Foreign.Notes, one.End.CPU)
	}
}

// TestCheckDoesNotHoldTheAgent: a client that authenticated and has not
// yet said what it wants (a check about to say bye, a controller naming
// its peer's node) does not hold the agent, so the test asked for the
// moment it leaves finds the agent free. Before, the check claimed the
// agent until its bye was read, and a relay right after a node probe
// found the agent "busy" with the probe on a loaded machine. Many such
// clients at once are bounded: past maxDeciding, the agent says busy.
func TestCheckDoesNotHoldTheAgent(t *testing.T) {
	addr, _ := agent(t, &Server{})
	c, nc, err := dialAgent(context.Background(), nil, addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if _, _, err := clientHandshake(c, testToken); err != nil {
		t.Fatal(err)
	}
	// The check stays silent for the whole test.
	res, err := Run(context.Background(), Config{Peer: addr, Token: testToken, Test: Test{Params: engine.Params{Duration: 500 * time.Millisecond}}})
	if err != nil {
		t.Fatalf("a test while a checking client sits authenticated: %v", err)
	}
	checkEnd(t, res)

	var held []net.Conn
	defer func() {
		for _, nc := range held {
			nc.Close()
		}
	}()
	for range maxDeciding {
		c, nc, err := dialAgent(context.Background(), nil, addr)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, nc)
		if _, _, err := clientHandshake(c, testToken); err != nil {
			t.Fatal(err)
		}
	}
	_, err = Run(context.Background(), Config{Peer: addr, Token: testToken, Test: Test{Params: engine.Params{Duration: 500 * time.Millisecond}}})
	if err == nil || !strings.Contains(err.Error(), "too many clients connected at once") {
		t.Errorf("a test with %d more clients deciding: %v; want too many clients", maxDeciding, err)
	}
}
