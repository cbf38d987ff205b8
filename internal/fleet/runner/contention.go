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
	// A test was held back on a CPU that carried its stream threads when
	// they were ready to run most of the test (readyPct: running, own,
	// or waiting for the CPU, end.foreign.*.wait), waited for it at least
	// waitPct of the test, and other work ran there (otherPct). A thread
	// ready to run all the time wanted the whole CPU; one that waited for
	// it did not get it. A thread that needed little (a test shaped to a
	// fraction of the link) sleeps most of the test, however busy the
	// CPU: a busy loop beside it fills every cycle the test leaves, and
	// that says nothing of the test. On this project's 2-CPU machine at
	// load 24 with a busy loop, an unshaped test's receiver ran 15% and
	// waited 92% of the time (ready all of it), a receiver shaped to
	// 300 Mbit/s waited 44% (ready half of it); at load 26, a sender
	// shaped to 1 Gbit/s ran 3% and waited 10%.
	readyPct = 75.0
	waitPct  = 25.0
	otherPct = 10.0
	// Where an agent reports no run delay (a kernel without schedstat):
	// a CPU busy with other work at least busyPct of the test (what
	// automatic placement calls busy) while the test's own threads used
	// at least hungryPct of it.
	busyPct   = engine.FreeBusy
	hungryPct = 10.0
)

// Contention says why a test's own record shows that it did not have
// its CPUs to itself, or "": both ends on one CPU (the ends share a
// kernel, as a lab's hosts do), threads not pinned apart where they
// share one, or a CPU that carried an end's stream threads busy with
// other work while those threads waited for it (end.foreign). from and
// to name the ends.
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
			var why string
			switch wait, known := end.f.Wait[k]; {
			case end.f.Wait != nil:
				if !known || wait < waitPct || own+wait < readyPct || other < otherPct {
					continue
				}
				why = fmt.Sprintf("the test's threads on CPU %d of %s were ready to run %.0f%% of the test and waited %.0f%% for it, %.0f%% busy with other work",
					c, end.name, min(100, own+wait), wait, other)
			case other >= busyPct && own >= hungryPct:
				why = fmt.Sprintf("CPU %d of %s was %.0f%% busy with other work while the test's threads used %.0f%%", c, end.name, other, own)
			default:
				continue
			}
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
