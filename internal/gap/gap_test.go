package gap

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/linerate/linerate/internal/result"
	"github.com/linerate/linerate/internal/testutil"
)

// storedRun is `linerate history --run ID --json` of a lab run: the run
// and the doctor reports of both ends bench took before it.
type storedRun struct {
	Run    result.Result `json:"run"`
	Doctor struct {
		Client json.RawMessage `json:"client"`
		Server json.RawMessage `json:"server"`
	} `json:"doctor"`
}

// The runs under testdata are 3 s single-stream lab runs on a 2-CPU
// machine shared with other work, one limit planted in each:
// tcp_wmem max 64 KiB in the sender's namespace (4.11 Gbit/s),
// tcp_rmem max 64 KiB in the receiver's (3.02), a busy loop pinned to
// the receiver's CPU with -A 0,1 (2.36), and a tbf at 2 Gbit/s on the
// sender's veth (1.92).
func loadRun(t *testing.T, name string) (*result.Result, Doctors) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	var s storedRun
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return &s.Run, Doctors{Client: s.Doctor.Client, Server: s.Doctor.Server}
}

// pciDoctor is a doctor report of a 10 GbE PCI NIC lab0 at MTU 9000
// with qdisc (nil: none).
func pciDoctor(t *testing.T, qdisc string) json.RawMessage {
	t.Helper()
	q := "null"
	if qdisc != "" {
		q = qdisc
	}
	return json.RawMessage(`{"nics": [{"interface": "lab0", "kind": "pci", "mtu": 9000, "speed_mbps": 10000,
		"qdisc": ` + q + `, "limits": {"pcie_gbps": 31.5, "tcp_goodput_gbps": 9.9}}]}`)
}

// fqDoctor is a doctor report of a sender whose lab0 has fq with a
// per-flow maxrate of gbps, as doctor writes it: the NIC's qdisc and
// shaper (withQdisc) and the link.shaped finding with per_flow.
func fqDoctor(gbps float64, withQdisc bool) json.RawMessage {
	detail := fmt.Sprintf("fq 2: maxrate %sgbit (each flow)", strconv.FormatFloat(gbps, 'f', -1, 64))
	q := "null"
	if withQdisc {
		q = fmt.Sprintf(`{"kind": "fq", "rate_gbps": null, "shaper": {"kind": "fq", "handle": "2:", "rate_gbps": %v, "per_flow": true, "detail": %q}}`, gbps, detail)
	}
	return json.RawMessage(fmt.Sprintf(`{"nics": [{"interface": "lab0", "kind": "virtual", "mtu": 9000, "qdisc": %s, "limits": {}}],
		"findings": [{"id": "link.shaped", "subject": "lab0", "summary": "lab0's egress is shaped by %s",
			"evidence": {"qdisc": "fq", "handle": "2:", "rate_gbps": %v, "per_flow": true, "detail": %q}}]}`, q, detail, gbps, detail))
}

func shareOf(g *result.Gap, cause string) float64 {
	for _, s := range g.Shares {
		if s.Cause == cause {
			return s.Share
		}
	}
	return 0
}

func TestOfLabRuns(t *testing.T) {
	noFindings := func(r *result.Result, d *Doctors) {
		d.Client, d.Server = json.RawMessage(`{}`), json.RawMessage(`{}`)
	}
	tests := []struct {
		name     string
		file     string
		change   func(r *result.Result, d *Doctors)
		dominant string
		maxUnacc float64
		evidence string // in the dominant share's evidence
		fix      string // in the fix
	}{
		{name: "small send buffer", file: "small-sndbuf.json", dominant: SenderBuffer, maxUnacc: 0.25,
			evidence: "net.ipv4.tcp_wmem max 64 KiB on the sender", fix: "linerate tune --apply"},
		{name: "small receive buffer", file: "small-rcvbuf.json", dominant: ReceiverWindow, maxUnacc: 0.25,
			evidence: "net.ipv4.tcp_rmem max 64 KiB on the receiver", fix: "linerate tune --apply"},
		{name: "busy receiver CPU", file: "busy-receiver.json", dominant: ReceiverCPU, maxUnacc: 0.25,
			evidence: "sh (pid 29993, 46% of a CPU, pinned there)", fix: "CPU 1"},
		{name: "shaped path", file: "shaped.json", dominant: PathRate, maxUnacc: 0.25,
			evidence: "shaped by a tbf qdisc to 2 Gbit/s", fix: "tc qdisc del dev lab0 root"},
		// Without doctor's reports the qdisc's drops still name the shaper.
		{name: "shaped path, qdisc drops only", file: "shaped.json", change: noFindings, dominant: PathRate, maxUnacc: 0.25,
			evidence: "qdisc dropped 888 packets"},
		// Without the shaper and its drops, nothing names the in-flight
		// time of a run without loss: said as unaccounted, not guessed.
		{name: "shaped path, nothing read", file: "shaped.json", change: func(r *result.Result, d *Doctors) {
			noFindings(r, d)
			r.End.NICCounters = nil
		}, dominant: "", maxUnacc: 1},
		// The receive buffer's finding is what makes rwnd-limited time
		// the window's: without it, the receiver's CPU busy with other
		// work (92% here) takes it.
		{name: "rwnd-limited, receiver CPU shared", file: "small-rcvbuf.json", change: func(r *result.Result, d *Doctors) {
			d.Server = json.RawMessage(`{}`)
			r.End.Foreign.Server.CPU["1"] = 70
		}, dominant: ReceiverCPU, maxUnacc: 0.25, evidence: "other work 70%"},
		// The same retransmits with a receiver CPU to itself are the
		// network's.
		{name: "loss, receiver CPU free", file: "busy-receiver.json", change: func(r *result.Result, d *Doctors) {
			r.End.Foreign.Server.CPU["1"] = 5
		}, dominant: Network, maxUnacc: 0.25, evidence: "4877 KB retransmitted of 882 MB sent (0.55%)"},
		// NIC drops name the loss before the path does.
		{name: "loss with NIC drops", file: "busy-receiver.json", change: func(r *result.Result, d *Doctors) {
			r.End.NICCounters.Server.Deltas["rx_dropped"] = 1200
		}, dominant: NICDrops, maxUnacc: 0.25, evidence: "rx_dropped 1200"},
		{name: "pacing asked", file: "shaped.json", change: func(r *result.Result, d *Doctors) {
			noFindings(r, d)
			r.End.NICCounters = nil
			r.Start.FQRate = 2e9
		}, dominant: Pacing, maxUnacc: 0.25, evidence: "--fq-rate 2.00 Gbit/s"},
		// fq's maxrate on the sender's lab0, as doctor reads it over
		// rtnetlink (the lab's pacing scenario): each flow is paced, and
		// a run that reached the cap is held by it, not by the path.
		{name: "fq maxrate reached", file: "shaped.json", change: func(r *result.Result, d *Doctors) {
			d.Client = fqDoctor(2, true)
			r.End.NICCounters = nil
		}, dominant: Pacing, maxUnacc: 0.25, evidence: "fq 2: maxrate 2gbit (each flow) caps a flow at 2 Gbit/s; 1 stream(s) reached 1.92 Gbit/s, 96% of 1 × 2",
			fix: "tc qdisc del dev lab0 root"},
		// A report that has only doctor's finding (per_flow in its
		// evidence) says the same.
		{name: "fq maxrate reached, finding only", file: "shaped.json", change: func(r *result.Result, d *Doctors) {
			d.Client = fqDoctor(2, false)
			r.End.NICCounters = nil
		}, dominant: Pacing, maxUnacc: 0.25, evidence: "fq 2: maxrate 2gbit", fix: "raise its maxrate"},
		// A cap the run stayed far below did not hold it, and a per-flow
		// cap is never the path's rate: nothing else named, unaccounted.
		{name: "fq maxrate not reached", file: "shaped.json", change: func(r *result.Result, d *Doctors) {
			d.Client = fqDoctor(8, true)
			r.End.NICCounters = nil
		}, dominant: "", maxUnacc: 1},
		{name: "bitrate asked", file: "busy-receiver.json", change: func(r *result.Result, d *Doctors) {
			r.Start.Bitrate = 2e9
		}, dominant: AppLimited, maxUnacc: 0.5, evidence: "-b 2.00"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, d := loadRun(t, tt.file)
			if tt.change != nil {
				tt.change(r, &d)
			}
			g := Of(r, d)
			if g == nil {
				t.Fatal("no gap")
			}
			b, _ := json.MarshalIndent(g, "", "  ")
			if g.Dominant != tt.dominant {
				t.Fatalf("dominant %q, want %q:\n%s", g.Dominant, tt.dominant, b)
			}
			if g.UnaccountedShare > tt.maxUnacc {
				t.Errorf("unaccounted %.3f > %.2f:\n%s", g.UnaccountedShare, tt.maxUnacc, b)
			}
			sum := g.UnaccountedShare
			for i, s := range g.Shares {
				sum += s.Share
				if s.Share <= 0 || s.Share > 1 || len(s.Evidence) == 0 {
					t.Errorf("share %+v", s)
				}
				if i > 0 && s.Share > g.Shares[i-1].Share {
					t.Errorf("shares not largest first: %s", b)
				}
			}
			if math.Abs(sum-1) > 0.005 {
				t.Errorf("shares and unaccounted sum to %.3f:\n%s", sum, b)
			}
			if g.CeilingGbps != nil || g.MissingGbps != nil {
				t.Errorf("a veth has no ceiling: %s", b)
			}
			if g.MeasuredGbps != math.Round(r.Gbps()*100)/100 {
				t.Errorf("measured %v, run %v", g.MeasuredGbps, r.Gbps())
			}
			if tt.evidence != "" && !strings.Contains(strings.Join(g.Shares[0].Evidence, "\n"), tt.evidence) {
				t.Errorf("evidence lacks %q:\n%s", tt.evidence, b)
			}
			if !strings.Contains(g.Fix, tt.fix) || (tt.dominant != "" && g.Fix == "") {
				t.Errorf("fix %q lacks %q", g.Fix, tt.fix)
			}
		})
	}
}

// With a known ceiling the shares are of the missing gigabits; a shaper
// is a cause there, never the ceiling.
func TestCeiling(t *testing.T) {
	tests := []struct {
		name    string
		file    string
		qdisc   string
		ceiling *float64
	}{
		{name: "unshaped: doctor's goodput", file: "small-rcvbuf.json", ceiling: ptr(9.9)},
		// 10 Gbit/s at MTU 9000, IPv4 + timestamps: 10 × 8948/9038 = 9.90.
		{name: "shaped: the line's goodput, not the shaper's", file: "shaped.json",
			qdisc: `{"kind": "tbf", "rate_gbps": 2}`, ceiling: ptr(9.9)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, d := loadRun(t, tt.file)
			d.Client = pciDoctor(t, tt.qdisc)
			g := Of(r, d)
			if g == nil || g.CeilingGbps == nil || *g.CeilingGbps != *tt.ceiling {
				t.Fatalf("gap %+v, want ceiling %v", g, *tt.ceiling)
			}
			want := math.Round((*tt.ceiling-g.MeasuredGbps)*100) / 100
			if g.MissingGbps == nil || *g.MissingGbps != want {
				t.Fatalf("missing %v, want %v", g.MissingGbps, want)
			}
			var sum float64
			for _, s := range g.Shares {
				if s.Gbps == nil {
					t.Fatalf("share %s without Gbit/s", s.Cause)
				}
				if math.Abs(*s.Gbps-s.Share*want) > 0.011 {
					t.Errorf("%s: %v Gbit/s for share %v of %v", s.Cause, *s.Gbps, s.Share, want)
				}
				sum += *s.Gbps
			}
			if sum > want+0.02 {
				t.Errorf("shares give %v Gbit/s of %v missing", sum, want)
			}
			if tt.qdisc != "" && g.Dominant != PathRate {
				t.Errorf("dominant %s, want path_rate", g.Dominant)
			}
		})
	}
}

func ptr(v float64) *float64 { return &v }

// A reverse run's sender is the server: its buffer, its qdisc.
func TestReverse(t *testing.T) {
	r, d := loadRun(t, "small-sndbuf.json")
	r.Start.Direction = result.Receive
	for i := range r.Intervals {
		for j := range r.Intervals[i].Streams {
			r.Intervals[i].Streams[j].Sender = "server"
		}
	}
	// A bidir run's gap is its client's streams': the server's are left out.
	bidir, _ := loadRun(t, "small-sndbuf.json")
	bidir.Start.Direction = result.Bidir
	bidir.Intervals = append(bidir.Intervals, r.Intervals...)
	if g, want := Of(bidir, d), Of(bidirless(t), d); g.Dominant != want.Dominant || g.Shares[0].Share != want.Shares[0].Share {
		t.Errorf("bidir: %+v, want the client's streams' %+v", g, want)
	}
	r.Start.Placement.Client, r.Start.Placement.Server = r.Start.Placement.Server, r.Start.Placement.Client
	r.End.Foreign.Client, r.End.Foreign.Server = r.End.Foreign.Server, r.End.Foreign.Client
	if g := Of(r, d); shareOf(g, SenderBuffer) > 0.1 || strings.Contains(g.Fix, "64 KiB") {
		t.Fatalf("the client's small tcp_wmem blamed for a reverse run: %+v", g)
	}
	d.Client, d.Server = d.Server, d.Client
	if g := Of(r, d); g.Dominant != SenderBuffer || !strings.Contains(g.Fix, "(server)") {
		t.Fatalf("reverse run, server's tcp_wmem small: %+v", g)
	}
}

func bidirless(t *testing.T) *result.Result {
	r, _ := loadRun(t, "small-sndbuf.json")
	return r
}

// Runs without TCP's account have no gap; a point adds its runs' time.
func TestNoAccountAndPoints(t *testing.T) {
	r, d := loadRun(t, "shaped.json")
	bare := *r
	bare.Intervals = nil
	udp := *r
	udp.Start.Protocol = result.UDP
	failed := *r
	failed.Error = "the agent went away"
	for _, x := range []*result.Result{&bare, &udp, &failed, nil} {
		if g := Of(x, d); g != nil {
			t.Errorf("gap %+v of a run without an account", g)
		}
	}
	r2, d2 := loadRun(t, "small-rcvbuf.json")
	g := OfRuns([]*result.Result{r, r2}, []Doctors{d, d2})
	if g == nil || math.Abs(shareOf(g, PathRate)-0.5) > 0.01 || shareOf(g, ReceiverWindow) < 0.4 {
		t.Fatalf("point of a shaped and a window-limited run: %+v", g)
	}
	if want := math.Round((r.Gbps()+r2.Gbps())/2*100) / 100; g.MeasuredGbps != want {
		t.Errorf("measured %v, want the runs' mean %v", g.MeasuredGbps, want)
	}
}

// A run with its gap, unknown ceiling and known, matches the schema.
func TestSchema(t *testing.T) {
	sch := testutil.Schema(t, "../../docs/schema/bench-v1.schema.json")
	for _, name := range []string{"small-sndbuf.json", "small-rcvbuf.json", "busy-receiver.json", "shaped.json"} {
		r, d := loadRun(t, name)
		r.End.Gap = Of(r, d)
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		testutil.Validate(t, sch, name, b)
		d.Client = pciDoctor(t, "")
		r.End.Gap = Of(r, d)
		if r.End.Gap.CeilingGbps == nil {
			t.Fatal("no ceiling")
		}
		b, _ = json.Marshal(r)
		testutil.Validate(t, sch, name+" with a ceiling", b)
	}
}

// Merge of one run's gap is that gap; of two, the shares' means.
func TestMerge(t *testing.T) {
	r1, d1 := loadRun(t, "shaped.json")
	r2, d2 := loadRun(t, "small-sndbuf.json")
	g1, g2 := Of(r1, d1), Of(r2, d2)
	if Merge([]*result.Gap{nil, g1}) != g1 || Merge(nil) != nil {
		t.Fatal("Merge of one gap is not that gap")
	}
	m := Merge([]*result.Gap{g1, g2})
	if math.Abs(shareOf(m, PathRate)-(shareOf(g1, PathRate)+shareOf(g2, PathRate))/2) > 0.001 ||
		math.Abs(shareOf(m, SenderBuffer)-(shareOf(g1, SenderBuffer)+shareOf(g2, SenderBuffer))/2) > 0.001 {
		t.Errorf("merged %+v of %+v and %+v", m, g1, g2)
	}
	if m.Dominant != PathRate || m.Fix != g1.Fix {
		t.Errorf("dominant %s fix %q", m.Dominant, m.Fix)
	}
	// Runs of one length: Merge and OfRuns agree.
	o := OfRuns([]*result.Result{r1, r2}, []Doctors{d1, d2})
	for _, c := range Causes() {
		if math.Abs(shareOf(o, c)-shareOf(m, c)) > 0.002 {
			t.Errorf("%s: OfRuns %.3f, Merge %.3f", c, shareOf(o, c), shareOf(m, c))
		}
	}
}

// FuzzOf: a doctor report is the peer's (relayed by its agent), so any
// bytes in its place give a gap or nil, never a panic, and shares that
// still sum to 1.
func FuzzOf(f *testing.F) {
	for _, name := range []string{"small-sndbuf.json", "shaped.json"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		var s storedRun
		if err := json.Unmarshal(b, &s); err != nil {
			f.Fatal(err)
		}
		f.Add([]byte(s.Doctor.Client))
	}
	f.Add([]byte(`{"nics": [{"interface": "lab0", "kind": "pci", "mtu": 1, "speed_mbps": -5, "qdisc": {"kind": "tbf", "rate_gbps": 2}}]}`))
	f.Add([]byte(`{"findings": [{"id": "sysctl.socket_buffers_small", "evidence": {"below_need": {"net.ipv4.tcp_wmem": 1e308}}}]}`))
	b, err := os.ReadFile(filepath.Join("testdata", "busy-receiver.json"))
	if err != nil {
		f.Fatal(err)
	}
	var base storedRun
	if err := json.Unmarshal(b, &base); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		r := base.Run
		g := Of(&r, Doctors{Client: doc, Server: doc})
		if g == nil {
			t.Fatal("no gap for a run with TCP's account")
		}
		sum := g.UnaccountedShare
		for _, s := range g.Shares {
			sum += s.Share
		}
		if math.Abs(sum-1) > 0.01 {
			t.Fatalf("shares sum to %v", sum)
		}
		if _, err := json.Marshal(g); err != nil {
			t.Fatalf("gap does not marshal: %v", err)
		}
	})
}

// TestDeclaredLineRate: a lab link whose tbf stands in for the NIC's
// line rate (the demo's) is the ceiling, doctor's goodput over it, and
// never the cause: a run held by the receiver's small window names
// receiver_window, not path_rate (the demo's first bench said path_rate,
// with the fix of removing its line rate).
func TestDeclaredLineRate(t *testing.T) {
	r, d := loadRun(t, "small-rcvbuf.json")
	d.Client = json.RawMessage(`{"nics": [{"interface": "lab0", "kind": "virtual", "mtu": 9000,
		"qdisc": {"kind": "tbf", "rate_gbps": 20, "shaper": {"kind": "tbf", "handle": "1:", "rate_gbps": 20, "detail": "tbf 1: rate 20gbit", "declared_line_rate": true}},
		"limits": {"tcp_goodput_gbps": 19.8}}]}`)
	g := Of(r, d)
	if g == nil || g.CeilingGbps == nil || *g.CeilingGbps != 19.8 {
		t.Fatalf("gap %+v, want doctor's ceiling 19.8", g)
	}
	if g.Dominant != ReceiverWindow || shareOf(g, PathRate) != 0 {
		t.Errorf("dominant %s, path_rate share %v: want receiver_window and none", g.Dominant, shareOf(g, PathRate))
	}
}
