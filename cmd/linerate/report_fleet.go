package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/linerate/linerate/internal/fleet"
	"github.com/linerate/linerate/internal/report"
)

// runFleetReport writes the report of a fleet run from its document.
func runFleetReport(env *cliEnv, f reportFlags, format string) error {
	if len(f.runs) > 0 || f.last != 0 || len(f.labels) > 0 {
		return errors.New("--fleet draws one fleet document: drop --run, --last and --label (each test's own report: linerate report --run ID)")
	}
	file, err := os.Open(f.fleet)
	if err != nil {
		return fmt.Errorf("--fleet: %w", err)
	}
	defer file.Close()
	res, err := fleet.ReadResult(file)
	if err != nil {
		return fmt.Errorf("--fleet %s: %w", f.fleet, err)
	}
	m, err := report.BuildFleet(res, f.title, version)
	if err != nil {
		return err
	}
	if err := writeReport(f.out, format, m); err != nil {
		return err
	}
	if f.json {
		hosts := make([]string, 0, len(res.Hosts))
		for _, h := range res.Hosts {
			hosts = append(hosts, h.Name)
		}
		return writeJSON(env.stdout, reportDoc{Schema: reportSchema, Output: f.out, Format: format, Title: m.Title,
			Verdict: m.Verdict, RunIDs: fleetRunIDs(res), Hosts: hosts, Tunes: []string{}})
	}
	fmt.Fprintf(env.stdout, "report written to %s: fleet of %d hosts, %s, %s\n", f.out, len(res.Hosts), counted(len(res.Pairs), "pair"), counted(len(res.Outliers), "outlier"))
	chartsNote(env.stdout, f.out, format)
	return nil
}

// fleetRunIDs lists the stored runs of a fleet document.
func fleetRunIDs(res *fleet.Result) []int64 {
	ids := []int64{}
	for _, p := range res.Pairs {
		ids = append(ids, p.AToB.RunIDs...)
		ids = append(ids, p.BToA.RunIDs...)
	}
	return ids
}

// counted writes "1 pair", "2 pairs".
func counted(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
