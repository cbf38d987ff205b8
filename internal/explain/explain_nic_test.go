package explain

import (
	"strings"
	"testing"

	"github.com/linerate/linerate/internal/result"
)

// withNIC gives a run its ends' host names and NIC counter growth.
func withNIC(r *result.Result, client, server *result.NICDelta) *result.Result {
	r.Start.Client.Hostname, r.Start.Server.Hostname = "host-a", "host-b"
	r.End.NICCounters = &result.NICCounters{Client: client, Server: server}
	return r
}

// mlx5 is one end's growth on a ConnectX card: rx_out_of_buffer counts
// frames dropped for lack of RX buffers, and the kernel's rx_dropped
// nothing.
func mlx5(noBuffer uint64) *result.NICDelta {
	return &result.NICDelta{Interface: "enp1s0f0np0", Driver: "mlx5_core",
		Deltas:  map[string]uint64{"rx_no_buffer": noBuffer, "rx_dropped": 0, "pause_tx": 0},
		Sources: map[string]map[string]uint64{"rx_no_buffer": {"rx_out_of_buffer": noBuffer}, "rx_dropped": {"link.rx_dropped": 0}, "pause_tx": {"tx_pause_ctrl_phy": 0}}}
}

func quiet() *result.NICDelta {
	return &result.NICDelta{Interface: "enp1s0f0np0", Driver: "mlx5_core", Deltas: map[string]uint64{"qdisc_drops": 0, "tx_dropped": 0}}
}

// TestExplainNICDrops: the x4 home lab's three buckets, where host b's NIC ran
// out of RX buffers in the slow runs (the softirq that refills its ring
// shared the application's core) and lost far fewer frames in the fast
// ones. The explanation names the end, the cause, the driver's own
// counter and the figures of both buckets: 400 k + 450 k + 350 k = 1.2 M
// in the slow runs, 1500 + 1500 = 3 k in the fast.
func TestExplainNICDrops(t *testing.T) {
	rs := ryzenX4Runs() // 64.6 98.8 84.9 64.5 99.0 64.7 83.7 Gbit/s
	slowDrops := map[int]uint64{0: 400_000, 3: 450_000, 5: 350_000}
	for i, r := range rs {
		n := uint64(1500)
		if v, ok := slowDrops[i]; ok {
			n = v
		}
		withNIC(r, quiet(), mlx5(n))
	}
	rs[2].End.NICCounters.Server.Deltas["rx_no_buffer"] = 0 // a middle run: nothing
	var outs []Outcome
	for i, r := range rs {
		outs = append(outs, Outcome{ID: int64(i + 1), Run: r})
	}
	s := Summarize(designOf("native", "host-b", nil, nil, nil), outs, ryzenX4Topology(), nil)
	text := strings.Join(s.Explanation, "\n")
	t.Log("\n" + text)
	want := "During the slow runs the server's NIC (enp1s0f0np0 on host-b) dropped 1.2 M frames for lack of RX buffers (rx_out_of_buffer), 3 k in the fast runs."
	if !strings.Contains(text, want) {
		t.Errorf("explanation lacks %q", want)
	}
	if strings.Contains(text, "client's NIC") || strings.Contains(text, "pause") {
		t.Error("an end or cause that did not grow is in the explanation")
	}
}

// TestExplainNICNoneInFast: drops only in the slow runs, of two causes
// on the client (the sender's qdisc and its driver's queue), and an end
// not read at all in the fast runs.
func TestExplainNICNoneInFast(t *testing.T) {
	lab0 := func(qdisc, tx uint64) *result.NICDelta {
		return &result.NICDelta{Interface: "lab0", Driver: "veth",
			Deltas:  map[string]uint64{"qdisc_drops": qdisc, "tx_dropped": tx, "rx_dropped": 0},
			Sources: map[string]map[string]uint64{"qdisc_drops": {"qdisc.drops": qdisc}, "tx_dropped": {"link.tx_dropped": tx}}}
	}
	slow := []*result.Result{withNIC(syntheticRun(3, nil), lab0(61_234, 17), lab0(0, 0)), withNIC(syntheticRun(3.1, nil), lab0(1_000, 0), lab0(0, 0))}
	fast := []*result.Result{withNIC(syntheticRun(9, nil), lab0(0, 0), &result.NICDelta{Interface: "lab0", NotRead: "no answer within 5s"})}
	got := explainNICBuckets(slow, fast, "slow", "fast")
	want := []string{"During the slow runs the client's NIC (lab0 on host-a) dropped 17 frames on their way out (link.tx_dropped), none in the fast runs; and dropped 62.2 k packets in its queueing discipline, whose queue was full (qdisc.drops), none in the fast runs."}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	// Nothing grew: the explanation says the NICs are cleared.
	got = explainNICBuckets(fast, fast, "slow", "fast")
	if len(got) != 1 || !strings.Contains(got[0], "No NIC counter of either end grew during the slow runs") {
		t.Errorf("nothing grew: %q", got)
	}
	// Nothing read: nothing said.
	if got := explainNICBuckets([]*result.Result{syntheticRun(3, nil)}, fast, "slow", "fast"); len(got) != 0 {
		t.Errorf("not read: %q", got)
	}
}

// TestExplainNICOneBucket: runs that did not split still say what their
// NICs dropped, summed over the runs.
func TestExplainNICOneBucket(t *testing.T) {
	var outs []Outcome
	for i := range 3 {
		outs = append(outs, Outcome{ID: int64(i + 1), Run: withNIC(syntheticRun(9.4, nil), quiet(), mlx5(uint64(i+1)*1_000_000))})
	}
	s := Summarize(designOf("native", "host-b", nil, nil, nil), outs, ryzenX4Topology(), nil)
	want := "1 stream, placement auto: during the 3 runs the server's NIC (enp1s0f0np0 on host-b) dropped 6 M frames for lack of RX buffers (rx_out_of_buffer)."
	if len(s.Explanation) == 0 || s.Explanation[0] != want {
		t.Errorf("explanation %q\nwant first %q", s.Explanation, want)
	}
}

func TestCount(t *testing.T) {
	for n, want := range map[uint64]string{0: "0", 999: "999", 1000: "1 k", 1499: "1.5 k", 12_345: "12.3 k", 999_499: "999 k", 999_949: "1 M", 999_500_000: "1 G",
		1_200_000: "1.2 M", 250_000_000: "250 M", 3_400_000_000: "3.4 G"} {
		if got := Count(n); got != want {
			t.Errorf("Count(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestNICLine: the text output's line for a run whose sender's qdisc
// dropped packets; none when nothing grew.
func TestNICLine(t *testing.T) {
	n := &result.NICCounters{
		Client: &result.NICDelta{Interface: "lab0", Deltas: map[string]uint64{"qdisc_drops": 1234, "rx_dropped": 0, "tx_dropped": 2},
			Sources: map[string]map[string]uint64{"qdisc_drops": {"qdisc.drops": 1234}, "tx_dropped": {"link.tx_dropped": 2}}},
		Server: &result.NICDelta{Interface: "lab0", Deltas: map[string]uint64{"rx_dropped": 0}},
	}
	want := "NIC counters grew: client lab0: tx_dropped 2 (link.tx_dropped), qdisc_drops 1234 (qdisc.drops)"
	if got := NICLine(n); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	if NICLine(nil) != "" {
		t.Error("a line for counters not read")
	}
}
