package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/linerate/linerate/internal/agent"
	"github.com/linerate/linerate/internal/fleet"
	"github.com/linerate/linerate/internal/store"
)

// loopFleet is n real agents in this process, on 127.0.0.1 … 127.0.0.n
// (all loopback on Linux), one port for all, as a fleet's agents are.
type loopFleet struct {
	hosts  []fleet.Host
	port   int
	token  []byte
	stop   []context.CancelFunc
	served []chan error
}

func startLoopFleet(t *testing.T, n int) *loopFleet {
	t.Helper()
	token, err := agent.GenerateToken()
	if err != nil {
		t.Fatal(err)
	}
	// A port free on 127.0.0.1 is, almost always, free on the others.
	ln0, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &loopFleet{port: ln0.Addr().(*net.TCPAddr).Port, token: token}
	doctor := func(string) (json.RawMessage, error) {
		return json.RawMessage(`{"schema":"linerate.doctor/v1","findings":[]}`), nil
	}
	for i := 1; i <= n; i++ {
		ln := ln0
		if i > 1 {
			if ln, err = net.Listen("tcp4", fmt.Sprintf("127.0.0.%d:%d", i, f.port)); err != nil {
				t.Fatal(err)
			}
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		srv := &agent.Server{Token: token, Doctor: doctor, LoopbackFleet: true,
			RelayPeers: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}
		go func() { done <- srv.Serve(ctx, ln) }()
		f.stop = append(f.stop, cancel)
		f.served = append(f.served, done)
		f.hosts = append(f.hosts, fleet.Host{Name: fmt.Sprintf("l%02d", i), Address: fmt.Sprintf("127.0.0.%d", i)})
	}
	t.Cleanup(func() {
		for i := range f.stop {
			f.kill(i)
		}
	})
	return f
}

// kill stops agent i and waits until it is gone.
func (f *loopFleet) kill(i int) {
	f.stop[i]()
	if ch := f.served[i]; ch != nil {
		<-ch
		f.served[i] = nil
	}
}

func (f *loopFleet) runner(t *testing.T, db string) *Runner {
	t.Helper()
	a, err := New(t.Context(), f.hosts, f.port, f.token, nil)
	if err != nil {
		t.Fatal(err)
	}
	a.Probe(t.Context())
	for _, h := range f.hosts {
		if err := a.Down(h); err != nil {
			t.Fatalf("%s: %v", h.Name, err)
		}
		if a.Info(h) == nil {
			t.Errorf("%s: the probe kept no host facts", h.Name)
		}
	}
	st, err := store.Open(t.Context(), db)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	docs, notes := a.FetchDoctors(t.Context())
	if len(docs) != len(f.hosts) || len(notes) != 0 {
		t.Errorf("doctor reports of %d hosts, notes %q", len(docs), notes)
	}
	return &Runner{Agents: a, Store: st, Doctors: docs, Interval: 100 * time.Millisecond}
}

func loopOptions(label string) fleet.Options {
	return fleet.Options{Pattern: fleet.Pattern{Kind: fleet.PatternPairs}, Duration: 300 * time.Millisecond,
		Streams: 1, Parallel: true, Label: label}
}

// TestRunnerLoopback: real agents on loopback run a parallel matrix
// through the relay (every leg's tests at once, so the race detector sees
// the runner shared by goroutines), and every try is stored with both
// hosts' doctor reports under the label.
func TestRunnerLoopback(t *testing.T) {
	f := startLoopFleet(t, 4)
	db := filepath.Join(t.TempDir(), "results.db")
	r := f.runner(t, db)
	res, err := fleet.Run(t.Context(), f.hosts, loopOptions("fleet-loop"), r)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Pairs) != 6 || res.Rounds != 3 {
		t.Fatalf("%d pairs in %d rounds", len(res.Pairs), res.Rounds)
	}
	for _, p := range res.Pairs {
		if p.AToB.Status == fleet.StatusFailed || p.BToA.Status == fleet.StatusFailed {
			t.Errorf("%s-%s failed: %q %q", p.A, p.B, p.AToB.Error, p.BToA.Error)
		}
	}
	checkStored(t, db, "fleet-loop", res)
	st, err := store.OpenReadOnly(t.Context(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	run, err := st.Run(t.Context(), res.Pairs[0].AToB.RunIDs[0])
	if err != nil || len(run.ClientDoctor) == 0 || len(run.ServerDoctor) == 0 {
		t.Errorf("run stored without both hosts' doctor reports: %v", err)
	}
}

// TestRunnerAgentGone: an agent that goes away mid-run makes its host
// down (a *fleet.HostDownError naming it), its remaining tests are not
// run, and the others' tests go on.
func TestRunnerAgentGone(t *testing.T) {
	f := startLoopFleet(t, 4)
	r := f.runner(t, filepath.Join(t.TempDir(), "results.db"))
	var once sync.Once
	opts := loopOptions("fleet-gone")
	opts.Parallel = false
	opts.Progress = func(fleet.Event) { once.Do(func() { f.kill(2) }) } // l03
	res, err := fleet.Run(t.Context(), f.hosts, opts, r)
	if err != nil {
		t.Fatal(err)
	}
	var failed []string
	for _, o := range res.Outliers {
		if o.Cause == fleet.CauseFailed {
			failed = append(failed, o.Kind+" "+o.Name)
			if o.Name == "l03" && !strings.Contains(o.Evidence, "does not answer") {
				t.Errorf("l03's evidence: %q", o.Evidence)
			}
		}
	}
	if len(failed) != 1 || failed[0] != "host l03" {
		t.Fatalf("failed outliers %q, want host l03\n%s", failed, dump(res))
	}
	for _, p := range res.Pairs {
		if p.A != "l03" && p.B != "l03" && (p.AToB.Status == fleet.StatusFailed || p.BToA.Status == fleet.StatusFailed) {
			t.Errorf("%s-%s failed without l03", p.A, p.B)
		}
	}
	// A test naming a host the runner does not know fails by itself.
	_, err = r.Run(t.Context(), fleet.Spec{From: f.hosts[0], To: fleet.Host{Name: "x", Address: "127.0.0.9"}, Duration: time.Second, Streams: 1})
	var hd *fleet.HostDownError
	if !errors.Is(err, errNotListed) || errors.As(err, &hd) {
		t.Errorf("unknown host: %v", err)
	}
}
