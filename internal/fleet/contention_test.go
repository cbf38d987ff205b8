package fleet

import (
	"slices"
	"strings"
	"testing"
)

// TestRunContention: a slow test whose own record shows contention is
// re-tested, not blamed: it comes back when a re-test is fine, stays
// inconclusive when every try was slow and contended, and is confirmed
// slow by one re-test that is slow without contention. Nothing
// inconclusive is an outlier, and a busy host does not hide a real fault.
func TestRunContention(t *testing.T) {
	hop := [2]string{"h01", "h04"}
	tests := []struct {
		name         string
		parallel     bool
		net          *fakeNet
		want         string // outliers
		inconclusive []string
		// retests run: the default 2, and one more when a try was
		// contended; serial, each after a control.
		retests int
	}{
		{name: "comes-back", net: &fakeNet{base: 9.5, contend: map[[2]string]int{hop: 1}}, retests: 2},
		{name: "stays-contended", net: &fakeNet{base: 9.5, contend: map[[2]string]int{hop: 9}},
			inconclusive: []string{"h01→h04"}, retests: 6},
		{name: "stays-contended-parallel", parallel: true, net: &fakeNet{base: 9.5, contend: map[[2]string]int{hop: 9, {"h06", "h02"}: 9}},
			inconclusive: []string{"h01→h04", "h06→h02"}, retests: 6},
		// Contended at first, then slow twice without contention: slow;
		// a path is tried twice more before it is blamed.
		{name: "confirmed-after-contention", net: &fakeNet{base: 9.5, contend: map[[2]string]int{hop: 1},
			pathCap: map[[2]string]float64{hop: 3}}, want: "path h01-h04 send slow", retests: 8},
		// h05 is busy in every test (contended at full speed); h03's
		// send side is shaped: h03→h05 stays inconclusive, the other four
		// blame h03.
		{name: "busy-host-hides-nothing", net: &fakeNet{base: 9.5, busy: map[string]bool{"h05": true},
			sendCap: map[string]float64{"h03": 2}}, want: "host h03 send slow", inconclusive: []string{"h03→h05"}, retests: 14},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := opts()
			o.Parallel = tt.parallel
			res := runFake(t, 6, o, tt.net)
			if got := outliers(res); got != tt.want {
				t.Errorf("outliers %q, want %q\n%s", got, tt.want, res.Verdict)
			}
			var inc []string
			for _, p := range res.Pairs {
				for _, d := range []struct {
					from, to string
					dir      Direction
				}{{p.A, p.B, p.AToB}, {p.B, p.A, p.BToA}} {
					if d.dir.Status == StatusInconclusive {
						inc = append(inc, d.from+"→"+d.to)
						if p.Status != StatusInconclusive && p.Status != StatusSlow {
							t.Errorf("pair %s-%s: %s with an inconclusive direction", p.A, p.B, p.Status)
						}
						if len(d.dir.TriesContention) != len(d.dir.TriesGbps) || d.dir.TriesContention[0] == "" {
							t.Errorf("%s→%s: contention %q for %d tries", d.from, d.to, d.dir.TriesContention, len(d.dir.TriesGbps))
						}
					}
				}
			}
			slices.Sort(inc)
			if !slices.Equal(inc, tt.inconclusive) {
				t.Errorf("inconclusive %q, want %q", inc, tt.inconclusive)
			}
			if len(tt.inconclusive) > 0 && !strings.Contains(res.Verdict, "stayed inconclusive") {
				t.Errorf("verdict %q says nothing of the inconclusive tests", res.Verdict)
			}
			if len(tt.inconclusive) == 0 && strings.Contains(res.Verdict, "inconclusive") {
				t.Errorf("verdict %q", res.Verdict)
			}
			if got := tt.net.calls - 30; got != tt.retests || res.Tests != tt.net.calls {
				t.Errorf("%d re-tests ran (document: %d tests), want %d", got, res.Tests, tt.retests)
			}
			for _, rt := range res.Retests {
				if rt.Status == StatusInconclusive && rt.Confirmed {
					t.Errorf("re-test %+v: inconclusive and confirmed", rt)
				}
			}
		})
	}
}

// TestRetestsAsTheFirstTry: a parallel run's re-tests run at once, as many
// as share no host, and each try records how many tests ran with it; a
// serial run's run alone. The text marks a figure measured with another
// number of tests at once than its first try.
func TestRetestsAsTheFirstTry(t *testing.T) {
	flaky := map[[2]string]int{{"h01", "h02"}: 1, {"h03", "h04"}: 1, {"h05", "h06"}: 1}
	o := opts()
	o.Parallel = true
	f := &fakeNet{base: 9.5, flaky: flaky}
	res := runFake(t, 8, o, f)
	var retests []Spec
	for _, s := range f.specs {
		if s.Retest {
			retests = append(retests, s)
		}
	}
	if len(retests) != 3 {
		t.Fatalf("%d re-tests, want 3", len(retests))
	}
	for _, s := range retests {
		if s.AtOnce != 3 {
			t.Errorf("re-test %s→%s ran with %d at once, want the 3 together", s.From.Name, s.To.Name, s.AtOnce)
		}
	}
	if len(res.Retests) != 3 {
		t.Fatalf("re-tests %+v", res.Retests)
	}
	for _, rt := range res.Retests {
		if !slices.Equal(rt.AtOnce, []int{4, 3}) || rt.Status != StatusOK {
			t.Errorf("re-test %+v: want at once [4 3], ok", rt)
		}
	}
	var b strings.Builder
	res.WriteText(&b)
	if !strings.Contains(b.String(), "* a re-test's figure with another number of tests at once") ||
		!strings.Contains(b.String(), "(4 at once), then ") || !strings.Contains(b.String(), " (3 at once) Gbit/s") {
		t.Errorf("the text does not mark the re-tests' load:\n%s", b.String())
	}
	// Serial: one at a time, always.
	f = &fakeNet{base: 9.5, flaky: flaky}
	res = runFake(t, 8, opts(), f)
	for _, p := range res.Pairs {
		for _, d := range []Direction{p.AToB, p.BToA} {
			for _, k := range d.TriesAtOnce {
				if k != 1 {
					t.Errorf("%s-%s: a serial try with %d at once", p.A, p.B, k)
				}
			}
			if OtherLoad(d) {
				t.Errorf("%s-%s: a serial figure marked", p.A, p.B)
			}
		}
	}
}
