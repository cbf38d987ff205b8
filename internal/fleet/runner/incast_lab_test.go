package runner

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/linerate/linerate/internal/fleet/launch/launchtest"
	"github.com/linerate/linerate/internal/lab"
)

// incastRate shapes the switch port toward the incast's receiver (its
// receive side): the one link every sender's traffic shares, as a
// top-of-rack port toward a storage server is.
const incastRate = "400mbit"

// TestFleetIncastLab: a lab of 5 hosts, h05's switch port shaped to 400
// Mbit/s, runs `linerate fleet run --lab --pattern incast:h05` as a user
// does: the agents fleet run starts let h05's take the 4 senders at once;
// every sender has a result and a stored run, the sum at the receiver is
// no more than its shaped port carries, Jain's index and the senders'
// retransmits are there, and the document validates against the schema.
// A pair run of h01 and h05 alone just after is logged beside it, for
// the share each sender got of what the receiver takes from one.
func TestFleetIncastLab(t *testing.T) {
	const name = "t-incast"
	if testing.Short() {
		// CI runs the suite without -short, so this runs there.
		t.Skip("-short: unit tests only, no lab")
	}
	launchtest.LabWith(t, lab.Config{Name: name, Hosts: 5})
	bin := linerate(t)
	db := filepath.Join(t.TempDir(), "results.db")
	rate := parseRate(t, incastRate)
	if err := lab.PlantFault(t.Context(), name, "h05", lab.ReceiveSide, rate); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lab.PlantFault(context.Background(), name, "h05", lab.ReceiveSide, 0) })

	plan := startCLI(t, nil, os.Environ(), "fleet", "run", "--lab", name, "--pattern", "incast:h05", "-t", "3", "--plan")
	if code := plan.wait(t, time.Minute); code != 0 || !strings.Contains(plan.stdout.String(), "h01→h05 h02→h05 h03→h05 h04→h05") {
		t.Fatalf("--plan: exit %d\n%s%s", code, plan.stdout.String(), plan.stderr.String())
	}

	c := startCLI(t, nil, os.Environ(), "fleet", "run", "--lab", name, "--pattern", "incast:h05", "-t", "3", "--json", "--db", db, "--label", "fleet-incast")
	if code := c.wait(t, 2*time.Minute); code != 0 {
		t.Fatalf("exit %d, want 0\nstdout: %s\nstderr: %s", code, c.stdout.String(), c.stderr.String())
	}
	noAgentsLeft(t, filepath.Dir(bin), 5*time.Second)
	res := c.result(t)
	in := res.Incast
	if in == nil || in.Receiver != "h05" || len(in.Senders) != 4 || res.Legs != 1 || res.Tests != 4 || len(res.Outliers) != 0 {
		t.Fatalf("incast %+v, %d legs, %d tests, outliers %v\n%s", in, res.Legs, res.Tests, res.Outliers, dump(res))
	}
	for _, s := range in.Senders {
		if s.Gbps == nil || s.RunID == 0 || s.Retransmits == nil || s.At == nil {
			t.Errorf("sender %s: no result: %+v", s.Name, s)
		}
	}
	if in.SumGbps == nil || in.JainIndex == nil || in.Retransmits == nil || in.At == nil {
		t.Fatalf("incast figures missing: %+v", in)
	}
	// tbf lets through its burst (2 ms at the rate) beyond the rate: 5%
	// is far more than that over 3 s.
	if limit := float64(rate) / 1e9 * 1.05; *in.SumGbps > limit {
		t.Errorf("the senders' sum %g Gbit/s is more than the receiver's port carries (%g)", *in.SumGbps, limit)
	}
	if in.ReceiverDrops.Readings == 0 && in.ReceiverDrops.NotRead == "" {
		t.Errorf("the receiver's counters neither read nor said why: %+v", in.ReceiverDrops)
	}
	checkStored(t, db, "fleet-incast", res)
	sch, err := jsonschema.NewCompiler().Compile("../../../docs/schema/fleet-v1.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(c.stdout.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if err := sch.Validate(doc); err != nil {
		t.Errorf("schema: %v", err)
	}

	alone := startCLI(t, nil, os.Environ(), "fleet", "run", "--lab", name, "--only", "h01,h05", "-t", "3", "--retests", "0", "--json", "--db", db, "--label", "fleet-incast-alone")
	// Exit 1 is the shaped port blamed: h05 receives at a fraction of
	// what it sends.
	if code := alone.wait(t, 2*time.Minute); code != 0 && code != 1 {
		t.Fatalf("h01-h05 alone: exit %d\nstderr: %s", code, alone.stderr.String())
	}
	one := alone.result(t).Pairs[0].AToBGbps
	if one == nil {
		t.Fatal("h01→h05 alone did not measure")
	}
	t.Logf("incast of 4 to h05 (port %s): sum %.3f Gbit/s, Jain %.3f, retransmits %d, receiver %s; h01→h05 alone %.3f Gbit/s: sum/alone %.2f",
		incastRate, *in.SumGbps, *in.JainIndex, *in.Retransmits, in.DropsText(), *one, *in.SumGbps / *one)
	var text strings.Builder
	res.WriteText(&text)
	t.Log("\n" + text.String())
}
