// Command oracle compares linerate's decoding of module memory (package
// sff) with ethtool's own decoders, field by field, on every module page
// set of testdata/hosts and on page sets generated at random within each
// specification's valid ranges (seeded, so a run can be repeated).
//
// ethtool's decoders run in a harness (scripts/oracle/harness) that
// scripts/oracle-ethtool.sh builds from ethtool's source, downloaded from
// Debian's archive at run time; this program only runs the binary and
// reads what it prints, as `ethtool -m` would print it.
//
// Every difference is classified: either a known, documented error or
// choice of ethtool (docs/testing.md, "Differential oracle", names each
// with the clause of the specification), or unexplained. The program
// prints a table of the figures and exits 1 when any difference is
// unexplained, 2 on a usage or harness error.
package main

import (
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	"github.com/linerate/linerate/internal/sff"
)

func main() {
	harness := flag.String("harness", "", "the harness binary built around ethtool's decoders")
	trees := flag.String("trees", "testdata/hosts", "host trees whose module pages are compared")
	random := flag.Int("random", 3000, "page sets generated at random, per specification")
	seed := flag.Uint64("seed", 1, "seed of the generator")
	verbose := flag.Bool("v", false, "print every difference, not only the unexplained ones")
	flag.Parse()
	if *harness == "" {
		fmt.Fprintln(os.Stderr, "oracle: -harness is required (scripts/oracle-ethtool.sh builds it)")
		os.Exit(2)
	}
	tmp, err := os.MkdirTemp("", "linerate-oracle-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "oracle:", err)
		os.Exit(2)
	}
	defer os.RemoveAll(tmp)

	var sets []pageSet
	dirs, _ := filepath.Glob(filepath.Join(*trees, "*", "linerate", "ethtool", "*", "module-eeprom"))
	for _, d := range dirs {
		p, err := readPages(d)
		if err != nil {
			fmt.Fprintln(os.Stderr, "oracle:", err)
			os.Exit(2)
		}
		if _, ok := p[sff.Lower]; !ok {
			continue // a read that failed (module-eeprom/error): nothing to decode
		}
		rel, _ := filepath.Rel(*trees, filepath.Dir(filepath.Dir(filepath.Dir(filepath.Dir(d)))))
		sets = append(sets, pageSet{name: "testdata/hosts/" + rel + "/" + filepath.Base(filepath.Dir(d)), origin: "testdata", pages: p})
	}
	rng := rand.New(rand.NewPCG(*seed, 0x11ce))
	for i := range *random {
		sets = append(sets,
			pageSet{name: fmt.Sprintf("random SFF-8472 #%d", i), origin: "random", pages: randomSFF8472(rng)},
			pageSet{name: fmt.Sprintf("random SFF-8636 #%d", i), origin: "random", pages: randomSFF8636(rng)},
			pageSet{name: fmt.Sprintf("random CMIS #%d", i), origin: "random", pages: randomCMIS(rng)})
	}

	tally := newTally()
	for i, s := range sets {
		out, skipped, err := runHarness(*harness, filepath.Join(tmp, fmt.Sprint(i)), s.pages)
		if err != nil {
			fmt.Fprintf(os.Stderr, "oracle: %s: %v\n", s.name, err)
			os.Exit(2)
		}
		m, derr := sff.Decode(s.pages)
		if skipped {
			tally.skip(s)
			continue
		}
		if derr != nil {
			tally.add(s, []diff{{field: "decode", ours: derr.Error(), theirs: "decoded", cause: ""}}, 0)
			continue
		}
		diffs, compared := compare(m, s.pages, parseEthtool(out))
		tally.add(s, diffs, compared)
	}
	tally.print(os.Stdout, *verbose)
	if tally.unexplained > 0 {
		os.Exit(1)
	}
}

// pageSet is one module's pages and where they come from.
type pageSet struct {
	name, origin string
	pages        sff.Pages
}

// readPages reads a module-eeprom directory of a host tree.
func readPages(dir string) (sff.Pages, error) {
	names, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	p := sff.Pages{}
	for _, n := range names {
		stem, ok := strings.CutSuffix(n.Name(), ".bin")
		if !ok {
			continue
		}
		pg, err := sff.ParsePageName(stem)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", dir, err)
		}
		b, err := os.ReadFile(filepath.Join(dir, n.Name()))
		if err != nil {
			return nil, err
		}
		p[pg] = b
	}
	return p, nil
}

// runHarness writes the pages into dir and runs the harness on them.
// skipped is true when the harness's ethtool does not decode the
// identifier.
func runHarness(bin, dir string, pages sff.Pages) (out string, skipped bool, err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", false, err
	}
	defer os.RemoveAll(dir)
	for p, b := range pages {
		if err := os.WriteFile(filepath.Join(dir, p.Name()+".bin"), b, 0o644); err != nil {
			return "", false, err
		}
	}
	cmd := exec.Command(bin, dir)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() == 3 {
		return "", true, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("harness: %v: %s", err, strings.TrimSpace(stderr.String()))
	}
	return string(b), false, nil
}

// tally counts comparisons and differences by specification, origin and
// cause.
type tally struct {
	rows        map[string]*row
	causes      map[string]int
	examples    map[string]string
	unexplained int
	lines       []string
}

type row struct {
	sets, skipped, fields, differing, explained int
}

func newTally() *tally {
	return &tally{rows: map[string]*row{}, causes: map[string]int{}, examples: map[string]string{}}
}

func specOf(p sff.Pages) string {
	lo := p[sff.Lower]
	if len(lo) == 0 {
		return "?"
	}
	switch lo[0] {
	case 0x03:
		return sff.SpecSFF8472
	case 0x0C, 0x0D, 0x11:
		return sff.SpecSFF8636
	}
	return sff.SpecCMIS
}

func (t *tally) row(s pageSet) *row {
	k := s.origin + "\t" + specOf(s.pages)
	if t.rows[k] == nil {
		t.rows[k] = &row{}
	}
	return t.rows[k]
}

func (t *tally) skip(s pageSet) {
	r := t.row(s)
	r.sets++
	r.skipped++
}

func (t *tally) add(s pageSet, diffs []diff, compared int) {
	r := t.row(s)
	r.sets++
	r.fields += compared
	for _, d := range diffs {
		r.differing++
		if d.cause != "" {
			r.explained++
			t.causes[d.cause]++
			if _, ok := t.examples[d.cause]; !ok {
				t.examples[d.cause] = fmt.Sprintf("%s: %s: linerate %s, ethtool %s", s.name, d.field, d.ours, d.theirs)
			}
			continue
		}
		t.unexplained++
		t.lines = append(t.lines, fmt.Sprintf("UNEXPLAINED %s: %s: linerate %s, ethtool %s", s.name, d.field, d.ours, d.theirs))
	}
}

func (t *tally) print(w io.Writer, verbose bool) {
	fmt.Fprintln(w, "| origin | spec | page sets | not decoded by this ethtool | fields compared | differing | explained | unexplained |")
	fmt.Fprintln(w, "|---|---|---:|---:|---:|---:|---:|---:|")
	keys := make([]string, 0, len(t.rows))
	for k := range t.rows {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var tot row
	for _, k := range keys {
		r := t.rows[k]
		o, s, _ := strings.Cut(k, "\t")
		fmt.Fprintf(w, "| %s | %s | %d | %d | %d | %d | %d | %d |\n", o, s, r.sets, r.skipped, r.fields, r.differing, r.explained, r.differing-r.explained)
		tot.sets += r.sets
		tot.skipped += r.skipped
		tot.fields += r.fields
		tot.differing += r.differing
		tot.explained += r.explained
	}
	fmt.Fprintf(w, "| all | | %d | %d | %d | %d | %d | %d |\n\n", tot.sets, tot.skipped, tot.fields, tot.differing, tot.explained, tot.differing-tot.explained)
	causes := make([]string, 0, len(t.causes))
	for c := range t.causes {
		causes = append(causes, c)
	}
	sort.Strings(causes)
	fmt.Fprintln(w, "| explained difference | fields | first example |")
	fmt.Fprintln(w, "|---|---:|---|")
	for _, c := range causes {
		fmt.Fprintf(w, "| %s | %d | %s |\n", c, t.causes[c], t.examples[c])
	}
	fmt.Fprintln(w)
	n := len(t.lines)
	if !verbose && n > 40 {
		t.lines = t.lines[:40]
	}
	for _, l := range t.lines {
		fmt.Fprintln(w, l)
	}
	if len(t.lines) < n {
		fmt.Fprintf(w, "… and %d more unexplained differences (-v shows all)\n", n-len(t.lines))
	}
}
