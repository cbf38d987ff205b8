package bench

import (
	"context"
	"encoding/json"
	"os/exec"
	"testing"
	"time"

	"github.com/linerate/linerate/internal/agent"
	"github.com/linerate/linerate/internal/engine"
	"github.com/linerate/linerate/internal/gap"
	"github.com/linerate/linerate/internal/lab"
	"github.com/linerate/linerate/internal/testbin"
	"github.com/linerate/linerate/internal/testutil"
)

// TestLabGapNamesThePlantedLimit plants one limit at a time in one lab
// (re-shaped between cases by lab.Up, as `lab up --scenario` does) and
// checks that a 3 s native run from host a to host b, pinned -A 0,1,
// names it as end.gap's dominant cause with at most 25% unaccounted:
// tcp_wmem max 64 KiB on the sender (small-sndbuf), tcp_rmem max 64 KiB
// on the receiver (small-rcvbuf), a tbf at 2 Gbit/s on the sender's link
// (shaped), and a busy loop pinned to the receiver's CPU 1 (healthy,
// with the loop started here in host b); and a run that asks a pacing
// rate of 1 Gbit/s (--fq-rate) names pacing.
//
// The machine is shared: other work on both CPUs can, in one run, hold
// the sockets longer than the planted limit does, so a case has two runs
// to show its limit, and the test logs each run's gap.
func TestLabGapNamesThePlantedLimit(t *testing.T) {
	const name = "t-gap"
	h := newLabOf(t, lab.Config{Name: name})
	bin := testbin.Build(t, "../../cmd/linerate")
	tests := []struct {
		scenario lab.Scenario
		busyLoop bool
		fqRate   uint64
		want     string
	}{
		{lab.SmallSndbuf, false, 0, gap.SenderBuffer},
		{lab.SmallRcvbuf, false, 0, gap.ReceiverWindow},
		{lab.Shaped, false, 0, gap.PathRate},
		{lab.Healthy, true, 0, gap.ReceiverCPU},
		{lab.Healthy, false, 1e9, gap.Pacing},
	}
	sch := benchSchema(t)
	for _, tt := range tests {
		name := string(tt.scenario)
		switch {
		case tt.busyLoop:
			name = "busy-receiver"
		case tt.fqRate > 0:
			name = "pacing"
		}
		t.Run(name, func(t *testing.T) {
			if _, err := lab.Up(context.Background(), lab.Config{Name: "t-gap", Scenario: tt.scenario}); err != nil {
				t.Fatal(err)
			}
			if tt.busyLoop {
				busy := exec.Command("taskset", "-c", "1", "sh", "-c", "while :; do :; done")
				if err := lab.Start("t-gap", lab.B, busy); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = busy.Process.Kill(); _ = busy.Wait() })
			}
			var docs [2]json.RawMessage
			for i, host := range []lab.Host{lab.A, lab.B} {
				doc, err := h.Doctor(host)
				if err != nil {
					t.Fatal(err)
				}
				docs[i] = doc
			}
			ok := false
			for attempt := 1; attempt <= 2 && !ok; attempt++ {
				c := &Campaign{
					Spec: Spec{Driver: "native", Peer: "lab:t-gap", Repeat: 1,
						Run: Params{Test: agent.Test{Params: engine.Params{Streams: 1, Duration: 3 * time.Second, Interval: time.Second, FQRate: tt.fqRate},
							Pinning: agent.Pinning{Client: []int{0}, Server: []int{1}}}}},
					Driver:       &Native{Lab: LabEngine{Name: "t-gap", Self: bin}},
					ClientDoctor: docs[0], ServerDoctor: docs[1], Iface: lab.Iface,
				}
				_, outs, err := c.Run(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				r := outs[0].Run
				g := r.End.Gap
				if g == nil {
					t.Fatal("no end.gap")
				}
				b, _ := json.Marshal(g)
				t.Logf("run %d: %.2f Gbit/s, gap %s", attempt, r.Gbps(), b)
				doc, _ := json.Marshal(r)
				testutil.Validate(t, sch, "a run with end.gap", doc)
				ok = g.Dominant == tt.want && g.UnaccountedShare <= 0.25
			}
			if !ok {
				t.Errorf("no run named %s as the dominant limit with at most 25%% unaccounted (runs above)", tt.want)
			}
		})
	}
}
