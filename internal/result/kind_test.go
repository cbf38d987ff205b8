package result

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// TestKindOfCapturedRuns decides the kind and rate of real documents: the
// ping-pongs and the UDP stream captured over loopback (report's
// testdata/latency), and a TCP and UDP run built from iperf3's figures.
func TestKindOfCapturedRuns(t *testing.T) {
	for _, c := range []struct {
		file       string
		kind       Kind
		rate       string
		unpaced    bool
		latencyRTT bool
	}{
		{"native-tcp.json", KindLatency, "1000/s", false, true},
		{"native-udp.json", KindLatency, "1000/s", false, true}, // a ping-pong over UDP is a latency run, not a UDP stream
		{"sockperf-tcp.json", KindLatency, "1000/s", false, true},
		{"native-udp-20M.json", KindUDP, "20 Mbit/s", false, false},
	} {
		t.Run(c.file, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("..", "report", "testdata", "latency", c.file))
			if err != nil {
				t.Fatal(err)
			}
			var r Result
			if err := json.Unmarshal(b, &r); err != nil {
				t.Fatal(err)
			}
			if got := r.Kind(); got != c.kind {
				t.Errorf("Kind() = %q, want %q", got, c.kind)
			}
			if got := r.Rate(); got != c.rate {
				t.Errorf("Rate() = %q, want %q", got, c.rate)
			}
			if got := r.Unpaced(); got != c.unpaced {
				t.Errorf("Unpaced() = %v, want %v", got, c.unpaced)
			}
		})
	}
}

func TestKindOfBuiltRuns(t *testing.T) {
	tcp := tcpRun(2, Send)
	paced := tcpRun(1, Send)
	paced.Start.FQRate = 2_500_000_000
	udp := udpRun(t)
	unlimitedUDP := udpRun(t)
	unlimitedUDP.Start.Bitrate = 0
	rr := tcpRun(1, Send)
	rr.Start.Mode = RR
	crr := tcpRun(1, Send)
	crr.End.Transactions = &Transactions{Mode: CRR}
	for _, c := range []struct {
		name    string
		r       Result
		kind    Kind
		rate    string
		unpaced bool
	}{
		{"tcp", tcp, KindTCP, "", true},
		{"tcp --fq-rate", paced, KindTCP, "2.5 Gbit/s", false},
		{"udp -b 1G", udp, KindUDP, "1 Gbit/s", false},
		{"udp -b 0", unlimitedUDP, KindUDP, "", false},
		{"rr", rr, KindTransactions, "", false},
		{"crr", crr, KindTransactions, "", false},
		{"empty", Result{}, KindTCP, "", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := c.r.Kind(); got != c.kind {
				t.Errorf("Kind() = %q, want %q", got, c.kind)
			}
			if got := c.r.Rate(); got != c.rate {
				t.Errorf("Rate() = %q, want %q", got, c.rate)
			}
			if got := c.r.Unpaced(); got != c.unpaced {
				t.Errorf("Unpaced() = %v, want %v", got, c.unpaced)
			}
		})
	}
}
