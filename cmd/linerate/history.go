package main

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

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
engine, peer, streams, placement, the goodput received, and the campaign each
belongs to. 'linerate compare' compares two of them, or two labels.

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
	ID          int64     `json:"id"`
	CampaignID  int64     `json:"campaign_id,omitempty"`
	Seq         int       `json:"seq,omitempty"`
	StartedAt   time.Time `json:"started_at"`
	Label       string    `json:"label"`
	Engine      string    `json:"engine"`
	Peer        string    `json:"peer"`
	Streams     int       `json:"streams"`
	Placement   string    `json:"placement"`
	Direction   string    `json:"direction"`
	DurationS   float64   `json:"duration_s"`
	Gbps        float64   `json:"gbps"`
	SentGbps    float64   `json:"sent_gbps"`
	Retransmits int64     `json:"retransmits"`
	ClientCPUs  *float64  `json:"client_cpu_s"`
	ServerCPUs  *float64  `json:"server_cpu_s"`
	Failed      string    `json:"failed,omitempty"` // why the run ended early; its Gbit/s are no result
	// CPU seconds per Gbit moved, the unit of campaigns and reports.
	ClientCPUPerGbit *float64 `json:"client_cpu_s_per_gbit"`
	ServerCPUPerGbit *float64 `json:"server_cpu_s_per_gbit"`
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
		for _, r := range runs {
			out.Runs = append(out.Runs, historyRun{r.ID, r.CampaignID, r.Seq, r.StartedAt, r.Label, r.Engine, r.Peer,
				r.Streams, placementName(r.Placement), r.Direction, r.DurationS, r.Gbps, r.SentGbps, r.Retransmits,
				r.ClientCPUSeconds, r.ServerCPUSeconds, r.Failed, cpuPerGbit(r.ClientCPUSeconds, r.Gbps, r.DurationS),
				cpuPerGbit(r.ServerCPUSeconds, r.Gbps, r.DurationS)})
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
	fmt.Fprintln(tw, "RUN\tSTARTED\tLABEL\tENGINE\tPEER\tSTREAMS\tPLACEMENT\tDIR\tGBIT/S\tRETR\tCAMPAIGN")
	for _, r := range runs {
		camp := "-"
		if r.CampaignID != 0 {
			camp = fmt.Sprintf("%d (#%d)", r.CampaignID, r.Seq)
		}
		label := r.Label
		if label == "" {
			label = "-"
		}
		rate := fmt.Sprintf("%.2f", r.Gbps)
		if r.Failed != "" {
			rate = "failed"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%d\t%s\n", r.ID, r.StartedAt.Local().Format("2006-01-02 15:04:05"),
			label, r.Engine, r.Peer, r.Streams, placementName(r.Placement), r.Direction, rate, r.Retransmits, camp)
	}
	return tw.Flush()
}
