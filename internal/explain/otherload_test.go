package explain

import (
	"strings"
	"testing"

	"github.com/linerate/linerate/internal/result"
	"github.com/linerate/linerate/internal/telemetry"
)

// busyRun is a run on one machine (both ends share a boot ID) with the
// stream threads on CPU 1 and another process spinning on CPU 0.
func busyRun(gbps, pct float64) *result.Result {
	r := syntheticRun(gbps, nil)
	r.Start.Client.BootID, r.Start.Server.BootID = "one", "one"
	r.Start.Placement = result.Placement{Client: []int{1}, Server: []int{1}, Source: "auto"}
	r.End.Foreign = result.HostForeign{
		Client: &result.Foreign{PID: 10, Seconds: 10, Own: map[string]float64{"1": 60}, CPU: map[string]float64{"0": pct, "1": 3},
			Top: []result.Proc{{PID: 5, Name: "go", CPUPct: pct, CPU: 0}, {PID: 4123, Name: "stress-ng", CPUPct: pct - 1, CPU: 0, Pinned: true},
				{PID: 6, Name: "gopls", CPUPct: 3, CPU: 0}, {PID: 77, Name: "sshd", CPUPct: 2, CPU: 1}}},
		Server: &result.Foreign{PID: 11, Seconds: 10, CPU: map[string]float64{"0": pct}},
	}
	return r
}

// TestExplainOtherLoad: a process spinning on CPU 0 through three runs is
// named once, by pid and name, with the runs and the median share; the
// host is read once when both ends share it; a quiet process is not named.
func TestExplainOtherLoad(t *testing.T) {
	runs := []*result.Result{busyRun(9, 96), busyRun(9.2, 97), busyRun(9.1, 95)}
	got := explainOtherLoad(runs)
	// The pinned process first, though another used more of the CPU: it
	// may have run on both.
	want := "CPU 0 was 96% busy with pid 4123 (stress-ng, 95% of a CPU, pinned to it) and pid 5 (go, 96% of a CPU), not this test, during runs 1-3; the test kept its threads off it."
	if len(got) != 1 || got[0] != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
	// Two hosts: each end's busy CPUs are named as that end's.
	two := busyRun(9, 96)
	two.Start.Server.BootID = "other"
	two.Start.Placement.Server = []int{0}
	got = explainOtherLoad([]*result.Result{busyRun(9, 96), two})
	if len(got) != 3 || !strings.Contains(strings.Join(got, "\n"), "the server's CPU 0 was 96% busy with other work (no single process stood out), not this test, during run 2; the test's threads were pinned on it too.") {
		t.Errorf("two hosts: %q", got)
	}
	// Unpinned threads (one free CPU for two ends) are said to be so.
	un := busyRun(9, 96)
	un.Start.Placement = result.Placement{Source: "auto"}
	if got = explainOtherLoad([]*result.Result{un}); len(got) != 1 || !strings.HasSuffix(got[0], "during the run; the test's threads were left unpinned, to share the CPUs as the scheduler saw fit.") {
		t.Errorf("unpinned: %q", got)
	}
	// The report's other-load notes say where it is unknown.
	quiet := syntheticRun(9, nil)
	quiet.End.Foreign.Notes = []string{"server: other load unknown: open /proc/stat: permission denied"}
	got = explainOtherLoad([]*result.Result{quiet, syntheticRun(9, nil)})
	if len(got) != 1 || got[0] != "Other load on the CPUs unknown during run 1: server: other load unknown: open /proc/stat: permission denied." {
		t.Errorf("unknown: %q", got)
	}
}

// TestUnknownIsUnknown: runs whose server could not read /proc/softirqs
// and /proc/stat say "softirq load unknown (…)", in the summary and in a
// bucket explanation, never "no softirq load was seen"; the buckets
// name no softirq CPU read from zeros.
func TestUnknownIsUnknown(t *testing.T) {
	var outs []Outcome
	for i, g := range []float64{6.1, 6.2, 6.0, 9.9, 9.8, 9.7} {
		r := syntheticRun(g, nil)
		for _, iv := range r.Intervals {
			for k := range iv.CPU.Server { // what an unreadable tree leaves: no CPUs
				delete(iv.CPU.Server, k)
			}
		}
		r.End.Unread.Server = map[string]string{telemetry.SrcStat: "open /proc/stat: permission denied",
			telemetry.SrcSoftirqs: "open /proc/softirqs: permission denied"}
		if i == 5 {
			r.End.Unread.Server = map[string]string{telemetry.SrcSoftirqs: "open /proc/softirqs: permission denied"}
		}
		outs = append(outs, Outcome{Run: r})
	}
	s := Summarize(designOf("iperf3", "h", nil, nil, nil), outs, ryzenX4Topology(), nil)
	text := strings.Join(s.Explanation, "\n")
	for _, want := range []string{
		"The server's softirq load and CPU busy shares unknown (/proc/stat could not be read: open /proc/stat: permission denied) during runs 1-5: unmeasured, not zero.",
		"The server's softirq load unknown (/proc/softirqs could not be read: open /proc/softirqs: permission denied) during runs 1-6: unmeasured, not zero.",
		"softirq load unknown (open /proc/stat: permission denied; open /proc/softirqs: permission denied)",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("explanation lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "no softirq load was seen") {
		t.Errorf("unknown read as none:\n%s", text)
	}
	for _, b := range s.Points[0].Buckets {
		if len(b.Softirq) != 0 {
			t.Errorf("bucket names softirq CPUs %v from unread sources", b.Softirq)
		}
	}
}

// TestFewRunsNoVariance: 2 or 3 runs say that they cannot show buckets
// and how many runs would; 4 do not need to.
func TestFewRunsNoVariance(t *testing.T) {
	for n, want := range map[int]bool{2: true, 3: true, 4: false, 1: false} {
		var outs []Outcome
		for i := range n {
			outs = append(outs, Outcome{Run: syntheticRun(5+float64(i)*3, nil)})
		}
		s := Summarize(designOf("native", "h", nil, nil, nil), outs, Topology{}, nil)
		text := strings.Join(s.Explanation, "\n")
		if got := strings.Contains(text, "runs cannot fall into buckets") && strings.Contains(text, "run --repeat 4 or more"); got != want {
			t.Errorf("%d runs: says why there is no variance explanation: %v, want %v\n%s", n, got, want, text)
		}
	}
}

// TestOtherLoadAddsUp: a CPU 23% busy whose busiest process took 2% of a
// CPU is not said to be busy "with" that process.
func TestOtherLoadAddsUp(t *testing.T) {
	r := syntheticRun(10, nil)
	r.End.Foreign.Client = &result.Foreign{CPU: map[string]float64{"1": 23},
		Top: []result.Proc{{PID: 3245, Name: "kworker/1:2", CPUPct: 2, CPU: 1}}}
	r.End.Foreign.Server = &result.Foreign{CPU: map[string]float64{"2": 60},
		Top: []result.Proc{{PID: 77, Name: "stress-ng", CPUPct: 58, CPU: 2}}}
	got := strings.Join(OtherLoad(r), "\n")
	for _, want := range []string{
		"the client's CPU 1 was 23% busy with other work that no process seen there explains (the busiest seen: pid 3245 (kworker/1:2, 2% of a CPU)), not this test",
		"the server's CPU 2 was 60% busy with pid 77 (stress-ng, 58% of a CPU), not this test",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("lacks %q:\n%s", want, got)
		}
	}
}
