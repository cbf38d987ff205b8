package report

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/linerate/linerate/internal/explain"
	"github.com/linerate/linerate/internal/nicstats"
	"github.com/linerate/linerate/internal/result"
)

// nicCounters adds what the NICs of both ends counted during the runs
// (end.nic_counters): a row per run, end and cause that grew, with the
// driver's or kernel's counters behind it. Runs whose counters were not
// read at all leave the table out.
func (b *builder) nicCounters(s *section) {
	t := &table{ID: "nic-counters", Caption: "NIC counters that grew during the runs",
		Head: []string{"Run", "Label", "End", "Interface", "Cause", "Grew by", "Counters", "Meaning"},
		Num:  []bool{true, false, false, false, false, true, false, false}}
	read, notRead := 0, map[string]bool{}
	for i := range b.ds.Runs {
		r := &b.ds.Runs[i]
		n := r.Result.End.NICCounters
		for _, role := range []string{"client", "server"} {
			d := n.End(role)
			switch {
			case d == nil:
				continue
			case d.NotRead != "":
				notRead[role+" "+orDash(d.Interface)+": "+d.NotRead] = true
				continue
			}
			read++
			grew := d.Grew()
			for _, c := range causes(grew) {
				t.Rows = append(t.Rows, []string{strconv.FormatInt(r.Result.RunID, 10), orDash(r.Label), endName(&r.Result, role),
					orDash(d.Interface), c, strconv.FormatUint(grew[c], 10), sources(d, c), explain.CauseWords(c, grew[c])})
				t.Classes = append(t.Classes, causeClass(c))
			}
		}
	}
	if read == 0 {
		return
	}
	s.addHeading("NIC counters")
	msg := fmt.Sprintf("bench read the NIC counters of each end before and after every run (%d end-runs read)", read)
	if len(t.Rows) == 0 {
		s.addText("%s: none grew; the NICs dropped nothing.", msg)
	} else {
		s.addText("%s: %d counter%s grew. A drop counted on the sender's side (queueing discipline, TX) is the host's own; one on the receiver's (RX buffers) means the host did not drain the NIC's ring in time.", msg, len(t.Rows), plural(len(t.Rows)))
	}
	if len(notRead) > 0 {
		s.addText("Not read: %s.", strings.Join(slices.Sorted(maps.Keys(notRead)), "; "))
	}
	s.addTable(t)
}

// causes lists m's causes in nicstats' order, then others by name.
func causes(m map[string]uint64) []string {
	var out []string
	for _, c := range nicstats.Causes {
		if _, ok := m[string(c)]; ok {
			out = append(out, string(c))
		}
	}
	for _, c := range slices.Sorted(maps.Keys(m)) {
		if !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	return out
}

// sources names the counters behind a cause that grew: "rx_out_of_buffer".
func sources(d *result.NICDelta, cause string) string {
	var names []string
	for n, v := range d.Sources[cause] {
		if v > 0 {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return orDash(strings.Join(names, ", "))
}

// endName is "server (lr-x-b)", or "server" when both ends share a name.
func endName(r *result.Result, role string) string {
	c, s := r.Start.Client.Hostname, r.Start.Server.Hostname
	h := s
	if role == "client" {
		h = c
	}
	if h == "" || c == s {
		return role
	}
	return role + " (" + h + ")"
}

// causeClass marks lost frames as a warning; pause frames and corrected
// FEC blocks are not losses.
func causeClass(c string) string {
	switch nicstats.Cause(c) {
	case nicstats.PauseTX, nicstats.PauseRX, nicstats.FECCorrected:
		return ""
	}
	return "warn"
}
