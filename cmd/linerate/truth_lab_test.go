package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/linerate/linerate/internal/lab"
	"github.com/linerate/linerate/internal/result"
	"github.com/linerate/linerate/internal/testbin"
)

// truthLab brings a lab up for one test and takes it down after.
func truthLab(t *testing.T, cfg lab.Config) {
	t.Helper()
	t.Setenv("LINERATE_STATE_DIR", t.TempDir())
	if _, err := lab.Up(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := lab.Down(context.Background(), cfg.Name); err != nil {
			t.Errorf("lab down: %v", err)
		}
	})
}

// benchDoc runs the built binary's bench with --json and decodes its run.
func benchDoc(t *testing.T, bin string, args ...string) *result.Result {
	t.Helper()
	var out, errb bytes.Buffer
	cmd := exec.Command(bin, append([]string{"bench", "--json", "--no-store"}, args...)...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("bench %v: %v\n%s", args, err, errb.String())
	}
	var res result.Result
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatalf("bench %v: %v\n%s", args, err, out.String())
	}
	return &res
}

// TestBusyCPUPlacement is issue 12's busy machine: a busy loop pinned to
// CPU 0. Native `auto` placement looks at the CPUs before the run and
// keeps off the one the loop holds (both ends share the other); in
// interleaved pairs it reaches at least 0.9 × what unpinned iperf3
// reaches at the same moment (the median of the pairs' ratios: the
// machine is shared, so each run is compared with its neighbour, not with
// a figure); and the run names the busy process by pid and name.
//
// Nine pairs, not three: on a 2-CPU machine idle but for the loop the
// two tools move about the same (native on the one free CPU against
// iperf3's threads, which the scheduler also keeps off the loop), single
// pairs' ratios scatter with a standard deviation of about 0.11 around
// 1.02, and a median of three fell below 0.9 in CI (docs/benchmarks.md);
// the median of nine does about one run in two hundred unless native is
// really slower, as it was when it pinned itself onto the loop (0.4 ×).
func TestBusyCPUPlacement(t *testing.T) {
	testbin.NeedRoot(t, "network namespaces")
	if _, err := exec.LookPath("iperf3"); err != nil {
		t.Fatal("iperf3 is not installed (apt-get install iperf3): the reference this test compares with")
	}
	bin := buildLinerate(t)
	const name = "t-busycpu"
	truthLab(t, lab.Config{Name: name})
	spin := exec.Command("taskset", "-c", "0", "sh", "-c", "while :; do :; done")
	if err := spin.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { spin.Process.Kill(); spin.Wait() })
	pid := spin.Process.Pid
	time.Sleep(300 * time.Millisecond) // let it show in /proc/stat

	var ratios []float64
	var native *result.Result
	const pairs = 9
	for i := range pairs {
		var n, r *result.Result
		if i%2 == 0 { // alternate which goes first
			n = benchDoc(t, bin, "lab:"+name, "-t", "3")
			r = benchDoc(t, bin, "lab:"+name, "--engine", "iperf3", "-t", "3")
		} else {
			r = benchDoc(t, bin, "lab:"+name, "--engine", "iperf3", "-t", "3")
			n = benchDoc(t, bin, "lab:"+name, "-t", "3")
		}
		ng, rg := n.End.SumReceived.BitsPerSecond/1e9, r.End.SumReceived.BitsPerSecond/1e9
		t.Logf("pair %d: native auto %.2f Gbit/s (client CPUs %v, server CPUs %v), iperf3 %.2f Gbit/s", i+1, ng, n.Start.Placement.Client, n.Start.Placement.Server, rg)
		if rg <= 0 {
			t.Fatalf("pair %d: iperf3 moved nothing", i+1)
		}
		ratios = append(ratios, ng/rg)
		native = n
	}
	slices.Sort(ratios)
	if med := ratios[pairs/2]; med < 0.9 {
		t.Errorf("native auto reached %.2f × iperf3 (median of pairs %v), want at least 0.9", med, ratios)
	}

	// The placement kept off CPU 0 and says so.
	st := native.Start
	if slices.Contains(st.Placement.Client, 0) || slices.Contains(st.Placement.Server, 0) {
		t.Errorf("auto placed stream threads on the busy CPU 0: %+v", st.Placement)
	}
	if notes := strings.Join(st.Notes, "\n"); !strings.Contains(notes, "kept off CPU 0 (held by pid "+strconv.Itoa(pid)+" (sh)") {
		t.Errorf("start notes do not say CPU 0 was avoided for pid %d (sh): %q", pid, st.Notes)
	}
	if st.LoadBefore.Client["0"] < 50 {
		t.Errorf("load before the run: %v; CPU 0 should show the busy loop", st.LoadBefore.Client)
	}
	// The run records the busy loop as other load, by pid and name.
	f := native.End.Foreign.Client
	if f == nil || f.CPU["0"] < 50 {
		t.Fatalf("other load on the client's host: %+v (notes %q)", f, native.End.Foreign.Notes)
	}
	named := false
	for _, p := range f.Top {
		named = named || p.PID == pid && p.Name == "sh" && p.CPU == 0 && p.Pinned
	}
	if !named {
		t.Errorf("top other processes %+v lack the busy loop, pid %d (sh) pinned to CPU 0", f.Top, pid)
	}
	// The text output's explanation names it.
	out, err := exec.Command(bin, "bench", "lab:"+name, "-t", "2", "--no-store").CombinedOutput()
	if err != nil {
		t.Fatalf("bench: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "Other load: CPU 0 was ") ||
		!strings.Contains(string(out), "busy with pid "+strconv.Itoa(pid)+" (sh, ") {
		t.Errorf("text output does not name pid %d (sh) on CPU 0:\n%s", pid, out)
	}
}

// TestReceiverWindow proves that the receiver's bytes are its own. On a
// 50 Mbit/s link with 4 MB socket buffers and no warm-up, the sender
// fills its buffer in the first moments and the run stops with megabytes
// still queued: sum_sent counts them (they were written in the sender's
// window), sum_received does not (they never arrived in the receiver's).
// Before, the receiver's count was derived from the sender's and the
// drain made them equal. The receiver's total is the sum of its own
// per-interval counts after its own warm-up, and its rate stays under the
// shaper's while the sender's, with what it queued, is above it. With a
// warm-up the same holds of the receiver's count.
func TestReceiverWindow(t *testing.T) {
	testbin.NeedRoot(t, "network namespaces")
	bin := buildLinerate(t)
	const name = "t-rcvwin"
	const rate = 50e6
	truthLab(t, lab.Config{Name: name, Rate: lab.Rate(rate)})
	for _, tc := range []struct {
		name   string
		args   []string
		queued bool
	}{
		{"send", []string{"-O", "0"}, true},
		{"receive", []string{"-O", "0", "-R"}, true},
		{"send with warm-up", []string{"-O", "1"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := benchDoc(t, bin, append([]string{"lab:" + name, "-t", "2", "--window", "4M"}, tc.args...)...)
			e := res.End
			var own uint64 // the receiver's per-interval counts after the warm-up
			for _, iv := range res.Intervals {
				if iv.Omitted {
					continue
				}
				for _, s := range iv.Streams {
					switch {
					case s.Sender == "server":
						own += s.Bytes
					case s.PeerBytes != nil:
						own += *s.PeerBytes
					default:
						t.Fatalf("interval %g-%g: stream %d has no receiver's count", iv.Start, iv.End, s.ID)
					}
				}
			}
			t.Logf("sent %d bytes (%.1f Mbit/s), received %d (%.1f Mbit/s over %.3f s); the receiver's intervals sum to %d; buffers %+v",
				e.SumSent.Bytes, e.SumSent.BitsPerSecond/1e6, e.SumReceived.Bytes, e.SumReceived.BitsPerSecond/1e6, e.SumReceived.Seconds, own, res.Start.Window)
			if e.SumReceived.Bytes != own || own == 0 {
				t.Errorf("sum_received %d bytes is not the receiver's own measured intervals' %d", e.SumReceived.Bytes, own)
			}
			if e.SumReceived.Seconds <= 0 {
				t.Errorf("no receiver's window: %+v", e.SumReceived)
			}
			// Not a speed claim: the shaper is a ceiling no receiver's count
			// can pass.
			if got := e.SumReceived.BitsPerSecond; got > 1.1*rate {
				t.Errorf("received at %.1f Mbit/s; the shaper allows %.0f", got/1e6, rate/1e6)
			}
			if tc.queued && e.SumSent.Bytes < e.SumReceived.Bytes+2<<20 {
				t.Errorf("sum_sent %d is not megabytes above sum_received %d: the queued bytes were counted as received", e.SumSent.Bytes, e.SumReceived.Bytes)
			}
		})
	}
}
