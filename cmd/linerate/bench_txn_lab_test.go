package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/linerate/linerate/internal/lab"
	"github.com/linerate/linerate/internal/testutil"
)

// txnDoc is the part of a transaction run's bench/v1 document the tests
// read.
type txnDoc struct {
	Start struct {
		Mode       string `json:"mode"`
		Streams    int    `json:"streams"`
		Threads    int    `json:"threads"`
		SkipRxCopy string `json:"skip_rx_copy"`
	} `json:"start"`
	Intervals []struct {
		Transactions *struct {
			Count uint64 `json:"count"`
		} `json:"transactions"`
	} `json:"intervals"`
	End struct {
		Transactions *struct {
			Mode      string  `json:"mode"`
			Count     uint64  `json:"count"`
			PerSecond float64 `json:"per_second"`
			Flows     int     `json:"flows"`
			Threads   int     `json:"threads"`
			RTTUs     struct {
				P50 *float64 `json:"p50"`
			} `json:"rtt_us"`
			CPU struct {
				Client float64 `json:"client"`
				Server float64 `json:"server"`
			} `json:"cpu_us_per_transaction"`
		} `json:"transactions"`
		RxCopy *struct {
			Asked  string `json:"asked"`
			Method string `json:"method"`
		} `json:"rx_copy"`
		SumReceived struct {
			Bytes uint64 `json:"bytes"`
		} `json:"sum_received"`
	} `json:"end"`
}

// startAgent runs `linerate serve` in the lab's host b with args and
// returns its log; the agent is killed when the test ends.
func startAgent(t *testing.T, bin, name, tok string, args ...string) *testutil.Buffer {
	t.Helper()
	agent := exec.Command(bin, append([]string{"serve", "--bind", lab.AddrB, "--token-file", tok}, args...)...)
	var log testutil.Buffer
	agent.Stdout, agent.Stderr = &log, &log
	if err := lab.Start(name, lab.B, agent); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { agent.Process.Kill(); agent.Wait() })
	for deadline := time.Now().Add(5 * time.Second); !strings.Contains(log.String(), "Listening on"); {
		if time.Now().After(deadline) {
			t.Fatalf("agent did not start: %s", log.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	return &log
}

// TestBenchTransactionsLab runs transactions (--rr, --crr) and many
// streams on two threads through `linerate serve` in a lab, as on two
// machines, and through `bench lab:NAME`: each document validates against
// docs/schema/bench-v1.schema.json and carries end.transactions with the
// flows and threads asked, counts that add up over the intervals, and the
// text output says transactions per second, latency per transaction and
// each end's CPU per transaction.
func TestBenchTransactionsLab(t *testing.T) {
	const name = "t-txn"
	bin, db := campaignLab(t, name)
	tok := filepath.Join(filepath.Dir(db), "token")
	if err := os.WriteFile(tok, []byte(testToken), 0o600); err != nil {
		t.Fatal(err)
	}
	// Its own port: bench lab:NAME starts an agent of its own on the
	// default one.
	agentLog := startAgent(t, bin, name, tok, "--max-clients", "2", "--port", "5302")
	peer := lab.AddrB + ":5302"
	schema := testutil.Schema(t, "../../docs/schema/bench-v1.schema.json")
	bench := func(peer string, args ...string) []byte {
		t.Helper()
		var stdout, stderr bytes.Buffer
		cmd := exec.Command(bin, append([]string{"bench", peer, "--no-store", "-t", "1"}, args...)...)
		if peer != "lab:"+name {
			cmd.Args = append(cmd.Args, "--token-file", tok)
		}
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := lab.Start(name, lab.A, cmd); err != nil {
			t.Fatal(err)
		}
		if err := cmd.Wait(); err != nil {
			t.Fatalf("bench %s %s: %v\n%s\nagent:\n%s", peer, strings.Join(args, " "), err, stderr.String(), agentLog.String())
		}
		return stdout.Bytes()
	}
	for _, c := range []struct {
		peer string
		args []string
		mode string
	}{
		{peer, []string{"--rr", "--flows", "4", "--threads", "2", "--depth", "2", "--size", "100"}, "rr"},
		{peer, []string{"--crr", "--flows", "4", "--threads", "2"}, "crr"},
		{"lab:" + name, []string{"--rr", "--flows", "3", "--threads", "2"}, "rr"},
	} {
		what := c.peer + " " + strings.Join(c.args, " ")
		out := bench(c.peer, append(c.args, "--json")...)
		testutil.Validate(t, schema, what, out)
		var doc txnDoc
		if err := json.Unmarshal(out, &doc); err != nil {
			t.Fatal(err)
		}
		tr := doc.End.Transactions
		if tr == nil || doc.Start.Mode != c.mode || tr.Mode != c.mode || tr.Threads != 2 || tr.Flows != doc.Start.Streams || tr.Count == 0 ||
			tr.PerSecond <= 0 || tr.RTTUs.P50 == nil || tr.CPU.Client <= 0 || tr.CPU.Server <= 0 {
			t.Errorf("%s: start %+v, end.transactions %+v", what, doc.Start, tr)
			continue
		}
		var sum uint64
		for _, iv := range doc.Intervals {
			if iv.Transactions == nil {
				t.Fatalf("%s: an interval without transactions", what)
			}
			sum += iv.Transactions.Count
		}
		if sum != tr.Count {
			t.Errorf("%s: the intervals count %d transactions, the end %d", what, sum, tr.Count)
		}
	}
	text := string(bench(peer, "--crr", "--flows", "2"))
	for _, want := range []string{"crr: 2 flows on 2 threads, 1-byte requests and responses", "Transactions   per second",
		"transactions  ", "Latency per transaction µs: min ", "CPU per transaction: client "} {
		if !strings.Contains(text, want) {
			t.Errorf("bench --crr text lacks %q:\n%s", want, text)
		}
	}
	// Two clients at once (serve --max-clients 2), each with its own
	// result: an rr test and a stream test.
	type one struct {
		out    []byte
		err    error
		stderr string
	}
	both := make(chan one, 2)
	for _, args := range [][]string{{"--rr", "--flows", "2", "--threads", "2"}, {"-P", "2"}} {
		var stdout, stderr bytes.Buffer
		cmd := exec.Command(bin, append([]string{"bench", peer, "--no-store", "-t", "2", "--json", "--token-file", tok}, args...)...)
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := lab.Start(name, lab.A, cmd); err != nil {
			t.Fatal(err)
		}
		go func() {
			err := cmd.Wait()
			both <- one{stdout.Bytes(), err, stderr.String()}
		}()
	}
	var txns, streams int
	for range 2 {
		o := <-both
		if o.err != nil {
			t.Fatalf("two clients at once: %v\n%s\nagent:\n%s", o.err, o.stderr, agentLog.String())
		}
		testutil.Validate(t, schema, "two clients at once", o.out)
		var doc struct {
			txnDoc
			End struct {
				Foreign struct {
					Notes []string `json:"notes"`
				} `json:"foreign"`
			} `json:"end"`
		}
		if err := json.Unmarshal(o.out, &doc); err != nil {
			t.Fatal(err)
		}
		var d txnDoc
		_ = json.Unmarshal(o.out, &d)
		switch {
		case d.End.Transactions != nil && d.End.Transactions.Count > 0 && d.End.SumReceived.Bytes > 0:
			txns++
		case d.End.Transactions == nil && d.End.SumReceived.Bytes > 0:
			streams++
		}
		if !strings.Contains(strings.Join(doc.End.Foreign.Notes, "\n"), "another client's test ran on the agent at the same time") {
			t.Errorf("a client of two at once is not told it shared the agent: %q", doc.End.Foreign.Notes)
		}
	}
	if txns != 1 || streams != 1 {
		t.Errorf("two clients at once: %d rr results, %d stream results; want one each", txns, streams)
	}
	// 8 streams on 2 threads, received without the copy.
	out := bench(peer, "-P", "8", "--threads", "2", "--skip-rx-copy", "--json")
	testutil.Validate(t, schema, "-P 8 --threads 2 --skip-rx-copy", out)
	var doc txnDoc
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Start.Threads != 2 || doc.Start.Streams != 8 || doc.Start.SkipRxCopy != "msg_trunc" || doc.End.RxCopy == nil ||
		doc.End.RxCopy.Asked != "msg_trunc" || doc.End.SumReceived.Bytes == 0 {
		t.Errorf("-P 8 --threads 2 --skip-rx-copy: start %+v, rx_copy %+v, %d bytes", doc.Start, doc.End.RxCopy, doc.End.SumReceived.Bytes)
	}
}
