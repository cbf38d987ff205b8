package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/linerate/linerate/internal/doctor"
	"github.com/linerate/linerate/internal/hosttree"
)

// TestOpticsTables: the report shows every media lane grouped by data
// path with doctor's marks, copper cables without lanes, each port's
// pre-FEC BER and its FEC histogram, in HTML and Markdown.
func TestOpticsTables(t *testing.T) {
	ds := Dataset{Hosts: []doctor.Report{
		diagnose(t, hosttree.CX7QSFPDD8Lane()), diagnose(t, hosttree.CX6DxCopperDAC()), diagnose(t, hosttree.CX7PreFECBER()),
	}}
	m, err := Build(ds)
	if err != nil {
		t.Fatal(err)
	}
	md := filepath.Join(t.TempDir(), "r.md")
	if err := WriteMarkdown(md, m); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(md)
	if err != nil {
		t.Fatal(err)
	}
	out := string(b)
	for _, want := range []string{
		"### Optics and FEC",
		"| kite | ens5f0np0 | QSFP-DD 400GBASE-LR8 · ACME OPTICS QDD-400G-LR8 AC2304000417 | 1: 400GBASE-LR8 (activated) | 7 | 1–8 | no light | 0.68 | 56.20 | dark |",
		"| kite | ens5f1np1 | QSFP-DD 400GBASE-DR4 · ACME OPTICS QDD-400G-DR4 AC2201000431 | 1: 400GBASE-DR4 (activated) | 3 | 1–4 | 0.45 | no light | 0.00 | laser off |",
		"passive copper cable, 31.2 °C: no light to judge",
		"| merlin | ens5f1np1 | RS |",
		"| 1.6e-04 | 0: 3.0e-05, 1: 5.5e-04, 2: 3.2e-05, 3: 2.8e-05 |",
		"FEC histogram of ens5f1np1 on merlin",
		"| 15 | 12 | 0 | 12 | 0 | 0 |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("markdown lacks %q", want)
		}
	}
	// Lanes 1-8 of the LR8 come in order under their data path, and the
	// copper cables have no lane rows.
	i1 := strings.Index(out, "| kite | ens5f0np0 | QSFP-DD 400GBASE-LR8 · ACME OPTICS QDD-400G-LR8 AC2304000417 | 1: 400GBASE-LR8 (activated) | 1 |")
	i8 := strings.Index(out, "| kite | ens5f0np0 | QSFP-DD 400GBASE-LR8 · ACME OPTICS QDD-400G-LR8 AC2304000417 | 1: 400GBASE-LR8 (activated) | 8 |")
	if i1 < 0 || i8 < i1 {
		t.Errorf("LR8 lanes 1 and 8 missing or out of order")
	}
	if strings.Contains(out, "| heron | ens5f0np0 | QSFP+ 40GBASE-CR4 · Mellanox MC2210130-003 MT1921VS04412 | — | 1 |") {
		t.Errorf("a copper cable has lane rows")
	}
}
