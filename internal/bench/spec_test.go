package bench

import (
	"testing"
	"time"

	"github.com/linerate/linerate/internal/result"
)

// TestCommands: the commands a campaign prints to reproduce itself or
// one point carry every setting that made the runs, in forms bench reads
// back.
func TestCommands(t *testing.T) {
	multi := Placement{Client: []int{0, 2}, Server: []int{1, 3}}
	tests := []struct {
		name string
		got  string
		want string
	}{
		{"point with several CPUs a side",
			Spec{Peer: "10.0.0.2", Run: Params{Duration: 10 * time.Second}}.Command(Point{Streams: 2, Placement: multi}),
			"linerate bench 10.0.0.2 -t 10 -P 2 -A 0,2/1,3"},
		{"campaign with placements and zero copy",
			Spec{Peer: "10.0.0.2", Repeat: 3, Placements: []Placement{multi, {Client: []int{6}, Server: []int{7}}},
				Run: Params{Duration: 5 * time.Second, ZeroCopy: result.MsgZeroCopy, Congestion: "bbr", FQRate: 10e9}}.CampaignCommand(),
			"linerate bench 10.0.0.2 -t 5 --placements '0,2/1,3;6,7' --repeat 3 --zerocopy=msg_zerocopy --congestion bbr --fq-rate 10000000000"},
		{"perftest sweep",
			Spec{Engine: "perftest", Peer: "10.0.0.1", Streams: []int{1, 4}, Label: "rdma",
				Run: Params{Perftest: PerftestParams{Test: "ib_read_bw", Size: 65536, Device: "rocep3s0", GID: 3}}}.CampaignCommand(),
			"linerate bench 10.0.0.1 --engine perftest -t 10 --sweep-streams 1,4 --perftest-test ib_read_bw --perftest-size 65536 --rdma-device rocep3s0 --gid-index 3 --label rdma"},
		{"a recorded run",
			RunCommand(&result.Result{Engine: "native", Start: result.Start{Peer: "lab:demo", Streams: 1, DurationS: 3, OmitS: 1, IntervalS: 1,
				Direction: result.Receive, ZeroCopy: result.Sendfile,
				Placement: result.Placement{Client: []int{0}, Server: []int{1}, Source: "user"}}}, "x y"),
			"linerate bench lab:demo -t 3 -O 1 -P 1 -A 0,1 --reverse --zerocopy --label 'x y'"},
		{"a recorded run placed automatically",
			RunCommand(&result.Result{Engine: "iperf3", Start: result.Start{Peer: "10.0.0.2", Streams: 4, DurationS: 10, IntervalS: 1,
				Placement: result.Placement{Client: []int{0}, Server: []int{1}, Source: "auto"}}}, ""),
			"linerate bench 10.0.0.2 --engine iperf3 -t 10 -P 4"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s:\n got %s\nwant %s", tt.name, tt.got, tt.want)
		}
	}
	// What a command says about placement, bench reads back the same.
	p, err := ParsePlacement(multi.String())
	if err != nil || p.String() != "0,2/1,3" {
		t.Errorf("ParsePlacement(%q) = %v, %v", multi.String(), p, err)
	}
}
