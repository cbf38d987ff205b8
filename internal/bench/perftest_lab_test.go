package bench

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/linerate/linerate/internal/agent"
	"github.com/linerate/linerate/internal/engine"
	"github.com/linerate/linerate/internal/hostfs"
	"github.com/linerate/linerate/internal/lab"
	"github.com/linerate/linerate/internal/result"
	"github.com/linerate/linerate/internal/testutil"
)

// TestLabStandInTools runs the drivers of the tools this machine cannot
// run (perftest: no RDMA device; netperf: not in Debian's main section)
// in one lab, each against a stand-in on PATH that prints the tool's
// captured output: the server waits to be stopped, the client prints the
// capture. What is real is the driver's whole path: the lab's two
// namespaces, the server started in host b and stopped, the telemetry,
// both lab0 interfaces read through netlink before and after, and the
// document the run becomes, which must match the bench/v1 schema.
func TestLabStandInTools(t *testing.T) {
	const name = "t-perfnic"
	h := newLab(t, name)
	bin := t.TempDir()
	// The stand-in servers run as the tool servers' own user, which must
	// reach them: t.TempDir's root is root's, mode 0700.
	for _, d := range []string{filepath.Dir(bin), bin} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	standIn := func(tool, client string) {
		script := "#!/bin/sh\n" +
			"# " + tool + " stand-in: the client (an argument is the server's address) prints a capture; the server waits\n" +
			"for a; do case $a in " + lab.AddrB + ") " + client + "; exit 0;; esac; done\n" +
			"exec sleep 60\n"
		if err := os.WriteFile(filepath.Join(bin, tool), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	capture := func(file string) string {
		p, err := filepath.Abs(filepath.Join("testdata", file))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	standIn("ib_write_bw", "cat "+capture("perftest-seed002-ib_write_bw.txt"))
	// netperf -P 0 with the driver's eight selectors prints their values
	// alone: the value line of the capture made with them.
	standIn("netperf", "tail -n 1 "+capture("netperf-2.7.1-tcp_rr-o.csv"))
	standIn("netserver", "true")
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	schema := benchSchema(t)
	// run makes one run of d as a campaign does (the document a user
	// gets), and checks that document against the schema.
	run := func(what string, d Driver, p Params) *result.Result {
		t.Helper()
		c := &Campaign{Spec: Spec{Driver: d.Name(), Peer: "lab:" + name, Repeat: 1, Run: p}, Driver: d}
		_, outs, err := c.Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		doc, err := json.Marshal(outs[0].Run)
		if err != nil {
			t.Fatal(err)
		}
		testutil.Validate(t, schema, what, doc)
		return outs[0].Run
	}

	// perftest: its NIC counters are read around it, as the iperf runs'
	// are.
	t.Run("perftest", func(t *testing.T) {
		root := t.TempDir()
		if err := os.MkdirAll(filepath.Join(root, "sys/class/infiniband/rxe0"), 0o755); err != nil {
			t.Fatal(err)
		}
		fs, err := hostfs.New(root)
		if err != nil {
			t.Fatal(err)
		}
		defer fs.Close()
		run := run("a perftest run (stand-in ib_write_bw)", &Perftest{Hosts: h, FS: fs},
			Params{NoTelemetry: true, Test: agent.Test{Params: engine.Params{Duration: 2 * time.Second, Interval: time.Second}}})
		if g := run.Gbps(); g < 55 || g > 56 {
			t.Errorf("the run's rate %.2f Gbit/s is not the capture's 55.86", g)
		}
		nc := run.End.NICCounters
		if nc == nil || nc.Client == nil || nc.Server == nil {
			t.Fatalf("NIC counters of both ends missing: %+v", nc)
		}
		for role, e := range map[string][2]string{
			"client": {nc.Client.Interface, nc.Client.NotRead}, "server": {nc.Server.Interface, nc.Server.NotRead},
		} {
			if e[0] != lab.Iface || e[1] != "" {
				t.Errorf("%s's NIC counters: interface %q, not read %q", role, e[0], e[1])
			}
		}
		for role, dl := range map[string]map[string]uint64{"client": nc.Client.Deltas, "server": nc.Server.Deltas} {
			if _, ok := dl["qdisc_drops"]; !ok {
				t.Errorf("%s's qdisc was not read: %v", role, dl)
			}
		}
	})

	// netperf: a TCP_RR ping-pong, its latencies the capture's.
	t.Run("netperf", func(t *testing.T) {
		run := run("a netperf run (stand-in netperf)", &Netperf{Hosts: h},
			Params{Test: agent.Test{Params: engine.Params{Duration: 2 * time.Second, Interval: time.Second}, Probe: &agent.ProbeTest{Kind: agent.ProbePingPong, Size: 1}}})
		l := run.End.Latency
		if l == nil || l.RTTUs.P50 == nil || *l.RTTUs.P50 != 96 || l.RatePerSecond != 9596.970 || run.Tool == nil || run.Tool.Name != "netperf" {
			t.Fatalf("the run is not the capture's (p50 96 µs, 9596.970/s): %+v", l)
		}
		// netperf reports at its end: each interval (the stand-in ends
		// before the first sample, so there may be none) is the hosts'
		// load, marked so, its figures unknown rather than zero.
		for i, iv := range run.Intervals {
			if !iv.LoadOnly || iv.Sum.Bytes != 0 {
				t.Errorf("interval %d: load_only %v, %d bytes; want a load-only interval", i, iv.LoadOnly, iv.Sum.Bytes)
			}
		}
	})
}
