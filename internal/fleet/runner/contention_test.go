package runner

import (
	"strings"
	"testing"

	"github.com/linerate/linerate/internal/result"
)

// TestContention: what in a run's own record makes a fleet's test
// contended, and what does not.
func TestContention(t *testing.T) {
	lab := func(client, server []int) result.Result {
		var r result.Result
		r.Start.Client.BootID, r.Start.Server.BootID = "b1", "b1"
		r.Start.Placement = result.Placement{Client: client, Server: server, Source: "auto"}
		return r
	}
	hosts := func(client, server []int) result.Result {
		r := lab(client, server)
		r.Start.Server.BootID = "b2"
		return r
	}
	foreign := func(own, other map[string]float64, top ...result.Proc) *result.Foreign {
		return &result.Foreign{Own: own, CPU: other, Top: top}
	}
	waited := func(f *result.Foreign, wait map[string]float64) *result.Foreign {
		f.Wait = wait
		return f
	}
	busyLoop := result.Proc{PID: 4123, Name: "stress-ng\x1b[2J", CPUPct: 97, CPU: 0, Pinned: true}
	tests := []struct {
		name string
		run  func() result.Result
		want string // "" or a part of the reason
	}{
		{"apart-idle", func() result.Result { return lab([]int{0}, []int{1}) }, ""},
		{"one-cpu", func() result.Result { return lab([]int{1}, []int{1}) }, "both ends ran on CPU 1 (h01 and h02 share a kernel)"},
		{"unpinned", func() result.Result { return lab(nil, []int{1}) }, "not pinned apart"},
		// Different kernels: each end picks its own CPUs, the same
		// numbers say nothing.
		{"hosts-same-numbers", func() result.Result { return hosts([]int{0}, []int{0}) }, ""},
		{"busy-cpu-hungry-test", func() result.Result {
			r := lab([]int{0}, []int{1})
			r.End.Foreign.Client = foreign(map[string]float64{"0": 48}, map[string]float64{"0": 51}, busyLoop)
			return r
		}, "CPU 0 of h01 was 51% busy with other work while the test's threads used 48% (pid 4123 stress-ng?[2J: 97% of a CPU)"},
		{"busy-server-cpu", func() result.Result {
			r := hosts([]int{2}, []int{5})
			r.End.Foreign.Server = foreign(map[string]float64{"5": 60}, map[string]float64{"5": 40})
			return r
		}, "CPU 5 of h02 was 40% busy"},
		// A shaped test's thread used 2% of its CPU: the busy loop filled
		// the rest, and did not hold the test back.
		{"busy-cpu-idle-test", func() result.Result {
			r := lab([]int{0}, []int{1})
			r.End.Foreign.Client = foreign(map[string]float64{"0": 2}, map[string]float64{"0": 97}, busyLoop)
			return r
		}, ""},
		// Other work on a CPU the test's threads did not run on.
		{"busy-other-cpu", func() result.Result {
			r := lab([]int{0}, []int{1})
			r.End.Foreign.Client = foreign(map[string]float64{"0": 90}, map[string]float64{"3": 99})
			return r
		}, ""},
		// With the run delay known, it decides: an unshaped receiver on a
		// loaded machine ran 15% and waited 85% (ready all the test); a
		// receiver shaped to 300 Mbit/s waited 44% (ready half of it); a
		// sender shaped to 1 Gbit/s ran 3% and waited 10%.
		{"starved", func() result.Result {
			r := lab([]int{0}, []int{1})
			r.End.Foreign.Server = waited(foreign(map[string]float64{"1": 15}, map[string]float64{"1": 84}), map[string]float64{"1": 85})
			return r
		}, "the test's threads on CPU 1 of h02 were ready to run 100% of the test and waited 85% for it, 84% busy with other work"},
		{"sharing-with-a-busy-loop", func() result.Result {
			r := lab([]int{0}, []int{1})
			r.End.Foreign.Client = waited(foreign(map[string]float64{"0": 49}, map[string]float64{"0": 50}, busyLoop), map[string]float64{"0": 48})
			return r
		}, "waited 48% for it, 50% busy with other work (pid 4123 stress-ng?[2J: 97% of a CPU)"},
		{"shaped-waits-half", func() result.Result {
			r := lab([]int{0}, []int{1})
			r.End.Foreign.Server = waited(foreign(map[string]float64{"1": 3}, map[string]float64{"1": 89}), map[string]float64{"1": 44})
			return r
		}, ""},
		{"shaped-on-a-busy-cpu", func() result.Result {
			r := lab([]int{0}, []int{1})
			r.End.Foreign.Client = waited(foreign(map[string]float64{"0": 3}, map[string]float64{"0": 86}, busyLoop), map[string]float64{"0": 10})
			return r
		}, ""},
		// Waiting for its own other stream threads: no other work.
		{"waits-for-itself", func() result.Result {
			r := hosts([]int{0}, []int{0})
			r.End.Foreign.Server = waited(foreign(map[string]float64{"0": 95}, map[string]float64{"0": 3}), map[string]float64{"0": 50})
			return r
		}, ""},
		{"light-other-work", func() result.Result {
			r := lab([]int{0}, []int{1})
			r.End.Foreign.Client = foreign(map[string]float64{"0": 80}, map[string]float64{"0": 12})
			return r
		}, ""},
	}
	for _, tt := range tests {
		r := tt.run()
		got := Contention(&r, "h01", "h02")
		switch {
		case tt.want == "" && got != "":
			t.Errorf("%s: contended: %q", tt.name, got)
		case tt.want != "" && !strings.Contains(got, tt.want):
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
		if strings.ContainsAny(got, "\x1b\n") {
			t.Errorf("%s: %q carries control characters", tt.name, got)
		}
	}
}
