package report

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/linerate/linerate/internal/agent"
	"github.com/linerate/linerate/internal/bench"
	"github.com/linerate/linerate/internal/engine"
	"github.com/linerate/linerate/internal/lab"
	"github.com/linerate/linerate/internal/result"
	"github.com/linerate/linerate/internal/store"
	"github.com/linerate/linerate/internal/testbin"
)

// TestLabNICDrops drops frames on purpose and follows the drops from the
// kernel to the report. In a lab, host a's lab0 gets a tbf of 1 Gbit/s
// whose queue holds 30 000 bytes: a TCP sender's 64 KB segments, cut
// into frames at the tbf, do not all fit, and the qdisc drops the rest
// (by hand, a 2 s native run: 663 Mbit/s, 13 033 retransmits, 13 904
// qdisc drops; a queue of 3000 bytes starves TCP altogether). A campaign with
// each engine (the native engine, client in host a and agent in host b;
// iperf3 and iperf2 through the lab's hosts) then must store, per run,
// both ends' counter growth (and so must a native UDP stream sent as fast
// as it goes, through the agent's probe): the client's qdisc_drops above zero (from
// the qdisc's own "dropped"), the server read too. The stored
// end.nic_counters must match docs/schema/bench-nic-counters.schema.json,
// the campaign's explanation must name the client's drops, and the
// report loaded from the database must show them in HTML and Markdown.
func TestLabNICDrops(t *testing.T) {
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("TestLabNICDrops needs root (network namespaces) and CI=true: run it with sudo")
		}
		t.Skip("needs root (network namespaces)")
	}
	dir := t.TempDir()
	bin := testbin.Build(t, "../../cmd/linerate")
	const name = "t-nicdrop"
	t.Setenv("LINERATE_STATE_DIR", filepath.Join(dir, "state"))
	if _, err := lab.Up(context.Background(), lab.Config{Name: name}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := lab.Down(context.Background(), name); err != nil {
			t.Errorf("lab down: %v", err)
		}
	})
	tc := exec.Command("ip", "netns", "exec", lab.Namespace(name, lab.A),
		"tc", "qdisc", "replace", "dev", lab.Iface, "root", "tbf", "rate", "1gbit", "burst", "32kb", "limit", "30000")
	if out, err := tc.CombinedOutput(); err != nil {
		t.Fatalf("%v: %v\n%s", tc.Args, err, out)
	}
	hosts, err := bench.NewLabHosts(name)
	if err != nil {
		t.Fatal(err)
	}
	db, err := store.Open(context.Background(), filepath.Join(dir, "r.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	schema, err := jsonschema.NewCompiler().Compile(filepath.Join("..", "..", "docs", "schema", "bench-nic-counters.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	drivers := map[string]bench.Driver{
		"native": &bench.Native{Lab: bench.LabEngine{Name: name, Self: bin}},
		"iperf3": &bench.Iperf3{Hosts: hosts},
		"iperf2": &bench.Iperf2{Hosts: hosts},
	}
	var labels []string
	for _, eng := range []string{"native", "iperf3", "iperf2", "native-udp"} {
		run := bench.Params{Test: agent.Test{Params: engine.Params{Duration: 2 * time.Second, Interval: time.Second}}}
		drv := drivers[eng]
		if eng == "native-udp" { // a UDP stream as fast as it goes, through the agent's probe
			run.Probe = &agent.ProbeTest{Kind: agent.ProbeUDP, Size: 1400}
			drv = drivers["native"]
		}
		c := &bench.Campaign{Spec: bench.Spec{Driver: strings.TrimSuffix(eng, "-udp"), Peer: bench.LabPrefix + name, Label: "drops-" + eng, Repeat: 1,
			Run: run}, Driver: drv, Store: db}
		s, outs, err := c.Run(context.Background())
		if err != nil {
			t.Fatalf("%s: %v", eng, err)
		}
		labels = append(labels, c.Spec.Label)
		stored, err := db.Run(context.Background(), outs[0].ID)
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			End struct {
				NICCounters json.RawMessage `json:"nic_counters"`
			} `json:"end"`
		}
		if err := json.Unmarshal(stored.Result, &doc); err != nil {
			t.Fatal(err)
		}
		var nc result.NICCounters
		if err := json.Unmarshal(doc.End.NICCounters, &nc); err != nil || nc.Client == nil || nc.Server == nil {
			t.Fatalf("%s: stored end.nic_counters %s (%v)", eng, doc.End.NICCounters, err)
		}
		inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc.End.NICCounters))
		if err != nil {
			t.Fatal(err)
		}
		if err := schema.Validate(inst); err != nil {
			t.Errorf("%s: end.nic_counters against its schema: %v", eng, err)
		}
		drops := nc.Client.Deltas["qdisc_drops"]
		t.Logf("%s: %.3f Gbit/s, %d retransmits; client %s qdisc_drops %d (sources %v); server %s grew %v",
			eng, outs[0].Run.Gbps(), outs[0].Run.End.SumSent.Retransmits, nc.Client.Interface, drops, nc.Client.Sources["qdisc_drops"], nc.Server.Interface, nc.Server.Grew())
		if outs[0].Run.Gbps() <= 0 {
			t.Errorf("%s: the run moved nothing: the drops must cost a working run, not starve it", eng)
		}
		if drops == 0 || nc.Client.Sources["qdisc_drops"]["qdisc.drops"] != drops || nc.Client.Interface != lab.Iface {
			t.Errorf("%s: the client's NIC counters show no qdisc drops: %+v", eng, nc.Client)
		}
		if nc.Server.Interface != lab.Iface || nc.Server.NotRead != "" || len(nc.Server.Deltas) == 0 {
			t.Errorf("%s: the server's NIC counters were not read: %+v", eng, nc.Server)
		}
		if _, ok := nc.Server.Deltas["qdisc_drops"]; !ok {
			t.Errorf("%s: the server's qdisc was not read: %+v", eng, nc.Server)
		}
		expl := strings.Join(s.Explanation, " ")
		if !strings.Contains(expl, "the client's NIC (lab0") || !strings.Contains(expl, "packets in its queueing discipline, whose queue was full (qdisc.drops)") {
			t.Errorf("%s: the explanation does not name the drops: %q", eng, s.Explanation)
		}
	}

	ds, err := Load(context.Background(), db, LoadOptions{Selection: Selection{Labels: labels}})
	if err != nil {
		t.Fatal(err)
	}
	page := renderHTML(t, *ds)
	tab, ok := parseTables(t, page)["nic-counters"]
	if !ok {
		t.Fatal("the report has no NIC counters table")
	}
	cause, end, by := tab.col(t, "Cause"), tab.col(t, "End"), tab.col(t, "Grew by")
	seen := map[string]bool{}
	for _, row := range tab.rows {
		if row[cause] == "qdisc_drops" && strings.HasPrefix(row[end], "client") {
			if n, err := strconv.ParseUint(row[by], 10, 64); err != nil || n == 0 {
				t.Errorf("row %q: grew by %q", row, row[by])
			}
			seen[row[tab.col(t, "Label")]] = true
		}
	}
	for _, l := range labels {
		if !seen[l] {
			t.Errorf("the report's NIC table has no client qdisc_drops row for %s: %q", l, tab.rows)
		}
	}
	m, err := Build(*ds)
	if err != nil {
		t.Fatal(err)
	}
	md := filepath.Join(dir, "r.md")
	if err := WriteMarkdown(md, m); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(md)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte("### NIC counters")) || !bytes.Contains(b, []byte("| qdisc\\_drops |")) {
		t.Error("the Markdown report does not show the drops")
	}
}
