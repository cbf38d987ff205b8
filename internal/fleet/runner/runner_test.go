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
	return startLoopFleetMax(t, n, nil)
}

// startLoopFleetMax is startLoopFleet whose agent i (0-based) takes
// maxClients[i] clients at once (serve --max-clients; 1 when absent).
func startLoopFleetMax(t *testing.T, n int, maxClients map[int]int) *loopFleet {
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
		srv := &agent.Server{Token: token, Doctor: doctor, LoopbackFleet: true, MaxClients: maxClients[i-1],
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

// TestIncastLoopback: real agents on loopback run an incast through the
// relay. A receiver whose agent takes one client at a time answers the
// other senders busy, and their errors say which flag its agent needs;
// one started with --max-clients 3 takes the three senders at once, each
// with its own stored run, its retransmits and the receiver's counters.
func TestIncastLoopback(t *testing.T) {
	opts := loopOptions("fleet-incast")
	opts.Pattern = fleet.Pattern{Kind: fleet.PatternIncast, Center: "l04"}
	opts.Duration = time.Second

	f := startLoopFleet(t, 4)
	res, err := fleet.Run(t.Context(), f.hosts, opts, f.runner(t, filepath.Join(t.TempDir(), "results.db")))
	if err != nil {
		t.Fatalf("%v\n%s", err, dump(res))
	}
	busy := 0
	for _, s := range res.Incast.Senders {
		if s.Error != "" {
			busy++
			if !strings.Contains(s.Error, "l04's agent takes fewer clients at once than the incast's 3 senders: it must run with 'linerate serve --max-clients 3'") {
				t.Errorf("%s: %s", s.Name, s.Error)
			}
		}
	}
	if busy == 0 {
		t.Errorf("an agent of one client at a time took 3 senders at once\n%s", dump(res))
	}

	f = startLoopFleetMax(t, 4, map[int]int{3: 3})
	db := filepath.Join(t.TempDir(), "results.db")
	res, err = fleet.Run(t.Context(), f.hosts, opts, f.runner(t, db))
	if err != nil {
		t.Fatal(err)
	}
	in := res.Incast
	sum := 0.0
	for _, s := range in.Senders {
		if s.Gbps == nil || s.RunID == 0 || s.Retransmits == nil {
			t.Errorf("sender %s: %+v", s.Name, s)
			continue
		}
		sum += *s.Gbps
	}
	if in.SumGbps == nil || in.JainIndex == nil || *in.SumGbps < sum-0.002 || *in.SumGbps > sum+0.002 {
		t.Errorf("sum %v of senders adding to %g, Jain %v", in.SumGbps, sum, in.JainIndex)
	}
	if in.ReceiverDrops.Readings == 0 && in.ReceiverDrops.NotRead == "" {
		t.Errorf("receiver drops neither read nor said why: %+v", in.ReceiverDrops)
	}
	checkStored(t, db, "fleet-incast", res)
}
