package fleet

import (
	"fmt"
	"strings"
)

// Pattern names which pairs a fleet run tests.
type Pattern struct {
	// Kind is "pairs" (every pair), "ring" (each host with the next),
	// "star" (one host with every other) or "incast" (every other host
	// sending to one, all at once).
	Kind string
	// Center names the hub of a star, the receiver of an incast.
	Center string
}

// The pattern kinds.
const (
	PatternPairs = "pairs"
	PatternRing  = "ring"
	PatternStar  = "star"
	// PatternIncast is not a schedule of pairs: its one leg runs every
	// other host's test to its receiver at once (runIncast).
	PatternIncast = "incast"
)

// ParsePattern reads "pairs", "ring", "star:HOST" or "incast:HOST".
func ParsePattern(s string) (Pattern, error) {
	switch {
	case s == PatternPairs || s == "":
		return Pattern{Kind: PatternPairs}, nil
	case s == PatternRing:
		return Pattern{Kind: PatternRing}, nil
	case strings.HasPrefix(s, PatternStar+":"):
		c := strings.TrimPrefix(s, PatternStar+":")
		if err := checkName(c); err != nil {
			return Pattern{}, fmt.Errorf("pattern %q: %v", s, err)
		}
		return Pattern{Kind: PatternStar, Center: c}, nil
	case strings.HasPrefix(s, PatternIncast+":"):
		c := strings.TrimPrefix(s, PatternIncast+":")
		if err := checkName(c); err != nil {
			return Pattern{}, fmt.Errorf("pattern %q: %v", s, err)
		}
		return Pattern{Kind: PatternIncast, Center: c}, nil
	}
	return Pattern{}, fmt.Errorf("pattern %q: use pairs, ring, star:HOST or incast:HOST", s)
}

// String writes the pattern as ParsePattern reads it.
func (p Pattern) String() string {
	if p.Kind == PatternStar || p.Kind == PatternIncast {
		return p.Kind + ":" + p.Center
	}
	if p.Kind == "" {
		return PatternPairs
	}
	return p.Kind
}

// Pair is two hosts by their index in the host list; A is the host that
// sends in a round's first leg.
type Pair struct{ A, B int }

// Test is one direction of a pair: From sends to To.
type Test struct {
	Round, Leg int // Leg 0 runs each pair A→B, leg 1 B→A
	From, To   int
}

// Schedule is the rounds of a fleet run: in each round every host is in at
// most one pair.
type Schedule struct {
	Hosts  int
	Rounds [][]Pair
}

// NewSchedule schedules pattern p over n hosts; names resolves a star's
// centre to its index.
func NewSchedule(n int, p Pattern, names []string) (Schedule, error) {
	if n < 2 {
		return Schedule{}, fmt.Errorf("a fleet needs at least 2 hosts, not %d", n)
	}
	if n > maxHosts {
		return Schedule{}, fmt.Errorf("%d hosts: at most %d", n, maxHosts)
	}
	s := Schedule{Hosts: n}
	switch p.Kind {
	case PatternPairs, "":
		s.Rounds = circle(n)
	case PatternRing:
		s.Rounds = ring(n)
	case PatternStar:
		c := -1
		for i, name := range names {
			if name == p.Center {
				c = i
			}
		}
		if c < 0 {
			return Schedule{}, fmt.Errorf("pattern star:%s: no host is called %s", p.Center, p.Center)
		}
		for i := 0; i < n; i++ {
			if i != c {
				s.Rounds = append(s.Rounds, []Pair{{A: c, B: i}})
			}
		}
	case PatternIncast:
		// Its senders share their receiver: no round of disjoint pairs
		// holds them (runIncast runs them).
		return Schedule{}, fmt.Errorf("pattern %s is one leg of tests to one host, not a schedule of pairs", p)
	default:
		return Schedule{}, fmt.Errorf("unknown pattern %q", p.Kind)
	}
	return s, nil
}

// circle is the circle method: host 0 stays put, the others turn one place
// per round, and position i plays position m−1−i. For odd n a "bye" makes
// the count even, and whoever meets it sits the round out.
func circle(n int) [][]Pair {
	m := n + n%2
	pos := make([]int, m)
	for i := range pos {
		pos[i] = i // index n, when present, is the bye
	}
	rounds := make([][]Pair, 0, m-1)
	for r := 0; r < m-1; r++ {
		var round []Pair
		for i := 0; i < m/2; i++ {
			a, b := pos[i], pos[m-1-i]
			if a == n || b == n {
				continue
			}
			round = append(round, Pair{A: a, B: b})
		}
		rounds = append(rounds, round)
		// Turn every position but the first one place.
		last := pos[m-1]
		copy(pos[2:], pos[1:m-1])
		pos[1] = last
	}
	return rounds
}

// ring pairs each host with the next (the last with the first): even edges
// in one round and odd ones in another, and for odd n the closing edge in a
// third, since it shares host 0 with the first.
func ring(n int) [][]Pair {
	if n == 2 {
		return [][]Pair{{{A: 0, B: 1}}}
	}
	var even, odd, closing []Pair
	for i := 0; i < n; i++ {
		p := Pair{A: i, B: (i + 1) % n}
		switch {
		case i == n-1 && n%2 == 1:
			closing = append(closing, p)
		case i%2 == 0:
			even = append(even, p)
		default:
			odd = append(odd, p)
		}
	}
	rounds := [][]Pair{even, odd}
	if closing != nil {
		rounds = append(rounds, closing)
	}
	return rounds
}

// Pairs lists every pair in schedule order.
func (s Schedule) Pairs() []Pair {
	var out []Pair
	for _, r := range s.Rounds {
		out = append(out, r...)
	}
	return out
}

// Legs lists the tests of each leg in order: round 0 leg 0, round 0 leg
// 1, round 1 leg 0, … Tests within a leg share no host.
func (s Schedule) Legs() [][]Test {
	legs := make([][]Test, 0, 2*len(s.Rounds))
	for r, round := range s.Rounds {
		for leg := 0; leg < 2; leg++ {
			tests := make([]Test, 0, len(round))
			for _, p := range round {
				t := Test{Round: r, Leg: leg, From: p.A, To: p.B}
				if leg == 1 {
					t.From, t.To = p.B, p.A
				}
				tests = append(tests, t)
			}
			legs = append(legs, tests)
		}
	}
	return legs
}

// Tests counts the tests of the schedule: two per pair.
func (s Schedule) Tests() int { return 2 * len(s.Pairs()) }
