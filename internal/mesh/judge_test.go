package mesh

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// feed adds buckets of a pair probed at rate/s with forward loss ratio
// loss and RTT p50 around rtt (jittered by jitter), starting at t0 (Unix
// s), and returns the verdicts.
type prober struct {
	p      Pair
	rng    *rand.Rand
	t      int64
	rate   int
	rtt    float64 // ns
	jitter float64 // relative
}

func newProber(seed uint64) *prober {
	return &prober{rng: rand.New(rand.NewPCG(seed, 1)), t: 1_700_000_000, rate: 10, rtt: 60e3, jitter: 0.2}
}

// bucket makes one bucket of the given loss, and adds it.
func (pr *prober) bucket(loss float64, mod func(*Bucket)) Verdict {
	pr.t += int64(BucketLen / time.Second)
	n := pr.rate * int(BucketLen/time.Second)
	b := Bucket{End: pr.t, Sent: uint32(n), Judged: uint32(n)}
	for range n {
		if pr.rng.Float64() < loss {
			b.Lost++
		}
	}
	b.Replies = b.Judged - b.Lost
	if b.Replies > 0 {
		f := 1 + pr.jitter*(pr.rng.Float64()-0.5)
		b.P50 = uint32(pr.rtt * f)
		b.P99 = uint32(pr.rtt * f * 3)
	}
	if mod != nil {
		mod(&b)
	}
	return pr.p.Add(b)
}

// TestHealthyPairsStayOK: a noisy but healthy pair (RTT ±10%, 0.1% loss)
// is never degraded over an hour, over many seeds.
func TestHealthyPairsStayOK(t *testing.T) {
	for seed := range uint64(40) {
		pr := newProber(seed)
		for i := range 720 {
			v := pr.bucket(0.001, nil)
			if v.State != OK {
				t.Fatalf("seed %d bucket %d: %s (%s)", seed, i, v.State, v.Why)
			}
		}
	}
}

// TestLossDetected: 5% loss that starts after 45 s of health degrades
// the pair within 30 s (usually 10-15 s) in every seed, says so, and the
// pair is ok again soon after the loss ends.
func TestLossDetected(t *testing.T) {
	var worst int
	for seed := range uint64(50) {
		pr := newProber(seed)
		for range 9 {
			pr.bucket(0, nil)
		}
		onset := pr.t
		found := -1
		for i := range 12 {
			v := pr.bucket(0.05, nil)
			if v.State == Degraded {
				found = i
				if !strings.Contains(v.Why, "loss") || v.Since <= onset {
					t.Fatalf("seed %d: %+v", seed, v)
				}
				break
			}
		}
		if found < 0 {
			t.Fatalf("seed %d: 5%% loss not seen in 60 s", seed)
		}
		worst = max(worst, found+1)
		healthy := -1
		for i := range 12 {
			pr.bucket(0.05, nil) // a while more
			_ = i
		}
		for i := range 12 {
			if pr.bucket(0, nil).State == OK {
				healthy = i
				break
			}
		}
		if healthy < 0 || healthy > RecentBuckets+recoverAfter {
			t.Fatalf("seed %d: ok again after %d buckets", seed, healthy+1)
		}
	}
	if worst*int(BucketLen/time.Second) > 30 {
		t.Errorf("5%% loss took up to %d buckets to be seen", worst)
	}
}

// TestLossInconclusiveWhenHostDrops: loss the receiving host's socket
// buffers account for is inconclusive, not degraded.
func TestLossInconclusiveWhenHostDrops(t *testing.T) {
	pr := newProber(1)
	for range 9 {
		pr.bucket(0, nil)
	}
	var v Verdict
	for range 6 {
		v = pr.bucket(0.05, func(b *Bucket) { b.HostDrops = true })
	}
	if v.State != OK || !strings.Contains(v.Inconclusive, "socket buffer") {
		t.Fatalf("%+v", v)
	}
}

// TestRTTDegraded: the p50 doubling (a queue, a detour) degrades the
// pair, unless the buckets were contended.
func TestRTTDegraded(t *testing.T) {
	for _, contended := range []bool{false, true} {
		pr := newProber(2)
		for range 12 {
			pr.bucket(0, nil)
		}
		pr.rtt *= 3
		var v Verdict
		for range RecentBuckets {
			v = pr.bucket(0, func(b *Bucket) { b.Contended = contended })
		}
		switch {
		case !contended && (v.State != Degraded || !strings.Contains(v.Why, "RTT")):
			t.Errorf("slow: %+v", v)
		case contended && (v.State != OK || !strings.Contains(v.Inconclusive, "busy")):
			t.Errorf("slow while contended: %+v", v)
		}
	}
}

// TestDown: no reply for DownBuckets buckets is down.
func TestDown(t *testing.T) {
	pr := newProber(3)
	for range 5 {
		pr.bucket(0, nil)
	}
	var v Verdict
	for range DownBuckets {
		v = pr.bucket(1, nil)
	}
	if v.State != Down || !strings.Contains(v.Why, "no reply") {
		t.Fatalf("%+v", v)
	}
}

// TestFaultNotBaseline: a fault lasting longer than the baseline window
// stays degraded: its buckets never become the pair's normal.
func TestFaultNotBaseline(t *testing.T) {
	pr := newProber(4)
	for range 12 {
		pr.bucket(0, nil)
	}
	for i := range 2 * BaselineBuckets {
		v := pr.bucket(0.05, nil)
		if i > 6 && v.State != Degraded {
			t.Fatalf("bucket %d of a lasting 5%% loss: %+v", i, v)
		}
	}
}

// TestGoodput: a test at half the earlier ones degrades the pair; one
// whose own record shows contention is inconclusive.
func TestGoodput(t *testing.T) {
	for _, excuse := range []string{"", "both ends shared CPU 0"} {
		var p Pair
		for i, g := range []float64{9.4, 9.5, 9.3, 9.45} {
			if v := p.AddTput(Tput{End: int64(i), Gbps: g}); v.State != OK {
				t.Fatalf("test %d: %+v", i, v)
			}
		}
		v := p.AddTput(Tput{End: 10, Gbps: 4.7, Inconclusive: excuse})
		if excuse == "" && (v.State != Degraded || !strings.Contains(v.Why, "goodput 4.70")) {
			t.Errorf("%+v", v)
		}
		if excuse != "" && (v.State != OK || !strings.Contains(v.Inconclusive, excuse) || *v.Goodput != 9.45) {
			t.Errorf("%+v", v)
		}
	}
}

func TestBinomTail(t *testing.T) {
	for _, c := range []struct {
		n, k int
		p    float64
		want float64
	}{
		{10, 0, 0.5, 1},
		{10, 10, 0.5, math.Pow(0.5, 10)},
		{10, 9, 0.5, 11 * math.Pow(0.5, 10)},
		{200, 5, 0.001, 2.18e-6}, // ≈ e^-0.2·0.2^5/120
		{4, 5, 0.5, 0},
	} {
		got := binomTail(c.n, c.k, c.p)
		if math.Abs(got-c.want) > 0.05*c.want+1e-12 {
			t.Errorf("P(X≥%d | %d, %g) = %g, want %g", c.k, c.n, c.p, got, c.want)
		}
	}
}

func TestQuantile(t *testing.T) {
	xs := []uint32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	if Quantile(xs, 0.5) != 5 || Quantile(xs, 0.99) != 10 || Quantile(xs, 0) != 1 || Quantile(nil, 0.5) != 0 {
		t.Error(Quantile(xs, 0.5), Quantile(xs, 0.99), Quantile(xs, 0))
	}
}
