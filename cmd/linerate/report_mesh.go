package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/linerate/linerate/internal/mesh"
	"github.com/linerate/linerate/internal/report"
)

// maxMeshDoc bounds a mesh document read from a file: 256 hosts' pairs
// with their texts fit well within it.
const maxMeshDoc = 64 << 20

// runMeshReport writes the report of a mesh from its status document.
func runMeshReport(env *cliEnv, f reportFlags, format string) error {
	if len(f.runs) > 0 || f.last != 0 || len(f.labels) > 0 || f.fleet != "" {
		return errors.New("--mesh draws one mesh document: drop --run, --last, --label and --fleet")
	}
	file, err := os.Open(f.mesh)
	if err != nil {
		return fmt.Errorf("--mesh: %w", err)
	}
	defer file.Close()
	var d mesh.Doc
	dec := json.NewDecoder(io.LimitReader(file, maxMeshDoc))
	if err := dec.Decode(&d); err != nil {
		return fmt.Errorf("--mesh %s: not a linerate.mesh/v1 document: %v", f.mesh, err)
	}
	m, err := report.BuildMesh(&d, f.title, version)
	if err != nil {
		return fmt.Errorf("--mesh %s: %w", f.mesh, err)
	}
	if err := writeReport(f.out, format, m); err != nil {
		return err
	}
	if f.json {
		hosts := make([]string, 0, len(d.Hosts))
		for _, h := range d.Hosts {
			hosts = append(hosts, h.Name)
		}
		return writeJSON(env.stdout, reportDoc{Schema: reportSchema, Output: f.out, Format: format, Title: m.Title,
			Verdict: m.Verdict, RunIDs: []int64{}, Hosts: hosts, Tunes: []string{}})
	}
	fmt.Fprintf(env.stdout, "report written to %s: mesh of %d hosts, %d pairs, %d suspect(s)\n", f.out, len(d.Hosts), len(d.Pairs), len(d.Suspects))
	chartsNote(env.stdout, f.out, format)
	return nil
}
