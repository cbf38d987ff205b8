package fleet

import (
	"fmt"
	"testing"
)

// checkSchedule checks that s tests exactly the pairs want (each once per
// direction) and that no leg has a host twice.
func checkSchedule(t *testing.T, s Schedule, want map[[2]int]bool) {
	t.Helper()
	seen := map[[2]int]int{}
	for li, leg := range s.Legs() {
		busy := map[int]bool{}
		for _, tt := range leg {
			if tt.From == tt.To || tt.From < 0 || tt.To < 0 || tt.From >= s.Hosts || tt.To >= s.Hosts {
				t.Fatalf("n=%d leg %d: bad test %+v", s.Hosts, li, tt)
			}
			if busy[tt.From] || busy[tt.To] {
				t.Fatalf("n=%d leg %d: a host is in two tests: %+v", s.Hosts, li, leg)
			}
			busy[tt.From], busy[tt.To] = true, true
			seen[[2]int{tt.From, tt.To}]++
		}
	}
	for d, c := range seen {
		if c != 1 {
			t.Errorf("n=%d: %d→%d tested %d times", s.Hosts, d[0], d[1], c)
		}
		if !want[d] {
			t.Errorf("n=%d: %d→%d is not in the pattern", s.Hosts, d[0], d[1])
		}
	}
	for d := range want {
		if seen[d] == 0 {
			t.Errorf("n=%d: %d→%d never tested", s.Hosts, d[0], d[1])
		}
	}
	if s.Tests() != len(want) {
		t.Errorf("n=%d: Tests() = %d, want %d", s.Hosts, s.Tests(), len(want))
	}
}

func both(pairs ...[2]int) map[[2]int]bool {
	m := map[[2]int]bool{}
	for _, p := range pairs {
		m[p], m[[2]int{p[1], p[0]}] = true, true
	}
	return m
}

// TestCircleSchedule: for n = 2..64 the pairs pattern tests every ordered
// pair exactly once, no host twice in a leg, in n−1 rounds (n for odd n)
// of ⌊n/2⌋ pairs.
func TestCircleSchedule(t *testing.T) {
	for n := 2; n <= 64; n++ {
		s, err := NewSchedule(n, Pattern{Kind: PatternPairs}, nil)
		if err != nil {
			t.Fatal(err)
		}
		var all [][2]int
		for a := 0; a < n; a++ {
			for b := a + 1; b < n; b++ {
				all = append(all, [2]int{a, b})
			}
		}
		checkSchedule(t, s, both(all...))
		wantRounds := n - 1
		if n%2 == 1 {
			wantRounds = n
		}
		if len(s.Rounds) != wantRounds {
			t.Errorf("n=%d: %d rounds, want %d", n, len(s.Rounds), wantRounds)
		}
		for r, round := range s.Rounds {
			if len(round) != n/2 {
				t.Errorf("n=%d round %d: %d pairs, want %d", n, r, len(round), n/2)
			}
		}
		if len(s.Legs()) != 2*wantRounds {
			t.Errorf("n=%d: %d legs, want %d", n, len(s.Legs()), 2*wantRounds)
		}
	}
}

func TestRingSchedule(t *testing.T) {
	for n := 2; n <= 64; n++ {
		s, err := NewSchedule(n, Pattern{Kind: PatternRing}, nil)
		if err != nil {
			t.Fatal(err)
		}
		var edges [][2]int
		for i := 0; i < n; i++ {
			if n == 2 && i == 1 {
				break
			}
			edges = append(edges, [2]int{i, (i + 1) % n})
		}
		checkSchedule(t, s, both(edges...))
		want := 2 + n%2
		if n == 2 {
			want = 1
		}
		if len(s.Rounds) != want {
			t.Errorf("ring n=%d: %d rounds, want %d", n, len(s.Rounds), want)
		}
	}
}

func TestStarSchedule(t *testing.T) {
	for n := 2; n <= 64; n++ {
		names := make([]string, n)
		for i := range names {
			names[i] = fmt.Sprintf("h%02d", i+1)
		}
		c := n / 2
		s, err := NewSchedule(n, Pattern{Kind: PatternStar, Center: names[c]}, names)
		if err != nil {
			t.Fatal(err)
		}
		var edges [][2]int
		for i := 0; i < n; i++ {
			if i != c {
				edges = append(edges, [2]int{c, i})
			}
		}
		checkSchedule(t, s, both(edges...))
		if len(s.Rounds) != n-1 {
			t.Errorf("star n=%d: %d rounds", n, len(s.Rounds))
		}
	}
	if _, err := NewSchedule(3, Pattern{Kind: PatternStar, Center: "nope"}, []string{"a", "b", "c"}); err == nil {
		t.Error("a star around a missing host was scheduled")
	}
}

func TestParsePattern(t *testing.T) {
	for in, want := range map[string]string{"": "pairs", "pairs": "pairs", "ring": "ring", "star:h03": "star:h03", "incast:h05": "incast:h05"} {
		p, err := ParsePattern(in)
		if err != nil || p.String() != want {
			t.Errorf("ParsePattern(%q) = %v, %v; want %s", in, p, err, want)
		}
	}
	for _, bad := range []string{"star", "star:", "mesh", "star:-x", "Pairs", "incast", "incast:", "incast:-x"} {
		if _, err := ParsePattern(bad); err == nil {
			t.Errorf("ParsePattern(%q) accepted", bad)
		}
	}
	if _, err := NewSchedule(1, Pattern{}, nil); err == nil {
		t.Error("a schedule of one host")
	}
}
