package bench

import (
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/linerate/linerate/internal/agent"
	"github.com/linerate/linerate/internal/engine"
	"github.com/linerate/linerate/internal/lab"
	"github.com/linerate/linerate/internal/testbin"
	"github.com/linerate/linerate/internal/testutil"
)

// TestLabUDPIntervalLoss runs the native engine's UDP stream (50 Mbit/s
// of 1400-byte datagrams, about 4500 a second) in a lab whose host b
// drops one UDP datagram in 20 on input (nftables numgen), and checks
// that each measured interval carries the receiver's loss near the
// planted 5 %, its jitter and datagrams, that the intervals add up to
// the end's loss and received datagrams, and that the document (with
// iperf3's interval sums) is one the schema describes.
//
// The sender uses sendmmsg, each datagram its own skb: a GSO buffer
// crosses the veth and nftables as one skb of up to 64 datagrams, so a
// numgen drop takes a whole batch and an interval's loss moves in steps
// of the batch (measured: 2.3 % in one interval, 5.7 % in the next).
// One datagram per skb, 5 % of 4500 datagrams an interval is 225 ± 15:
// an interval below 2.5 % did not see the planted loss; the machine's own
// loss (a receiver descheduled past its 8 MiB buffer) can only add, so
// the upper bound is loose.
func TestLabUDPIntervalLoss(t *testing.T) {
	const name = "t-udploss"
	newLab(t, name)
	nft := exec.Command("ip", "netns", "exec", lab.Namespace(name, lab.B), "nft", "-f", "-")
	nft.Stdin = strings.NewReader("table inet lossy {\n chain in {\n  type filter hook input priority 0;\n  meta l4proto udp numgen random mod 20 0 drop\n }\n}\n")
	if out, err := nft.CombinedOutput(); err != nil {
		t.Fatalf("planting loss: %v: %s", err, out)
	}
	bin := testbin.Build(t, "../../cmd/linerate")
	c := &Campaign{Spec: Spec{Driver: "native", Peer: LabPrefix + name, Repeat: 1,
		Run: Params{Test: agent.Test{Params: engine.Params{Omit: 500 * time.Millisecond, Duration: 3 * time.Second, Interval: time.Second},
			Probe: &agent.ProbeTest{Kind: agent.ProbeUDP, Size: 1400, Rate: 50e6, Method: engine.UDPSendmmsg}}}},
		Driver: &Native{Lab: LabEngine{Name: name, Self: bin}}}
	_, outs, err := c.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	r := outs[0].Run
	u := r.End.UDP
	if u == nil || u.Method != string(engine.UDPSendmmsg) {
		t.Fatalf("end.udp %+v: want a sendmmsg run's", u)
	}
	var recv uint64
	var lost int64
	measured := 0
	for _, iv := range r.Intervals {
		if len(iv.Streams) != 1 || iv.Streams[0].UDPInterval == nil {
			t.Fatalf("interval %g–%g (omitted %v): no receiver's count: %+v", iv.Start, iv.End, iv.Omitted, iv.Streams)
		}
		s := iv.Streams[0]
		t.Logf("interval %4.2f–%4.2f omitted %-5v: sent %d, received %d, lost %d (%.2f%%), out of order %d, jitter %.4f ms",
			iv.Start, iv.End, iv.Omitted, s.Packets, s.ReceivedPackets, s.LostPackets, s.LostPercent, s.OutOfOrder, s.JitterMS)
		if iv.Omitted {
			continue
		}
		measured++
		recv, lost = recv+s.ReceivedPackets, lost+s.LostPackets
		if s.LostPercent < 2.5 || s.LostPercent > 20 || s.JitterMS <= 0 || s.ReceivedPackets < 2000 {
			t.Errorf("interval %g–%g: %d received, lost %.2f%%, jitter %g ms: want about 4500, near the 5%% planted, a jitter", iv.Start, iv.End, s.ReceivedPackets, s.LostPercent, s.JitterMS)
		}
	}
	t.Logf("end: sent %d, received %d, lost %d (%.2f%%), jitter %.4f ms", u.Packets, u.ReceivedPackets, u.LostPackets, u.LostPercent, u.JitterMS)
	if measured != 3 || recv != u.ReceivedPackets || lost != u.LostPackets {
		t.Errorf("%d measured intervals add up to %d received, %d lost; the end says %d, %d", measured, recv, lost, u.ReceivedPackets, u.LostPackets)
	}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	testutil.Validate(t, benchSchema(t), "a native UDP run with loss", b)
	var doc struct {
		Intervals []struct {
			Sum struct {
				LostPercent *float64 `json:"lost_percent"`
				JitterMS    *float64 `json:"jitter_ms"`
			} `json:"sum"`
		} `json:"intervals"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	for i, iv := range doc.Intervals {
		if s := r.Intervals[i].Streams[0]; iv.Sum.LostPercent == nil || *iv.Sum.LostPercent != s.LostPercent || iv.Sum.JitterMS == nil || *iv.Sum.JitterMS != s.JitterMS {
			t.Errorf("interval %d: iperf3's sum has lost_percent %v, jitter_ms %v; the stream %g, %g", i, iv.Sum.LostPercent, iv.Sum.JitterMS, s.LostPercent, s.JitterMS)
		}
	}
}
