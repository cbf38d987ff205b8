package fleet

import (
	"fmt"
	"io"
	"math"
	"strings"
	"time"
)

// StartCost is what starting the agents of a fleet takes, by launcher:
// about PerHostS seconds for each host (start, probe, doctor report),
// AtOnce hosts at a time.
type StartCost struct {
	PerHostS float64
	AtOnce   int
	// How names the launcher, for the plan's text ("ssh, 8 at a time").
	How string
}

// testOverheadS is what a test takes beyond its measured time: the
// relay's setup at both agents, the end's grace, storing the run. A lab's
// 30 tests of 2 s one at a time took 96 s, 1.2 s each beyond the 2 s; a
// parallel leg about 0.3 s. 1.5 s leaves room for a slower network.
const testOverheadS = 1.5

// Plan is a fleet run as it will run, before anything runs: its
// schedule, its size and the time it will take. The JSON names are
// `fleet run --plan --json`'s.
type Plan struct {
	Design string `json:"design"`
	Hosts  int    `json:"hosts"`
	// Tests and Legs are the schedule's: re-tests and probes come on top
	// (Reserve*).
	Tests int `json:"tests"`
	Legs  int `json:"legs"`
	// EstimateS is StartS + ScheduleS + ReserveS.
	EstimateS float64 `json:"estimate_s"`
	Pattern   string  `json:"pattern"`
	Partners  int     `json:"partners,omitempty"`
	Seed      int64   `json:"seed,omitempty"`
	Parallel  bool    `json:"parallel"`
	DurationS float64 `json:"duration_s"`
	Rounds    int     `json:"rounds"`
	// StartS is the agents' start; ScheduleS the schedule's legs (with
	// Parallel) or tests; ReserveS the re-tests of one slow host's tests
	// and, for the sampled design, two rounds of probes (ReserveTests
	// tests).
	StartS       float64 `json:"start_s"`
	ScheduleS    float64 `json:"schedule_s"`
	ReserveS     float64 `json:"reserve_s"`
	ReserveTests int     `json:"reserve_tests"`
	// Schedule lists each round's pairs by host name; each pair is tested
	// both ways, in the round's two legs.
	Schedule [][][2]string `json:"schedule"`

	start  StartCost
	incast bool
}

// incastPlan is an incast's plan: one leg of every sender's test at once
// to the receiver, none tried again.
func incastPlan(hosts []Host, opts Options, start StartCost) *Plan {
	senders, c := incastSenders(hosts, opts.Pattern)
	p := &Plan{Design: DesignAll, Hosts: len(hosts), Tests: len(senders), Legs: 1, Pattern: opts.Pattern.String(), Parallel: true,
		DurationS: opts.Duration.Seconds(), Rounds: 1, start: start, incast: true}
	var round [][2]string
	for _, s := range senders {
		round = append(round, [2]string{hosts[s].Name, hosts[c].Name})
	}
	p.Schedule = [][][2]string{round}
	if start.AtOnce > 0 {
		p.StartS = math.Ceil(float64(len(hosts))/float64(start.AtOnce)) * start.PerHostS
	}
	p.ScheduleS = opts.Duration.Seconds() + testOverheadS
	p.EstimateS = math.Round(p.StartS + p.ScheduleS)
	return p
}

// NewPlan plans a run of opts over hosts whose agents start at cost
// start, as Run would run it; it runs nothing.
func NewPlan(hosts []Host, opts Options, start StartCost) (*Plan, error) {
	if err := opts.check(hosts); err != nil {
		return nil, err
	}
	if opts.Pattern.Kind == PatternIncast {
		return incastPlan(hosts, opts, start), nil
	}
	sched, err := opts.schedule(hosts)
	if err != nil {
		return nil, err
	}
	p := &Plan{Design: opts.Design, Hosts: len(hosts), Tests: sched.Tests(), Legs: 2 * len(sched.Rounds),
		Pattern: opts.Pattern.String(), Partners: opts.Partners, Seed: opts.Seed, Parallel: opts.Parallel,
		DurationS: opts.Duration.Seconds(), Rounds: len(sched.Rounds), Schedule: [][][2]string{}, start: start}
	if opts.Design == DesignSampled {
		p.Pattern = PatternPairs
	}
	for _, round := range sched.Rounds {
		var names [][2]string
		for _, pr := range round {
			names = append(names, [2]string{hosts[pr.A].Name, hosts[pr.B].Name})
		}
		p.Schedule = append(p.Schedule, names)
	}
	slot := opts.Duration.Seconds() + testOverheadS
	if start.AtOnce > 0 {
		p.StartS = math.Ceil(float64(len(hosts))/float64(start.AtOnce)) * start.PerHostS
	}
	// One slow host (with the most partners): each of its tests on its
	// slow side is re-tested
	// once (the re-test that confirms it), one at a time since they
	// share the host; the sampled design adds two rounds of probes.
	degree := make([]int, len(hosts))
	partners := 0
	for _, pr := range sched.Pairs() {
		degree[pr.A]++
		degree[pr.B]++
		partners = max(partners, degree[pr.A], degree[pr.B])
	}
	if opts.Retests > 0 {
		p.ReserveTests = partners
	}
	reserveSlots := p.ReserveTests
	if opts.Design == DesignSampled {
		p.ReserveTests += 2 * 2
		reserveSlots += 2
		if !opts.Parallel {
			reserveSlots += 2
		}
	}
	if opts.Parallel {
		p.ScheduleS = float64(p.Legs) * slot
	} else {
		p.ScheduleS = float64(p.Tests) * slot
	}
	p.ReserveS = float64(reserveSlots) * slot
	p.EstimateS = math.Round(p.StartS + p.ScheduleS + p.ReserveS)
	return p, nil
}

// maxPlanPairs is how many pairs of a round the plan's text lists.
const maxPlanPairs = 16

// WriteText writes the plan for people.
func (p *Plan) WriteText(w io.Writer) error {
	var b strings.Builder
	design := "design all, pattern " + p.Pattern
	if p.Design == DesignSampled {
		design = fmt.Sprintf("design sampled (%s each, seed %d)", count(p.Partners, "partner"), p.Seed)
	}
	mode := "one test at a time"
	switch {
	case p.incast:
		mode = "every sender at once"
	case p.Parallel:
		mode = "each leg's tests at once"
	}
	fmt.Fprintf(&b, "fleet plan: %d hosts, %s: %s in %s, %s, %s\n", p.Hosts, design, count(p.Tests, "test"),
		count(p.Rounds, "round"), count(p.Legs, "leg"), mode)
	slot := p.DurationS + testOverheadS
	run := fmt.Sprintf("%s × %gs", count(p.Tests, "test"), slot)
	if p.Parallel {
		run = fmt.Sprintf("%s × %gs", count(p.Legs, "leg"), slot)
	}
	fmt.Fprintf(&b, "estimate: %s = agents %s", duration(p.EstimateS), duration(p.StartS))
	if p.start.How != "" {
		fmt.Fprintf(&b, " (%s)", p.start.How)
	}
	fmt.Fprintf(&b, " + %s = %s (each test %gs and about %gs to set up)", run, duration(p.ScheduleS), p.DurationS, testOverheadS)
	if p.ReserveTests > 0 {
		fmt.Fprintf(&b, " + %s for re-tests", duration(p.ReserveS))
		if p.Design == DesignSampled {
			b.WriteString(" and probes")
		}
		fmt.Fprintf(&b, " (about %s when one host is slow)", count(p.ReserveTests, "test"))
	}
	if p.incast {
		b.WriteString("\nschedule (one leg: every sender at once to the receiver):\n")
	} else {
		b.WriteString("\nschedule (each pair both ways, one leg each way):\n")
	}
	for i, round := range p.Schedule {
		var names []string
		for k, pr := range round {
			if k == maxPlanPairs {
				names = append(names, fmt.Sprintf("… (%s)", count(len(round), "pair")))
				break
			}
			if p.incast {
				names = append(names, pr[0]+"→"+pr[1])
				continue
			}
			names = append(names, pr[0]+"-"+pr[1])
		}
		fmt.Fprintf(&b, "  round %d: %s\n", i+1, strings.Join(names, " "))
	}
	b.WriteString("nothing was run (drop --plan to run it)\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// duration writes seconds as "45 s", "3 min 5 s".
func duration(s float64) string {
	d := time.Duration(math.Round(s)) * time.Second
	if d < time.Minute {
		return fmt.Sprintf("%d s", int(d.Seconds()))
	}
	m := int(d.Minutes())
	if sec := int(d.Seconds()) - 60*m; sec != 0 {
		return fmt.Sprintf("%d min %d s", m, sec)
	}
	return fmt.Sprintf("%d min", m)
}
