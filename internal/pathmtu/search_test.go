package pathmtu

import (
	"context"
	"errors"
	"net/netip"
	"testing"
)

// fakePath models a path for search: sizes up to fwd cross it, larger
// ones are dropped silently, or answered with a frag-needed carrying hint
// (when hint != 0), or refused locally above local (when local != 0).
type fakePath struct {
	fwd, hint, local int
	sizes            []int // sizes tried, in order
}

func (p *fakePath) try(_ context.Context, size int) (outcome, error) {
	p.sizes = append(p.sizes, size)
	switch {
	case p.local > 0 && size > p.local:
		return outcome{fail: Failure{Size: size, Reason: ReasonLocalMTU, MTU: p.local}}, nil
	case size <= p.fwd:
		return outcome{ok: true}, nil
	case p.hint != 0:
		// A router that reported once makes the kernel cache its MTU.
		p.local = p.hint
		return outcome{fail: Failure{Size: size, Reason: ReasonFragNeeded, MTU: p.hint}}, nil
	}
	return outcome{fail: Failure{Size: size, Reason: ReasonTimeout}}, nil
}

func (p *fakePath) timeouts(res Result) int {
	n := 0
	for _, f := range res.Failures {
		if f.Reason == ReasonTimeout {
			n++
		}
	}
	return n
}

func TestSearch(t *testing.T) {
	tests := []struct {
		name     string
		mtu      int
		floor    int
		path     fakePath
		ok       bool
		largest  int
		sizes    []int // exact order, when given
		timeouts int   // at most, when sizes is not given
	}{
		{name: "passes", mtu: 9000, floor: 68, path: fakePath{fwd: 9000}, ok: true, largest: 9000, sizes: []int{9000}},
		{name: "silent 1500", mtu: 9000, floor: 68, path: fakePath{fwd: 1500}, largest: 1500, sizes: []int{9000, 1500, 1501}},
		{name: "silent 1504 (veth slack)", mtu: 9000, floor: 68, path: fakePath{fwd: 1504}, largest: 1504,
			sizes: []int{9000, 1500, 1501, 1503, 1507, 1505, 1504}},
		{name: "router says 1500", mtu: 9000, floor: 68, path: fakePath{fwd: 1500, hint: 1500}, largest: 1500, sizes: []int{9000, 1500, 1501}},
		{name: "local route 1500", mtu: 9000, floor: 68, path: fakePath{fwd: 9000, local: 1500}, largest: 1500, sizes: []int{9000, 1500, 1501}},
		{name: "router says 4000", mtu: 9000, floor: 68, path: fakePath{fwd: 4000, hint: 4000}, largest: 4000, sizes: []int{9000, 4000, 4001}},
		{name: "silent PPPoE 1492", mtu: 9000, floor: 68, path: fakePath{fwd: 1492}, largest: 1492, timeouts: 6},
		{name: "silent 8950", mtu: 9000, floor: 68, path: fakePath{fwd: 8950}, largest: 8950, timeouts: 10},
		{name: "silent 1400 below 1500", mtu: 1500, floor: 68, path: fakePath{fwd: 1400}, largest: 1400, timeouts: 8},
		{name: "lying router", mtu: 9000, floor: 68, path: fakePath{fwd: 1400, hint: 8000}, largest: 1400, timeouts: 10},
		{name: "nothing passes", mtu: 9000, floor: 68, path: fakePath{fwd: 0}, largest: 0, sizes: []int{9000, 1500, 68}},
		{name: "nothing passes at 1500", mtu: 1500, floor: 68, path: fakePath{fwd: 0}, largest: 0, sizes: []int{1500, 68}},
		{name: "only the floor", mtu: 9000, floor: 68, path: fakePath{fwd: 68}, largest: 68, timeouts: 14},
		{name: "IPv6 floor", mtu: 9000, floor: 1280, path: fakePath{fwd: 1280}, largest: 1280, timeouts: 12},
		{name: "IPv6 silent 1500", mtu: 9000, floor: 1280, path: fakePath{fwd: 1500}, largest: 1500, sizes: []int{9000, 1500, 1501}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var res Result
			p := tt.path
			if err := search(context.Background(), tt.mtu, tt.floor, p.try, &res); err != nil {
				t.Fatal(err)
			}
			if res.OK != tt.ok || res.Largest != tt.largest {
				t.Errorf("ok, largest = %v, %d; want %v, %d (tried %v)", res.OK, res.Largest, tt.ok, tt.largest, p.sizes)
			}
			if tt.sizes != nil && !equal(p.sizes, tt.sizes) {
				t.Errorf("tried %v; want %v", p.sizes, tt.sizes)
			}
			if tt.sizes == nil && p.timeouts(res) > tt.timeouts {
				t.Errorf("%d sizes timed out; want at most %d (tried %v)", p.timeouts(res), tt.timeouts, p.sizes)
			}
			if len(res.Failures) != len(p.sizes)-passes(p.sizes, p.fwd, p.local) {
				t.Errorf("%d failures recorded for %v", len(res.Failures), p.sizes)
			}
		})
	}
}

// TestSearchExhaustive checks every path MTU from the floor to the size.
func TestSearchExhaustive(t *testing.T) {
	worst := 0
	for fwd := 68; fwd <= 9000; fwd++ {
		p := fakePath{fwd: fwd}
		var res Result
		if err := search(context.Background(), 9000, 68, p.try, &res); err != nil {
			t.Fatal(err)
		}
		if res.Largest != fwd || res.OK != (fwd == 9000) {
			t.Fatalf("path %d: largest %d, ok %v (tried %v)", fwd, res.Largest, res.OK, p.sizes)
		}
		worst = max(worst, len(res.Failures))
		prev := map[int]bool{}
		for _, s := range p.sizes {
			if prev[s] || s < 68 || s > 9000 {
				t.Fatalf("path %d: size %d tried twice or out of range (%v)", fwd, s, p.sizes)
			}
			prev[s] = true
		}
	}
	// Bisection over 68..9000 needs about 14; the 1500 seed adds one.
	if worst > 14 {
		t.Errorf("worst case %d failing sizes", worst)
	}
	t.Logf("worst case: %d failing sizes", worst)
}

func TestSearchError(t *testing.T) {
	boom := errors.New("boom")
	calls := 0
	try := func(_ context.Context, size int) (outcome, error) {
		calls++
		switch {
		case calls == 3:
			return outcome{}, boom
		case size <= 1500:
			return outcome{ok: true}, nil
		}
		return outcome{fail: Failure{Size: size, Reason: ReasonTimeout}}, nil
	}
	var res Result
	if err := search(context.Background(), 9000, 68, try, &res); !errors.Is(err, boom) {
		t.Fatalf("search: %v; want boom", err)
	}
	if res.Largest != 1500 || len(res.Failures) != 1 {
		t.Errorf("partial result %+v; want largest 1500 and one failure", res)
	}
}

func equal(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// passes counts the sizes a fakePath let through.
func passes(sizes []int, fwd, local int) int {
	n := 0
	for _, s := range sizes {
		if s <= fwd && (local == 0 || s <= local) {
			n++
		}
	}
	return n
}

func TestCheckArgs(t *testing.T) {
	for _, tt := range []struct {
		dst string
		mtu int
		ok  bool
	}{
		{"198.18.0.1", 9000, true},
		{"198.18.0.1", 68, true},
		{"198.18.0.1", 67, false},
		{"198.18.0.1", 65535, true},
		{"198.18.0.1", 65536, false},
		{"2001:2::1", 1280, true},
		{"2001:2::1", 1279, false},
		{"0.0.0.0", 1500, false},
		{"::", 1500, false},
		{"224.0.0.1", 1500, false},
		{"ff02::1", 1500, false},
		{"", 1500, false},
	} {
		var dst netip.Addr
		if tt.dst != "" {
			dst = netip.MustParseAddr(tt.dst)
		}
		if err := checkArgs(dst, tt.mtu); (err == nil) != tt.ok {
			t.Errorf("checkArgs(%v, %d) = %v; want ok %v", dst, tt.mtu, err, tt.ok)
		}
	}
	// Probe refuses them before opening a socket, root or not.
	if _, err := Probe(context.Background(), netip.MustParseAddr("198.18.0.1"), 40, Options{}); err == nil {
		t.Error("Probe at 40 bytes: want an error")
	}
}

func TestOptionsDefaults(t *testing.T) {
	o := Options{}.withDefaults()
	if o.Timeout != DefaultTimeout || o.Tries != DefaultTries {
		t.Errorf("defaults = %+v", o)
	}
	o = Options{Timeout: 1, Tries: 1}.withDefaults()
	if o.Timeout != 1 || o.Tries != 1 {
		t.Errorf("explicit options changed: %+v", o)
	}
}
