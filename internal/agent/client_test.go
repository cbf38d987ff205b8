package agent

import (
	"strings"
	"testing"
	"time"

	"github.com/linerate/linerate/internal/engine"
	"github.com/linerate/linerate/internal/result"
)

// TestManyFlows runs 40 streams each way on 2 threads through the agent:
// every flow of both directions moved bytes (fairness across flows is
// measured per flow, as with a thread each), and both ends' placements
// use the threads' CPUs only.
func TestManyFlows(t *testing.T) {
	res := run(t, Config{Test: Test{Params: engine.Params{Streams: 40, Threads: 2, Direction: result.Bidir}}})
	if res.Start.Threads != 2 || len(res.End.Streams) != 80 {
		t.Fatalf("threads %d, %d end streams", res.Start.Threads, len(res.End.Streams))
	}
	for _, s := range res.End.Streams {
		if s.SentBytes == 0 || s.ReceivedBytes == 0 {
			t.Errorf("flow %d (%s): sent %d, received %d", s.ID, s.Sender, s.SentBytes, s.ReceivedBytes)
		}
	}
	if len(res.Start.Placement.Client) > 2 || len(res.Start.Placement.Server) > 2 {
		t.Errorf("placement %+v: more CPUs than threads", res.Start.Placement)
	}
}

// TestManyFlowsDefault: 20 streams without --threads share as many
// threads as the CPUs (above engine.OwnThreadsUpTo streams).
func TestManyFlowsDefault(t *testing.T) {
	cpus, err := engine.AllowedCPUs()
	if err != nil {
		t.Fatal(err)
	}
	res := run(t, Config{Test: Test{Params: engine.Params{Streams: engine.OwnThreadsUpTo + 4}}})
	if want := min(len(cpus), engine.OwnThreadsUpTo+4); res.Start.Threads != want {
		t.Errorf("start.threads %d, want %d", res.Start.Threads, want)
	}
}

// TestSharedThreadsRefuseMsgZeroCopy: the client refuses, before it
// connects anything, msg_zerocopy on streams that would share threads.
func TestSharedThreadsRefuseMsgZeroCopy(t *testing.T) {
	cpus, err := engine.AllowedCPUs()
	if err != nil {
		t.Fatal(err)
	}
	addr, _ := agent(t, &Server{})
	_, err = Run(t.Context(), Config{Peer: addr, Token: testToken, Test: Test{Params: engine.Params{Streams: max(engine.OwnThreadsUpTo, len(cpus)) + 1, ZeroCopy: result.MsgZeroCopy, Duration: time.Second}}})
	if err == nil || !strings.Contains(err.Error(), "needs a thread per stream") {
		t.Errorf("%v, want a refusal", err)
	}
}
