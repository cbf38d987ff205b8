package bench

import (
	"context"
	"encoding/json"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/linerate/linerate/internal/agent"
	"github.com/linerate/linerate/internal/engine"
	"github.com/linerate/linerate/internal/lab"
	"github.com/linerate/linerate/internal/result"
	"github.com/linerate/linerate/internal/testutil"
)

// iperf3Raw reads a captured -J document as plain JSON, so that the
// expected figures come from the file, not from the parser under test.
func iperf3Raw(t *testing.T, name string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(testdata(t, name), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// field walks a path of object keys and array indexes.
func field(t *testing.T, v any, path ...any) float64 {
	t.Helper()
	for _, p := range path {
		switch k := p.(type) {
		case string:
			v = v.(map[string]any)[k]
		case int:
			v = v.([]any)[k]
		}
	}
	f, ok := v.(float64)
	if !ok {
		t.Fatalf("%v: %v is not a number", path, v)
	}
	return f
}

func TestParseIperf3UDP(t *testing.T) {
	sch := benchSchema(t)
	for _, c := range []struct {
		file   string
		dir    result.Direction
		sender string
	}{
		{"iperf3-3.12-J-u.json", result.Send, "client"},
		{"iperf3-3.12-J-u-R.json", result.Receive, "server"},
	} {
		t.Run(c.file, func(t *testing.T) {
			raw := iperf3Raw(t, c.file)
			r, err := ParseIperf3(testdata(t, c.file))
			if err != nil {
				t.Fatal(err)
			}
			ts := []any{"start", "test_start"}
			if r.Start.Protocol != result.UDP || r.Start.Bitrate != uint64(field(t, raw, append(ts, "target_bitrate")...)) ||
				r.Start.BlockSize != int(field(t, raw, append(ts, "blksize")...)) || r.Start.Direction != c.dir {
				t.Errorf("start: protocol %q bitrate %d block %d direction %v", r.Start.Protocol, r.Start.Bitrate, r.Start.BlockSize, r.Start.Direction)
			}
			// Each interval carries the datagrams iperf3 counted in it.
			for i, iv := range r.Intervals {
				want := uint64(field(t, raw, "intervals", i, "streams", 0, "packets"))
				if len(iv.Streams) != 1 || iv.Streams[0].Packets != want || want == 0 || iv.Streams[0].Sender != c.sender {
					t.Errorf("interval %d: %+v, want %d packets sent by the %s", i, iv.Streams, want, c.sender)
				}
			}
			u := r.End.UDP
			if u == nil || r.End.Sum == nil {
				t.Fatalf("end has no UDP figures: %+v", r.End)
			}
			sent, lost := field(t, raw, "end", "sum_sent", "packets"), field(t, raw, "end", "sum_received", "lost_packets")
			recvPkts := field(t, raw, "end", "sum_received", "bytes") / field(t, raw, append(ts, "blksize")...)
			secs := field(t, raw, "end", "sum_sent", "seconds")
			switch {
			case u.Packets != uint64(sent) || u.LostPackets != int64(lost) || lost == 0:
				t.Errorf("packets %d lost %d, want %v and %v", u.Packets, u.LostPackets, sent, lost)
			case u.ReceivedPackets != uint64(recvPkts):
				// the receiver's "packets" is the highest sequence seen: the
				// datagrams that arrived are those minus the lost.
				t.Errorf("received %d packets, the bytes say %v", u.ReceivedPackets, recvPkts)
			case !near(u.JitterMS, field(t, raw, "end", "sum_received", "jitter_ms")) || u.JitterMS <= 0:
				t.Errorf("jitter %v ms", u.JitterMS)
			case !near(u.LostPercent, field(t, raw, "end", "sum_received", "lost_percent")):
				t.Errorf("lost %v%%", u.LostPercent)
			case !near(u.PacketsPerSecond, result.Round3(sent/secs)):
				t.Errorf("%v packets/s, want %v", u.PacketsPerSecond, sent/secs)
			case u.TargetBitsPerSecond != float64(r.Start.Bitrate) || u.Length != r.Start.BlockSize || u.Method != string(engine.UDPWrite):
				t.Errorf("target %v length %d method %q", u.TargetBitsPerSecond, u.Length, u.Method)
			case r.End.Sum.Packets != int64(sent) || r.End.Sum.LostPackets != u.LostPackets || r.End.Sum.JitterMS != u.JitterMS:
				t.Errorf("end.sum %+v", r.End.Sum)
			}
			if len(r.End.Streams) != 1 || r.End.Streams[0].UDP == nil || r.End.Streams[0].ID != 1 ||
				r.End.Streams[0].ReceivedBytes != r.End.SumReceived.Bytes || r.End.Streams[0].Sender != c.sender {
				t.Errorf("end streams %+v", r.End.Streams)
			}
			if r.End.CPU.ClientSeconds <= 0 || r.End.CPU.ServerSeconds <= 0 {
				t.Errorf("cpu %+v", r.End.CPU)
			}
			// The driver attaches each interval's per-CPU load; the parser's
			// part of the document is what is checked here.
			for i := range r.Intervals {
				r.Intervals[i].CPU = result.HostCPUs{Client: map[string]result.CPUSample{}, Server: map[string]result.CPUSample{}}
			}
			b, err := json.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			testutil.Validate(t, sch, c.file, b)
		})
	}
}

func TestIperf3UDPArgs(t *testing.T) {
	d := &Iperf3{Hosts: &LabHosts{Name: "x"}}
	p := Params{}
	p.Duration, p.Interval, p.Streams = 3*time.Second, time.Second, 1
	p.Probe = &agent.ProbeTest{Kind: agent.ProbeUDP, Size: 1400, Rate: 2.5e8}
	a := d.clientArgs(p)
	i := slices.Index(a, "-u")
	if i < 0 || !slices.Equal(a[i:i+5], []string{"-u", "-b", "250000000", "-l", "1400"}) {
		t.Errorf("client args %q", a)
	}
	if err := d.CheckParams(p); err != nil {
		t.Errorf("a UDP stream refused: %v", err)
	}
	// --udp -R: the server sends (iperf3 -u -R), and says what it sent.
	p.Direction = result.Receive
	if a := d.clientArgs(p); !slices.Contains(a, "-R") || !slices.Contains(a, "-u") || !slices.Contains(a, "--get-server-output") {
		t.Errorf("-R --udp: client args %q", a)
	}
	if err := d.CheckParams(p); err != nil {
		t.Errorf("a UDP stream the server sends refused: %v", err)
	}
	p.Direction = result.Send
	for _, pr := range []*agent.ProbeTest{
		{Kind: agent.ProbePingPong, Size: 64},
		{Kind: agent.ProbeUDP, Size: 1400, Method: engine.UDPGSO},
	} {
		p.Probe = pr
		if err := d.CheckParams(p); err == nil {
			t.Errorf("%+v accepted", pr)
		}
	}
	if info, _ := LookupDriver("iperf3"); !info.Caps.UDPStream || !info.Caps.UDPReverse || info.Caps.Latency {
		t.Errorf("iperf3's caps %+v", info.Caps)
	}
}

// TestLabIperf3UDP runs iperf3 -u through the driver in a lab whose host
// b drops one UDP datagram in 50 (nftables numgen), and checks that the
// run carries the loss, the datagrams per interval and a document the
// schema accepts.
func TestLabIperf3UDP(t *testing.T) {
	h := newLab(t, "t-b3udp")
	nft := exec.Command("ip", "netns", "exec", lab.Namespace("t-b3udp", lab.B), "nft", "-f", "-")
	nft.Stdin = strings.NewReader("table inet lossy {\n chain in {\n  type filter hook input priority 0;\n  meta l4proto udp numgen random mod 50 0 drop\n }\n}\n")
	if out, err := nft.CombinedOutput(); err != nil {
		t.Fatalf("planting loss: %v: %s", err, out)
	}
	d := &Iperf3{Hosts: h}
	p := Params{Test: agent.Test{Params: engine.Params{Duration: 2 * time.Second, Interval: time.Second, Streams: 1},
		Probe: &agent.ProbeTest{Kind: agent.ProbeUDP, Size: 1400, Rate: 1e8}}}
	r, err := d.Run(context.Background(), p, nil)
	if err != nil {
		t.Fatal(err)
	}
	u := r.End.UDP
	if r.Start.Protocol != result.UDP || r.Start.Bitrate != 1e8 || u == nil || !slices.Contains(r.Tool.Client, "-u") {
		t.Fatalf("not a UDP run: start %+v, end.udp %+v, client %q", r.Start, u, r.Tool.Client)
	}
	var pkts uint64
	for _, iv := range r.Intervals {
		for _, s := range iv.Streams {
			pkts += s.Packets
		}
	}
	// 2 % planted: the count must see it (natural loss only adds), and
	// what arrived plus what was lost is what was numbered.
	planted := float64(u.Packets) / 50
	switch {
	case u.Packets == 0 || pkts != u.Packets:
		t.Errorf("intervals carry %d datagrams, the end %d", pkts, u.Packets)
	case float64(u.LostPackets) < planted/2:
		t.Errorf("%d lost of %d sent, with about %.0f dropped on purpose", u.LostPackets, u.Packets, planted)
	case u.ReceivedPackets*uint64(u.Length) != r.End.SumReceived.Bytes:
		t.Errorf("%d datagrams of %d bytes received, %d bytes counted", u.ReceivedPackets, u.Length, r.End.SumReceived.Bytes)
	case u.JitterMS <= 0:
		t.Errorf("jitter %v ms", u.JitterMS)
	}
	t.Logf("sent %d, lost %d (%.2f%%), jitter %.4f ms, %.0f packets/s", u.Packets, u.LostPackets, u.LostPercent, u.JitterMS, u.PacketsPerSecond)
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	testutil.Validate(t, benchSchema(t), "iperf3 -u run", b)
}

// TestParseIperf3ServerRetransmits checks that a -R run's intervals carry
// the retransmits the server reported in each interval, and add up to the
// end's total, on captured output with 1 and 2 streams.
func TestParseIperf3ServerRetransmits(t *testing.T) {
	for _, c := range []struct {
		file    string
		streams int
		want    []uint64 // per interval, as the server's text says
	}{
		{"iperf3-3.12-J-R-server-output.json", 1, []uint64{8, 16, 5}},
		{"iperf3-3.12-J-R-P2-server-output.json", 2, []uint64{1, 3, 16}},
	} {
		t.Run(c.file, func(t *testing.T) {
			r, err := ParseIperf3(testdata(t, c.file))
			if err != nil {
				t.Fatal(err)
			}
			var got []uint64
			var total uint64
			for _, iv := range r.Intervals {
				got = append(got, iv.Sum.Retransmits)
				var streams uint64
				for _, s := range iv.Streams {
					streams += s.Retransmits
				}
				if len(iv.Streams) != c.streams || streams != iv.Sum.Retransmits {
					t.Errorf("interval %v-%v: streams %+v add to %d, sum %d", iv.Start, iv.End, iv.Streams, streams, iv.Sum.Retransmits)
				}
				total += iv.Sum.Retransmits
			}
			if !slices.Equal(got, c.want) || total != r.End.SumSent.Retransmits {
				t.Errorf("interval retransmits %v (want %v), total %d, end %d", got, c.want, total, r.End.SumSent.Retransmits)
			}
		})
	}
	// The same run without the server's output keeps the client's zeros:
	// nothing is made up.
	var m map[string]any
	if err := json.Unmarshal(testdata(t, "iperf3-3.12-J-R-server-output.json"), &m); err != nil {
		t.Fatal(err)
	}
	delete(m, "server_output_text")
	b, _ := json.Marshal(m)
	r, err := ParseIperf3(b)
	if err != nil {
		t.Fatal(err)
	}
	for _, iv := range r.Intervals {
		if iv.Sum.Retransmits != 0 {
			t.Errorf("retransmits %d with no server output", iv.Sum.Retransmits)
		}
	}
}

func TestParseIperf3ServerText(t *testing.T) {
	for _, c := range []struct {
		name, text string
		want       []serverInterval
	}{
		{"omitted interval then measured, one stream",
			"[  5]   0.00-1.00   sec  1.0 GBytes  8.6 Gbits/sec    3   1.2 MBytes       (omitted)\n" +
				"[  5]   0.00-1.00   sec  1.0 GBytes  8.6 Gbits/sec    4   1.2 MBytes       \n",
			[]serverInterval{{Sum: 3, Streams: []uint64{3}}, {Sum: 4, Streams: []uint64{4}}}},
		{"sockets listed out of order",
			"[  8]   0.00-1.00   sec  1 MBytes  8 Mbits/sec    2   1 MBytes\n" +
				"[  5]   0.00-1.00   sec  1 MBytes  8 Mbits/sec    7   1 MBytes\n" +
				"[SUM]   0.00-1.00   sec  2 MBytes  16 Mbits/sec    9\n",
			[]serverInterval{{Sum: 9, Streams: []uint64{7, 2}, sawSum: true}}},
		{"summary and receiver lines are not intervals",
			"[  5]   0.00-3.00   sec  1.92 GBytes  5.50 Gbits/sec    6             sender\n" +
				"[  5]   0.00-1.00   sec  1.10 GBytes  9.42 Gbits/sec                  \n" +
				"garbage [ 5] 0.00-1.00 sec\n[  x]   0.00-1.00   sec  1 MBytes  8 Mbits/sec    2   1 MBytes\n",
			nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := parseIperf3ServerText(c.text)
			if len(got) != len(c.want) {
				t.Fatalf("%d intervals %+v, want %+v", len(got), got, c.want)
			}
			for i := range got {
				if got[i].Sum != c.want[i].Sum || !slices.Equal(got[i].Streams, c.want[i].Streams) {
					t.Errorf("interval %d: %+v, want %+v", i, got[i], c.want[i])
				}
			}
		})
	}
}
