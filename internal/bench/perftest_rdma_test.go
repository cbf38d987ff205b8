package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/linerate/linerate/internal/agent"
	"github.com/linerate/linerate/internal/engine"
	"github.com/linerate/linerate/internal/hostfs"
	"github.com/linerate/linerate/internal/hosttree"
	"github.com/linerate/linerate/internal/result"
	"github.com/linerate/linerate/internal/testutil"
	"github.com/linerate/linerate/internal/toolserver"
)

// localHosts runs a tool's two ends as processes of this host, the
// server reached on loopback.
type localHosts struct{}

func (localHosts) Addr() string                    { return "127.0.0.1" }
func (localHosts) StartClient(cmd *exec.Cmd) error { return cmd.Start() }
func (localHosts) Iface() string                   { return "lo" }
func (localHosts) NICIRQs() []int                  { return nil }
func (localHosts) Facts() (c, s result.HostInfo)   { return }
func (localHosts) StartServer(_ context.Context, t toolserver.ToolServer, _ time.Duration) (ServerProc, []string, error) {
	argv, err := t.Argv()
	if err != nil {
		return nil, nil, err
	}
	p, err := toolserver.Start(t)
	return p, argv, err
}

// rdmaEnd is one end of an RDMA run on captured trees: the tree the run
// starts on, and the tree of what its counters read after the run.
type rdmaEnd struct {
	root, after string
	fs          *hostfs.FS
}

// The RoCE host's port, as the hosttree RoCE hosts name it.
const (
	roceHW    = "sys/class/infiniband/rocep51s0/ports/1/hw_counters"
	roceStats = "linerate/ethtool/enp51s0np0/stats.json"
)

// writeRDMAEnd writes the healthy RoCE host as it is before the run and,
// changed by grow, as it is after; pcieGTs and lanes, when not zero, are
// the NIC's PCIe link.
func writeRDMAEnd(t *testing.T, pcieGTs float64, lanes int, grow func(hw, prio map[string]uint64)) rdmaEnd {
	t.Helper()
	h := hosttree.RoCEHealthy()
	if pcieGTs > 0 {
		h.NICs[0].PCI.CurSpeed, h.NICs[0].PCI.CurWidth = pcieGTs, lanes
	}
	e := rdmaEnd{root: filepath.Join(t.TempDir(), "before"), after: filepath.Join(t.TempDir(), "after")}
	if err := h.Write(e.root); err != nil {
		t.Fatal(err)
	}
	grow(h.NICs[0].RDMA[0].Ports[0].HWCounters, h.NICs[0].Interfaces[0].Ethtool.Stats.Driver)
	if err := h.Write(e.after); err != nil {
		t.Fatal(err)
	}
	fs, err := hostfs.New(e.root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fs.Close() })
	e.fs = fs
	return e
}

// becomeAfter is the shell commands that turn the end's counters into
// those after the run: what the stand-in client does as it "runs".
func (e rdmaEnd) becomeAfter() string {
	return "cp " + filepath.Join(e.after, roceHW) + "/* " + filepath.Join(e.root, roceHW) + "/ && " +
		"cp " + filepath.Join(e.after, roceStats) + " " + filepath.Join(e.root, roceStats) + "; "
}

// standInPerftest puts a perftest stand-in on PATH: the client (called
// with the server's address) runs pre, then prints the capture; the
// server waits to be stopped.
func standInPerftest(t *testing.T, tool, pre, capture string) {
	t.Helper()
	bin := t.TempDir()
	// The stand-in server runs as the tool servers' own user, which must
	// reach it: t.TempDir's root is root's, mode 0700.
	for _, d := range []string{filepath.Dir(bin), bin} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	abs, err := filepath.Abs(filepath.Join("testdata", capture))
	if err != nil {
		t.Fatal(err)
	}
	script := "#!/bin/sh\nfor a; do case $a in 127.0.0.1) " + pre + "cat " + abs + "; exit 0;; esac; done\nexec sleep 60\n"
	if err := os.WriteFile(filepath.Join(bin, tool), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
}

// TestPerftestRDMACounters: a perftest run (the stand-in printing the
// ConnectX-5 RoCE baseline report's ib_write_bw result) on two RoCE
// hosts' trees whose counters the run makes grow. Both ends' RDMA
// counters are read before and after; the document holds their growth
// and matches the schema; the explanation names each cause the counters
// show, and judges the rate against the port (90% of its speed) and the
// PCIe link.
func TestPerftestRDMACounters(t *testing.T) {
	schema := benchSchema(t)
	bw := Params{NoTelemetry: true, Test: agent.Test{Params: engine.Params{Duration: time.Second, Interval: time.Second}}}
	cases := []struct {
		name               string
		gts                float64
		lanes              int
		client, server     func(hw, prio map[string]uint64)
		verdict, limit     string
		causes             []string // "end:cause"
		sentences, without []string
	}{
		{
			name: "lossy fabric",
			client: func(hw, prio map[string]uint64) {
				hw["out_of_sequence"] += 5120
				hw["packet_seq_err"] += 240
				hw["local_ack_timeout_err"] += 3
				hw["rp_cnp_handled"] += 812
			},
			server: func(hw, prio map[string]uint64) {
				hw["np_cnp_sent"] += 830
				prio["tx_prio3_pause"] += 4410
			},
			verdict: "fail",
			causes:  []string{"client:retransmission", "client:congestion", "server:congestion", "server:pause"},
			sentences: []string{"55.86 Gbit/s is 55.9% of the port's 100 Gbit/s: FAIL", "Retransmission: the client's rocep51s0/1 counted local_ack_timeout_err 3, out_of_sequence 5.1 k, packet_seq_err 240",
				"Congestion notification: the server's rocep51s0/1 counted np_cnp_sent 830", "rp_cnp_handled 812", "Pause: the server's enp51s0np0 counted prio3.tx_pause 4.4 k"},
			without: []string{"PCIe limits", "No retransmission"},
		},
		{
			name: "PCIe 3.0 x8, nothing grew", gts: 8, lanes: 8,
			client: func(hw, prio map[string]uint64) {}, server: func(hw, prio map[string]uint64) {},
			verdict: "fail", limit: "pcie",
			sentences: []string{"FAIL", "The PCIe link (8 GT/s x8) carries at most", "PCIe limits this NIC, not the network", "No retransmission, congestion notification (CNP) or pause counter grew"},
			without:   []string{"Retransmission:", "Pause:"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cli, srv := writeRDMAEnd(t, tc.gts, tc.lanes, tc.client), writeRDMAEnd(t, 0, 0, tc.server)
			standInPerftest(t, "ib_write_bw", cli.becomeAfter()+srv.becomeAfter(), "perftest-seed002-ib_write_bw.txt")
			d := &Perftest{Hosts: localHosts{}, FS: cli.fs, ServerFS: srv.fs}
			c := &Campaign{Spec: Spec{Driver: d.Name(), Peer: "127.0.0.1", Repeat: 1, Run: bw}, Driver: d}
			_, outs, err := c.Run(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			run := outs[0].Run
			doc, err := json.Marshal(run)
			if err != nil {
				t.Fatal(err)
			}
			testutil.Validate(t, schema, "a perftest run with RDMA counters", doc)
			var back struct {
				End struct {
					RDMA *result.RDMA `json:"rdma"`
				} `json:"end"`
			}
			if err := json.Unmarshal(doc, &back); err != nil {
				t.Fatal(err)
			}
			x := back.End.RDMA
			if x == nil || x.Client == nil || x.Server == nil {
				t.Fatalf("end.rdma of both ends missing: %s", doc)
			}
			if x.Client.NotRead != "" || x.Server.NotRead != "" || x.Client.Device != "rocep51s0" || x.Client.Netdev != "enp51s0np0" {
				t.Errorf("ends: client %+v, server %+v", *x.Client, *x.Server)
			}
			// Every counter read is in the document with its growth, the
			// ones that did not grow at zero.
			for _, e := range []struct {
				d    *result.RDMAEnd
				grow func(hw, prio map[string]uint64)
			}{{x.Client, tc.client}, {x.Server, tc.server}} {
				hw, prio := map[string]uint64{}, map[string]uint64{}
				e.grow(hw, prio)
				if len(e.d.HWCounters) < 20 || e.d.Counters["port_xmit_data"] != 0 {
					t.Errorf("%s: hw_counters %d read, counters %v", e.d.Device, len(e.d.HWCounters), e.d.Counters)
				}
				for k, v := range hw {
					if got, ok := e.d.HWCounters[k]; !ok || got != v {
						t.Errorf("hw_counters %s grew by %d in the document, %d in the tree", k, got, v)
					}
				}
				if v := prio["tx_prio3_pause"]; e.d.Priority["3"]["tx_pause"] != v || e.d.Priority["3"]["rx_pause"] != 0 {
					t.Errorf("priority 3: %v, want tx_pause %d", e.d.Priority["3"], v)
				}
			}
			if x.Verdict != tc.verdict || x.Limit != tc.limit || x.PortGbps == nil || *x.PortGbps != 100 || x.OfPort == nil || x.PCIeGbps == nil {
				t.Errorf("verdict %q limit %q port %v of port %v pcie %v", x.Verdict, x.Limit, x.PortGbps, x.OfPort, x.PCIeGbps)
			}
			var causes []string
			for _, c := range x.Causes {
				causes = append(causes, c.End+":"+c.Cause)
			}
			if strings.Join(causes, " ") != strings.Join(tc.causes, " ") {
				t.Errorf("causes %v, want %v", causes, tc.causes)
			}
			var text bytes.Buffer
			WritePerftest(&text, run)
			t.Logf("the text:\n%s", text.String())
			if !strings.HasPrefix(text.String(), "ib_write_bw: 1048576 bytes × 5000: average 55.86 Gbit/s, peak 55.87 Gbit/s\n") {
				t.Errorf("text starts %q", text.String())
			}
			for _, s := range tc.sentences {
				if !strings.Contains(text.String(), s) {
					t.Errorf("the text does not say %q:\n%s", s, text.String())
				}
			}
			for _, s := range tc.without {
				if strings.Contains(text.String(), s) {
					t.Errorf("the text says %q:\n%s", s, text.String())
				}
			}
		})
	}
}

// TestPerftestLatency: --latency runs ib_write_lat and gives its
// percentiles as the ConnectX-5 RoCE baseline report does; a bandwidth
// tool is refused for it.
func TestPerftestLatency(t *testing.T) {
	cli, srv := writeRDMAEnd(t, 0, 0, func(hw, prio map[string]uint64) {}), writeRDMAEnd(t, 0, 0, func(hw, prio map[string]uint64) {})
	standInPerftest(t, "ib_write_lat", "", "perftest-seed002-ib_write_lat.txt")
	// The CLI names the tool for --latency (ib_write_lat) so that Check
	// looks for it.
	d := &Perftest{Hosts: localHosts{}, FS: cli.fs, ServerFS: srv.fs, Test: "ib_write_lat"}
	p := Params{NoTelemetry: true, Test: agent.Test{Params: engine.Params{Duration: time.Second, Interval: time.Second},
		Probe: &agent.ProbeTest{Kind: agent.ProbePingPong, Size: 64}}}
	run, err := d.Run(context.Background(), p, nil)
	if err != nil {
		t.Fatal(err)
	}
	if run.Tool == nil || run.Tool.Client[0] != "ib_write_lat" || !strings.Contains(strings.Join(run.Tool.Client, " "), "-s 8 -n 10000") {
		t.Errorf("client %v: not ib_write_lat with the baseline report's 8 bytes × 10000", run.Tool)
	}
	var text bytes.Buffer
	WritePerftest(&text, run)
	want := "ib_write_lat: 8 bytes × 10000, latency in µs: min 0.93 typical 0.99 avg 1.00 p99 1.15 p99.9 1.40"
	if !strings.HasPrefix(text.String(), want) {
		t.Errorf("text %q, want it to start %q", text.String(), want)
	}
	if x := run.End.RDMA; x == nil || x.Verdict != "" || x.OfPort != nil {
		t.Errorf("a latency run is judged against the port's rate: %+v", x)
	}
	p.Perftest.Test = "ib_write_bw"
	if _, err := d.Run(context.Background(), p, nil); err == nil || !strings.Contains(err.Error(), "needs a latency tool") {
		t.Errorf("a bandwidth tool for --latency: %v", err)
	}
}

// TestPerftestRDMACountersAgent: a perftest run whose server an agent on
// loopback starts (the stand-in), the agent's host root the healthy RoCE
// host's tree, which the run's client makes grow as on a lossy fabric.
// The agent reads its port around its tool server and returns the growth
// in its tool end; the server end of end.rdma is that growth, and the
// explanation names the server's causes. An agent on a host without an
// RDMA port says why it read nothing, and only then is the end not read.
func TestPerftestRDMACountersAgent(t *testing.T) {
	schema := benchSchema(t)
	bw := Params{NoTelemetry: true, Test: agent.Test{Params: engine.Params{Duration: time.Second, Interval: time.Second}}}
	cli := writeRDMAEnd(t, 0, 0, func(hw, prio map[string]uint64) { hw["out_of_sequence"] += 5120 })
	srv := writeRDMAEnd(t, 0, 0, func(hw, prio map[string]uint64) {
		hw["np_cnp_sent"] += 830
		prio["tx_prio3_pause"] += 4410
	})
	cases := []struct {
		name    string
		host    *hostfs.FS
		notRead string
	}{
		{name: "RoCE host", host: srv.fs},
		// This machine has no RDMA device: the agent's live host.
		{name: "no RDMA port", notRead: "no RDMA port under /sys/class/infiniband"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// The trees start from before the run each time.
			for _, e := range []rdmaEnd{cli, srv} {
				restoreBefore(t, e)
			}
			standInPerftest(t, "ib_write_bw", cli.becomeAfter()+srv.becomeAfter(), "perftest-seed002-ib_write_bw.txt")
			addr := rdmaAgent(t, tc.host)
			d := &Perftest{Hosts: &AgentHosts{Peer: addr, Token: benchToken, Interval: time.Second, FS: cli.fs}, FS: cli.fs}
			c := &Campaign{Spec: Spec{Driver: d.Name(), Peer: addr, Repeat: 1, Run: bw}, Driver: d}
			_, outs, err := c.Run(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			doc, err := json.Marshal(outs[0].Run)
			if err != nil {
				t.Fatal(err)
			}
			testutil.Validate(t, schema, "a perftest run with the agent's RDMA counters", doc)
			x := outs[0].Run.End.RDMA
			if x == nil || x.Client == nil || x.Server == nil {
				t.Fatalf("end.rdma of both ends missing: %+v", x)
			}
			if x.Client.NotRead != "" || x.Client.HWCounters["out_of_sequence"] != 5120 {
				t.Errorf("client end: %+v", *x.Client)
			}
			s := x.Server
			if tc.notRead != "" {
				if !strings.Contains(s.NotRead, tc.notRead) || s.HWCounters != nil {
					t.Errorf("server end %+v: want not_read %q and no counters", *s, tc.notRead)
				}
				return
			}
			if s.NotRead != "" || s.Device != "rocep51s0" || s.Port != 1 || s.Netdev != "enp51s0np0" {
				t.Errorf("server end: %+v", *s)
			}
			if s.HWCounters["np_cnp_sent"] != 830 || s.HWCounters["out_of_sequence"] != 0 || len(s.HWCounters) < 20 {
				t.Errorf("server hw_counters: %v", s.HWCounters)
			}
			if s.Priority["3"]["tx_pause"] != 4410 || s.Priority["3"]["rx_pause"] != 0 {
				t.Errorf("server priority 3: %v", s.Priority["3"])
			}
			var causes []string
			for _, c := range x.Causes {
				causes = append(causes, c.End+":"+c.Cause)
			}
			if want := "client:retransmission server:congestion server:pause"; strings.Join(causes, " ") != want {
				t.Errorf("causes %v, want %s", causes, want)
			}
		})
	}
}

// restoreBefore puts the end's counters back as they were before a run.
func restoreBefore(t *testing.T, e rdmaEnd) {
	t.Helper()
	fresh := filepath.Join(t.TempDir(), "before")
	h := hosttree.RoCEHealthy()
	if err := h.Write(fresh); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{roceHW, roceStats} {
		if out, err := exec.Command("cp", "-r", "-T", filepath.Join(fresh, f), filepath.Join(e.root, f)).CombinedOutput(); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
	}
}

// rdmaAgent runs an agent that starts perftest servers on 127.0.0.1, its
// host read below host (nil: the live host).
func rdmaAgent(t *testing.T, host *hostfs.FS) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	logs := &testutil.Buffer{}
	srv := &agent.Server{Token: benchToken, Tools: toolserver.AgentTools{AllowPerftest: true}, Host: host,
		Logger: slog.New(slog.NewTextHandler(logs, nil))}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
		if t.Failed() {
			t.Logf("agent log:\n%s", logs.String())
		}
	})
	return ln.Addr().String()
}
