package main

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/linerate/linerate/internal/result"
	"github.com/linerate/linerate/internal/store"
)

// historySchema names the JSON document `linerate history --json` prints.
const historySchema = "linerate.history/v1"

type historyFlags struct {
	label    string
	campaign int64
	limit    int
	json     bool
	db       string
	run      int64 // show this one run
}

func newHistoryCmd(env *cliEnv) *cobra.Command {
	var f historyFlags
	cmd := &cobra.Command{
		Use:   "history",
		Short: "List the stored benchmark runs",
		Long: `history lists the runs 'linerate bench' stored, oldest first: when, label,
engine, peer, what kind of run it was, streams, placement, its result, and the
campaign each belongs to. Each kind shows its own figures: a TCP run its goodput
and retransmits, a UDP run what it sent, its loss, jitter and packet rate, a
latency run (--latency) its round-trip p50 and p99, a transaction run (rr, crr)
its transactions per second. A run paced to a rate (--udp -b, --fq-rate,
--latency --rate) shows the rate after its kind. 'linerate compare' compares
two runs, or two labels, of one kind.

The database is ` + "`--db`" + `, or ` + store.DefaultPath() + `
($LINERATE_STATE_DIR/results.db when that is set; /var/lib/linerate for root,
$XDG_DATA_HOME/linerate, i.e. ~/.local/share/linerate, for other users).`,
		Example: `  linerate history
  linerate history --label baseline --json
  linerate history --run 7`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runHistory(cmd, env, f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.label, "label", "", "only runs with this label")
	fl.Int64Var(&f.campaign, "campaign", 0, "only the runs of this campaign")
	fl.IntVar(&f.limit, "last", 0, "only the newest N runs")
	fl.Int64Var(&f.run, "run", 0, "show this one run as bench printed it, and the command that runs it again")
	fl.BoolVar(&f.json, "json", false, "print the "+historySchema+" JSON document (with --run, "+storedRunSchema+": the run, its parameters and both ends' doctor reports)")
	fl.StringVar(&f.db, "db", "", "the results database (default "+store.DefaultPath()+")")
	return cmd
}

// historyRun is one run as history prints it in JSON.
type historyRun struct {
	ID         int64     `json:"id"`
	CampaignID int64     `json:"campaign_id,omitempty"`
	Seq        int       `json:"seq,omitempty"`
	StartedAt  time.Time `json:"started_at"`
	Label      string    `json:"label"`
	Engine     string    `json:"engine"`
	Peer       string    `json:"peer"`
	Streams    int       `json:"streams"`
	Placement  string    `json:"placement"`
	Direction  string    `json:"direction"`
	DurationS  float64   `json:"duration_s"`
	// Kind is tcp, udp, latency or transactions; Rate the pace asked
	// ("1 Gbit/s", "10000/s"), absent for a run as fast as it went.
	Kind        string   `json:"kind"`
	Rate        string   `json:"rate,omitempty"`
	Gbps        float64  `json:"gbps"`
	SentGbps    float64  `json:"sent_gbps"`
	Retransmits int64    `json:"retransmits"`
	ClientCPUs  *float64 `json:"client_cpu_s"`
	ServerCPUs  *float64 `json:"server_cpu_s"`
	Failed      string   `json:"failed,omitempty"` // why the run ended early; its Gbit/s are no result
	// CPU seconds per Gbit moved, the unit of campaigns and reports.
	ClientCPUPerGbit *float64 `json:"client_cpu_s_per_gbit"`
	ServerCPUPerGbit *float64 `json:"server_cpu_s_per_gbit"`
	// The figures of the run's kind: round trips (latency, transactions),
	// loss, jitter and packets (udp), transactions per second.
	RTTP50Us         *float64 `json:"rtt_p50_us,omitempty"`
	RTTP99Us         *float64 `json:"rtt_p99_us,omitempty"`
	LossPercent      *float64 `json:"loss_percent,omitempty"`
	JitterMS         *float64 `json:"jitter_ms,omitempty"`
	PacketsPerSecond *float64 `json:"packets_per_second,omitempty"`
	PerSecond        *float64 `json:"per_second,omitempty"` // round trips or transactions
}

// newHistoryRun is r as history's JSON gives it.
func newHistoryRun(r *store.Run) historyRun {
	h := historyRun{ID: r.ID, CampaignID: r.CampaignID, Seq: r.Seq, StartedAt: r.StartedAt, Label: r.Label,
		Engine: r.Engine, Peer: r.Peer, Streams: r.Streams, Placement: placementName(r.Placement),
		Direction: r.Direction, DurationS: r.DurationS, Kind: string(r.Outline.Kind()), Rate: r.Outline.Rate(),
		Gbps: r.Gbps, SentGbps: r.SentGbps, Retransmits: r.Retransmits,
		ClientCPUs: r.ClientCPUSeconds, ServerCPUs: r.ServerCPUSeconds, Failed: r.Failed,
		ClientCPUPerGbit: cpuPerGbit(r.ClientCPUSeconds, r.Gbps, r.DurationS),
		ServerCPUPerGbit: cpuPerGbit(r.ServerCPUSeconds, r.Gbps, r.DurationS)}
	f := figuresOf(&r.Outline)
	h.RTTP50Us, h.RTTP99Us, h.LossPercent, h.JitterMS, h.PacketsPerSecond, h.PerSecond = f.p50, f.p99, f.loss, f.jitter, f.pps, f.perSecond
	return h
}

func runHistory(cmd *cobra.Command, env *cliEnv, f historyFlags) error {
	if f.limit < 0 {
		return fmt.Errorf("--last %d: must be positive", f.limit)
	}
	db, err := openResults(cmd.Context(), f.db)
	if err != nil {
		return err
	}
	defer db.Close()
	if f.run != 0 && f.json {
		return showRunJSON(cmd.Context(), env.stdout, db, f.run)
	}
	if f.run != 0 {
		return showRun(cmd.Context(), env.stdout, db, f.run)
	}
	runs, err := db.Runs(cmd.Context(), store.Query{Label: f.label, CampaignID: f.campaign, Limit: f.limit})
	if err != nil {
		return err
	}
	if f.json {
		out := struct {
			Schema   string       `json:"schema"`
			Database string       `json:"database"`
			Runs     []historyRun `json:"runs"`
		}{historySchema, db.Path(), []historyRun{}}
		for i := range runs {
			out.Runs = append(out.Runs, newHistoryRun(&runs[i]))
		}
		return writeJSON(env.stdout, out)
	}
	if len(runs) == 0 {
		fmt.Fprintf(env.stdout, "no runs stored in %s%s\n", db.Path(), labelNote(f.label))
		return nil
	}
	return writeHistory(env.stdout, runs)
}

func labelNote(label string) string {
	if label == "" {
		return ""
	}
	return fmt.Sprintf(" with label %q", label)
}

func placementName(p string) string {
	if p == "" {
		return "auto"
	}
	return p
}

func writeHistory(w io.Writer, runs []store.Run) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "RUN\tSTARTED\tLABEL\tENGINE\tPEER\tKIND\tSTREAMS\tPLACEMENT\tDIR\tRESULT\tCAMPAIGN")
	for _, r := range runs {
		camp := "-"
		if r.CampaignID != 0 {
			camp = fmt.Sprintf("%d (#%d)", r.CampaignID, r.Seq)
		}
		label := r.Label
		if label == "" {
			label = "-"
		}
		res := runFigures(&r)
		if r.Failed != "" {
			res = "failed"
		}
		kind := string(r.Outline.Kind())
		if rate := r.Outline.Rate(); rate != "" {
			kind += " at " + rate
		}
		dir := r.Direction
		if k := r.Outline.Kind(); k == result.KindLatency || k == result.KindTransactions {
			dir = "-" // a round trip goes both ways
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\n", r.ID, r.StartedAt.Local().Format("2006-01-02 15:04:05"),
			label, r.Engine, r.Peer, kind, r.Streams, placementName(r.Placement), dir, res, camp)
	}
	return tw.Flush()
}

// kindFigures are the figures of a run's kind, nil where its document
// lacks them.
type kindFigures struct {
	p50, p99, loss, jitter, pps, perSecond *float64
}

// figuresOf reads the figures of r's kind from its document.
func figuresOf(r *result.Result) kindFigures {
	var f kindFigures
	val := func(x float64) *float64 { return &x }
	switch r.Kind() {
	case result.KindLatency:
		l := r.End.Latency
		f.p50, f.p99 = l.RTTUs.P50, l.RTTUs.P99
		if l.RatePerSecond > 0 {
			f.perSecond = val(l.RatePerSecond)
		}
	case result.KindTransactions:
		if t := r.End.Transactions; t != nil {
			f.p50, f.p99, f.perSecond = t.RTTUs.P50, t.RTTUs.P99, val(t.PerSecond)
		}
	case result.KindUDP:
		if u := r.End.UDP; u != nil {
			f.loss, f.jitter, f.pps = val(u.LostPercent), val(u.JitterMS), val(u.PacketsPerSecond)
		} else if s := r.End.Sum; s != nil { // an iperf3-shaped sum without the native engine's figures
			f.loss, f.jitter = val(s.LostPercent), val(s.JitterMS)
		}
	}
	return f
}

// runFigures is a stored run's result in its kind's figures: "9.52
// Gbit/s, 12 retr"; "0.98 Gbit/s, loss 3.3%, jitter 0.005 ms, 85.6k
// pkt/s"; "RTT p50 60.8 µs, p99 120 µs, 13.7k/s"; "5000/s, p50 …".
func runFigures(r *store.Run) string {
	f := figuresOf(&r.Outline)
	us := func(p *float64) string {
		if p == nil {
			return "unknown"
		}
		return usText(*p)
	}
	switch r.Outline.Kind() {
	case result.KindLatency:
		s := fmt.Sprintf("RTT p50 %s, p99 %s", us(f.p50), us(f.p99))
		if f.perSecond != nil {
			s += fmt.Sprintf(", %s/s", countText(*f.perSecond))
		}
		return s
	case result.KindTransactions:
		if f.perSecond == nil {
			return "unknown"
		}
		return fmt.Sprintf("%s/s, p50 %s, p99 %s", countText(*f.perSecond), us(f.p50), us(f.p99))
	case result.KindUDP:
		s := fmt.Sprintf("%.2f Gbit/s", r.Gbps)
		if f.loss != nil {
			s += fmt.Sprintf(", loss %.3g%%", *f.loss)
		}
		if f.jitter != nil {
			s += fmt.Sprintf(", jitter %.3f ms", *f.jitter)
		}
		if f.pps != nil {
			s += fmt.Sprintf(", %s pkt/s", countText(*f.pps))
		}
		return s
	}
	return fmt.Sprintf("%.2f Gbit/s, %d retr", r.Gbps, r.Retransmits)
}

// usText is microseconds as "60.8 µs" or "1.13 ms".
func usText(us float64) string {
	if us >= 1000 {
		return fmt.Sprintf("%.3g ms", us/1000)
	}
	return fmt.Sprintf("%.3g µs", us)
}

// countText is a rate as "13.7k", "1.25M", "950".
func countText(n float64) string {
	switch {
	case n >= 1e6:
		return fmt.Sprintf("%.3gM", n/1e6)
	case n >= 1e3:
		return fmt.Sprintf("%.3gk", n/1e3)
	}
	return fmt.Sprintf("%.0f", n)
}
