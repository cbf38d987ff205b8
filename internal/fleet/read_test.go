package fleet

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// fleetSchema compiles docs/schema/fleet-v1.schema.json.
func fleetSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	sch, err := jsonschema.NewCompiler().Compile("../../docs/schema/fleet-v1.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	return sch
}

// checkDocument checks a fleet/v1 document b as written: it validates
// against sch, and ReadResult takes it and marshals it back to the same
// bytes.
func checkDocument(t *testing.T, sch *jsonschema.Schema, b []byte) {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if err := sch.Validate(doc); err != nil {
		t.Errorf("schema: %v", err)
	}
	back, err := ReadResult(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if b2, _ := json.Marshal(back); !bytes.Equal(b, b2) {
		t.Error("the document changed when read back")
	}
}

// TestResultSchema: documents of runs with every kind of outcome validate
// against docs/schema/fleet-v1.schema.json and read back unchanged.
func TestResultSchema(t *testing.T) {
	sch := fleetSchema(t)
	sampled := opts()
	sampled.Design, sampled.Seed, sampled.Parallel = DesignSampled, 7, true
	sched, err := SampledSchedule(12, 4, 7)
	if err != nil {
		t.Fatal(err)
	}
	name := func(i int) string { return fleetOf(12)[i].Name }
	p0, p1 := sched.Rounds[0][0], sched.Rounds[1][1]
	slowPath := [2]string{name(p0.A), name(p0.B)}
	contended := [2]string{name(p1.A), name(p1.B)}
	for _, c := range []struct {
		n int
		o Options
		f *fakeNet
	}{
		{6, opts(), &fakeNet{base: 9.5}},
		{6, opts(), &fakeNet{base: 9.5, sendCap: map[string]float64{"h03": 1.9}, pathCap: map[[2]string]float64{{"h05", "h01"}: 4},
			fail: map[[2]string]error{{"h01", "h02"}: errMsg("agent died")}}},
		{6, opts(), &fakeNet{base: 9.5, down: map[string]bool{"h02": true}}},
		// Inconclusive tests, a parallel run's loads, a sampled design's
		// probes (each with an untested direction).
		{12, sampled, &fakeNet{base: 9.5, contend: map[[2]string]int{contended: 9}, pathCap: map[[2]string]float64{slowPath: 3}}},
	} {
		res := runFake(t, c.n, c.o, c.f)
		if c.o.Design == DesignSampled {
			// The features this document is here for.
			b, _ := json.Marshal(res)
			for _, want := range []string{`"status":"inconclusive"`, `"probe":true`, `"status":"untested"`, `"tries_at_once":[6,`, `"tries_contention":["CPU`, `"design":"sampled"`} {
				if !bytes.Contains(b, []byte(want)) {
					t.Errorf("the sampled document lacks %s", want)
				}
			}
		}
		b, err := json.Marshal(res)
		if err != nil {
			t.Fatal(err)
		}
		checkDocument(t, sch, b)
	}
}

type errMsg string

func (e errMsg) Error() string { return string(e) }

func TestReadResultRefuses(t *testing.T) {
	good, _ := json.Marshal(runFake(t, 3, opts(), &fakeNet{base: 9.5}))
	for name, edit := range map[string]func(string) string{
		"schema":       func(s string) string { return strings.Replace(s, Schema, "linerate.bench/v1", 1) },
		"unknown host": func(s string) string { return strings.Replace(s, `"b":"h02"`, `"b":"h99"`, 1) },
		"negative":     func(s string) string { return strings.Replace(s, `"a_to_b_gbps":`, `"a_to_b_gbps":-`, 1) },
		"status":       func(s string) string { return strings.Replace(s, `"status":"ok"`, `"status":"great"`, 1) },
		"bad name":     func(s string) string { return strings.Replace(s, `"name":"h01"`, `"name":"-h01"`, 1) },
		"not json":     func(s string) string { return s[:len(s)/2] },
		"one host": func(string) string {
			return `{"schema":"linerate.fleet/v1","hosts":[{"name":"a","address":"1.2.3.4"}]}`
		},
	} {
		if _, err := ReadResult(strings.NewReader(edit(string(good)))); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// FuzzReadResult: any input is refused with an error or reads as a
// document that passes Check again; never a panic.
func FuzzReadResult(f *testing.F) {
	for _, fn := range []*fakeNet{{base: 9.5}, {base: 9.5, sendCap: map[string]float64{"h02": 1}, fail: map[[2]string]error{{"h01", "h03"}: errMsg("x")}}} {
		res, _ := Run(f.Context(), fleetOf(3), opts(), fn)
		b, _ := json.Marshal(res)
		f.Add(b)
	}
	// An incast's document, with its figures.
	res, _ := Run(f.Context(), fleetOf(4), incastOpts("h04"), &incastNet{capGbps: 9, weight: map[string]float64{"h02": 0.3},
		drops: map[string]uint64{"h01": 3}, fail: map[string]error{"h03": errMsg("refused")}})
	b, _ := json.Marshal(res)
	f.Add(b)
	// A latency run's document, with its halving rounds.
	lat := opts()
	lat.Latency, lat.Halving = true, true
	res, _ = Run(f.Context(), fleetOf(4), lat, latencyNet{&fakeNet{base: 100, sendCap: map[string]float64{"h02": 20}, recvCap: map[string]float64{"h02": 20}}})
	b, _ = json.Marshal(res)
	f.Add(b)
	f.Fuzz(func(t *testing.T, b []byte) {
		res, err := ReadResult(bytes.NewReader(b))
		if err != nil {
			return
		}
		if err := res.Check(); err != nil {
			t.Fatalf("read but fails Check: %v", err)
		}
	})
}
