package runner

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/linerate/linerate/internal/engine"
	"github.com/linerate/linerate/internal/result"
)

// Contention thresholds of a fleet's test.
const (
	// busyPct: a CPU that carried a test's stream threads was busy with
	// other work at least this share of the test: what automatic
	// placement calls a busy CPU.
	busyPct = engine.FreeBusy
	// hungryPct: the test's own threads used at least this share of that
	// CPU. A thread that needed less than a tenth of a CPU (a test
	// shaped to a fraction of the link) was not held back by the CPU,
	// however busy it was: a busy loop beside it fills every cycle the
	// test leaves, and that says nothing of the test.
	hungryPct = 10.0
)

// Contention says why a test's own record shows that it did not have
// its CPUs to itself, or "": both ends on one CPU (the ends share a
// kernel, as a lab's hosts do), threads not pinned apart where they
// share one, or a CPU that carried an end's stream threads busy with
// other work (end.foreign) while those threads needed it. from and to
// name the ends.
func Contention(res *result.Result, from, to string) string {
	st := res.Start
	pl := st.Placement
	same := st.Client.BootID != "" && st.Client.BootID == st.Server.BootID
	if same {
		for _, c := range pl.Client {
			if slices.Contains(pl.Server, c) {
				return fmt.Sprintf("both ends ran on CPU %d (%s and %s share a kernel)", c, from, to)
			}
		}
		if len(pl.Client) == 0 || len(pl.Server) == 0 {
			return fmt.Sprintf("the ends' threads were not pinned apart (%s and %s share a kernel)", from, to)
		}
	}
	for _, end := range []struct {
		name string
		cpus []int
		f    *result.Foreign
	}{{from, pl.Client, res.End.Foreign.Client}, {to, pl.Server, res.End.Foreign.Server}} {
		if end.f == nil {
			continue
		}
		for _, c := range end.cpus {
			k := strconv.Itoa(c)
			other, own := end.f.CPU[k], end.f.Own[k]
			if other < busyPct || own < hungryPct {
				continue
			}
			why := fmt.Sprintf("CPU %d of %s was %.0f%% busy with other work while the test's threads used %.0f%%", c, end.name, other, own)
			for _, p := range end.f.Top {
				if p.CPU == c {
					why += fmt.Sprintf(" (pid %d %s: %.0f%% of a CPU)", p.PID, printable(p.Name), p.CPUPct)
					break
				}
			}
			return why
		}
	}
	return ""
}

// printable keeps a name an agent reported to printable ASCII, at most 32
// bytes: it goes into the fleet's text and documents.
func printable(s string) string {
	b := []byte(s)
	if len(b) > 32 {
		b = b[:32]
	}
	for i, c := range b {
		if c < ' ' || c > '~' {
			b[i] = '?'
		}
	}
	return string(b)
}
