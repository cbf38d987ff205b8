package bench

import (
	"strings"
	"testing"
	"time"

	"github.com/linerate/linerate/internal/agent"
	"github.com/linerate/linerate/internal/engine"
	"github.com/linerate/linerate/internal/explain"
	"github.com/linerate/linerate/internal/result"
	"github.com/linerate/linerate/internal/toolserver"
)

// TestCommands: the commands a campaign prints to reproduce itself or
// one point carry every setting that made the runs, in forms bench reads
// back.
func TestCommands(t *testing.T) {
	multi := agent.Pinning{Client: []int{0, 2}, Server: []int{1, 3}}
	tests := []struct {
		name string
		got  string
		want string
	}{
		{"point with several CPUs a side",
			Spec{Peer: "10.0.0.2", Run: Params{Test: agent.Test{Params: engine.Params{Duration: 10 * time.Second}}}}.Command(Point{Streams: 2, Pinning: multi}),
			"linerate bench 10.0.0.2 -t 10 -P 2 -A 0,2/1,3"},
		{"campaign with placements and zero copy",
			Spec{Peer: "10.0.0.2", Repeat: 3, Placements: []agent.Pinning{multi, {Client: []int{6}, Server: []int{7}}},
				Run: Params{Test: agent.Test{Params: engine.Params{Duration: 5 * time.Second, ZeroCopy: result.MsgZeroCopy, Congestion: "bbr", FQRate: 10e9}}}}.CampaignCommand(),
			"linerate bench 10.0.0.2 -t 5 --placements '0,2/1,3;6,7' --repeat 3 --zerocopy=msg_zerocopy --congestion bbr --fq-rate 10000000000"},
		{"perftest sweep",
			Spec{Driver: "perftest", Peer: "10.0.0.1", Streams: []int{1, 4}, Label: "rdma",
				Run: Params{Perftest: toolserver.PerftestParams{Test: "ib_read_bw", Size: 65536, Device: "rocep3s0", GID: 3}}}.CampaignCommand(),
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
	p, err := agent.ParsePinning(multi.String())
	if err != nil || p.String() != "0,2/1,3" {
		t.Errorf("agent.ParsePinning(%q) = %v, %v", multi.String(), p, err)
	}
}

func TestPlacementParsing(t *testing.T) {
	// The forms -A takes: one CPU or range a side with a comma, several
	// with a slash, one side only.
	ps, err := ParsePlacements("6,6;0,0; 6,7 ;auto;0-3,4-7;6,;0,2/1,3;6;/7")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range ps {
		got = append(got, p.String())
		if q, err := agent.ParsePinning(p.String()); err != nil || q.String() != p.String() {
			t.Errorf("%s does not survive a round trip: %v %v", p, q, err)
		}
	}
	if strings.Join(got, ";") != "6,6;0,0;6,7;auto;0-3,4-7;6,;0,2/1,3;6,;,7" {
		t.Errorf("placements %v", got)
	}
	for _, bad := range []string{"6,7,8", "x,1", ";", "0,2,1,3"} {
		if _, err := ParsePlacements(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	st, err := ParseStreams("1,2,4,2")
	if err != nil || len(st) != 3 {
		t.Errorf("streams %v %v", st, err)
	}
	if _, err := ParseStreams("0"); err == nil {
		t.Error("0 streams accepted")
	}
}

func TestSpecOrderInterleaves(t *testing.T) {
	s := Spec{Repeat: 2, Streams: []int{1, 2}, Placements: []agent.Pinning{{}, {Client: []int{0}, Server: []int{1}}}}
	if n := len(s.Points()); n != 4 {
		t.Fatalf("%d points", n)
	}
	if o := s.Order(); len(o) != 8 || o[0] != 0 || o[3] != 3 || o[4] != 0 {
		t.Errorf("order %v", o)
	}
	if !s.IsCampaign() || (Spec{}).IsCampaign() {
		t.Error("IsCampaign")
	}
}

// TestSummaryCommands: the commands a campaign's summary names for its
// points (explain writes them into its explanation as the best point's
// reproduce command) are the spec's, for a throughput and a ping-pong
// campaign.
func TestSummaryCommands(t *testing.T) {
	six := agent.Pinning{Client: []int{6}, Server: []int{6}}
	pinned := Spec{Driver: "iperf3", Peer: "192.168.88.3", Repeat: 7, Run: Params{Test: agent.Test{Params: engine.Params{Duration: 10 * time.Second}, Pinning: six}}}
	twoPlaces := Spec{Driver: "iperf3", Peer: "lab:t", Repeat: 2, Run: Params{Test: agent.Test{Params: engine.Params{Duration: 3 * time.Second}}},
		Placements: []agent.Pinning{{Client: []int{0}, Server: []int{0}}, {Client: []int{0}, Server: []int{1}}}}
	ping := func(udp bool, places ...agent.Pinning) Spec {
		return Spec{Driver: "native", Peer: "lab:x", Repeat: 3, Placements: places,
			Run: Params{Test: agent.Test{Probe: &agent.ProbeTest{Kind: agent.ProbePingPong, Size: 64, UDP: udp}}}}
	}
	for _, c := range []struct {
		spec  Spec
		point int
		want  string
	}{
		{pinned, 0, "linerate bench 192.168.88.3 --engine iperf3 -t 10 -P 1 -A 6,6"},
		{twoPlaces, 1, "linerate bench lab:t --engine iperf3 -t 3 -P 1 -A 0,1"},
		{ping(false, agent.Pinning{Client: []int{0}, Server: []int{0}}, agent.Pinning{Client: []int{0}, Server: []int{1}}), 1,
			"linerate bench lab:x -t 10 -A 0,1 --latency --size 64"},
		{ping(true, agent.Pinning{Client: []int{2}, Server: []int{3}}), 0, "linerate bench lab:x -t 10 -A 2,3 --latency --size 64 --udp"},
	} {
		d := c.spec.Design()
		if got := d.Points[c.point].Command; got != c.want {
			t.Errorf("point %d of %s: %s\nwant %s", c.point, c.spec.Peer, got, c.want)
		}
	}
	// The summary's best point carries its command.
	var outs []explain.Outcome
	for i, g := range []float64{7.1, 13.9, 7.3, 14.1} {
		r := &result.Result{}
		r.End.Seconds, r.End.SumReceived.BitsPerSecond = 3, g*1e9
		outs = append(outs, explain.Outcome{Point: i % 2, ID: int64(i + 1), Run: r})
	}
	s := explain.Summarize(twoPlaces.Design(), outs, explain.Topology{}, nil)
	if s.Best == nil || s.Best.Command != "linerate bench lab:t --engine iperf3 -t 3 -P 1 -A 0,1" || s.Best.Placement != "0,1" {
		t.Errorf("best %+v", s.Best)
	}
}
