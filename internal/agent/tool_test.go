package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/linerate/linerate/internal/engine"
	"github.com/linerate/linerate/internal/result"
)

// fakeTools records what the agent asked it to start; its process says
// when it was stopped.
type fakeTools struct {
	mu      sync.Mutex
	specs   []string
	binds   []netip.Addr
	secrets [][]byte
	stopped chan struct{}
	refuse  error
}

func (f *fakeTools) StartTool(req ToolRequest) (ToolProc, ToolStart, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.refuse != nil {
		return nil, ToolStart{}, f.refuse
	}
	f.specs = append(f.specs, string(req.Spec))
	f.binds = append(f.binds, req.Bind)
	f.secrets = append(f.secrets, req.Secret)
	return fakeProc{f.stopped}, ToolStart{Argv: []string{"faketool", "-s"}, Auth: json.RawMessage(`{"key":"public"}`)}, nil
}

type fakeProc struct{ stopped chan struct{} }

func (p fakeProc) Stop() (float64, string, error) {
	close(p.stopped)
	return 0.25, "served one client\n", nil
}

// TestToolSession starts a tool server through the agent, collects the
// agent's samples while it "runs", and stops it: the spec arrives as
// sent, the tool binds to the agent's address, the samples are per CPU,
// and the agent reports the tool's CPU time and output.
func TestToolSession(t *testing.T) {
	tools := &fakeTools{stopped: make(chan struct{})}
	addr, logs := agent(t, &Server{Tools: tools})
	spec := json.RawMessage(`{"tool":"iperf3","port":5201}`)
	began := time.Now()
	ts, err := StartTool(context.Background(), ToolConfig{Peer: addr, Token: testToken, Server: spec,
		Duration: time.Second, Interval: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(ts.Argv(), " ") != "faketool -s" || ts.Host().CPUs == nil {
		t.Errorf("argv %v, host %+v", ts.Argv(), ts.Host())
	}
	// Wait for the agent's samples (at 100 ms) rather than for a fixed
	// time: a busy machine wakes the sampler late.
	start := time.Now()
	for len(ts.Samples()) < 2 && time.Since(start) < 20*time.Second {
		time.Sleep(20 * time.Millisecond)
	}
	cpu, out, err := ts.Stop()
	elapsed := time.Since(began)
	if err != nil || cpu != 0.25 || out != "served one client\n" {
		t.Fatalf("Stop = %v, %q, %v", cpu, out, err)
	}
	select {
	case <-tools.stopped:
	default:
		t.Error("the agent did not stop the tool")
	}
	samples := ts.Samples()
	// At least the two waited for; never more than one per 100 ms of the
	// session (plus the first and the last).
	if most := int(elapsed/(100*time.Millisecond)) + 2; len(samples) < 2 || len(samples) > most || len(samples[0].PerCPU) == 0 {
		t.Errorf("%d samples in %s at 100 ms, want 2 to %d: %+v", len(samples), elapsed, most, samples)
	}
	if tools.specs[0] != string(spec) || tools.binds[0] != netip.MustParseAddr("127.0.0.1") {
		t.Errorf("spec %q bind %v", tools.specs[0], tools.binds[0])
	}
	// Both ends hold the same tool secret without sending it; the
	// credentials' other half arrives as the starter gave it.
	if len(ts.Secret()) != keySize || !bytes.Equal(ts.Secret(), tools.secrets[0]) {
		t.Errorf("the client's tool secret %x is not the agent's %x", ts.Secret(), tools.secrets[0])
	}
	if string(ts.Auth()) != `{"key":"public"}` {
		t.Errorf("auth = %s", ts.Auth())
	}
	// The agent read the counters of its interface (lo here) around the
	// tool and sent their growth.
	if n := ts.NICCounters(); n == nil || n.Interface != "lo" || n.NotRead != "" || !hasCauses(n, "rx_dropped", "tx_dropped", "qdisc_drops") {
		t.Errorf("the agent's NIC counters: %+v", n)
	}
	waitLog(t, logs, "tool done", "cpu_seconds=0.25")
}

// TestToolSessionRefused: an agent without tool support, a tool its
// starter refuses, a duration over the bound and a busy agent each get a
// refusal with the reason, and no tool runs.
func TestToolSessionRefused(t *testing.T) {
	start := func(addr string, d time.Duration) error {
		_, err := StartTool(context.Background(), ToolConfig{Peer: addr, Token: testToken,
			Server: json.RawMessage(`{"tool":"sh"}`), Duration: d})
		return err
	}
	addr, logs := agent(t, &Server{})
	if err := start(addr, time.Second); err == nil || !strings.Contains(err.Error(), "does not start tool servers") {
		t.Errorf("agent without tools: %v", err)
	}
	waitLog(t, logs, "refused test", "does not start tool servers")

	tools := &fakeTools{refuse: errors.New(`"sh" is not a tool server linerate starts`)}
	addr, logs = agent(t, &Server{Tools: tools, MaxDuration: 2 * time.Second})
	if err := start(addr, time.Second); err == nil || !strings.Contains(err.Error(), "not a tool server") {
		t.Errorf("refused tool: %v", err)
	}
	waitLog(t, logs, "refused test", "not a tool server")
	if err := start(addr, time.Minute); err == nil || !strings.Contains(err.Error(), "--max-duration") {
		t.Errorf("long tool session: %v", err)
	}

	busy := &fakeTools{stopped: make(chan struct{})}
	addr, _ = agent(t, &Server{Tools: busy})
	ts, err := StartTool(context.Background(), ToolConfig{Peer: addr, Token: testToken, Server: json.RawMessage(`{}`), Duration: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer ts.Stop()
	err = start(addr, time.Second)
	var pe *PeerError
	if !errors.As(err, &pe) || !pe.Busy {
		t.Errorf("second client: %v, want busy", err)
	}
}

// TestToolSessionClientGone: a client that vanishes mid-session does not
// leave its tool running, and the agent serves the next client.
func TestToolSessionClientGone(t *testing.T) {
	tools := &fakeTools{stopped: make(chan struct{})}
	addr, logs := agent(t, &Server{Tools: tools})
	ctx, cancel := context.WithCancel(context.Background())
	if _, err := StartTool(ctx, ToolConfig{Peer: addr, Token: testToken, Server: json.RawMessage(`{}`), Duration: time.Minute}); err != nil {
		t.Fatal(err)
	}
	cancel() // closes the connection, as a killed client would
	select {
	case <-tools.stopped:
	case <-time.After(5 * time.Second):
		t.Fatal("the tool still runs after its client went away")
	}
	waitLog(t, logs, "tool session aborted", "went away")
	if _, err := Run(context.Background(), Config{Peer: addr, Token: testToken, Test: Test{Params: engine.Params{Duration: 200 * time.Millisecond}}}); err != nil {
		t.Errorf("the next client: %v", err)
	}
}

// TestFetchDoctor: the agent hands an authenticated client its doctor
// report with its host facts; an agent without a doctor refuses.
func TestFetchDoctor(t *testing.T) {
	var asked string
	addr, _ := agent(t, &Server{Doctor: func(iface string) (json.RawMessage, error) {
		asked = iface
		return json.RawMessage(`{"schema":"linerate.doctor/v1"}`), nil
	}, Annotate: func(h *result.HostInfo) { h.TuneJournal = "20261123T000000.000000Z" }})
	doc, host, err := FetchDoctor(context.Background(), addr, testToken)
	if err != nil || string(doc) != `{"schema":"linerate.doctor/v1"}` || host.TuneJournal != "20261123T000000.000000Z" || asked != "lo" {
		t.Errorf("FetchDoctor = %s, %+v, %v (asked for %q)", doc, host, err, asked)
	}
	if _, _, err := FetchDoctor(context.Background(), addr, []byte("wrong-token-0123456789")); !errors.Is(err, ErrAuth) {
		t.Errorf("wrong token: %v", err)
	}
	addr, _ = agent(t, &Server{})
	var pe *PeerError
	if _, _, err := FetchDoctor(context.Background(), addr, testToken); !errors.As(err, &pe) || pe.Busy {
		t.Errorf("agent without doctor: %v", err)
	}
}

// TestBackToBack: a client that starts its next session the moment the
// last one ended never finds the agent busy with the session that ended
// (a campaign against a standing agent does exactly this).
func TestBackToBack(t *testing.T) {
	tools := &fakeTools{}
	addr, _ := agent(t, &Server{Tools: tools, Doctor: func(string) (json.RawMessage, error) { return json.RawMessage(`{}`), nil }})
	for i := range 10 {
		if _, _, err := FetchDoctor(context.Background(), addr, testToken); err != nil {
			t.Fatalf("round %d, doctor: %v", i, err)
		}
		tools.stopped = make(chan struct{})
		ts, err := StartTool(context.Background(), ToolConfig{Peer: addr, Token: testToken, Server: json.RawMessage(`{}`), Duration: time.Second})
		if err != nil {
			t.Fatalf("round %d, tool: %v", i, err)
		}
		if _, _, err := ts.Stop(); err != nil {
			t.Fatalf("round %d, tool stop: %v", i, err)
		}
		if _, err := Run(context.Background(), Config{Peer: addr, Token: testToken, Test: Test{Params: engine.Params{Duration: 100 * time.Millisecond, Interval: 100 * time.Millisecond}}}); err != nil {
			t.Fatalf("round %d, test: %v", i, err)
		}
	}
}

// TestDoctorBudget: a doctor that hangs does not hold the agent: the
// client gets a refusal after the budget, and a test runs right after.
func TestDoctorBudget(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	addr, _ := agent(t, &Server{DoctorBudget: 300 * time.Millisecond, Doctor: func(string) (json.RawMessage, error) {
		<-release // a read of the host that hangs
		return json.RawMessage(`{}`), nil
	}})
	// The doctor hangs until the test ends: an answer at all is the budget's.
	_, _, err := FetchDoctor(context.Background(), addr, testToken)
	var pe *PeerError
	if !errors.As(err, &pe) || pe.Busy || !strings.Contains(pe.Reason, "took over") {
		t.Fatalf("hung doctor: %v", err)
	}
	if _, _, err := FetchDoctor(context.Background(), addr, testToken); err == nil || !strings.Contains(err.Error(), "has not finished") {
		t.Errorf("second doctor while the first hangs: %v", err)
	}
	if _, err := Run(context.Background(), Config{Peer: addr, Token: testToken, Test: Test{Params: engine.Params{Duration: 200 * time.Millisecond}}}); err != nil {
		t.Errorf("a test after the hung doctor: %v", err)
	}
}
